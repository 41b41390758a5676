//! The library in OpenCL C (the OpenCL adapter). One work-item per table
//! entry; see the module above for semantics. `uint` arithmetic wraps as the
//! table requires. `saxpy_local` uses the adapter's status ABI (`docs/opencl.md`)
//! to report too little local memory, where the native form panics.

/// The OpenCL C source of every kernel of the library.
pub(super) const SOURCE: &str = r#"
// The global linear id without offset, dimension 0 fastest.
static size_t linear_id(void) {
    size_t x = get_global_id(0) - get_global_offset(0);
    size_t y = get_global_id(1) - get_global_offset(1);
    size_t z = get_global_id(2) - get_global_offset(2);
    return x + get_global_size(0) * (y + get_global_size(1) * z);
}

__kernel void saxpy(__global uint* z, uint a, __global const uint* x, __global const uint* y) {
    size_t i = get_global_id(0);
    z[i] = a * x[i] + y[i];
}

__kernel void fill(__global uint* p, uint v) {
    p[get_global_id(0)] = v;
}

__kernel void fill_2d(__global uint* p, uint v) {
    p[linear_id()] = v;
}

__kernel void increment(__global uint* p) {
    p[get_global_id(0)] += 1;
}

__kernel void cpy_and_mult(__global uint* dst, __global const uint* src) {
    size_t i = get_global_id(0);
    dst[i] = src[i] * 2;
}

__kernel void indexers(__global uint* p) {
    __global uint* out = p + linear_id() * 6;
    out[0] = (uint)get_global_id(0);
    out[1] = (uint)get_global_id(1);
    out[2] = (uint)get_global_id(2);
    out[3] = (uint)get_local_id(0);
    out[4] = (uint)get_local_id(1);
    out[5] = (uint)get_local_id(2);
}

// Declares the adapter's status ABI (a status word and each local argument's
// size in bytes after the declared arguments): with too little local memory
// for its work-group it reports status 1 and returns, where the native form
// panics. The check is uniform across the work-group, so no work-item skips
// the barrier that others reach.
__kernel void saxpy_local(__local uint* la, __local uint* lb, __global uint* z, uint a,
                          __global const uint* x, __global const uint* y,
                          __global uint* ur_status, ulong la_bytes, ulong lb_bytes) {
    size_t group = get_local_size(0);
    if (group * sizeof(uint) > la_bytes || 2 * group * sizeof(uint) > lb_bytes) {
        if (get_local_id(0) == 0) *ur_status = 1;
        return;
    }
    size_t i = get_global_id(0);
    size_t l = get_local_id(0);
    la[l] = (uint)i;
    lb[2 * l] = -(uint)i;
    lb[2 * l + 1] = (uint)group;
    barrier(CLK_LOCAL_MEM_FENCE);
    z[i] = a * x[i] + y[i] + la[l] + lb[2 * l] + lb[2 * l + 1];
}

__kernel void axpb(__global uint* p, uint a, uint b) {
    size_t i = get_global_id(0);
    p[i] = p[i] * a + b;
}

__kernel void copy_add(__global uint* dst, __global const uint* src, uint k) {
    size_t i = get_global_id(0);
    dst[i] = src[i] + k;
}

__kernel void empty(void) {}
"#;
