// fill_2d(P, V: u32): P[linear] = V
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
    args.p.v[UR_LINEAR] = args.value;
}
