// copy_add(DST, SRC, K: u32): DST[gid0] = SRC[gid0] + K
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 dst;
    layout(offset = 72) UrU32 src;
    layout(offset = 80) uint k;
};
UR_PUSH

void main() {
    uint i = UR_GID.x;
    args.dst.v[i] = args.src.v[i] + args.k;
}
