//! The kernels of the `programs` group: programs given as bytes, whose
//! signatures are read from the code (`ProgramBundle::from_il`,
//! `ProgramBundle::from_binary`), never declared.
//!
//! | kernel | arguments | effect |
//! |---|---|---|
//! | `scale_add` | DST: f32*, SRC: f32*, A: f32, P: {scale: f32, bias: i32}, N: u64 | `DST[gid0] = SRC[gid0] * A * P.scale + P.bias` for `gid0 < N` |
//! | `group_sum` | DST: u32*, SRC: u32*, S: local | `DST[group0] = sum of SRC over the group` (through S) |
//! | `fixed_size` | DST: u32* | `DST[gid0] = lrange0 * 1000 + lid0`, required work-group size 4 |
//! | `link_scale` | DATA: i32*, S: i32 | `DATA[gid0] = DATA[gid0] * S + 1`, through a function of another module |
//!
//! Forms: OpenCL C compiled to SPIR-V (`programs/opencl.cl`), GLSL compiled
//! to SPIR-V with the Vulkan kernel ABI (`programs/*.comp`), PTX of plain CUDA
//! kernels (`programs/cuda.cu`, no `group_sum`: CUDA kernels take no local
//! arguments), and a CPU kernel table of the C functions below. `link_scale`
//! is SPIR-V only, in two modules compiled apart (`programs/link_kernel.cl`
//! calls a function that only `programs/link_library.cl` defines), which
//! run once linked. The files are committed; `programs/regenerate.sh`
//! remakes them.

use std::ffi::c_void;

use cmdbuf::cpu_table::{ARG_GLOBAL, ARG_LOCAL, ARG_VALUE, CArg, CKernel, CTable, MAGIC, VERSION};
use cmdbuf::{CGroup, ProgramBundle, SourceForm, UrError};

/// SPIR-V of OpenCL kernels: every kernel of the group.
pub const OPENCL_SPIRV: &[u8] = include_bytes!("programs/opencl.spv");
/// SPIR-V of `link_scale`, which calls `scaled_plus_one` of [`LINK_LIBRARY`].
pub const LINK_KERNEL: &[u8] = include_bytes!("programs/link_kernel.spv");
/// SPIR-V of `scaled_plus_one(x, s) = x * s + 1`: no kernel, a function to link with.
pub const LINK_LIBRARY: &[u8] = include_bytes!("programs/link_library.spv");
/// PTX of `scale_add` and `fixed_size`.
pub const PTX: &[u8] = include_bytes!("programs/cuda.ptx");
/// `(kernel, GLSL file, SPIR-V)` of the Vulkan compute shaders, one per kernel.
pub const VULKAN: [(&str, &str, &[u8]); 3] = [
    ("scale_add", "scale_add.comp", include_bytes!("programs/scale_add.spv")),
    ("group_sum", "group_sum.comp", include_bytes!("programs/group_sum.spv")),
    ("fixed_size", "fixed_size.comp", include_bytes!("programs/fixed_size.spv")),
];

/// The `params_t` value argument of `scale_add`.
#[derive(Copy, Clone, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Params {
    /// Multiplies.
    pub scale: f32,
    /// Is added.
    pub bias: i32,
}

/// The host model of `scale_add`.
pub fn scale_add_reference(src: &[f32], a: f32, p: Params, n: usize) -> Vec<f32> {
    src.iter().enumerate().map(|(i, x)| if i < n { x * a * p.scale + p.bias as f32 } else { 0.0 }).collect()
}

/// # Safety
/// Called by the CPU adapter with a valid group and `scale_add`'s arguments.
unsafe extern "C" fn scale_add(group: *const CGroup, args: *const *mut c_void) -> i32 {
    // SAFETY: the kernel table declares global, global, 4-byte, 8-byte and
    // 8-byte arguments; the launch gives allocations covering every id < n.
    unsafe {
        let g = &*group;
        let dst = *(*args.add(0) as *const *mut f32);
        let src = *(*args.add(1) as *const *const f32);
        let a = std::ptr::read_unaligned(*args.add(2) as *const f32);
        let p = std::ptr::read_unaligned(*args.add(3) as *const Params);
        let n = std::ptr::read_unaligned(*args.add(4) as *const u64);
        for l in 0..g.local_size[0] {
            let i = g.group_id[0] * g.local_size[0] + l + g.global_offset[0];
            if (i as u64) < n {
                *dst.add(i) = *src.add(i) * a * p.scale + p.bias as f32;
            }
        }
        0
    }
}

