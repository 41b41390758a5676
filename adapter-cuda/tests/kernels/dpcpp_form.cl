// Plain CUDA kernels in the form DPC++'s CUDA back end gives them, for the
// device test `plain_kernels_take_offsets_and_local_memory_in_dpcpp_form`
// (tests/gpu.rs). Compiled to PTX, committed beside it, by
// `../../kernels/regenerate.sh dpcpp_form.cl` (checked by tests/kernels.rs).
//
// - `store_id` writes each item's global id at that index, reading no
//   offset; its companion `store_id_with_offset` adds the offset of its last
//   parameter (three u32), as DPC++ emits for a kernel that reads its
//   offset; `no_companion` has none.
// - `local_pair` takes two local accessors as DPC++ does: each a 32-bit
//   byte offset into the block's dynamic shared memory (the module's
//   `extern .shared` array). Each item writes its local id to both, and
//   after the barrier reads its neighbour's from the first and its own,
//   doubled, from the second: overlapping or misplaced regions give other
//   values.

__asm__(".extern .shared .align 128 .b8 dynamic_shared[];");

typedef struct {
    uint offset[3];
} offset3;

static uint global_id_x(void) {
    return __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
}

kernel void store_id(global uint *out) {
    uint id = global_id_x();
    out[id] = id;
}

kernel void store_id_with_offset(global uint *out, offset3 offset) {
    uint id = global_id_x() + offset.offset[0];
    out[id] = id;
}

kernel void no_companion(global uint *out) {
    uint id = global_id_x();
    out[id] = id;
}

static ulong shared_base(void) {
    ulong base;
    __asm__("mov.u64 %0, dynamic_shared;" : "=l"(base));
    return base;
}

kernel void local_pair(global uint *out, uint first_offset, uint second_offset) {
    local uint *first = (local uint *)(shared_base() + first_offset);
    local uint *second = (local uint *)(shared_base() + second_offset);
    uint l = __nvvm_read_ptx_sreg_tid_x();
    uint n = __nvvm_read_ptx_sreg_ntid_x();
    first[l] = l;
    second[l] = 2 * l;
    __nvvm_bar_sync(0);
    out[global_id_x()] = first[(l + 1) % n] + 1000 * second[l];
}
