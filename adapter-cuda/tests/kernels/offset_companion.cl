// Plain CUDA kernels in DPC++'s form for global offsets, for the device test
// `plain_kernels_take_offsets_through_their_companion` (tests/gpu.rs):
// `store_id` writes each item's global id at that index, reading no offset;
// its companion `store_id_with_offset` adds the offset of its last
// parameter (three u32), as DPC++'s CUDA back end emits for a kernel that
// reads its offset; `no_companion` has none. Compiled to PTX, committed
// beside it, by `../../kernels/regenerate.sh offset_companion.cl` (checked
// by tests/kernels.rs).

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
