//! The built-ins DPC++'s device code calls for group algorithms and
//! `atomic_ref`, in SPIR-V kernels, on every OpenCL device that builds
//! SPIR-V: natively where the driver has them (Intel's OpenCL CPU runtime),
//! and on PoCL 3.1, whose kernel library lacks them, through the ones the
//! adapter links into the translated module (`src/spir.rs`): sub-groups (the
//! checks hold for any sub-group size the device picks), work-group
//! collectives, atomics on generic pointers to global and local memory, a
//! floating-point atomic add, and `frexp` through a generic pointer. One
//! more kernel has no such built-in but goes the same way (it uses generic
//! pointers): dpnp's histogram set-up in its race-free form, a helper the
//! adapter inlines copying values into local memory for a work-group leader
//! to read after a barrier.
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
const SUB_GROUPS: &str = r#"
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

/// Per work-item: five words of work-group collectives and its exponent of
/// `frexp` through a generic pointer; one float sum of atomic adds.
const WORK_GROUPS: &str = r#"
// cl_ext_float_atomics' add, as DPC++'s atomic_ref<float>::fetch_add reaches
// OpenCL (clang's header leaves it out for SPIR).
float __attribute__((overloadable)) atomic_fetch_add_explicit(volatile __global atomic_float *p, float v,
                                                               memory_order o, memory_scope s);

// A helper that reaches a collective, as DPC++'s reduce_over_group does:
// a function of its own in the SPIR-V (clang -O0), which the adapter marks
// to be inlined so that each work-group gets its own scratch on PoCL.
uint reduce_of(uint x) { return work_group_reduce_add(x); }

__kernel void work_group_view(__global uint *view, __global float *sum, __global int *exponents) {
    size_t gid = get_global_id(0);
    uint lid = (uint)get_local_id(0);
    __global uint *v = view + gid * 5;
    v[0] = reduce_of(lid);
    v[1] = work_group_scan_inclusive_add(lid);
    v[2] = work_group_scan_exclusive_max(lid);
    v[3] = work_group_broadcast(lid * 3, 5);
    v[4] = work_group_all(lid < 100) + 2 * work_group_any(lid == 7);
    atomic_fetch_add_explicit((volatile __global atomic_float *)sum, 0.5f, memory_order_relaxed, memory_scope_device);
    int exponent;
    int *generic_exponent = &exponent;
    frexp((float)(gid + 1), generic_exponent);
    exponents[gid] = exponent;
}
"#;

/// Atomics through generic pointers to global and to local memory: one global
/// counter, and per work-item what it saw of its group's counter.
const GENERIC_ATOMICS: &str = r#"
// OpenCL C 2.0's atomics on generic pointers, as DPC++'s atomic_ref reaches
// OpenCL (clang's header leaves them out for SPIR).
uint __attribute__((overloadable)) atomic_fetch_add_explicit(volatile atomic_uint *p, uint v, memory_order o,
                                                              memory_scope s);
uint __attribute__((overloadable)) atomic_load_explicit(volatile atomic_uint *p, memory_order o, memory_scope s);

__kernel void generic_atomics(__global uint *counter, __global uint *seen) {
    uint lid = (uint)get_local_id(0);
    __local uint local_counter;
    if (lid == 0) local_counter = 0;
    work_group_barrier(CLK_LOCAL_MEM_FENCE);
    // Generic pointers to global and to local memory.
    volatile atomic_uint *global_counter = (volatile atomic_uint *)counter;
    volatile atomic_uint *group_counter = (volatile atomic_uint *)&local_counter;
    atomic_fetch_add_explicit(global_counter, 1u, memory_order_relaxed, memory_scope_device);
    uint before = atomic_fetch_add_explicit(group_counter, 1u, memory_order_relaxed, memory_scope_work_group);
    work_group_barrier(CLK_LOCAL_MEM_FENCE);
    seen[get_global_id(0)] =
        atomic_load_explicit(group_counter, memory_order_relaxed, memory_scope_work_group) + 1000 * (before < 16);
}
"#;

/// dpnp's histogram set-up (`EdgesDd::init`) as DPC++ emits it, with the
/// barrier dpnp's own lacks (docs/clients.md): a helper of its own reached
/// through a generic pointer to a private struct of local and global
/// pointers copies each dimension's edge count into local memory, one per
/// work-item, and after a barrier the group's first work-item reads every
/// count to find each dimension's first and last edge. The local arguments
/// differ in size and the histogram copies before them change size between
/// launches, so the counts move. PoCL runs a work-group's work-items one
/// after another between barriers: were the barrier lost in inlining, or the
/// counts read from another place than they were copied to, the leader would
/// read what `fill_local` left there.
const COOPERATIVE_COPY: &str = r#"
typedef struct {
    __local ulong *counts;
    __local float *lo;
    __local float *hi;
    __global const ulong *global_counts;
    __global const float *edges;
    uint dims;
} Edges;

