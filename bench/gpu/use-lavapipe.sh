# Sourced on the GPU machine (bash), after the checkout's device environment:
#
#   source bench/gpu/use-lavapipe.sh PATH/lavapipe.tar.xz
#
# Unpacks the bundle made by bench/gpu/bundle-lavapipe.sh into /tmp/lvp,
# drops the bundled libraries the host already has (its own are newer and
# keep their ABI), and adds lavapipe's ICD file after the drivers already in
# VK_DRIVER_FILES (NVIDIA's), so `vulkan:cpu` selects lavapipe and
# `vulkan:gpu` the GPU. On the H100 machine (Ubuntu 24.04, 2026-11-26) the
# bundle kept ICU 72, libLLVM-15, libz3, libwayland-client, libX11-xcb, the
# libxcb-dri3/present/randr/shm/sync/xfixes and libxshmfence.
_lvp_bundle=${1:?usage: source use-lavapipe.sh lavapipe.tar.xz}
mkdir -p /tmp/lvp && tar -xJf "$_lvp_bundle" -C /tmp/lvp
for _lvp_f in /tmp/lvp/lib/*; do
  _lvp_n=$(basename "$_lvp_f")
  [ "$_lvp_n" = libvulkan_lvp.so ] && continue
  if ldconfig -p | grep -q "^[[:space:]]*$_lvp_n "; then rm "$_lvp_f"; fi
done
echo "lavapipe bundle: $(ls /tmp/lvp/lib | tr '\n' ' ')"
export LD_LIBRARY_PATH=/tmp/lvp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VK_DRIVER_FILES=${VK_DRIVER_FILES:+$VK_DRIVER_FILES:}/tmp/lvp/lvp_icd.json
unset _lvp_bundle _lvp_f _lvp_n
