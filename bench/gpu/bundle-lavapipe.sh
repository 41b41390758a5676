#!/bin/sh
# Bundles this machine's lavapipe (Mesa's Vulkan CPU driver) with the
# libraries it needs that a GPU host (Ubuntu 24.04, NVIDIA's Vulkan driver
# only) lacks, so that lavapipe can run on the GPU machine's quiet 16-core host
# (issue 15, goal 3: replay within 1.3x of the raw API on lavapipe).
#
#   bench/gpu/bundle-lavapipe.sh OUT.tar.xz
#
# Carry the archive (about 40 MB; a device call carries at most 64 MiB in
# all) and, on the GPU machine:
#   source bench/gpu/use-lavapipe.sh PATH/lavapipe.tar.xz
#   vulkaninfo --summary      # lists llvmpipe beside the GPU
#   UR_DEVICE_SELECTOR=vulkan:cpu cmdbuf-bench --only submission --only raw --no-emulated
#
# The C and C++ runtimes (libc, libm, libstdc++, libgcc_s, the dynamic
# loader) are left out: the host's are newer and backward compatible. The
# ICD's library_path is relative, which the Vulkan loader resolves against the
# JSON file's directory.
set -eu
out=${1:?usage: bundle-lavapipe.sh OUT.tar.xz}
lvp=/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/lib"
cp "$lvp" "$dir/lib/"
ldd "$lvp" | awk '/=> \// { print $1, $3 }' | while read -r name path; do
  case "$name" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*) ;;
    *) cp -L "$path" "$dir/lib/$name" ;;
  esac
done
# The installed ICD file, with the library's path made relative.
sed 's#"library_path": *"[^"]*"#"library_path": "./lib/libvulkan_lvp.so"#' \
  /usr/share/vulkan/icd.d/lvp_icd.x86_64.json > "$dir/lvp_icd.json"
grep -q '"./lib/libvulkan_lvp.so"' "$dir/lvp_icd.json"
# -9: libLLVM alone is 117 MB; the GPU call carries at most 64 MiB in all.
XZ_OPT=-9 tar -C "$dir" -cJf "$out" lib lvp_icd.json
ls -l "$out"
