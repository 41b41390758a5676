//! C kernels given as a kernel table (include/ur_rs_cpu.h) through
//! `ProgramBundle::from_binary`: signatures from the table, arguments of every
//! kind, the required work-group size, a kernel's failure code, and the
//! header's layout against cmdbuf-core's.

mod common;

use std::ffi::c_void;
use std::mem::offset_of;

use cmdbuf_core::cpu_table::{ARG_GLOBAL, ARG_LOCAL, ARG_VALUE, CArg, CKernel, CTable, MAGIC, VERSION};
use cmdbuf_core::{
    ArgKind, CGroup, Context, Kernel, KernelArg, KernelLaunch, Program, ProgramBundle, Queue, UrError, UsmAllocation,
    UsmKind,
};
use common::read_u32;

/// `dst[gid] = a * gid + local_sum`, where local_sum is the group's sum of
/// local ids, gathered through the local argument; fails with 7 when the
/// local memory is too small.
unsafe extern "C" fn affine(group: *const CGroup, args: *const *mut c_void) -> i32 {
    // SAFETY: the adapter passes a valid group and one pointer per declared
    // argument: global, 4-byte value, local.
    unsafe {
        let g = &*group;
        let dst = *(*args.add(0) as *const *mut u32);
        let a = std::ptr::read_unaligned(*args.add(1) as *const u32);
        let scratch = *args.add(2) as *mut u32;
        let n = g.local_size[0];
        for l in 0..n {
            *scratch.add(l) = l as u32;
        }
        let sum: u32 = (0..n).map(|l| *scratch.add(l)).sum();
        for l in 0..n {
            let gid = g.group_id[0] * n + l + g.global_offset[0];
            *dst.add(gid) = a * gid as u32 + sum;
        }
        0
    }
}

/// Writes its local size into each item and fails with the group id + 100
/// for group 1.
unsafe extern "C" fn sized(group: *const CGroup, args: *const *mut c_void) -> i32 {
    // SAFETY: as for `affine`; one global argument.
    unsafe {
        let g = &*group;
        let dst = *(*args.add(0) as *const *mut u32);
        for l in 0..g.local_size[0] {
            *dst.add(g.group_id[0] * g.local_size[0] + l) = g.local_size[0] as u32;
        }
        if g.group_id[0] == 1 { 101 } else { 0 }
    }
}

static AFFINE_ARGS: [CArg; 3] =
    [CArg { kind: ARG_GLOBAL, size: 0 }, CArg { kind: ARG_VALUE, size: 4 }, CArg { kind: ARG_LOCAL, size: 0 }];
static SIZED_ARGS: [CArg; 1] = [CArg { kind: ARG_GLOBAL, size: 0 }];

fn kernels() -> Vec<CKernel> {
    vec![
        CKernel {
            name: c"affine".as_ptr(),
            entry: Some(affine),
            num_args: 3,
            reserved: 0,
            args: AFFINE_ARGS.as_ptr(),
            reqd_work_group_size: [0; 3],
        },
        CKernel {
            name: c"sized".as_ptr(),
            entry: Some(sized),
            num_args: 1,
            reserved: 0,
            args: SIZED_ARGS.as_ptr(),
            reqd_work_group_size: [8, 1, 1],
        },
    ]
}

fn table_bytes(kernels: &[CKernel]) -> Vec<u8> {
    let table = CTable {
        magic: MAGIC,
        version: VERSION,
        num_kernels: kernels.len() as u32,
        reserved: 0,
        kernels: kernels.as_ptr(),
    };
    // SAFETY: CTable is plain data; its bytes are what a C program passes.
    unsafe { std::slice::from_raw_parts((&raw const table).cast::<u8>(), size_of::<CTable>()) }.to_vec()
}

fn setup() -> (Context, Queue) {
    let device = cmdbuf_cpu::default_device();
    let context = Context::new(&device).unwrap();
    let queue = Queue::new(&context, Default::default()).unwrap();
    (context, queue)
}

