// The CUDA adapter's copy and fill kernels for command buffers: a CUDA graph
// replays kernel nodes at a near-constant host cost, where the driver's
// launch of memset and memcpy nodes costs about 0.8 µs of host time each
// (docs/cuda.md, "Copies and fills in command buffers"). OpenCL C, compiled
// to PTX by regenerate.sh (clang's NVPTX back end); the PTX is committed.
//
// Each kernel strides over its range by the grid's size, so any grid covers
// it; the adapter sizes the grid to the range.

// The longest fill pattern the fill kernel takes (by value, as a parameter).
#define PATTERN_MAX 256

typedef struct {
    uchar bytes[PATTERN_MAX];
} Pattern;

static ulong first_unit(void) {
    return (ulong)__nvvm_read_ptx_sreg_ctaid_x() * (ulong)__nvvm_read_ptx_sreg_ntid_x() +
           (ulong)__nvvm_read_ptx_sreg_tid_x();
}

static ulong grid_size(void) {
    return (ulong)__nvvm_read_ptx_sreg_nctaid_x() * (ulong)__nvvm_read_ptx_sreg_ntid_x();
}

// Copies `size` bytes from `src` to `dst` (not overlapping): 16 bytes a
// thread and step where both addresses and the size allow, else bytes.
__kernel void ur_rs_copy(__global uchar *dst, __global const uchar *src, ulong size) {
    ulong step = grid_size();
    if ((((ulong)dst | (ulong)src | size) & 15) == 0) {
        __global uint4 *d = (__global uint4 *)dst;
        __global const uint4 *s = (__global const uint4 *)src;
        for (ulong i = first_unit(); i < size / 16; i += step) d[i] = s[i];
    } else {
        for (ulong i = first_unit(); i < size; i += step) dst[i] = src[i];
    }
}

// Fills `size` bytes at `dst` (a multiple of `length`) with the first
// `length` bytes of `pattern`: a 32-bit word a thread and step where the
// pattern repeats within a word and the address and size are word-aligned,
// else bytes.
__kernel void ur_rs_fill(__global uchar *dst, ulong size, uint length, Pattern pattern) {
    ulong step = grid_size();
    if (length <= 4 && 4 % length == 0 && (((ulong)dst | size) & 3) == 0) {
        uint word = 0;
        for (uint b = 0; b < 4; b++) word |= (uint)pattern.bytes[b % length] << (8 * b);
        __global uint *d = (__global uint *)dst;
        for (ulong i = first_unit(); i < size / 4; i += step) d[i] = word;
    } else {
        for (ulong i = first_unit(); i < size; i += step) dst[i] = pattern.bytes[i % length];
    }
}
