// fixed_size(dst): dst[i] = local size * 1000 + local id, with the work-group
// size fixed in the module (4), which launches must then use.
// It spells the kernel ABI's header out rather than include ur_abi.glsl,
// whose local size is left to specialization constants.
#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x = 4) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer UrU32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Args {
    uvec3 num_groups; uint work_dim;
    uvec3 global_size; uint reserved0;
    uvec3 global_offset; uint reserved1;
    uint64_t status; uint64_t reserved2;
    layout(offset = 64) UrU32 dst;
};
layout(push_constant) uniform UrPush { Args args; };

void main() {
    uint i = gl_GlobalInvocationID.x + args.global_offset.x;
    args.dst.v[i] = gl_WorkGroupSize.x * 1000u + gl_LocalInvocationID.x;
}
