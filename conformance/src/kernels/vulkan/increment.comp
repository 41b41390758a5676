// increment(P): P[gid0] += 1
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 p;
};
UR_PUSH

void main() {
    uint i = UR_GID.x;
    args.p.v[i] = args.p.v[i] + 1u;
}
