//! Tests of the CUDA adapter the conformance suite cannot reach: the
//! driver-absent path, the PTX path, the kernel ABI check, kernel-reported
//! failures in command buffers, empty launches enabled by updates, program
//! loads and frees while a user event gates work, held work waited for
//! across devices, compositions over two GPUs (with an NCCL all-reduce
//! captured inside), copies and fills in command buffers (the adapter's own
//! kernels), eager launches in stream order (those handed to the launcher
//! included), what the device reports about itself, and command buffers'
//! graphs written as DOT files where `UR_CUDA_GRAPH_DOT` asks (set by this
//! binary to a folder of its own for all its tests).
//!
//! Without a CUDA driver (CI), the device tests are listed ignored and the
//! reason ("no CUDA driver ...") is printed; without NVRTC, so are the tests
//! that compile CUDA C. Run with `--include-ignored`, or with `cuda` named in
//! `UR_RS_REQUIRE_DEVICES`, such a test fails rather than passing without
//! having run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cmdbuf_core::adapter::AdapterFactory;
use cmdbuf_core::{
    AdapterEntry, AppendOptions, Appended, ArgKind, CommandBuffer, CommandBufferDesc, ComposedCommandBuffer,
    ComposedPart, Context, Device, DeviceSelector, Event, EventStatus, Kernel, KernelArg, KernelLaunch,
    KernelLaunchUpdate, KernelSignature, Loader, MemBuffer, MemFlags, Program, ProgramBundle, ProgramSource, Queue,
    QueueProperties, SourceForm, UrError, UserEvent, UsmAllocation, UsmKind,
};
use cmdbuf_cuda::{CudaAdapterFactory, NO_DRIVER};
use libtest_mimic::{Arguments, Failed, Trial};

/// `set_plus_offset(p, v)`: `p[gid0] = v + gid0`, as PTX (generated once by
/// clang's NVPTX back end from CUDA C; any PTX producer works).
const SET_PTX: &str = r#"
.version 6.0
.target sm_70
.address_size 64

.visible .entry set_plus_offset(
	.param .u64 set_plus_offset_param_0,
	.param .u32 set_plus_offset_param_1,
	.param .align 8 .b8 set_plus_offset_param_2[32]
)
{
	.reg .b32 	%r<7>;
	.reg .b64 	%rd<10>;

	ld.param.u64 	%rd1, [set_plus_offset_param_0];
	ld.param.u32 	%r1, [set_plus_offset_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mul.wide.u32 	%rd3, %r2, %r3;
	mov.u32 	%r4, %tid.x;
	cvt.u64.u32 	%rd4, %r4;
	add.s64 	%rd5, %rd3, %rd4;
	ld.param.u64 	%rd6, [set_plus_offset_param_2];
	add.s64 	%rd7, %rd5, %rd6;
	cvt.u32.u64 	%r5, %rd7;
	add.s32 	%r6, %r5, %r1;
	shl.b64 	%rd8, %rd7, 2;
	add.s64 	%rd9, %rd2, %rd8;
	st.global.u32 	[%rd9], %r6;
	ret;
}
"#;

/// CUDA C kernels for the tests, in the kernel ABI of `docs/cuda.md`.
const TEST_CUDA_C: &str = r#"
struct ur_launch { unsigned long long offset[3]; unsigned int *status; };

/* Writes 1 to p[gid0], or reports failure code `fail` when it is non-zero. */
extern "C" __global__ void maybe_fail(unsigned *p, unsigned fail, ur_launch l) {
    if (fail != 0) {
        if (threadIdx.x == 0 && blockIdx.x == 0) { *l.status = fail; __threadfence_system(); }
        return;
    }
    p[blockIdx.x * blockDim.x + threadIdx.x + l.offset[0]] = 1u;
}
"#;

type Test = fn(&Device) -> Result<(), String>;

/// Whether a test compiles CUDA C (through NVRTC) besides the PTX it loads.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Needs {
    Device,
    Nvrtc,
}

/// The folder this binary's command buffers' graphs are written to.
fn dot_folder() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("cmdbuf-cuda-gpu-dot-{}", std::process::id()))
}

fn main() {
    let args = Arguments::from_args();
    // Before any thread starts and before any command buffer is finalized
    // (the adapter reads the variable once).
    if std::fs::create_dir_all(dot_folder()).is_ok() {
        // SAFETY: no other thread runs yet.
        unsafe { std::env::set_var(cmdbuf_cuda::GRAPH_DOT_ENV, dot_folder()) };
    }
    let loader = Loader::load(&[AdapterEntry::Compiled(&CudaAdapterFactory)], DeviceSelector::all());
    let device = loader.devices().into_iter().next();
    // Why the device tests cannot run here, decided before any runs, so that
    // they are listed ignored rather than passing without running.
    let no_device = match &device {
        Some(_) => None,
        None => Some(loader.absent().first().map(|a| a.reason.clone()).unwrap_or_else(|| "no CUDA device".to_string())),
    };
    let no_nvrtc = device
        .as_ref()
        .is_some_and(|d| !has_nvrtc(d))
        .then(|| "NVRTC is not available: the test compiles CUDA C".to_string());
    // Where CUDA is required (the GPU machines), not running is a failure.
    let required = std::env::var("UR_RS_REQUIRE_DEVICES").is_ok_and(|v| v.split(',').any(|d| d.trim() == "cuda"));
    let mut trials = vec![Trial::test("factory_reports_why_the_adapter_is_absent", factory_reason)];
    let tests: [(&str, Needs, Test); 19] = [
        ("ptx_program_runs_eagerly_and_in_a_graph", Needs::Device, ptx_program),
        ("plain_kernels_take_offsets_and_local_memory_in_dpcpp_form", Needs::Device, dpcpp_form),
        ("a_finalized_graph_is_written_as_dot_where_asked", Needs::Device, graph_dot),
        ("kernel_parameters_are_checked_against_the_abi", Needs::Device, abi_mismatch),
        ("kernel_failure_is_reported_by_command_buffer_submissions", Needs::Nvrtc, kernel_failure_in_graph),
        ("empty_launch_updated_to_a_real_one_runs", Needs::Device, empty_launch_update),
        ("statuses_of_many_pending_submissions_stay_their_own", Needs::Nvrtc, many_pending_submissions),
        ("program_loads_and_frees_while_a_user_event_gates_work", Needs::Device, loads_and_frees_while_gated),
        ("native_handle_is_the_executable_graph_after_finalize", Needs::Device, native_handle),
        ("every_device_runs_work", Needs::Device, every_device),
        ("held_work_waits_across_devices", Needs::Device, held_work_across_devices),
        ("command_buffers_of_two_gpus_compose_into_one_graph", Needs::Device, composed_across_devices),
        ("compositions_keep_each_submission_status", Needs::Nvrtc, composed_statuses),
        ("an_all_reduce_between_two_gpus_command_buffers_composes", Needs::Device, composed_collective),
        ("device_information_and_clock", Needs::Device, device_information),
        ("copies_and_fills_in_command_buffers_land_exactly", Needs::Device, graph_copies_and_fills),
        ("eager_launches_complete_in_stream_order", Needs::Device, eager_stream_order),
        ("launches_handed_to_the_launcher_stay_in_queue_order", Needs::Device, launcher_order),
        (
            "an_eager_kernel_failure_is_reported_once_later_work_completed",
            Needs::Nvrtc,
            eager_failure_behind_later_work,
        ),
    ];
    for (name, needs, test) in tests {
        let missing = no_device.clone().or_else(|| if needs == Needs::Nvrtc { no_nvrtc.clone() } else { None });
        let trial = match (&device, missing) {
            (Some(device), None) => {
                let device = device.clone();
                Trial::test(name, move || test(&device).map_err(Failed::from))
            }
            // Run anyway (`--include-ignored`), it fails: it ran nothing.
            (_, Some(reason)) => {
                println!("ignored {name}: {reason}");
                Trial::test(name, move || Err(format!("cannot run here: {reason}").into())).with_ignored_flag(!required)
            }
            (None, None) => unreachable!("no device always has a reason"),
        };
        trials.push(trial);
    }
    libtest_mimic::run(&args, trials).exit();
}