__attribute__((noinline)) void edges_init(const Edges *e) {
    size_t lid = get_local_id(0), items = get_local_size(0);
    for (size_t i = lid; i < e->dims; i += items) e->counts[i] = e->global_counts[i];
    work_group_barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        __global const float *edge = e->edges;
        for (uint d = 0; d < e->dims; d++) {
            ulong count = e->counts[d];
            e->lo[d] = edge[0];
            e->hi[d] = edge[count - 1];
            edge += count;
        }
    }
}

__kernel void edge_bounds(__local uint *copies, uint copy_words, __local ulong *counts, __local float *lo,
                          __local float *hi, __global const ulong *global_counts, __global const float *edges,
                          uint dims, __global float *bounds) {
    size_t lid = get_local_id(0), items = get_local_size(0);
    for (size_t i = lid; i < copy_words; i += items) copies[i] = 0;
    Edges e = {counts, lo, hi, global_counts, edges, dims};
    edges_init(&e);
    work_group_barrier(CLK_LOCAL_MEM_FENCE);
    __global float *out = bounds + get_group_id(0) * dims * 2;
    for (size_t d = lid; d < dims; d += items) {
        out[d * 2] = lo[d];
        out[d * 2 + 1] = hi[d];
    }
}

__kernel void fill_local(__local ulong *scratch, uint words, ulong value) {
    for (size_t i = get_local_id(0); i < words; i += get_local_size(0)) scratch[i] = value;
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
        trials.push(ignored("group_builtins".into(), why, required("UR_RS_REQUIRE_DEVICES", "opencl")));
    }
    let missing = ["clang-15", "llvm-spirv-15"]
        .into_iter()
        .find(|tool| Command::new(tool).arg("--version").output().is_err())
        .map(|tool| format!("{tool} is not installed (Debian: clang-15, llvm-spirv-15)"));
    for device in devices {
        let tests: [(&str, &'static str, Check); 4] = [
            ("sub_groups", SUB_GROUPS, check_sub_groups),
            ("work_groups", WORK_GROUPS, check_work_groups),
            ("generic_atomics", GENERIC_ATOMICS, check_generic_atomics),
            ("cooperative_copy", COOPERATIVE_COPY, check_cooperative_copy),
        ];
        for (test, source, check) in tests {
            let name = format!("{test}::{}", device.info().name);
            let device = device.clone();
            trials.push(match (&missing, driver_lacks(&device, test)) {
                (Some(why), _) => {
                    ignored(name, why.clone(), std::env::var("UR_RS_REQUIRE_TOOLS").is_ok_and(|v| v == "1"))
                }
                (None, Some(why)) => ignored(name, why.into(), false),
                (None, None) => Trial::test(name, move || check(&device, &compile(source)?).map_err(Failed::from)),
            });
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Why `device`'s driver cannot run `test`'s kernel, where the driver's own
/// built-ins run it (not the adapter's) and lack something.
fn driver_lacks(device: &Device, test: &str) -> Option<&'static str> {
    let native = device.info().extensions.iter().any(|e| e == "cl_intel_subgroups" || e == "cl_khr_subgroups");
    (native && test == "generic_atomics" && device.info().vendor.contains("Intel")).then_some(
        "Intel's OpenCL CPU runtime 2026.2 does not resolve atomics on generic pointers in SPIR-V from \
         llvm-spirv-15 (`_Z10atomic_addPU3AS4Vii`): the driver's own built-ins, not the adapter's",
    )
}

/// `source` as SPIR-V.
fn compile(source: &str) -> Result<Vec<u8>, String> {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("cmdbuf-opencl-group-builtins-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = |name: &str| -> PathBuf { dir.join(name) };
    let result = (|| {
        std::fs::write(file("k.cl"), source).map_err(|e| e.to_string())?;
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
            .arg("--spirv-ext=+SPV_INTEL_subgroups,+SPV_EXT_shader_atomic_float_add")
            .arg(file("k.bc"))
            .arg("-o")
            .arg(file("k.spv")))?;
        std::fs::read(file("k.spv")).map_err(|e| e.to_string())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A check of one kernel on one device.
type Check = fn(&Device, &[u8]) -> Result<(), String>;

/// The words each allocation of a launch holds after it, in argument order.
type LaunchWords = Vec<Vec<u32>>;

/// An argument of a launch.
enum Arg {
    /// A device allocation of this many 32-bit words, zeroed.
    Zeroed(usize),
    /// A device allocation holding these words.
    Words(Vec<u32>),
    /// Local memory of this many bytes.
    Local(usize),
    /// A value: its bytes.
    Value(Vec<u8>),
}

/// Runs `kernel` of `spirv` over 64 work-items in groups of 16, with one
/// zeroed allocation of `words[i]` 32-bit words as argument `i`.
/// The words each argument holds after the launch, and the kernel's
/// `max_sub_group_size` as the adapter answers it.
fn run_kernel(device: &Device, spirv: &[u8], kernel: &str, words: &[usize]) -> Result<(LaunchWords, u32), String> {
    let args: Vec<Arg> = words.iter().map(|&n| Arg::Zeroed(n)).collect();
    let (mut out, max_sub_group_size) = run_kernels(device, spirv, &[(kernel, args)])?;
    Ok((out.remove(0), max_sub_group_size))
}

/// Launches kernels of `spirv` one after another on one queue, each over 64
/// work-items in groups of 16; launches of one name share one kernel object.
/// Per launch, the words its allocations hold after it, and the first
/// kernel's `max_sub_group_size` as the adapter answers it.
fn run_kernels(
    device: &Device,
    spirv: &[u8],
    launches: &[(&str, Vec<Arg>)],
) -> Result<(Vec<LaunchWords>, u32), String> {
    let e = |e: cmdbuf_core::UrError| e.to_string();
    let context = Context::new(device).map_err(e)?;
    let program = Program::new(&context, &ProgramBundle::from_il(spirv).map_err(e)?).map_err(e)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(e)?;
    let mut kernels: Vec<(&str, Kernel)> = Vec::new();
    let mut max_sub_group_size = None;
    let mut outputs = Vec::new();
    for (name, launch_args) in launches {
        if !kernels.iter().any(|(n, _)| n == name) {
            kernels.push((name, Kernel::new(&program, name).map_err(e)?));
        }
        let kernel = &kernels.iter().find(|(n, _)| n == name).expect("created above").1;
        max_sub_group_size.get_or_insert_with(|| kernel.max_sub_group_size());
        let mut allocations = Vec::new();
        for arg in launch_args {
            let words = match arg {
                Arg::Zeroed(n) => vec![0; *n],
                Arg::Words(words) => words.clone(),
                Arg::Local(_) | Arg::Value(_) => continue,
            };
            let allocation = UsmAllocation::new(&context, UsmKind::Device, words.len() * 4).map_err(e)?;
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            queue.write_usm(allocation.ptr(), &bytes, &[]).map_err(e)?;
            allocations.push((allocation, words.len()));
        }
        queue.finish().map_err(e)?;
        let mut next = allocations.iter();
        let args: Vec<KernelArg> = launch_args
            .iter()
            .map(|arg| match arg {
                Arg::Zeroed(_) | Arg::Words(_) => KernelArg::Pointer(next.next().expect("one a pointer").0.ptr()),
                Arg::Local(bytes) => KernelArg::Local(*bytes),
                Arg::Value(bytes) => KernelArg::Value(bytes),
            })
            .collect();
        // SAFETY: the kernels of this file write at most the words given per
        // argument, and their local memory within the sizes given, for 64
        // work-items.
        let done =
            unsafe { queue.launch_kernel(&KernelLaunch::new(kernel, &[ITEMS], &args).local_size(&[LOCAL]), &[]) }
                .map_err(e)?;
        let out = allocations
            .iter()
            .map(|(allocation, n)| {
                let mut bytes = vec![0u8; n * 4];
                queue.read_usm(allocation.ptr(), &mut bytes, &[&done]).map_err(e)?;
                Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
            })
            .collect::<Result<_, String>>()?;
        outputs.push(out);
    }
    Ok((outputs, max_sub_group_size.unwrap_or(0)))
}

fn check_sub_groups(device: &Device, spirv: &[u8]) -> Result<(), String> {
    let (out, queried_max) = run_kernel(device, spirv, "sub_group_view", &[ITEMS * 8, ITEMS * 2])?;
    let (view, shuffled) = (&out[0], &out[1]);
    // The kernel's own largest sub-group, not the device's (Intel's CPU
    // runtime compiles each kernel for one width of several; dpnp's radix
    // sort sizes its work by this answer).
    if view[1] != queried_max {
        return Err(format!(
            "the kernel runs sub-groups of up to {}, its max_sub_group_size says {queried_max}",
            view[1]
        ));
    }
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

fn check_work_groups(device: &Device, spirv: &[u8]) -> Result<(), String> {
    let (out, _) = run_kernel(device, spirv, "work_group_view", &[ITEMS * 5, 1, ITEMS])?;
    let (view, sum, exponents) = (&out[0], f32::from_bits(out[1][0]), &out[2]);
    for gid in 0..ITEMS {
        let lid = (gid % LOCAL) as u32;
        let expected = [
            (0..LOCAL as u32).sum(),
            lid * (lid + 1) / 2,
            // The identity of max on unsigned values is 0.
            lid.saturating_sub(1),
            15,
            1 + 2,
        ];
        let got = &view[gid * 5..gid * 5 + 5];
        if got != expected {
            return Err(format!("work-item {gid}: got {got:?}, expected {expected:?}"));
        }
        // frexp(gid + 1): a mantissa in [0.5, 1) and this exponent.
        let exponent = usize::BITS - (gid + 1).leading_zeros();
        if exponents[gid] != exponent {
            return Err(format!("work-item {gid}: frexp exponent {}, expected {exponent}", exponents[gid]));
        }
    }
    if sum != ITEMS as f32 * 0.5 {
        return Err(format!("float atomic adds: {sum}, expected {}", ITEMS as f32 * 0.5));
    }
    Ok(())
}

fn check_generic_atomics(device: &Device, spirv: &[u8]) -> Result<(), String> {
    let (out, _) = run_kernel(device, spirv, "generic_atomics", &[1, ITEMS])?;
    let (counter, seen) = (out[0][0], &out[1]);
    let expected = vec![LOCAL as u32 + 1000; ITEMS];
    if counter != ITEMS as u32 || *seen != expected {
        return Err(format!("counter {counter} (expected {ITEMS}), group counters seen {seen:?}"));
    }
    Ok(())
}

fn check_cooperative_copy(device: &Device, spirv: &[u8]) -> Result<(), String> {
    // Three dimensions of 4, 6 and 3 edges, numbered in one flat array.
    let counts: [u64; 3] = [4, 6, 3];
    let total = counts.iter().sum::<u64>() as usize;
    let edges: Vec<u32> = (0..total).map(|i| (i as f32 + 0.5).to_bits()).collect();
    let expected: Vec<f32> = counts
        .iter()
        .scan(0, |first, &count| {
            let bounds = [*first as f32 + 0.5, (*first + count - 1) as f32 + 0.5];
            *first += count;
            Some(bounds)
        })
        .flatten()
        .collect();
    let groups = ITEMS / LOCAL;
    // Stale counts of 1 would make each last edge the first: wrong, but
    // within the edges.
    const FILL_WORDS: u32 = 2048;
    let fill = || {
        (
            "fill_local",
            vec![Arg::Local(FILL_WORDS as usize * 8), u32_arg(FILL_WORDS), Arg::Value(1u64.to_le_bytes().to_vec())],
        )
    };
    let dims = counts.len();
    let bounds = |copy_words: u32| {
        (
            "edge_bounds",
            vec![
                Arg::Local(copy_words as usize * 4),
                u32_arg(copy_words),
                Arg::Local(dims * 8),
                Arg::Local(dims * 4),
                Arg::Local(dims * 4),
                Arg::Words(counts.iter().flat_map(|&c| [c as u32, (c >> 32) as u32]).collect()),
                Arg::Words(edges.clone()),
                u32_arg(dims as u32),
                Arg::Zeroed(groups * dims * 2),
            ],
        )
    };
    let launches = [fill(), bounds(100), fill(), bounds(1100), fill(), bounds(7)];
    let (out, _) = run_kernels(device, spirv, &launches)?;
    for (launch, copy_words) in [(1, 100), (3, 1100), (5, 7)] {
        let got: Vec<f32> = out[launch][2].iter().map(|&w| f32::from_bits(w)).collect();
        for (group, bounds) in got.chunks_exact(dims * 2).enumerate() {
            if bounds != expected {
                return Err(format!(
                    "{copy_words} words of copies, work-group {group}: bounds {bounds:?}, expected {expected:?}"
                ));
            }
        }
    }
    Ok(())
}

fn u32_arg(value: u32) -> Arg {
    Arg::Value(value.to_le_bytes().to_vec())
}
