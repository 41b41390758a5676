// sin_f32(P): P[gid0] = sin(P[gid0]), on f32 (the Vulkan kernel ABI:
// docs/vulkan.md, conformance/src/kernels/vulkan/ur_abi.glsl).
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32s { float v[]; };

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) F32s p;
};
UR_PUSH

void main() {
    uint i = UR_GID.x;
    args.p.v[i] = sin(args.p.v[i]);
}
