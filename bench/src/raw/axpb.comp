// The Vulkan baseline's kernel with arguments: axpb over 256 invocations in
// one work group, p[i] = a * p[i] + b, its pointer (a buffer device address)
// and two values given as push constants at each dispatch, as a Vulkan
// program passes a kernel's arguments without descriptors. Regenerate
// axpb.spv with
// glslangValidator -V --target-env vulkan1.2 axpb.comp -o axpb.spv
#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Values { uint v[]; };
layout(push_constant) uniform Args { Values p; uint a; uint b; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    p.v[i] = a * p.v[i] + b;
}
