#!/usr/bin/env bash
# Regenerates the C kernel test's committed kernels from their sources:
# axpb.spv (OpenCL-flavour SPIR-V) from axpb.cl with clang-15 and llvm-spirv-15,
# attrs.spv from attrs.spvasm with spirv-as
# (Debian's clang-15 and llvm-spirv-15 packages). axpb.ptx is written by hand
# (plain PTX, as a CUDA toolchain emits for a kernel without cmdbuf's launch
# block) and checked by ptxas on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
clang-15 -cl-std=CL1.2 -target spir64-unknown-unknown -O1 -emit-llvm -c -Xclang -finclude-default-header axpb.cl -o "$tmp/axpb.bc"
llvm-spirv-15 "$tmp/axpb.bc" -o axpb.spv
# attrs.spv: SPIR-V assembly (declared work-group maximum and sub-group size,
# which OpenCL C cannot state) with SPIRV-Tools' spirv-as.
spirv-as --target-env spv1.1 attrs.spvasm -o attrs.spv
# axpb.vk.spv: GLSL -> GLCompute SPIR-V with cmdbuf's kernel ABI
# (conformance/src/kernels/vulkan/ur_abi.glsl), its entry point named axpb so
# that urKernelCreate finds the kernel by that name.
glslangValidator -V --target-env vulkan1.2 -I../../../../conformance/src/kernels/vulkan \
    -e axpb --source-entrypoint main axpb.comp -o axpb.vk.spv > /dev/null