/// # Safety
/// As for [`scale_add`], with `group_sum`'s arguments.
unsafe extern "C" fn group_sum(group: *const CGroup, args: *const *mut c_void) -> i32 {
    // SAFETY: global, global, local; the local buffer holds the size given
    // at launch, checked against the group before use.
    unsafe {
        let g = &*group;
        let dst = *(*args.add(0) as *const *mut u32);
        let src = *(*args.add(1) as *const *const u32);
        let scratch = *args.add(2) as *mut u32;
        let n = g.local_size[0];
        let base = g.group_id[0] * n + g.global_offset[0];
        for l in 0..n {
            *scratch.add(l) = *src.add(base + l);
        }
        *dst.add(g.group_id[0]) = (0..n).fold(0u32, |s, l| s.wrapping_add(*scratch.add(l)));
        0
    }
}

/// # Safety
/// As for [`scale_add`], with `fixed_size`'s argument.
unsafe extern "C" fn fixed_size(group: *const CGroup, args: *const *mut c_void) -> i32 {
    // SAFETY: one global argument covering the launch.
    unsafe {
        let g = &*group;
        let dst = *(*args.add(0) as *const *mut u32);
        for l in 0..g.local_size[0] {
            *dst.add(g.group_id[0] * g.local_size[0] + l + g.global_offset[0]) =
                g.local_size[0] as u32 * 1000 + l as u32;
        }
        0
    }
}

static SCALE_ADD_ARGS: [CArg; 5] = [
    CArg { kind: ARG_GLOBAL, size: 0 },
    CArg { kind: ARG_GLOBAL, size: 0 },
    CArg { kind: ARG_VALUE, size: 4 },
    CArg { kind: ARG_VALUE, size: 8 },
    CArg { kind: ARG_VALUE, size: 8 },
];
static GROUP_SUM_ARGS: [CArg; 3] =
    [CArg { kind: ARG_GLOBAL, size: 0 }, CArg { kind: ARG_GLOBAL, size: 0 }, CArg { kind: ARG_LOCAL, size: 0 }];
static FIXED_SIZE_ARGS: [CArg; 1] = [CArg { kind: ARG_GLOBAL, size: 0 }];

/// The kernel table's entries; `static` so that the table outlives every program.
struct Entries([CKernel; 3]);
// SAFETY: the entries point to static strings, arrays and functions only.
unsafe impl Sync for Entries {}

static ENTRIES: Entries = Entries([
    CKernel {
        name: c"scale_add".as_ptr(),
        entry: Some(scale_add),
        num_args: 5,
        reserved: 0,
        args: SCALE_ADD_ARGS.as_ptr(),
        reqd_work_group_size: [0; 3],
    },
    CKernel {
        name: c"group_sum".as_ptr(),
        entry: Some(group_sum),
        num_args: 3,
        reserved: 0,
        args: GROUP_SUM_ARGS.as_ptr(),
        reqd_work_group_size: [0; 3],
    },
    CKernel {
        name: c"fixed_size".as_ptr(),
        entry: Some(fixed_size),
        num_args: 1,
        reserved: 0,
        args: FIXED_SIZE_ARGS.as_ptr(),
        reqd_work_group_size: [4, 1, 1],
    },
]);

/// The bytes of the CPU kernel table, as a C program passes them to
/// `urProgramCreateWithBinary`.
pub fn cpu_table() -> Vec<u8> {
    let table = CTable { magic: MAGIC, version: VERSION, num_kernels: 3, reserved: 0, kernels: ENTRIES.0.as_ptr() };
    // SAFETY: CTable is plain `repr(C)` data without padding; these are its bytes.
    unsafe { std::slice::from_raw_parts((&raw const table).cast::<u8>(), size_of::<CTable>()) }.to_vec()
}

/// The program holding `kernel` in the form the device builds best, read
/// from its bytes; `None` when the device builds none of the forms, or the
/// form has no such kernel (`group_sum` in PTX).
pub fn bundle_for(forms: &[SourceForm], kernel: &str) -> Option<Result<ProgramBundle, UrError>> {
    forms.iter().find_map(|form| match form {
        // SAFETY: the table points to statics.
        SourceForm::Native => Some(unsafe { ProgramBundle::from_binary(&cpu_table()) }),
        SourceForm::SpirvKernel => Some(ProgramBundle::from_il(OPENCL_SPIRV)),
        SourceForm::SpirV => VULKAN.iter().find(|v| v.0 == kernel).map(|v| ProgramBundle::from_il(v.2)),
        // SAFETY: PTX holds no pointers.
        SourceForm::Ptx if kernel != "group_sum" => Some(unsafe { ProgramBundle::from_binary(PTX) }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    /// The Vulkan library's signatures, declared by hand, are what the reader
    /// finds in its SPIR-V.
    #[test]
    fn vulkan_library_signatures_read_back() {
        let declared = crate::kernels::signatures();
        for (kernel, _, spv) in crate::kernels::vulkan::SOURCES {
            let bundle = cmdbuf::ProgramBundle::from_il(spv).unwrap_or_else(|e| panic!("{kernel}: {e}"));
            let read = &bundle.signatures()[0];
            let expected = declared.iter().find(|s| s.name == kernel).expect("declared");
            assert_eq!(read.args, expected.args, "{kernel}");
        }
    }
}