fn factory_reason() -> Result<(), Failed> {
    match CudaAdapterFactory.load() {
        Ok(platforms) => {
            if platforms.is_empty() || platforms[0].devices().is_empty() {
                return Err("the factory succeeded without a device".into());
            }
        }
        Err(reason) => {
            // SAFETY: only probes whether the driver library can be loaded.
            let driver_present = unsafe { libloading::Library::new("libcuda.so.1") }.is_ok();
            if !driver_present && !reason.starts_with(NO_DRIVER) {
                return Err(format!("without libcuda the reason should start with {NO_DRIVER:?}: {reason}").into());
            }
            if reason.is_empty() {
                return Err("empty reason".into());
            }
        }
    }
    Ok(())
}

fn ur(e: UrError) -> String {
    format!("{} ({e})", e.ur_name())
}

fn read_u32(queue: &Queue, alloc: &UsmAllocation, n: usize) -> Result<Vec<u32>, String> {
    let mut bytes = vec![0u8; n * 4];
    queue.read_usm(alloc.ptr(), &mut bytes, &[]).map_err(ur)?;
    Ok(bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn set_program(context: &Context, args: Vec<ArgKind>) -> Result<Program, String> {
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("set_plus_offset", args))
        .source(ProgramSource::Ptx(SET_PTX.into()));
    Program::new(context, &bundle).map_err(ur)
}

fn ptx_program(device: &Device) -> Result<(), String> {
    let context = Context::new(device).map_err(ur)?;
    let program = set_program(&context, vec![ArgKind::Global, ArgKind::Value(4)])?;
    if program.form() != SourceForm::Ptx {
        return Err(format!("built {}", program.form()));
    }
    let kernel = Kernel::new(&program, "set_plus_offset").map_err(ur)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
    let out = UsmAllocation::new(&context, UsmKind::Device, 64 * 4).map_err(ur)?;
    let v = 100u32;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&v)];
    // SAFETY: 32 items from offset 0 write the first 32 of 64 u32s.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[32], &args).local_size(&[8]), &[]) }
        .map_err(ur)?
        .wait()
        .map_err(ur)?;
    let cb = CommandBuffer::new(&context, device, CommandBufferDesc::default()).map_err(ur)?;
    // SAFETY: 32 items from offset 32 write the last 32 of 64 u32s.
    unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[32], &args).global_offset(&[32]),
            &[],
            AppendOptions::new(),
        )
    }
    .map_err(ur)?;
    cb.finalize().map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    let got = read_u32(&queue, &out, 64)?;
    let expected: Vec<u32> = (0..64).map(|i| 100 + i).collect();
    if got != expected {
        return Err(format!("got {got:?}"));
    }
    Ok(())
}

/// Plain kernels from PTX given as a binary in DPC++'s form
/// (kernels/dpcpp_form.cl): an offset runs the `_with_offset` companion
/// eagerly and in a command buffer, also when an update brings one in and
/// takes it away again, and a kernel without one refuses an offset; local
/// accessors are byte offsets into dynamic shared memory, laid out apart
/// eagerly and after an update moves them.
fn dpcpp_form(device: &Device) -> Result<(), String> {
    const PTX: &str = include_str!("kernels/dpcpp_form.ptx");
    let context = Context::new(device).map_err(ur)?;
    // SAFETY: PTX text, no CPU kernel table.
    let bundle = unsafe { ProgramBundle::from_binary(PTX.as_bytes()) }.map_err(ur)?;
    let program = Program::new(&context, &bundle).map_err(ur)?;
    let kernel = Kernel::new(&program, "store_id").map_err(ur)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
    let out = UsmAllocation::new(&context, UsmKind::Device, 96 * 4).map_err(ur)?;
    let args = [KernelArg::Pointer(out.ptr())];
    let ids = |range: std::ops::Range<u32>| -> Vec<u32> { range.collect() };
    // SAFETY: 32 items at offset 64 write u32s 64..96 of 96.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[32], &args).global_offset(&[64]), &[]) }
        .map_err(ur)?
        .wait()
        .map_err(ur)?;
    if read_u32(&queue, &out, 96)?[64..] != ids(64..96) {
        return Err("the eager launch at offset 64 did not write ids 64..96".into());
    }
    let cb = CommandBuffer::new(&context, device, CommandBufferDesc { updatable: true, ..Default::default() })
        .map_err(ur)?;
    // SAFETY: 32 items from offset 0 write u32s 0..32; updated, 32..64.
    let appended =
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[32], &args), &[], AppendOptions::new()) }
            .map_err(ur)?;
    cb.finalize().map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    let handle = appended.command.ok_or("no command handle")?;
    // SAFETY: as appended, from offset 32.
    unsafe { cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).global_offset(&[32])]) }.map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    let got = read_u32(&queue, &out, 96)?;
    if got != ids(0..96) {
        return Err(format!("after the command buffer at offsets 0 and 32: {got:?}"));
    }
    queue.usm_fill(out.ptr(), &[0], 96 * 4, &[]).map_err(ur)?.wait().map_err(ur)?;
    // SAFETY: back to offset 0: u32s 0..32.
    unsafe { cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).global_offset(&[0])]) }.map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    let got = read_u32(&queue, &out, 96)?;
    if got[..32] != ids(0..32) || got[32..].iter().any(|v| *v != 0) {
        return Err(format!("after updating the offset back to 0: {got:?}"));
    }
    let alone = Kernel::new(&program, "no_companion").map_err(ur)?;
    let launch = KernelLaunch::new(&alone, &[32], &args).global_offset(&[32]);
    // SAFETY: refused before anything runs; were it not, u32s 32..64.
    match unsafe { queue.launch_kernel(&launch, &[]) } {
        Err(UrError::UnsupportedFeature(_)) => {}
        Err(e) => return Err(format!("an offset without a companion: {}", ur(e))),
        Ok(_) => return Err("a kernel without a companion took an offset".into()),
    }
    local_accessors(&context, device, &queue, &program)
}

/// `local_pair` over 64 items in blocks of 32, its two local arrays of 32
/// u32s given as local-memory arguments: eagerly, then in a command buffer
/// before and after an update that grows the first (moving the second).
fn local_accessors(context: &Context, device: &Device, queue: &Queue, program: &Program) -> Result<(), String> {
    const ITEMS: usize = 64;
    const BLOCK: usize = 32;
    let kernel = Kernel::new(program, "local_pair").map_err(ur)?;
    let out = UsmAllocation::new(context, UsmKind::Device, ITEMS * 4).map_err(ur)?;
    let expected: Vec<u32> = (0..ITEMS as u32).map(|g| (g + 1) % 32 + 1000 * 2 * (g % 32)).collect();
    let check = |what: &str| -> Result<(), String> {
        let got = read_u32(queue, &out, ITEMS)?;
        if got != expected {
            return Err(format!("{what}: {got:?}"));
        }
        queue.usm_fill(out.ptr(), &[0], ITEMS * 4, &[]).map_err(ur)?.wait().map_err(ur)?;
        Ok(())
    };
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::Local(BLOCK * 4), KernelArg::Local(BLOCK * 4)];
    let launch = KernelLaunch::new(&kernel, &[ITEMS], &args).local_size(&[BLOCK]);
    // SAFETY: 64 items write the 64 u32s of `out`; the local arrays hold a block's 32.
    unsafe { queue.launch_kernel(&launch, &[]) }.map_err(ur)?.wait().map_err(ur)?;
    check("eager")?;
    let cb =
        CommandBuffer::new(context, device, CommandBufferDesc { updatable: true, ..Default::default() }).map_err(ur)?;
    // SAFETY: as the eager launch.
    let appended = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new()) }.map_err(ur)?;
    cb.finalize().map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    check("command buffer")?;
    let handle = appended.command.ok_or("no command handle")?;
    // SAFETY: a larger first array; the kernel still uses 32 u32s of each.
    unsafe { cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).arg(1, KernelArg::Local(1000))]) }
        .map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    check("after growing the first local array")
}

