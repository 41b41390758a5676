// The C kernel test's kernel for Vulkan (cmdbuf's kernel ABI): p[i] = p[i] * a + b.
// Compiled by regenerate.sh with the entry point named axpb.
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