#[test]
fn c_kernels_run_with_signatures_from_the_table() {
    let (context, queue) = setup();
    let kernels = kernels();
    let bytes = table_bytes(&kernels);
    // SAFETY: the table, its names, argument lists and entry points outlive the program.
    let bundle = unsafe { ProgramBundle::from_binary(&bytes) }.unwrap();
    assert_eq!(bundle.signature("affine").unwrap().args, vec![ArgKind::Global, ArgKind::Value(4), ArgKind::Local]);
    let program = Program::with_options(&context, &bundle, "-O2").unwrap();
    assert_eq!(program.build_options(), "-O2");
    assert_eq!(program.build_log(), "");
    assert_eq!(program.binary(), Some(bytes.clone()));

    let affine = Kernel::new(&program, "affine").unwrap();
    assert_eq!(affine.compile_work_group_size(), None);
    let out = UsmAllocation::new(&context, UsmKind::Shared, 64 * 4).unwrap();
    let a = 3u32;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&a), KernelArg::Local(16 * 4)];
    // SAFETY: the kernel writes one u32 per work-item of a 64-element allocation.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&affine, &[64], &args).local_size(&[16]), &[]) }
        .unwrap()
        .wait()
        .unwrap();
    let expected: Vec<u32> = (0..64).map(|i| 3 * i + (0..16).sum::<u32>()).collect();
    assert_eq!(read_u32(&queue, out.ptr(), 64), expected);

    let sized = Kernel::new(&program, "sized").unwrap();
    assert_eq!(sized.compile_work_group_size(), Some([8, 1, 1]));
    let args = [KernelArg::Pointer(out.ptr())];
    // The required size is the implementation's choice, and the only one allowed.
    // SAFETY: 16 items over a 64-element allocation.
    let event = unsafe { queue.launch_kernel(&KernelLaunch::new(&sized, &[16], &args), &[]) }.unwrap();
    match event.wait() {
        Err(UrError::AdapterSpecific(d)) => assert_eq!(d.native_code, Some(101), "{d}"),
        other => panic!("expected the kernel's code, got {other:?}"),
    }
    assert_eq!(read_u32(&queue, out.ptr(), 16), vec![8; 16], "both groups ran");
    // SAFETY: as above.
    let wrong = unsafe { queue.launch_kernel(&KernelLaunch::new(&sized, &[16], &args).local_size(&[4]), &[]) };
    assert!(matches!(wrong, Err(UrError::InvalidWorkGroupSize(_))), "{wrong:?}");
    // SAFETY: as above.
    let wrong = unsafe { queue.launch_kernel(&KernelLaunch::new(&sized, &[12], &args), &[]) };
    assert!(matches!(wrong, Err(UrError::InvalidWorkGroupSize(_))), "{wrong:?}");
    assert!(matches!(Kernel::new(&program, "nope"), Err(UrError::InvalidKernelName(_))));
}

#[test]
fn malformed_tables_are_invalid_binaries() {
    let good = kernels();
    let check = |kernels: &[CKernel], patch: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = table_bytes(kernels);
        patch(&mut bytes);
        // SAFETY: every pointer in these tables is valid or null.
        let r = unsafe { ProgramBundle::from_binary(&bytes) };
        assert!(matches!(r, Err(UrError::InvalidBinary(_))), "{r:?}");
    };
    check(&good, &|b| b.truncate(20));
    check(&good, &|b| b[4] = 9); // version
    check(&good, &|b| b[8..12].copy_from_slice(&0u32.to_ne_bytes())); // no kernels
    let mut bad = kernels();
    bad[0].entry = None;
    check(&bad, &|_| {});
    let mut bad = kernels();
    bad[1].name = std::ptr::null();
    check(&bad, &|_| {});
    let mut bad = kernels();
    bad[1].name = c"affine".as_ptr();
    check(&bad, &|_| {}); // twice the same name
    static ZERO_VALUE: [CArg; 1] = [CArg { kind: ARG_VALUE, size: 0 }];
    let mut bad = kernels();
    bad[1].args = ZERO_VALUE.as_ptr();
    check(&bad, &|_| {});
    let mut bad = kernels();
    bad[1].reqd_work_group_size = [8, 0, 1];
    check(&bad, &|_| {});
}

/// The C header describes the layout cmdbuf-core reads: a C compiler, where one
/// is installed, checks every size and offset.
#[test]
fn header_matches_the_layout() {
    let header = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let checks = [
        ("sizeof(ur_rs_cpu_group_t)", size_of::<CGroup>()),
        ("offsetof(ur_rs_cpu_group_t, group_id)", offset_of!(CGroup, group_id)),
        ("offsetof(ur_rs_cpu_group_t, global_offset)", offset_of!(CGroup, global_offset)),
        ("sizeof(ur_rs_cpu_arg_t)", size_of::<CArg>()),
        ("sizeof(ur_rs_cpu_kernel_t)", size_of::<CKernel>()),
        ("offsetof(ur_rs_cpu_kernel_t, entry)", offset_of!(CKernel, entry)),
        ("offsetof(ur_rs_cpu_kernel_t, num_args)", offset_of!(CKernel, num_args)),
        ("offsetof(ur_rs_cpu_kernel_t, args)", offset_of!(CKernel, args)),
        ("offsetof(ur_rs_cpu_kernel_t, reqd_work_group_size)", offset_of!(CKernel, reqd_work_group_size)),
        ("sizeof(ur_rs_cpu_table_t)", size_of::<CTable>()),
        ("offsetof(ur_rs_cpu_table_t, kernels)", offset_of!(CTable, kernels)),
        ("UR_RS_CPU_MAGIC", MAGIC as usize),
        ("UR_RS_CPU_VERSION", VERSION as usize),
        ("UR_RS_CPU_ARG_VALUE", ARG_VALUE as usize),
        ("UR_RS_CPU_ARG_LOCAL", ARG_LOCAL as usize),
    ];
    let mut source = String::from("#include <stddef.h>\n#include \"ur_rs_cpu.h\"\n");
    for (i, (expr, value)) in checks.iter().enumerate() {
        source += &format!("_Static_assert({expr} == {value}u, \"check {i}: {expr}\");\n");
    }
    let dir = std::env::temp_dir().join(format!("ur-rs-cpu-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("check.c");
    std::fs::write(&file, source).unwrap();
    let out =
        std::process::Command::new("cc").args(["-std=c11", "-fsyntax-only", "-I"]).arg(&header).arg(&file).output();
    let _ = std::fs::remove_dir_all(&dir);
    match out {
        Ok(out) => assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr)),
        // Never a silent pass: `cc` links this very test binary, so it is
        // missing only where something is broken.
        Err(e) => panic!("no C compiler (`cc`: {e}): the header's layout cannot be checked"),
    }
}