/// Five launches of `set_plus_offset` in one command buffer: once
/// finalized, a DOT file of this process in the folder holds exactly five
/// kernel nodes of that kernel (no other test appends five).
fn graph_dot(device: &Device) -> Result<(), String> {
    const LAUNCHES: usize = 5;
    let context = Context::new(device).map_err(ur)?;
    let program = set_program(&context, vec![ArgKind::Global, ArgKind::Value(4)])?;
    let kernel = Kernel::new(&program, "set_plus_offset").map_err(ur)?;
    let out = UsmAllocation::new(&context, UsmKind::Device, 64 * 4).map_err(ur)?;
    let v = 7u32;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&v)];
    let cb = CommandBuffer::new(&context, device, CommandBufferDesc::default()).map_err(ur)?;
    for _ in 0..LAUNCHES {
        // SAFETY: 32 items from offset 0 write the first 32 of 64 u32s.
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[32], &args), &[], AppendOptions::new()) }
            .map_err(ur)?;
    }
    cb.finalize().map_err(ur)?;
    let prefix = format!("cmdbuf-{}-", std::process::id());
    let entries = std::fs::read_dir(dot_folder()).map_err(|e| format!("{}: {e}", dot_folder().display()))?;
    let mut seen = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(&prefix) || !name.ends_with(".dot") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).map_err(|e| format!("{name}: {e}"))?;
        // The driver escapes the label's `<<<`.
        let kernels = text.matches("set_plus_offset\\<\\<\\<").count();
        if kernels == LAUNCHES {
            return Ok(());
        }
        seen.push(format!("{name}: {kernels}"));
    }
    Err(format!("no DOT file with {LAUNCHES} set_plus_offset nodes; files and their counts: {seen:?}"))
}

fn abi_mismatch(device: &Device) -> Result<(), String> {
    let context = Context::new(device).map_err(ur)?;
    let program = set_program(&context, vec![ArgKind::Global])?;
    match Kernel::new(&program, "set_plus_offset") {
        Err(UrError::InvalidValue(d)) if d.message.contains("ur_launch") => Ok(()),
        // Drivers before CUDA 12.4 cannot list parameters: nothing to check.
        Ok(_) => {
            println!("the driver does not list kernel parameters (cuFuncGetParamInfo): not checked");
            Ok(())
        }
        Err(e) => Err(format!("expected InvalidValue, got {}", ur(e))),
    }
}

/// Whether the device compiles CUDA C (NVRTC was found).
fn has_nvrtc(device: &Device) -> bool {
    device.info().source_forms.first() == Some(&SourceForm::CudaC)
}

fn test_kernel(context: &Context) -> Result<Kernel, String> {
    if !has_nvrtc(context.device()) {
        return Err("NVRTC is not available, yet this test was not listed ignored".into());
    }
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("maybe_fail", [ArgKind::Global, ArgKind::Value(4)]))
        .source(ProgramSource::CudaC(TEST_CUDA_C.into()));
    let program = Program::new(context, &bundle).map_err(ur)?;
    Kernel::new(&program, "maybe_fail").map_err(ur)
}

/// An updatable command buffer launching `maybe_fail(out, code)` over 16
/// items, not finalized, with its queue, output and command handle.
struct FailingBuffer {
    queue: Queue,
    out: UsmAllocation,
    cb: CommandBuffer,
    appended: Appended,
}

fn failing_buffer(device: &Device, code: u32) -> Result<FailingBuffer, String> {
    let context = Context::new(device).map_err(ur)?;
    let kernel = test_kernel(&context)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
    let out = UsmAllocation::new(&context, UsmKind::Device, 16 * 4).map_err(ur)?;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&code)];
    let cb = CommandBuffer::new(&context, device, CommandBufferDesc { updatable: true, ..Default::default() })
        .map_err(ur)?;
    // SAFETY: 16 items over 16 u32s.
    let appended =
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[16], &args), &[], AppendOptions::new()) }
            .map_err(ur)?;
    Ok(FailingBuffer { queue, out, cb, appended })
}

fn kernel_failure_in_graph(device: &Device) -> Result<(), String> {
    let FailingBuffer { queue, out, cb, appended } = failing_buffer(device, 7)?;
    cb.append_usm_fill(out.ptr(), &[0], 4, AppendOptions::new().after(&[appended.sync_point])).map_err(ur)?;
    cb.finalize().map_err(ur)?;
    let first = queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?;
    match first.wait() {
        Err(UrError::AdapterSpecific(d)) if d.message.contains("code 7") => {}
        other => return Err(format!("expected the submission to report code 7, got {other:?}")),
    }
    if first.status() != EventStatus::Error {
        return Err(format!("status {:?}", first.status()));
    }
    let handle = appended.command.ok_or("no command handle")?;
    let ok = 0u32;
    // SAFETY: only the value argument changes.
    unsafe { cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).arg(1, KernelArg::value(&ok))]) }
        .map_err(ur)?;
    let second = queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?;
    second.wait().map_err(|e| format!("the next submission inherited the failure: {}", ur(e)))?;
    let got = read_u32(&queue, &out, 16)?;
    if got[0] != 0 || got[1..].iter().any(|v| *v != 1) {
        return Err(format!("got {got:?}"));
    }
    // The first submission's event still reports its own failure.
    if first.status() != EventStatus::Error {
        return Err("a later submission changed an earlier one's status".into());
    }
    Ok(())
}

/// Eager launches, more than several probe intervals of the adapter's
/// stream clocks (`PROBE_EVERY`, 32): on an in-order queue every event
/// reports complete once the last was waited for (known from the stream's
/// order, without a query of its own), and on an out-of-order queue a
/// fork-join whose branches skip the wait for a fork already seen complete
/// still runs each branch after the fork (the fill would overwrite them).
fn eager_stream_order(device: &Device) -> Result<(), String> {
    const N: usize = 200;
    let context = Context::new(device).map_err(ur)?;
    let program = set_program(&context, vec![ArgKind::Global, ArgKind::Value(4)])?;
    let kernel = Kernel::new(&program, "set_plus_offset").map_err(ur)?;
    let zero = 0u32;
    for out_of_order in [false, true] {
        let queue = Queue::new(&context, QueueProperties { out_of_order, profiling: false }).map_err(ur)?;
        let out = UsmAllocation::new(&context, UsmKind::Device, N * 4).map_err(ur)?;
        let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&zero)];
        let fork = queue.usm_fill(out.ptr(), &[0xff], N * 4, &[]).map_err(ur)?;
        let mut events = Vec::with_capacity(N);
        for i in 0..N {
            let offset = [i];
            let launch = KernelLaunch::new(&kernel, &[1], &args).global_offset(&offset);
            // SAFETY: one item at offset i writes out[i] = i, inside the allocation.
            events.push(unsafe { queue.launch_kernel(&launch, &[&fork]) }.map_err(ur)?);
        }
        let join = queue.barrier(&events.iter().collect::<Vec<_>>()).map_err(ur)?;
        join.wait().map_err(ur)?;
        if let Some(i) = events.iter().position(|e| e.status() != EventStatus::Complete) {
            return Err(format!("out of order {out_of_order}: event {i} reports {:?}", events[i].status()));
        }
        let got = read_u32(&queue, &out, N)?;
        if let Some(i) = (0..N).find(|i| got[*i] != *i as u32) {
            return Err(format!("out of order {out_of_order}: out[{i}] = {:#x}", got[i]));
        }
    }
    Ok(())
}

