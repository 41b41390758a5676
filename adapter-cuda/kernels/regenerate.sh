#!/usr/bin/env bash
# Regenerates memory.ptx from memory.cl with clang-15's NVPTX back end
# (Debian: clang-15), or, given OpenCL C files, the PTX of each beside it
# (the device test's ../tests/kernels/dpcpp_form.cl). The PTX is
# committed, so building needs no compiler; the test
# `internal_kernels_are_current` (tests/kernels.rs) checks it matches.
#
# OpenCL C is compiled for the `nvcl` triple (which gives `__kernel`
# functions kernel linkage), then its IR for the `cuda` triple, so that the
# PTX has CUDA's plain parameters and no OpenCL texture mode. PTX 6.0 for
# sm_70: the driver compiles it for the device it loads on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || set -- "$here/memory.cl"
ir=$(mktemp --suffix=.ll)
trap 'rm -f "$ir"' EXIT
for source in "$@"; do
    clang-15 -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -O2 -S -emit-llvm -o "$ir" "$source"
    sed -i 's/nvptx64-nvidia-nvcl/nvptx64-nvidia-cuda/' "$ir"
    clang-15 -target nvptx64-nvidia-cuda -march=sm_70 -Xclang -target-feature -Xclang +ptx60 -O2 -S \
        -Wno-override-module -o "${source%.cl}.ptx" "$ir"
done
clang-15 --version | head -n 1 >"$here/clang-version.txt"
