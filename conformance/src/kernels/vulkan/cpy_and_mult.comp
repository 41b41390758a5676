// cpy_and_mult(DST, SRC): DST[gid0] = SRC[gid0] * 2
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 dst;
    layout(offset = 72) UrU32 src;
};
UR_PUSH

void main() {
    uint i = UR_GID.x;
    args.dst.v[i] = args.src.v[i] * 2u;
}