/// Launches handed to the device's launcher (`launcher.rs`) keep their
/// order with everything the queue issues itself: a chain of launches each
/// storing its index into `out[0]`, a copy of `out[0]` into its own slot
/// every 50 launches (issued by the queue, after the launches before it),
/// an event of the chain waited for from another thread while launches go
/// on, and, once a caller was given the queue's stream, launches made on
/// the caller's thread again. Each copy must see the launch just before it.
fn launcher_order(device: &Device) -> Result<(), String> {
    const N: usize = 600;
    const EVERY: usize = 50;
    let context = Context::new(device).map_err(ur)?;
    let program = set_program(&context, vec![ArgKind::Global, ArgKind::Value(4)])?;
    let kernel = Kernel::new(&program, "set_plus_offset").map_err(ur)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
    let slots = 1 + N / EVERY;
    let out = UsmAllocation::new(&context, UsmKind::Device, slots * 4).map_err(ur)?;
    let slot = |k: usize| cmdbuf_core::UsmPtr::from_addr(out.ptr().addr() + 4 * k as u64);
    let mut waiter = None;
    for i in 0..N {
        if i == N / 2 {
            // From here on the queue launches on this thread (the caller
            // may put work on the stream between ours).
            queue.native_handle().map_err(ur)?;
        }
        let value = i as u32;
        let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&value)];
        // SAFETY: one item at offset 0 writes out[0] = i, inside the allocation.
        let event = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[1], &args), &[]) }.map_err(ur)?;
        if i == 100 {
            waiter = Some(std::thread::spawn(move || event.wait().map(|()| event.status())));
        }
        if i % EVERY == EVERY - 1 {
            queue.usm_memcpy(slot(1 + i / EVERY), out.ptr(), 4, &[]).map_err(ur)?;
        }
    }
    queue.finish().map_err(ur)?;
    match waiter.ok_or("no waiter")?.join() {
        Ok(Ok(EventStatus::Complete)) => {}
        other => return Err(format!("the event waited for from another thread: {other:?}")),
    }
    let got = read_u32(&queue, &out, slots)?;
    if got[0] != N as u32 - 1 {
        return Err(format!("out[0] = {} after {N} launches", got[0]));
    }
    for (k, seen) in got.iter().enumerate().skip(1) {
        let expected = (k * EVERY - 1) as u32;
        if *seen != expected {
            return Err(format!("copy {k} saw {seen}, expected {expected}"));
        }
    }
    Ok(())
}

/// A failing eager kernel followed by more launches than a probe interval:
/// known complete from a later record on its stream, its event still
/// reports its own failure, and the later ones theirs (none).
fn eager_failure_behind_later_work(device: &Device) -> Result<(), String> {
    let context = Context::new(device).map_err(ur)?;
    let kernel = test_kernel(&context)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
    let out = UsmAllocation::new(&context, UsmKind::Device, 16 * 4).map_err(ur)?;
    let (fail, ok) = (7u32, 0u32);
    let failing = [KernelArg::Pointer(out.ptr()), KernelArg::value(&fail)];
    let passing = [KernelArg::Pointer(out.ptr()), KernelArg::value(&ok)];
    // SAFETY: 16 items over 16 u32s (the failing launch writes only its status).
    let first = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[16], &failing), &[]) }.map_err(ur)?;
    let mut later = Vec::new();
    for _ in 0..100 {
        // SAFETY: as above.
        later.push(unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[16], &passing), &[]) }.map_err(ur)?);
    }
    later.last().ok_or("no launch")?.wait().map_err(ur)?;
    if first.status() != EventStatus::Error {
        return Err(format!("the failing launch reports {:?}", first.status()));
    }
    match first.wait() {
        Err(UrError::AdapterSpecific(d)) if d.message.contains("code 7") => {}
        other => return Err(format!("expected the failing launch to report code 7, got {other:?}")),
    }
    if let Some(i) = later.iter().position(|e| e.status() != EventStatus::Complete) {
        return Err(format!("later launch {i} reports {:?}", later[i].status()));
    }
    Ok(())
}

/// More submissions pending than the status ring has slots (all held by a
/// user event): each still reports its own kernels' status.
fn many_pending_submissions(device: &Device) -> Result<(), String> {
    held_statuses(device, false)
}

/// [`many_pending_submissions`], or, `composed`, the same through a
/// composition of the buffer alone (issue 29): its graph is built again
/// with new rings when one is full, and composed again after the update
/// (checked: two compositions).
fn held_statuses(device: &Device, composed: bool) -> Result<(), String> {
    const HELD: usize = 300;
    // `_out` lives to the end: the kernels write it.
    let FailingBuffer { queue, out: _out, cb, appended } = failing_buffer(device, 0)?;
    cb.finalize().map_err(ur)?;
    let composition = if composed {
        let parts = [ComposedPart::CommandBuffer { buffer: &cb, after: &[] }];
        Some(ComposedCommandBuffer::new(queue.context(), &parts).map_err(ur)?)
    } else {
        None
    };
    let submit = |wait: &[&Event]| {
        match &composition {
            Some(c) => queue.enqueue_composed(c, wait),
            None => queue.enqueue_command_buffer(&cb, wait),
        }
        .map_err(ur)
    };
    let gate = UserEvent::new(queue.context()).map_err(ur)?;
    let mut events = Vec::with_capacity(HELD + 1);
    for _ in 0..HELD {
        events.push(submit(&[gate.event()])?);
    }
    let handle = appended.command.ok_or("no command handle")?;
    let fail = 9u32;
    // SAFETY: only the value argument changes.
    unsafe { cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).arg(1, KernelArg::value(&fail))]) }
        .map_err(ur)?;
    let last = submit(&[])?;
    if let Some(c) = &composition
        && c.compositions() != 2
    {
        return Err(format!("the update was not composed: {} compositions", c.compositions()));
    }
    gate.complete().map_err(ur)?;
    for (i, event) in events.iter().enumerate() {
        event.wait().map_err(|e| format!("submission {i}: {}", ur(e)))?;
    }
    match last.wait() {
        Err(UrError::AdapterSpecific(d)) if d.message.contains("code 9") => Ok(()),
        other => Err(format!("expected the last submission to report code 9, got {other:?}")),
    }
}

fn empty_launch_update(device: &Device) -> Result<(), String> {
    let context = Context::new(device).map_err(ur)?;
    let program = set_program(&context, vec![ArgKind::Global, ArgKind::Value(4)])?;
    let kernel = Kernel::new(&program, "set_plus_offset").map_err(ur)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
    let out = UsmAllocation::new(&context, UsmKind::Device, 8 * 4).map_err(ur)?;
    let v = 5u32;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&v)];
    let cb = CommandBuffer::new(&context, device, CommandBufferDesc { updatable: true, ..Default::default() })
        .map_err(ur)?;
    // SAFETY: an empty launch writes nothing; after the update 8 items write 8 u32s.
    let appended =
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[0], &args), &[], AppendOptions::new()) }
            .map_err(ur)?;
    cb.finalize().map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    if read_u32(&queue, &out, 8)? != vec![0; 8] {
        return Err("the empty launch wrote".into());
    }
    let handle = appended.command.ok_or("no command handle")?;
    // SAFETY: 8 items over 8 u32s.
    unsafe { cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).global_size(&[8])]) }.map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    let expected: Vec<u32> = (0..8).map(|i| 5 + i).collect();
    let got = read_u32(&queue, &out, 8)?;
    if got != expected {
        return Err(format!("after enabling: {got:?}"));
    }
    queue.usm_fill(out.ptr(), &[0], 32, &[]).map_err(ur)?.wait().map_err(ur)?;
    // SAFETY: back to an empty launch.
    unsafe { cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).global_size(&[0])]) }.map_err(ur)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    if read_u32(&queue, &out, 8)? != vec![0; 8] {
        return Err("the launch made empty again still wrote".into());
    }
    Ok(())
}

