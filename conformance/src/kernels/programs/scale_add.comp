// scale_add(dst, src, a: f32, p: {scale: f32, bias: i32}, n: u64):
//   dst[i] = src[i] * a * p.scale + p.bias for every global id i < n.
// The same kernel as scale_add in opencl.cl and cuda.cu; its signature is read
// from the module (ProgramBundle::from_il), never declared.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "../vulkan/ur_abi.glsl"

layout(buffer_reference, std430, buffer_reference_align = 4) buffer UrF32 { float v[]; };
struct Params { float scale; int bias; };

UR_BLOCK Args {
    UR_HEADER
    layout(offset = 64) UrF32 dst;
    layout(offset = 72) UrF32 src;
    layout(offset = 80) float a;
    layout(offset = 88) Params p;
    layout(offset = 96) uint64_t n;
};
UR_PUSH

void main() {
    uint i = UR_GID.x;
    if (uint64_t(i) < args.n) {
        args.dst.v[i] = args.src.v[i] * args.a * args.p.scale + float(args.p.bias);
    }
}
