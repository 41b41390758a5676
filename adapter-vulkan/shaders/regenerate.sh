#!/usr/bin/env bash
# Regenerates the SPIR-V of the adapter's internal shaders from their GLSL
# (Debian: glslang-tools). The .spv files are committed, so building needs no
# shader compiler; the test `internal_shaders_are_current` checks they match.
set -euo pipefail
cd "$(dirname "$0")"
for src in *.comp; do
    out=$(glslangValidator -V --target-env vulkan1.2 "$src" -o "${src%.comp}.spv") || { echo "$out" >&2; exit 1; }
done
glslangValidator --version | head -n 1 >glslang-version.txt
if command -v spirv-val >/dev/null; then
    for spv in *.spv; do spirv-val --target-env vulkan1.2 "$spv"; done
fi