/// Fails the process when `done` is not set within 60 s, naming the last
/// step reached: a deadlock is reported rather than hanging the run.
fn watchdog(test: &'static str) -> (Arc<AtomicBool>, impl Fn(&'static str)) {
    let step: Arc<Mutex<&'static str>> = Arc::new(Mutex::new("start"));
    let done = Arc::new(AtomicBool::new(false));
    let (watched, last_step) = (done.clone(), step.clone());
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(60));
        if !watched.load(Ordering::SeqCst) {
            let at = *last_step.lock().unwrap_or_else(|e| e.into_inner());
            eprintln!("{test}: deadlocked (60 s) at step `{at}`");
            std::process::exit(3);
        }
    });
    (done, move |name: &'static str| *step.lock().unwrap_or_else(|e| e.into_inner()) = name)
}

/// A user program's sequence that deadlocked while streams waited for user
/// events on the device (issue 16): work gated by a user event (eager, on
/// another queue through its event, in order behind it, and a command-buffer
/// launch whose graph waits for it), then, from the same thread and while
/// the event is unset, program loads (in this adapter instance and in a
/// second one on the same primary context, which loads its own module too),
/// frees of every kind and a command buffer built and dropped. Completing the
/// event then runs the held work, with its results checked.
fn loads_and_frees_while_gated(device: &Device) -> Result<(), String> {
    let (done, reached) = watchdog("program_loads_and_frees_while_a_user_event_gates_work");
    let context = Context::new(device).map_err(ur)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
    let other = Queue::new(&context, QueueProperties { out_of_order: true, profiling: true }).map_err(ur)?;
    let [mem, copy, graph_out] = [0; 3].map(|_| UsmAllocation::new(&context, UsmKind::Device, 64).map_err(ur));
    let (mem, copy, graph_out) = (mem?, copy?, graph_out?);
    let gate = UserEvent::new(&context).map_err(ur)?;
    let held = queue.usm_fill(mem.ptr(), &[9], 64, &[gate.event()]).map_err(ur)?;
    // Held through `held`, on another queue: it must wait for the fill.
    let copied = other.usm_memcpy(copy.ptr(), mem.ptr(), 64, &[&held]).map_err(ur)?;
    let cb = CommandBuffer::new(&context, device, CommandBufferDesc::default()).map_err(ur)?;
    let waits = [gate.event()];
    cb.append_usm_fill(graph_out.ptr(), &[5], 64, AppendOptions::new().wait_events(&waits)).map_err(ur)?;
    cb.finalize().map_err(ur)?;
    let launched = other.enqueue_command_buffer(&cb, &[]).map_err(ur)?;

    reached("program build while gated");
    let program = set_program(&context, vec![ArgKind::Global, ArgKind::Value(4)])?;
    let kernel = Kernel::new(&program, "set_plus_offset").map_err(ur)?;
    let out = UsmAllocation::new(&context, UsmKind::Device, 16 * 4).map_err(ur)?;
    let v = 40u32;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&v)];
    // SAFETY: 16 items write 16 u32s; in order behind the held fill.
    let kernel_run = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[16], &args), &[]) }.map_err(ur)?;

    reached("allocations and frees while gated");
    for kind in [UsmKind::Device, UsmKind::Host, UsmKind::Shared] {
        if let Ok(a) = UsmAllocation::new(&context, kind, 1 << 20) {
            drop(a);
        }
    }
    drop(MemBuffer::new(&context, MemFlags::READ_WRITE, 4096).map_err(ur)?);
    reached("program unload while gated");
    let unloaded = set_program(&context, vec![ArgKind::Global, ArgKind::Value(4)])?;
    drop(unloaded);
    reached("command buffer built and dropped while gated");
    let scratch = CommandBuffer::new(&context, device, CommandBufferDesc::default()).map_err(ur)?;
    scratch.append_usm_fill(out.ptr(), &[1], 4, AppendOptions::new()).map_err(ur)?;
    scratch.finalize().map_err(ur)?;
    drop(scratch);
    reached("second adapter instance loads a program while gated");
    {
        let loader = Loader::load(&[AdapterEntry::Compiled(&CudaAdapterFactory)], DeviceSelector::all());
        let second = loader.devices().into_iter().next().ok_or("a second adapter instance found no device")?;
        let second_context = Context::new(&second).map_err(ur)?;
        drop(set_program(&second_context, vec![ArgKind::Global, ArgKind::Value(4)])?);
    }

    for (what, event) in [("fill", &held), ("copy", &copied), ("launch", &launched), ("kernel", &kernel_run)] {
        if event.status() != EventStatus::Queued {
            return Err(format!("the {what} is {:?} before its user event completed", event.status()));
        }
    }
    reached("user event complete");
    gate.complete().map_err(ur)?;
    reached("held work wait");
    for event in [&held, &copied, &launched, &kernel_run] {
        event.wait().map_err(ur)?;
    }
    let profile = copied.profiling_info().map_err(ur)?;
    if !(profile.queued <= profile.submit && profile.submit <= profile.start && profile.start <= profile.end) {
        return Err(format!("held copy's times out of order: {profile:?}"));
    }
    reached("results");
    let mut bytes = [0u8; 64];
    for (what, alloc, value) in [("fill", &mem, 9u8), ("copy", &copy, 9), ("command buffer", &graph_out, 5)] {
        queue.read_usm(alloc.ptr(), &mut bytes, &[]).map_err(ur)?;
        if bytes != [value; 64] {
            return Err(format!("{what}: got {bytes:?}"));
        }
    }
    let expected: Vec<u32> = (0..16).map(|i| 40 + i).collect();
    let got = read_u32(&queue, &out, 16)?;
    done.store(true, Ordering::SeqCst);
    if got != expected {
        return Err(format!("kernel: got {got:?}"));
    }
    Ok(())
}

fn native_handle(device: &Device) -> Result<(), String> {
    let context = Context::new(device).map_err(ur)?;
    let mem = UsmAllocation::new(&context, UsmKind::Device, 64).map_err(ur)?;
    let cb = CommandBuffer::new(&context, device, CommandBufferDesc::default()).map_err(ur)?;
    cb.append_usm_fill(mem.ptr(), &[1], 64, AppendOptions::new()).map_err(ur)?;
    // One meaning on every backend (docs/mapping.md): the object an enqueue
    // submits, which exists only once the buffer is finalized.
    match cb.native_handle() {
        Err(UrError::InvalidOperation(_)) => {}
        other => return Err(format!("before finalize: {other:?}, expected InvalidOperation")),
    }
    cb.finalize().map_err(ur)?;
    let exec = cb.native_handle().map_err(ur)?;
    let again = cb.native_handle().map_err(ur)?;
    if exec.0 == 0 || exec != again {
        return Err(format!("executable graph {exec:?}, then {again:?}"));
    }
    Ok(())
}

/// Multi-GPU: every device the driver reports is a device, and each runs work.
fn every_device(_: &Device) -> Result<(), String> {
    let loader = Loader::load(&[AdapterEntry::Compiled(&CudaAdapterFactory)], DeviceSelector::all());
    let devices = loader.devices();
    println!("{} CUDA device(s)", devices.len());
    for (i, device) in devices.iter().enumerate() {
        if device.id().index != i {
            return Err(format!("device {i} has index {}", device.id().index));
        }
        let context = Context::new(device).map_err(ur)?;
        let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
        let mem = UsmAllocation::new(&context, UsmKind::Device, 256).map_err(ur)?;
        queue.usm_fill(mem.ptr(), &[i as u8 + 1], 256, &[]).map_err(ur)?.wait().map_err(ur)?;
        let mut out = [0u8; 256];
        queue.read_usm(mem.ptr(), &mut out, &[]).map_err(ur)?;
        if out != [i as u8 + 1; 256] {
            return Err(format!("device {i}: {:?}", &out[..8]));
        }
    }
    Ok(())
}

