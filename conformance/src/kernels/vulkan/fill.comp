// fill(P, V: u32): P[gid0] = V
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 p;
    layout(offset = 72) uint value;
};
UR_PUSH

void main() {
    args.p.v[UR_GID.x] = args.value;
}
