//! Sub-group built-ins in SPIR-V kernels, as DPC++'s group algorithms call
//! them, on every OpenCL device that builds SPIR-V: natively where the driver
//! has sub-groups (Intel's OpenCL CPU runtime), and on PoCL 3.1, whose kernel
//! library has none, through the built-ins of a sub-group of one work-item
//! that the adapter links into the translated module (`src/spir.rs`). The
//! checks hold for any sub-group size the device picks.
//!
//! The kernel is compiled from OpenCL C here, with clang-15 and
//! llvm-spirv-15. Without them, or without an OpenCL device, the test is
//! listed ignored with the reason; it fails when run anyway
//! (`--include-ignored`), or when `UR_RS_REQUIRE_TOOLS=1` or
//! `UR_RS_REQUIRE_DEVICES` names `opencl` (both set by CI).

use std::path::PathBuf;
use std::process::Command;

use cmdbuf_core::{
    AdapterEntry, Context, Device, DeviceSelector, Kernel, KernelArg, KernelLaunch, Loader, Program, ProgramBundle,
    Queue, QueueProperties, SourceForm, UsmAllocation, UsmKind,
};
use cmdbuf_opencl::OpenClAdapterFactory;
use libtest_mimic::{Arguments, Failed, Trial};

/// Per work-item: what the item sees of its sub-group, eight words, then two
/// Intel shuffles.
const KERNEL: &str = r#"
// cl_intel_subgroups, as DPC++'s shuffles reach OpenCL (clang's header
// declares them only for targets that list the extension).
uint __attribute__((overloadable)) intel_sub_group_shuffle(uint x, uint id);
uint __attribute__((overloadable)) intel_sub_group_shuffle_down(uint cur, uint next, uint delta);

__kernel void sub_group_view(__global uint *view, __global uint *shuffled) {
    size_t gid = get_global_id(0);
    uint lid = (uint)get_local_id(0);
    __global uint *v = view + gid * 8;
    v[0] = get_sub_group_size();
    v[1] = get_max_sub_group_size();
    v[2] = get_sub_group_local_id();
    v[3] = get_sub_group_id();
    v[4] = get_num_sub_groups();
    v[5] = sub_group_reduce_add(1u);
    v[6] = sub_group_scan_exclusive_add(1u);
    v[7] = sub_group_broadcast(lid, 0) + 10000 * (sub_group_all(1) + 2 * sub_group_any(lid == 0));
    shuffled[gid * 2] = intel_sub_group_shuffle(lid, 0);
    shuffled[gid * 2 + 1] = intel_sub_group_shuffle_down(lid, lid + 1000, 1);
}
"#;

const ITEMS: usize = 64;
const LOCAL: usize = 16;

fn main() {
    let args = Arguments::from_args();
    let loader = Loader::load(&[AdapterEntry::Compiled(&OpenClAdapterFactory)], DeviceSelector::all());
    let devices: Vec<Device> =
        loader.devices().into_iter().filter(|d| d.info().source_forms.contains(&SourceForm::SpirvKernel)).collect();
    let required = |var: &str, what: &str| std::env::var(var).is_ok_and(|v| v.split(',').any(|d| d.trim() == what));
    let mut trials = Vec::new();
    let ignored = |name: String, why: String, required: bool| {
        println!("ignored {name}: {why}");
        Trial::test(name, move || Err(Failed::from(format!("cannot run here: {why}")))).with_ignored_flag(!required)
    };
    if devices.is_empty() {
        let absent: Vec<&str> = loader.absent().iter().map(|a| a.reason.as_str()).collect();
        let why = format!("no OpenCL device builds SPIR-V ({})", absent.join("; "));
        trials.push(ignored("sub_group_builtins".into(), why, required("UR_RS_REQUIRE_DEVICES", "opencl")));
    }
    let missing = ["clang-15", "llvm-spirv-15"]
        .into_iter()
        .find(|tool| Command::new(tool).arg("--version").output().is_err())
        .map(|tool| format!("{tool} is not installed (Debian: clang-15, llvm-spirv-15)"));
    // Compiled once; a compile error fails every device's test.
    let module = if missing.is_none() && !devices.is_empty() { compile() } else { Err(String::new()) };
    for device in devices {
        let name = format!("sub_group_builtins::{}", device.info().name);
        let module = module.clone();
        trials.push(match &missing {
            None => Trial::test(name, move || check(&device, &module?).map_err(Failed::from)),
            Some(why) => ignored(name, why.clone(), std::env::var("UR_RS_REQUIRE_TOOLS").is_ok_and(|v| v == "1")),
        });
    }
    libtest_mimic::run(&args, trials).exit();
}