/// Work of one GPU waiting, device-side, for work of another GPU's context
/// that is held back on the host behind a user event, and back (issue 29):
/// nothing runs before the event completes, then everything runs in order
/// and nothing stays held (with a held list per device, the second GPU's
/// work waited for a release of its own device that never came, or was
/// issued before the first GPU's work had recorded its event). Two contexts
/// of one GPU where there is one. With peers, GPU 1 pulls GPU 0's gated fill
/// and GPU 0 refills after the pull: GPU 1 must hold the first value.
fn held_work_across_devices(_: &Device) -> Result<(), String> {
    const N: usize = 1 << 22;
    let (done, reached) = watchdog("held_work_waits_across_devices");
    let loader = Loader::load(&[AdapterEntry::Compiled(&CudaAdapterFactory)], DeviceSelector::all());
    let devices = loader.devices();
    let (d0, d1) = (&devices[0], devices.get(1).unwrap_or(&devices[0]));
    let (c0, c1) = (Context::new(d0).map_err(ur)?, Context::new(d1).map_err(ur)?);
    if !(c0.waits_on_events_of(&c1) && c1.waits_on_events_of(&c0)) {
        return Err("CUDA contexts must wait for each other's events".into());
    }
    let q0 = Queue::new(&c0, QueueProperties::default()).map_err(ur)?;
    let q1 = Queue::new(&c1, QueueProperties { out_of_order: true, profiling: false }).map_err(ur)?;
    let (a0, a1) = (
        UsmAllocation::new(&c0, UsmKind::Device, N).map_err(ur)?,
        UsmAllocation::new(&c1, UsmKind::Device, N).map_err(ur)?,
    );
    q1.usm_fill(a1.ptr(), &[1], N, &[]).map_err(ur)?.wait().map_err(ur)?;
    let peer = d1.peer_access(d0).map_err(ur)?.supported;
    if peer {
        d1.enable_peer_access(d0).map_err(ur)?;
    }
    reached("gated work on both devices");
    let gate = UserEvent::new(&c0).map_err(ur)?;
    let filled = q0.usm_fill(a0.ptr(), &[7], N, &[gate.event()]).map_err(ur)?;
    let pulled = if peer {
        q1.usm_copy_peer(a1.ptr(), a0.ptr(), N, &[&filled]).map_err(ur)?
    } else {
        q1.events_wait(&[&filled]).map_err(ur)?
    };
    let refilled = q0.usm_fill(a0.ptr(), &[9], N, &[&pulled]).map_err(ur)?;
    std::thread::sleep(Duration::from_millis(50));
    let statuses = [filled.status(), pulled.status(), refilled.status()];
    if statuses.iter().any(|s| s.is_terminal()) {
        return Err(format!("work ran before the user event completed: {statuses:?}"));
    }
    reached("completing the user event");
    gate.complete().map_err(ur)?;
    refilled.wait().map_err(ur)?;
    if !pulled.status().is_terminal() {
        return Err("GPU 0's refill completed before GPU 1's work it waited for".into());
    }
    let mut bytes = vec![0u8; N];
    q0.read_usm(a0.ptr(), &mut bytes, &[]).map_err(ur)?;
    if bytes.iter().any(|b| *b != 9) {
        return Err("GPU 0's memory is not the refill".into());
    }
    if peer {
        q1.read_usm(a1.ptr(), &mut bytes, &[]).map_err(ur)?;
        if let Some(i) = bytes.iter().position(|b| *b != 7) {
            return Err(format!(
                "GPU 1 pulled {} at byte {i}, expected 7 (the gated fill, not before or after)",
                bytes[i]
            ));
        }
    }
    done.store(true, Ordering::SeqCst);
    Ok(())
}

/// Command buffers of two GPUs' contexts (two contexts of one GPU where
/// there is one) and a peer copy between them composed into one CUDA graph
/// (issue 29): a fill of 7 on GPU 0, its pull by GPU 1, a fill of 9 over
/// the second half there, in that order at every one-launch submission,
/// back to back too; a part replaced (a fill of 5) composes again.
fn composed_across_devices(_: &Device) -> Result<(), String> {
    const N: usize = 1 << 22;
    let loader = Loader::load(&[AdapterEntry::Compiled(&CudaAdapterFactory)], DeviceSelector::all());
    let devices = loader.devices();
    let (d0, d1) = (&devices[0], devices.get(1).unwrap_or(&devices[0]));
    let (c0, c1) = (Context::new(d0).map_err(ur)?, Context::new(d1).map_err(ur)?);
    if !c0.composes_with(&c1) {
        return Err("CUDA contexts must compose".into());
    }
    if !d1.peer_access(d0).map_err(ur)?.supported {
        println!("{d1} cannot reach {d0}'s memory: no peer copy to compose here");
        return Ok(());
    }
    d1.enable_peer_access(d0).map_err(ur)?;
    let (q0, q1) = (
        Queue::new(&c0, QueueProperties::default()).map_err(ur)?,
        Queue::new(&c1, QueueProperties::default()).map_err(ur)?,
    );
    let (a0, a1) = (
        UsmAllocation::new(&c0, UsmKind::Device, N).map_err(ur)?,
        UsmAllocation::new(&c1, UsmKind::Device, N).map_err(ur)?,
    );
    let fill = |context: &Context, ptr, value: u8, size| -> Result<CommandBuffer, String> {
        let cb = CommandBuffer::new(context, context.device(), CommandBufferDesc::default()).map_err(ur)?;
        cb.append_usm_fill(ptr, &[value], size, AppendOptions::new()).map_err(ur)?;
        cb.finalize().map_err(ur)?;
        Ok(cb)
    };
    let first = fill(&c0, a0.ptr(), 7, N)?;
    let last = fill(&c1, a1.ptr().byte_add(N / 2), 9, N / 2)?;
    let parts = [
        ComposedPart::CommandBuffer { buffer: &first, after: &[] },
        ComposedPart::PeerCopy { context: &c1, dst: a1.ptr(), src: a0.ptr(), size: N, after: &[0] },
        ComposedPart::CommandBuffer { buffer: &last, after: &[1] },
    ];
    let composed = ComposedCommandBuffer::new(&c0, &parts).map_err(ur)?;
    if composed.native_handle().map_err(ur)?.0 == 0 {
        return Err("a composition's native handle is its CUgraphExec".into());
    }
    let check = |low: u8, what: &str| -> Result<(), String> {
        let mut bytes = vec![0u8; N];
        q1.read_usm(a1.ptr(), &mut bytes, &[]).map_err(ur)?;
        let wrong = bytes.iter().enumerate().position(|(i, b)| *b != if i < N / 2 { low } else { 9 });
        match wrong {
            None => Ok(()),
            Some(i) => Err(format!("{what}: byte {i} is {}", bytes[i])),
        }
    };
    for round in 0..3 {
        q1.usm_fill(a1.ptr(), &[0], N, &[]).map_err(ur)?.wait().map_err(ur)?;
        q0.enqueue_composed(&composed, &[]).map_err(ur)?.wait().map_err(ur)?;
        check(7, &format!("replay {round}"))?;
    }
    let events = (0..5).map(|_| q0.enqueue_composed(&composed, &[]).map_err(ur)).collect::<Result<Vec<_>, _>>()?;
    for e in &events {
        e.wait().map_err(ur)?;
    }
    check(7, "back-to-back replays")?;
    composed.replace_part(0, &fill(&c0, a0.ptr(), 5, N)?).map_err(ur)?;
    q0.enqueue_composed(&composed, &[]).map_err(ur)?.wait().map_err(ur)?;
    check(5, "after replacing GPU 0's part")
}

