// indexers(P): P[linear*6 .. +6] = gid0, gid1, gid2, lid0, lid1, lid2
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 p;
};
UR_PUSH

void main() {
    uint base = UR_LINEAR * 6u;
    uvec3 gid = UR_GID;
    args.p.v[base + 0u] = gid.x;
    args.p.v[base + 1u] = gid.y;
    args.p.v[base + 2u] = gid.z;
    args.p.v[base + 3u] = gl_LocalInvocationID.x;
    args.p.v[base + 4u] = gl_LocalInvocationID.y;
    args.p.v[base + 5u] = gl_LocalInvocationID.z;
}
