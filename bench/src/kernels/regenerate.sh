#!/usr/bin/env bash
# Regenerates the SPIR-V of the benchmark-only kernels (Vulkan form) from their
# GLSL (Debian: glslang-tools), with the kernel ABI header of the conformance
# library. The .spv files are committed, so building needs no shader compiler.
set -euo pipefail
cd "$(dirname "$0")"
abi=../../../conformance/src/kernels/vulkan
for src in *.comp; do
    out=$(glslangValidator -V --target-env vulkan1.2 -I"$abi" "$src" -o "${src%.comp}.spv") || { echo "$out" >&2; exit 1; }
done
glslangValidator --version | head -n 1 >glslang-version.txt
if command -v spirv-val >/dev/null; then
    for spv in *.spv; do spirv-val --target-env vulkan1.2 "$spv"; done
fi
