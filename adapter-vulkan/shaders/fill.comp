// The adapter's fill shader: repeats a pattern of any length over any
// byte range, for the fills vkCmdFillBuffer cannot do (patterns that do not
// divide 4 bytes, or ranges not aligned to 4 bytes).
//
// The host expands the pattern to `period` words that start at the 4-byte
// aligned address `dst` at or below the first byte to fill, so that word i of
// the destination takes pattern word i % period. Words wholly inside the
// range are stored whole; the (at most two) words at its edges are stored
// byte by byte, so that no byte outside the range is written. Word indices
// are 64-bit: a fill may exceed 2^32 words.
//
// The work-group size is specialization constant 0 (the host caps 256 by the
// device's limits); any number of work-groups covers the range (grid stride).
//
// The layout of `Params` is mirrored by `shaders.rs` (`plan_fill`).
#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require

layout(local_size_x = 256, local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint w[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer Bytes { uint8_t b[]; };

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Params {
    uint64_t dst;     // 4-byte aligned base of the words written
    uint64_t end;     // one past the last byte of the range, from dst
    uint head;        // first byte of the range, from dst (0 to 3)
    uint period;      // words in the expanded pattern
    uint64_t pad;
    uint pattern[];   // the expanded pattern
};

layout(push_constant) uniform Push { Params params; };

void main() {
    Params p = params;
    uint64_t nwords = (p.end + 3ul) / 4ul;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    // The pattern word of word i, kept without 64-bit divisions.
    uint j = gl_GlobalInvocationID.x % p.period;
    uint step = stride % p.period;
    for (uint64_t i = uint64_t(gl_GlobalInvocationID.x); i < nwords; i += uint64_t(stride)) {
        uint value = p.pattern[j];
        uint64_t first = i * 4ul;
        if (first >= uint64_t(p.head) && first + 4ul <= p.end) {
            Words(p.dst + first).w[0] = value;
        } else {
            for (uint k = 0u; k < 4u; k++) {
                uint64_t at = first + uint64_t(k);
                if (at >= uint64_t(p.head) && at < p.end) {
                    Bytes(p.dst + at).b[0] = uint8_t(value >> (8u * k));
                }
            }
        }
        j += step;
        if (j >= p.period) {
            j -= p.period;
        }
    }
}