/// `KERNEL` as SPIR-V.
fn compile() -> Result<Vec<u8>, String> {
    let dir = std::env::temp_dir().join(format!("cmdbuf-opencl-sub-groups-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = |name: &str| -> PathBuf { dir.join(name) };
    let result = (|| {
        std::fs::write(file("k.cl"), KERNEL).map_err(|e| e.to_string())?;
        let run = |command: &mut Command| -> Result<(), String> {
            let tool = command.get_program().to_string_lossy().into_owned();
            let out = command.output().map_err(|e| format!("{tool}: {e}"))?;
            out.status
                .success()
                .then_some(())
                .ok_or_else(|| format!("{tool}: {}", String::from_utf8_lossy(&out.stderr)))
        };
        run(Command::new("clang-15")
            .args(["-c", "-target", "spir64", "-cl-std=CL2.0", "-O2", "-emit-llvm"])
            .args(["-Xclang", "-no-opaque-pointers", "-Xclang", "-finclude-default-header"])
            .arg(file("k.cl"))
            .arg("-o")
            .arg(file("k.bc")))?;
        run(Command::new("llvm-spirv-15")
            .arg("--spirv-ext=+SPV_INTEL_subgroups")
            .arg(file("k.bc"))
            .arg("-o")
            .arg(file("k.spv")))?;
        std::fs::read(file("k.spv")).map_err(|e| e.to_string())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn check(device: &Device, spirv: &[u8]) -> Result<(), String> {
    let e = |e: cmdbuf_core::UrError| e.to_string();
    let context = Context::new(device).map_err(e)?;
    let program = Program::new(&context, &ProgramBundle::from_il(spirv).map_err(e)?).map_err(e)?;
    let kernel = Kernel::new(&program, "sub_group_view").map_err(e)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(e)?;
    let view = UsmAllocation::new(&context, UsmKind::Device, ITEMS * 8 * 4).map_err(e)?;
    let shuffled = UsmAllocation::new(&context, UsmKind::Device, ITEMS * 2 * 4).map_err(e)?;
    let args = [KernelArg::Pointer(view.ptr()), KernelArg::Pointer(shuffled.ptr())];
    // SAFETY: 64 work-items writing 8 and 2 words each into allocations of
    // 64 * 8 and 64 * 2 words.
    let done = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[ITEMS], &args).local_size(&[LOCAL]), &[]) }
        .map_err(e)?;
    let read = |ptr, words: usize| -> Result<Vec<u32>, String> {
        let mut bytes = vec![0u8; words * 4];
        queue.read_usm(ptr, &mut bytes, &[&done]).map_err(e)?;
        Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    };
    let (view, shuffled) = (read(view.ptr(), ITEMS * 8)?, read(shuffled.ptr(), ITEMS * 2)?);
    for gid in 0..ITEMS {
        let v = &view[gid * 8..gid * 8 + 8];
        let lid = (gid % LOCAL) as u32;
        let (size, max, local) = (v[0], v[1], v[2]);
        let first = lid - local;
        // Sub-groups of a one-dimensional work-group split it in order.
        let expected = [
            size,
            max,
            lid % max,
            lid / max,
            (LOCAL as u32).div_ceil(max),
            size,
            local,
            // all(true), and any(the item of local id 0 is in the sub-group).
            first + 10000 * (1 + 2 * u32::from(first == 0)),
        ];
        let well_formed = size >= 1 && size <= max && local < size;
        if !well_formed || v != expected {
            return Err(format!("work-item {gid}: got {v:?}, expected {expected:?}"));
        }
        let down = if local + 1 < size { lid + 1 } else { first + 1000 + (local + 1 - size) };
        let got = [shuffled[gid * 2], shuffled[gid * 2 + 1]];
        if got != [first, down] {
            return Err(format!("work-item {gid}: shuffles {got:?}, expected {:?}", [first, down]));
        }
    }
    Ok(())
}
