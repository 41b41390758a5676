#!/usr/bin/env bash
# Regenerates memory.ptx from memory.cl with clang-15's NVPTX back end
# (Debian: clang-15). The PTX is committed, so building needs no compiler;
# the test `internal_kernels_are_current` (tests/kernels.rs) checks it matches.
#
# OpenCL C is compiled for the `nvcl` triple (which gives `__kernel`
# functions kernel linkage), then its IR for the `cuda` triple, so that the
# PTX has CUDA's plain parameters and no OpenCL texture mode. PTX 6.0 for
# sm_70: the driver compiles it for the device it loads on.
set -euo pipefail
cd "$(dirname "$0")"
ir=$(mktemp --suffix=.ll)
trap 'rm -f "$ir"' EXIT
clang-15 -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -O2 -S -emit-llvm -o "$ir" memory.cl
sed -i 's/nvptx64-nvidia-nvcl/nvptx64-nvidia-cuda/' "$ir"
clang-15 -target nvptx64-nvidia-cuda -march=sm_70 -Xclang -target-feature -Xclang +ptx60 -O2 -S \
    -Wno-override-module -o memory.ptx "$ir"
clang-15 --version | head -n 1 >clang-version.txt
