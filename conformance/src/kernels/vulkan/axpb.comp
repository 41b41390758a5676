// axpb(P, A: u32, B: u32): P[gid0] = P[gid0] * A + B
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 p;
    layout(offset = 72) uint a;
    layout(offset = 80) uint b;
};
UR_PUSH

void main() {
    uint i = UR_GID.x;
    args.p.v[i] = args.p.v[i] * args.a + args.b;
}
