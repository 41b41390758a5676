// The cmdbuf Vulkan kernel ABI (docs/vulkan.md), as the kernel library uses it.
//
// - One compute entry point per module.
// - Local size: specialization constants 0, 1 and 2.
// - Push constants: one 8-byte buffer reference to the argument block.
// - The argument block starts with a 64-byte header (below); the arguments
//   follow from byte 64 in signature order, each at an offset aligned to 8
//   bytes (16 for values of more than 8 bytes): a global pointer is an 8-byte
//   device address (null allowed), a value is its bytes. Local-memory
//   arguments take no bytes: argument i's size in bytes is specialization
//   constant 100 + i, which sizes a `shared` array.
// - A kernel fails its launch by setting the launch's status word to a
//   non-zero code (UR_FAIL): the launch's event then reports an error.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// The status word of a launch.
layout(buffer_reference, std430, buffer_reference_align = 4) buffer UrStatus { uint code; };

// A global pointer to `uint`s.
layout(buffer_reference, std430, buffer_reference_align = 4) buffer UrU32 { uint v[]; };

// The header every argument block starts with. ur_num_groups is the
// indirect-dispatch record (VkDispatchIndirectCommand).
#define UR_HEADER \
    uvec3 ur_num_groups; uint ur_work_dim; \
    uvec3 ur_global_size; uint ur_reserved0; \
    uvec3 ur_global_offset; uint ur_reserved1; \
    UrStatus ur_status; uint64_t ur_reserved2;

// The argument block type; `UrArgs` declares the push constant `args`.
#define UR_BLOCK layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer
#define UR_PUSH layout(push_constant) uniform UrPush { Args args; };

// The global id, offset included (OpenCL's get_global_id).
#define UR_GID (gl_GlobalInvocationID + args.ur_global_offset)
// Fails the launch with a non-zero code.
#define UR_FAIL(value) atomicOr(args.ur_status.code, (value))
// The linear global id without offset, dimension 0 fastest.
#define UR_LINEAR (gl_GlobalInvocationID.x + args.ur_global_size.x * \
    (gl_GlobalInvocationID.y + args.ur_global_size.y * gl_GlobalInvocationID.z))