/// Command buffers of two GPUs and a captured NCCL all-reduce between them
/// composed into one CUDA graph (issue 29): GPU 0 fills `a0` with 3 and GPU
/// 1 fills `a1` with 4; the all-reduce (bytes, summed in place) makes both
/// 7; then GPU 1 fills the second half of `a1` with 9 and GPU 0 copies `a0`
/// into `b0`. Exact at every one-launch submission, back to back too. A
/// direct launch of the same recording between two submissions runs after
/// the first and before the second (cmdbuf-core orders them): `a0` is then
/// `14` in its first half and `16` in its second. Skips (with the reason)
/// on fewer than two GPUs or without NCCL, unless `UR_RS_REQUIRE_NCCL=1`.
fn composed_collective(_: &Device) -> Result<(), String> {
    use cmdbuf_core::collective::{CollectiveOp, Communicator, DataType, Implementation, ReduceOp};
    const N: usize = 1 << 20;
    let required = std::env::var_os("UR_RS_REQUIRE_NCCL").is_some_and(|v| v != "0");
    let loader = Loader::load(&[AdapterEntry::Compiled(&CudaAdapterFactory)], DeviceSelector::all());
    let devices = loader.devices();
    let [d0, d1, ..] = &devices[..] else {
        println!("skipped: an all-reduce between two GPUs needs two; this machine has {}", devices.len());
        return if required { Err("UR_RS_REQUIRE_NCCL is set, and there is one GPU".into()) } else { Ok(()) };
    };
    let (c0, c1) = (Context::new(d0).map_err(ur)?, Context::new(d1).map_err(ur)?);
    let comm = match Communicator::with_implementation(&[&c0, &c1], Implementation::Native) {
        Ok(comm) => comm,
        Err(UrError::UnsupportedFeature(reason)) if !required => {
            println!("skipped: no native collectives: {reason}");
            return Ok(());
        }
        Err(e) => return Err(ur(e)),
    };
    let (q0, q1) = (
        Queue::new(&c0, QueueProperties::default()).map_err(ur)?,
        Queue::new(&c1, QueueProperties::default()).map_err(ur)?,
    );
    let (a0, b0, a1) = (
        UsmAllocation::new(&c0, UsmKind::Device, N).map_err(ur)?,
        UsmAllocation::new(&c0, UsmKind::Device, N).map_err(ur)?,
        UsmAllocation::new(&c1, UsmKind::Device, N).map_err(ur)?,
    );
    let op = CollectiveOp::AllReduce { count: N, op: ReduceOp::Sum };
    let recorded = comm.record(op, DataType::U8, &[(a0.ptr(), a0.ptr()), (a1.ptr(), a1.ptr())]).map_err(ur)?;
    if !recorded.is_captured() {
        // UR_RS_NCCL_CAPTURE=0, or a capture that failed (logged).
        let reason = "the all-reduce is not captured into a CUDA graph";
        println!("skipped: {reason}");
        return if required { Err(reason.into()) } else { Ok(()) };
    }
    let buffer = |context: &Context, build: &dyn Fn(&CommandBuffer) -> Result<(), UrError>| {
        let cb = CommandBuffer::new(context, context.device(), CommandBufferDesc::default()).map_err(ur)?;
        build(&cb).map_err(ur)?;
        cb.finalize().map_err(ur)?;
        Ok::<_, String>(cb)
    };
    let fill0 = buffer(&c0, &|cb| cb.append_usm_fill(a0.ptr(), &[3], N, AppendOptions::new()).map(drop))?;
    let fill1 = buffer(&c1, &|cb| cb.append_usm_fill(a1.ptr(), &[4], N, AppendOptions::new()).map(drop))?;
    let after1 =
        buffer(&c1, &|cb| cb.append_usm_fill(a1.ptr().byte_add(N / 2), &[9], N / 2, AppendOptions::new()).map(drop))?;
    let after0 = buffer(&c0, &|cb| cb.append_usm_memcpy(b0.ptr(), a0.ptr(), N, AppendOptions::new()).map(drop))?;
    let parts = [
        ComposedPart::CommandBuffer { buffer: &fill0, after: &[] },
        ComposedPart::CommandBuffer { buffer: &fill1, after: &[] },
        ComposedPart::Collective { recorded: &recorded, after: &[0, 1] },
        ComposedPart::CommandBuffer { buffer: &after1, after: &[2] },
        ComposedPart::CommandBuffer { buffer: &after0, after: &[2] },
    ];
    let composed = ComposedCommandBuffer::new(&c0, &parts).map_err(ur)?;
    if composed.native_handle().map_err(ur)?.0 == 0 {
        return Err("a composition's native handle is its CUgraphExec".into());
    }
    let read = |queue: &Queue, alloc: &UsmAllocation| -> Result<Vec<u8>, String> {
        let mut bytes = vec![0u8; N];
        queue.read_usm(alloc.ptr(), &mut bytes, &[]).map_err(ur)?;
        Ok(bytes)
    };
    let expect = |bytes: &[u8], low: u8, high: u8, what: &str| -> Result<(), String> {
        match bytes.iter().enumerate().position(|(i, b)| *b != if i < N / 2 { low } else { high }) {
            None => Ok(()),
            Some(i) => {
                Err(format!("{what}: byte {i} is {}, expected {}", bytes[i], if i < N / 2 { low } else { high }))
            }
        }
    };
    let check = |what: &str| -> Result<(), String> {
        expect(&read(&q0, &a0)?, 7, 7, &format!("{what}, a0"))?;
        expect(&read(&q0, &b0)?, 7, 7, &format!("{what}, b0"))?;
        expect(&read(&q1, &a1)?, 7, 9, &format!("{what}, a1"))
    };
    let clear = || -> Result<(), String> {
        q0.usm_fill(a0.ptr(), &[0], N, &[]).map_err(ur)?.wait().map_err(ur)?;
        q0.usm_fill(b0.ptr(), &[0], N, &[]).map_err(ur)?.wait().map_err(ur)?;
        q1.usm_fill(a1.ptr(), &[0], N, &[]).map_err(ur)?.wait().map_err(ur)
    };
    for round in 0..4 {
        clear()?;
        q0.enqueue_composed(&composed, &[]).map_err(ur)?.wait().map_err(ur)?;
        check(&format!("launch {round}"))?;
    }
    clear()?;
    let events = (0..8).map(|_| q0.enqueue_composed(&composed, &[]).map_err(ur)).collect::<Result<Vec<_>, _>>()?;
    for e in &events {
        e.wait().map_err(ur)?;
    }
    check("back-to-back launches")?;
    // A direct launch, nothing in its wait lists: ordered after the
    // composition's last submission all the same.
    clear()?;
    q0.enqueue_composed(&composed, &[]).map_err(ur)?;
    for e in recorded.enqueue(&[(&q0, &[]), (&q1, &[])]).map_err(ur)? {
        e.wait().map_err(ur)?;
    }
    expect(&read(&q0, &a0)?, 14, 16, "a direct launch after the composition, a0")?;
    expect(&read(&q1, &a1)?, 14, 16, "a direct launch after the composition, a1")?;
    // And the composition's next submission after the direct launch.
    q0.enqueue_composed(&composed, &[]).map_err(ur)?.wait().map_err(ur)?;
    check("a launch after the direct one")?;
    if composed.compositions() != 1 {
        return Err(format!("composed {} times; nothing changed", composed.compositions()));
    }
    Ok(())
}

/// [`held_statuses`] through a composition.
fn composed_statuses(device: &Device) -> Result<(), String> {
    held_statuses(device, true)
}

