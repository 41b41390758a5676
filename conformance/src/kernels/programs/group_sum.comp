// group_sum(dst, src, scratch: local):
//   dst[group] = the sum of src over the work-group, through local memory.
// Fails the launch when the local argument is too small for the work-group.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "../vulkan/ur_abi.glsl"

// Size in bytes of local-memory argument 2.
layout(constant_id = 102) const uint SCRATCH_BYTES = 4;
shared uint scratch[(SCRATCH_BYTES + 3u) / 4u];

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 dst;
    layout(offset = 72) UrU32 src;
};
UR_PUSH

void main() {
    uint l = gl_LocalInvocationID.x;
    uint n = gl_WorkGroupSize.x;
    // Uniform across the work-group, so every item returns before the barrier.
    if (SCRATCH_BYTES < 4u * n) {
        if (l == 0u) {
            UR_FAIL(1u);
        }
        return;
    }
    scratch[l] = args.src.v[UR_GID.x];
    barrier();
    if (l == 0u) {
        uint s = 0u;
        for (uint k = 0u; k < n; k++) {
            s += scratch[k];
        }
        args.dst.v[gl_WorkGroupID.x] = s;
    }
}
