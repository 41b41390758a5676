// saxpy(Z, A: u32, X, Y): Z[gid0] = A * X[gid0] + Y[gid0]
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrU32 z;
    layout(offset = 72) uint a;
    layout(offset = 80) UrU32 x;
    layout(offset = 88) UrU32 y;
};
UR_PUSH

void main() {
    uint i = UR_GID.x;
    args.z.v[i] = args.a * args.x.v[i] + args.y.v[i];
}
