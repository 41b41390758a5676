// saxpy_local(LA: local, LB: local, Z, A: u32, X, Y):
//   LA[lid0] = gid0; LB[2*lid0] = -gid0; LB[2*lid0+1] = lrange0;
//   work-group barrier;
//   Z[gid0] = A*X[gid0] + Y[gid0] + LA[lid0] + LB[2*lid0] + LB[2*lid0+1]
// The launch fails, writing nothing, when LA or LB is too small for the
// work-group (as the native form, which panics).
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

// Sizes in bytes of the local-memory arguments 0 and 1.
layout(constant_id = 100) const uint LA_BYTES = 4;
layout(constant_id = 101) const uint LB_BYTES = 8;
shared uint la[(LA_BYTES + 3u) / 4u];
shared uint lb[(LB_BYTES + 3u) / 4u];

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 z;
    layout(offset = 72) uint a;
    layout(offset = 80) UrU32 x;
    layout(offset = 88) UrU32 y;
};
UR_PUSH

void main() {
    // Uniform across the work-group, so every item returns before the barrier.
    if (LA_BYTES < 4u * gl_WorkGroupSize.x || LB_BYTES < 8u * gl_WorkGroupSize.x) {
        if (gl_LocalInvocationIndex == 0u) {
            UR_FAIL(1u);
        }
        return;
    }
    uint i = UR_GID.x;
    uint l = gl_LocalInvocationID.x;
    la[l] = i;
    lb[2u * l] = -i;
    lb[2u * l + 1u] = gl_WorkGroupSize.x;
    barrier();
    uint local_sum = la[l] + lb[2u * l] + lb[2u * l + 1u];
    args.z.v[i] = args.a * args.x.v[i] + args.y.v[i] + local_sum;
}
