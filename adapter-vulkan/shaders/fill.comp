// The adapter's fill shader: repeats a pattern of 1 to 256 bytes over any
// byte range, for the fills vkCmdFillBuffer cannot do (patterns that do not
// divide 4 bytes, or ranges not aligned to 4 bytes).
//
// The host expands the pattern to `period` words that start at the 4-byte
// aligned address `dst` at or below the first byte to fill, so that word i of
// the destination takes pattern word i % period. Words wholly inside the
// range are stored whole; the (at most two) words at its edges are stored
// byte by byte, so that no byte outside the range is written.
//
// The layout of `Params` is mirrored by `shaders.rs` (FillParams).
#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint w[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer Bytes { uint8_t b[]; };

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Params {
    uint64_t dst;     // 4-byte aligned base of the words written
    uint nwords;      // words from dst that hold at least one byte of the range
    uint head;        // first byte of the range, from dst (0 to 3)
    uint64_t end;     // one past the last byte of the range, from dst
    uint period;      // words in the expanded pattern
    uint pad;
    uint pattern[];   // the expanded pattern
};

layout(push_constant) uniform Push { Params params; };

void main() {
    Params p = params;
    Words words = Words(p.dst);
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.nwords; i += stride) {
        uint value = p.pattern[i % p.period];
        uint64_t first = uint64_t(i) * 4ul;
        if (first >= uint64_t(p.head) && first + 4ul <= p.end) {
            words.w[i] = value;
        } else {
            for (uint k = 0u; k < 4u; k++) {
                uint64_t at = first + uint64_t(k);
                if (at >= uint64_t(p.head) && at < p.end) {
                    Bytes(p.dst + at).b[0] = uint8_t(value >> (8u * k));
                }
            }
        }
    }
}
