// The OpenCL work-item functions the stand-ins call, for the PTX build
// (scripts/ur-cts.sh, nvptx64-nvidia-cuda): clang's NVPTX back end has no
// OpenCL library, so they are defined here over PTX's special registers.

// One of PTX's three-dimensional special registers in dimension d (`fill`
// beyond the third).
#define UR_CTS_SREG(name, fill)                                                          \
    static size_t ur_cts_##name(uint d) {                                                \
        return d == 0 ? __nvvm_read_ptx_sreg_##name##_x() : d == 1 ? __nvvm_read_ptx_sreg_##name##_y() \
             : d == 2 ? __nvvm_read_ptx_sreg_##name##_z() : fill;                         \
    }
UR_CTS_SREG(tid, 0)
UR_CTS_SREG(ntid, 1)
UR_CTS_SREG(ctaid, 0)
UR_CTS_SREG(nctaid, 1)

size_t __attribute__((overloadable)) get_local_id(uint d) { return ur_cts_tid(d); }
size_t __attribute__((overloadable)) get_local_size(uint d) { return ur_cts_ntid(d); }
size_t __attribute__((overloadable)) get_global_size(uint d) { return ur_cts_nctaid(d) * ur_cts_ntid(d); }
// A warp (32 threads on every NVIDIA GPU) is the sub-group.
uint __attribute__((overloadable)) get_sub_group_size(void) { return 32; }

// The global offset, as DPC++ passes it to CUDA kernels: a kernel that
// reads it has a companion `<name>_with_offset` taking it as a last
// parameter of three u32, which a launch with an offset runs. build_ptx
// gives every kernel a `ur_cts_global_offset` (zeros in the kernel itself,
// the parameter in its companion) that these read.
typedef struct {
    uint offset[3];
} ur_cts_offset;
static size_t ur_cts_offset_of(ur_cts_offset o, uint d) { return d < 3 ? o.offset[d] : 0; }
#define get_global_offset(d) ur_cts_offset_of(ur_cts_global_offset, (d))
#define get_global_id(d) (ur_cts_ctaid(d) * ur_cts_ntid(d) + ur_cts_tid(d) + get_global_offset(d))

// A local accessor, as DPC++ passes it to CUDA kernels: its byte offset
// into the block's dynamic shared memory, the module's one extern shared
// array, whose address this reads.
__asm__(".extern .shared .align 128 .b8 ur_cts_dynamic_shared[];");
static ulong ur_cts_shared_base(void) {
    ulong base;
    __asm__("mov.u64 %0, ur_cts_dynamic_shared;" : "=l"(base));
    return base;
}
