// empty(): nothing
#version 460
#extension GL_GOOGLE_include_directive : require
#include "ur_abi.glsl"

void main() {}