/// What the driver tells about the device, as `DeviceInfo` holds it, and the
/// device clock: the device/host pair advances with the host clock, and a
/// profiled command between two pairs runs between their device times.
fn device_information(device: &Device) -> Result<(), String> {
    let info = device.info();
    println!(
        "{}: version {}, {} MHz, memory {:?}, cache {:?}, UUID {:?}, PCI {:?}, sub-groups {:?}",
        info.name,
        info.version,
        info.max_clock_mhz.unwrap_or(0),
        info.memory_hardware,
        info.global_mem_cache,
        info.uuid,
        info.pci_address,
        info.sub_groups
    );
    let (major, minor) = info.version.split_once('.').ok_or_else(|| format!("version {}", info.version))?;
    let cc: (i32, i32) = (major.parse().map_err(|_| "major")?, minor.parse().map_err(|_| "minor")?);
    let check = |ok: bool, what: &str| if ok { Ok(()) } else { Err(format!("{what}: {info:?}")) };
    check(info.vendor_id == 0x10DE, "vendor id")?;
    check(info.ip_version == Some((cc.0 * 10 + cc.1) as u32), "IP version")?;
    check(info.uuid.is_some_and(|u| u != [0; 16]), "UUID")?;
    check(info.pci_address.as_ref().is_some_and(|a| a.len() == 12 && a.as_bytes()[4] == b':'), "PCI address")?;
    check(info.sub_groups.sizes == [32], "warp size")?;
    check(info.binary_targets == [cmdbuf_core::BinaryTarget::Nvptx64], "binary targets")?;
    check(info.fp.half.is_empty() == (cc < (5, 3)), "half precision")?;
    check(info.extensions.iter().any(|e| e == "cl_khr_fp64"), "cl_khr_fp64")?;
    check(info.global_mem_cache.size.is_some_and(|s| s > 0), "L2 size")?;
    check(info.memory_hardware.bus_width.is_some_and(|w| w >= 32), "memory bus width")?;
    let free = device.free_memory().map_err(ur)?.ok_or("no free memory reported")?;
    check(free > 0 && free <= info.global_mem_size, "free memory")?;
    let targets = ["spir64", "nvptx64", "native_cpu"];
    if device.select_binary(&targets).map_err(ur)? != 1 {
        return Err("nvptx64 not selected".into());
    }

    let context = Context::new(device).map_err(ur)?;
    let queue = Queue::new(&context, QueueProperties { out_of_order: false, profiling: true }).map_err(ur)?;
    let mem = UsmAllocation::new(&context, UsmKind::Device, 64 << 20).map_err(ur)?;
    queue.usm_fill(mem.ptr(), &[1], 64 << 20, &[]).map_err(ur)?.wait().map_err(ur)?;
    let before = device.global_timestamps().map_err(ur)?;
    let fill = queue.usm_fill(mem.ptr(), &[2], 64 << 20, &[]).map_err(ur)?;
    fill.wait().map_err(ur)?;
    let after = device.global_timestamps().map_err(ur)?;
    let p = fill.profiling_info().map_err(ur)?;
    println!("pairs {before:?} {after:?}, fill {p:?}");
    // Event times are f32 milliseconds from the base event: allow 0.1 ms.
    const SLACK: u64 = 100_000;
    if !(before.device <= p.start + SLACK && p.end <= after.device + SLACK) {
        return Err(format!("the fill ran {p:?} outside {before:?} .. {after:?}"));
    }
    let (device_span, host_span) = (after.device - before.device, after.host - before.host);
    if device_span.abs_diff(host_span) > host_span / 20 + SLACK {
        return Err(format!("device {device_span} ns against host {host_span} ns"));
    }
    Ok(())
}

/// Copies and fills in a command buffer: between device allocations they run
/// as the adapter's copy and fill kernels (`device/memory_kernels.rs`), with
/// host USM on one side as the driver's nodes. Every pattern length of the
/// fill kernel's word and byte paths, one past its parameter (memsets), at
/// aligned and unaligned offsets, and large fills on either side of its
/// byte-by-byte limit; copies of sizes around its 16-byte path at
/// offsets that allow it and offsets that do not. Each region is read back
/// after two replays and compared byte for byte, with the bytes between
/// regions unchanged.
fn graph_copies_and_fills(device: &Device) -> Result<(), String> {
    const SIZE: usize = 256 * 1024;
    let context = Context::new(device).map_err(ur)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(ur)?;
    let alloc = |kind| UsmAllocation::new(&context, kind, SIZE).map_err(ur);
    let (src, filled, copied, host) =
        (alloc(UsmKind::Device)?, alloc(UsmKind::Device)?, alloc(UsmKind::Device)?, alloc(UsmKind::Host)?);
    let source: Vec<u8> = (0..SIZE).map(|i| (i * 7 + 3) as u8).collect();
    queue.write_usm(src.ptr(), &source, &[]).map_err(ur)?;
    for target in [&filled, &copied, &host] {
        queue.write_usm(target.ptr(), &[0xEE; SIZE], &[]).map_err(ur)?;
    }
    let (mut want_filled, mut want_copied, mut want_host) =
        (vec![0xEEu8; SIZE], vec![0xEEu8; SIZE], vec![0xEEu8; SIZE]);

    // In order: each command after the one before, as a SYCL graph of an in-order queue.
    let desc = CommandBufferDesc { in_order: true, ..CommandBufferDesc::default() };
    let cb = CommandBuffer::new(&context, device, desc).map_err(ur)?;
    let chain = |appended: Result<Appended, UrError>| appended.map(drop).map_err(ur);
    let mut at = 0;
    for length in [1usize, 2, 3, 4, 5, 8, 16, 255, 256, 257] {
        for offset in [0usize, 1, 4] {
            let pattern: Vec<u8> = (0..length).map(|i| (i * 13 + length) as u8).collect();
            let (start, size) = (at + offset, length * 3);
            chain(cb.append_usm_fill(filled.ptr().byte_add(start), &pattern, size, AppendOptions::new()))?;
            for (k, byte) in want_filled[start..start + size].iter_mut().enumerate() {
                *byte = pattern[k % length];
            }
            at = (start + size + 16).next_multiple_of(16);
        }
    }
    at = 0;
    for size in [1usize, 15, 16, 17, 48, 4099] {
        for (dst_offset, src_offset) in [(0usize, 0usize), (1, 0), (16, 32), (3, 5)] {
            let (dst, src_at) = (at + dst_offset, at + src_offset);
            let opts = AppendOptions::new();
            chain(cb.append_usm_memcpy(copied.ptr().byte_add(dst), src.ptr().byte_add(src_at), size, opts))?;
            want_copied[dst..dst + size].copy_from_slice(&source[src_at..src_at + size]);
            at = (at + 48 + size).next_multiple_of(16);
        }
    }
    // Fills beyond what the kernel writes byte by byte: an 8-byte pattern
    // (the driver's memsets) and a 4-byte one (the kernel's words).
    for (start, pattern) in [(64 * 1024, &[9u8, 8, 7, 6, 5, 4, 3, 2][..]), (160 * 1024, &[1, 2, 3, 4][..])] {
        let size = 80 * 1024;
        chain(cb.append_usm_fill(filled.ptr().byte_add(start), pattern, size, AppendOptions::new()))?;
        for (k, byte) in want_filled[start..start + size].iter_mut().enumerate() {
            *byte = pattern[k % pattern.len()];
        }
    }
    // Host USM on one side: the driver's memcpy and memset nodes.
    chain(cb.append_usm_memcpy(host.ptr(), src.ptr().byte_add(5), 100, AppendOptions::new()))?;
    want_host[..100].copy_from_slice(&source[5..105]);
    chain(cb.append_usm_fill(host.ptr().byte_add(128), &[1, 2, 3], 30, AppendOptions::new()))?;
    for (k, byte) in want_host[128..158].iter_mut().enumerate() {
        *byte = [1, 2, 3][k % 3];
    }
    chain(cb.append_usm_memcpy(copied.ptr().byte_add(SIZE - 64), host.ptr(), 64, AppendOptions::new()))?;
    want_copied[SIZE - 64..].copy_from_slice(&want_host[..64]);
    cb.finalize().map_err(ur)?;
    for _ in 0..2 {
        queue.enqueue_command_buffer(&cb, &[]).map_err(ur)?.wait().map_err(ur)?;
    }
    for (name, alloc, want) in
        [("filled", &filled, &want_filled), ("copied", &copied, &want_copied), ("host", &host, &want_host)]
    {
        let mut got = vec![0u8; SIZE];
        queue.read_usm(alloc.ptr(), &mut got, &[]).map_err(ur)?;
        if let Some(i) = (0..SIZE).find(|&i| got[i] != want[i]) {
            return Err(format!("{name}: byte {i} is {:#x}, expected {:#x}", got[i], want[i]));
        }
    }
    Ok(())
}
