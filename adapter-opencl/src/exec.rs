//! Every [`Command`] in its two OpenCL forms: enqueued on a queue (eager
//! operations and the eager steps of command-buffers) and recorded into a
//! `cl_command_buffer_khr`.
//!
//! | command | enqueued | recorded |
//! |---|---|---|
//! | kernel launch | `clEnqueueNDRangeKernel` | `clCommandNDRangeKernelKHR` |
//! | empty launch, prefetch, advise | marker | `ur_noop` kernel |
//! | USM copy | `clEnqueueSVMMemcpy` / `clEnqueueMemcpyINTEL` | `clCommandSVMMemcpyKHR` (SVM, 0.9.4+), else `ur_copy` |
//! | USM fill | `clEnqueueSVMMemFill` (SVM, power-of-two pattern up to 128 bytes, aligned), else `ur_fill` | `clCommandSVMMemFillKHR` (same conditions, 0.9.4+), else `ur_fill` |
//! | buffer copy, rect copy | `clEnqueueCopyBuffer[Rect]` | `clCommandCopyBuffer[Rect]KHR` |
//! | buffer fill | `clEnqueueFillBuffer` (power-of-two pattern up to 128 bytes), else `ur_fill` | `clCommandFillBufferKHR`, else `ur_fill` |
//! | read / write, host memory | `clEnqueueReadBuffer[Rect]` / `clEnqueueWriteBuffer[Rect]` | not recordable: an eager step |
//! | read / write, USM | `ur_copy` / `ur_copy_rect` | `ur_copy` / `ur_copy_rect` |

use std::any::Any;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Arc;

use cl3::types::{cl_command_queue, cl_event, cl_mem};
use cmdbuf_core::NativeCommand;
use cmdbuf_core::adapter::BufferBacking;
use cmdbuf_core::adapter::prelude::*;

use crate::conv::ClResultExt;
use crate::device::{Shared, Usm};
use crate::event::{StatusWord, WaitList};
use crate::ffi::{CommandBufferApi, RawEvent, cl_command_buffer_khr, cl_sync_point_khr};
use crate::helpers::Side;
use crate::kernel_args::Arg;
use crate::launch::{self, Launched, Ptr, Recorded, Target};
use crate::memory::{ClBuffer, ClUsm};
use crate::one_launch::RecordedKernels;
use crate::program::ClKernel;

const CL_FALSE: u32 = 0;

/// Whether a command touches raw host memory, which a command-buffer cannot
/// record: such commands become eager steps.
pub(crate) fn uses_host_memory(command: &Command) -> bool {
    let host = |loc: &MemLoc| matches!(loc, MemLoc::Host(_));
    match command {
        Command::UsmMemcpy { dst, src, .. } => host(dst) || host(src),
        Command::BufferRead { dst, .. } | Command::BufferReadRect { dst, .. } => host(dst),
        Command::BufferWrite { src, .. } | Command::BufferWriteRect { src, .. } => host(src),
        _ => false,
    }
}

fn mem(buffer: &MemBuffer) -> Result<cl_mem> {
    Ok(downcast::<ClBuffer>(buffer.imp() as &dyn Any, "a memory buffer")?.mem())
}

/// The `cl_mem` a kernel argument passes: a sub-buffer's own object.
pub(crate) fn kernel_mem(buffer: &MemBuffer) -> Result<cl_mem> {
    match buffer.sub_buffer_imp() {
        Some(sub) => Ok(downcast::<ClBuffer>(sub as &dyn Any, "a memory buffer")?.mem()),
        None => mem(buffer),
    }
}

fn usm(r: &UsmRef) -> *mut c_void {
    r.address() as *mut c_void
}

fn loc(l: &MemLoc) -> *mut c_void {
    match l {
        MemLoc::Usm(r) => usm(r),
        MemLoc::Host(h) => h.as_ptr().cast(),
    }
}

/// A native fill needs a pattern of 1, 2, 4, ... 128 bytes.
fn native_pattern(pattern: &[u8]) -> bool {
    pattern.len().is_power_of_two() && pattern.len() <= 128
}

/// SVM fills also need the destination aligned to the pattern.
fn native_svm_fill(device_usm: &Usm, dst: &UsmRef, pattern: &[u8]) -> bool {
    matches!(device_usm, Usm::Svm) && svm_fill_fits(dst, pattern)
}

/// A pattern and destination that `clEnqueueSVMMemFill` and
/// `clCommandSVMMemFillKHR` take.
fn svm_fill_fits(dst: &UsmRef, pattern: &[u8]) -> bool {
    native_pattern(pattern) && dst.address().is_multiple_of(pattern.len() as u64)
}

fn origin(layout: &cmdbuf_core::RectLayout) -> [usize; 3] {
    [layout.origin.x, layout.origin.y, layout.origin.z]
}

fn extent(region: &cmdbuf_core::RectRegion) -> [usize; 3] {
    [region.width, region.height, region.depth]
}

fn pitches(layout: &cmdbuf_core::RectLayout) -> [usize; 2] {
    [layout.row_pitch, layout.slice_pitch]
}

/// A side of a helper rect copy.
fn rect_side(ptr: Ptr, layout: &cmdbuf_core::RectLayout) -> Side {
    Side { ptr, offset: layout.origin_offset() }
}

/// A native command on `queue`: a barrier after the wait list, the callback
/// (which enqueues its work on `queue`, behind the barrier), then a barrier
/// after everything before, the callback's work included, whose event is the
/// command's. Barriers, not markers, so that the callback's commands wait on
/// out-of-order queues too.
///
/// # Safety
/// `queue` is a valid queue of the context; the events are valid.
unsafe fn native_command(queue: cl_command_queue, native: &NativeCommand, wait: &WaitList) -> Result<RawEvent> {
    // SAFETY: a valid queue and wait list; an empty list means every earlier command.
    let before = unsafe { cl3::command_queue::enqueue_barrier_with_wait_list(queue, wait.len() as u32, wait.as_ptr()) }
        .cl("clEnqueueBarrierWithWaitList")?;
    // SAFETY: a new reference from the enqueue, released on drop.
    drop(unsafe { RawEvent::from_raw(before) });
    // SAFETY: the target is the queue the command was enqueued on, ordered
    // after its wait list by the barrier and before the barrier below.
    let result = unsafe { native.invoke(Backend::OpenCl, NativeTarget::Queue(NativeHandle(queue as u64))) };
    // SAFETY: a valid queue; the empty list means every earlier command.
    let after = unsafe { cl3::command_queue::enqueue_barrier_with_wait_list(queue, 0, std::ptr::null()) }
        .cl("clEnqueueBarrierWithWaitList")?;
    // SAFETY: a new reference from the enqueue.
    let after = unsafe { RawEvent::from_raw(after) };
    result.map(|()| after)
}

/// Whether a marker on `queue` must be a kernel: on an out-of-order queue
/// (see [`marker`]) or a profiling one (NVIDIA's OpenCL gives markers no
/// timestamps, and a submission's profiling spans its first and last).
fn marker_is_a_kernel(queue: cl_command_queue) -> bool {
    const CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE: u64 = 1;
    const CL_QUEUE_PROFILING_ENABLE: u64 = 2;
    matches!(
        cl3::command_queue::get_command_queue_info(queue, cl3::command_queue::CL_QUEUE_PROPERTIES),
        Ok(cl3::info_type::InfoType::Ulong(p))
            if p & (CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE) != 0
    )
}

/// A command that completes after the events of `wait` and nothing else.
///
/// On an in-order queue it is a marker (an empty list would mean every
/// earlier command: it waits for the context's complete event instead, though
/// the queue's order applies anyway). On an out-of-order queue it is the
/// `ur_noop` kernel: PoCL 3.1 makes a marker on an out-of-order queue wait
/// for every earlier command of the queue, as a barrier would, which
/// serialises independent work (a graph's branches) and makes each marker
/// cost more the longer the queue. On a profiling queue it is `ur_noop` too,
/// so that it has timestamps on every device.
///
/// # Safety
/// `queue` is a valid queue of the context; the events are valid.
pub(crate) unsafe fn marker(shared: &Shared, queue: cl_command_queue, wait: &WaitList) -> Result<RawEvent> {
    if marker_is_a_kernel(queue) {
        let target = Target::queue(shared, queue, wait);
        // SAFETY: a valid queue and wait list.
        return unsafe { shared.helpers.noop(&target)? }.into_event();
    }
    let complete = [shared.complete.get()];
    let (n, list) = if wait.is_empty() { (1, complete.as_ptr()) } else { (wait.len() as u32, wait.as_ptr()) };
    // SAFETY: a valid queue and wait list.
    let event = unsafe { cl3::command_queue::enqueue_marker_with_wait_list(queue, n, list) }
        .cl("clEnqueueMarkerWithWaitList")?;
    // SAFETY: a new reference from the enqueue.
    Ok(unsafe { RawEvent::from_raw(event) })
}

/// Whether a kernel command's kernel declares the status ABI, which only an
/// enqueue can serve (its status word is per launch).
pub(crate) fn has_status_word(command: &Command) -> bool {
    match command {
        Command::KernelLaunch(k) => {
            downcast::<ClKernel>(k.kernel.imp() as &dyn Any, "a kernel").is_ok_and(|kernel| kernel.status_abi)
        }
        _ => false,
    }
}

/// Sets a launch's arguments and launches it; a kernel of the status ABI also
/// gets a new status word and its local-memory sizes.
///
/// # Safety
/// The launch was validated by the front end; the target is valid.
unsafe fn launch_kernel(
    shared: &Arc<Shared>,
    target: &Target<'_>,
    k: &KernelCommand,
) -> Result<(Launched, Option<Arc<StatusWord>>)> {
    let kernel = downcast::<ClKernel>(k.kernel.imp() as &dyn Any, "a kernel")?;
    let status = match (kernel.status_abi, target) {
        (false, _) => None,
        (true, Target::Queue { .. }) => Some(StatusWord::new(shared.clone(), kernel.name.clone())?),
        (true, Target::Record { .. }) => {
            return Err(err!(Unknown, "kernel `{}` has a status word and cannot be recorded", kernel.name));
        }
    };
    let mut objects = kernel.kernel.lock();
    let buffers_at = || k.args.iter().enumerate().filter(|(_, a)| matches!(a, ArgValue::MemObj(_))).map(|(i, _)| i);
    let locked = objects.for_buffers_at(buffers_at)?;
    let raw = locked.kernel.get();
    let device_usm = &shared.device.usm;
    locked.args.begin();
    for (i, arg) in k.args.iter().enumerate() {
        let arg = match arg {
            ArgValue::Value(bytes) => Arg::Value(bytes),
            ArgValue::Pointer(p) if p.is_null() => Arg::Ptr(Ptr::Null),
            ArgValue::Pointer(p) => Arg::Ptr(Ptr::Usm(p.addr() as *mut c_void)),
            ArgValue::MemObj(b) => Arg::Ptr(Ptr::Mem(kernel_mem(b)?)),
            ArgValue::Local(size) => Arg::Local(*size),
        };
        // SAFETY: the kernel is locked; the front end checked each argument
        // against the signature, whose kinds match the OpenCL C source's
        // (argument count checked at kernel creation).
        unsafe { locked.args.set(device_usm, raw, i as u32, arg)? };
    }
    if let Some(status) = &status {
        let mut i = k.args.len() as u32;
        // SAFETY: the status ABI (checked at kernel creation): a global
        // pointer, then one ulong per local argument.
        unsafe {
            launch::set_ptr(device_usm, raw, i, Ptr::Mem(status.mem()))?;
            for arg in &k.args {
                if let ArgValue::Local(size) = arg {
                    i += 1;
                    launch::set_value(raw, i, &(*size as u64).to_ne_bytes())?;
                }
            }
        }
    }
    let r = &k.range;
    // SAFETY: every argument is set; the front end checked the geometry
    // (global sizes non-zero here, divisible by the local sizes, within limits).
    let launched =
        unsafe { launch::launch(target, raw, &kernel.name, r.work_dim, r.global_offset, r.global_size, r.local_size)? };
    Ok((launched, status))
}

/// Enqueues `command` on `queue` after `wait`; returns its event, and the
/// status word of a kernel launch that has one. `in_order`: `queue` is an
/// application's in-order queue (see [`Target::app_queue`]).
///
/// # Safety
/// `command` was validated by the front end for this context; `queue` is a
/// valid queue of it; raw host memory in the command stays valid until the
/// returned event completes.
pub(crate) unsafe fn enqueue(
    shared: &Arc<Shared>,
    queue: cl_command_queue,
    command: &Command,
    wait: &WaitList,
    in_order: bool,
) -> Result<(RawEvent, Option<Arc<StatusWord>>)> {
    // SAFETY: `command` is validated for this context, `queue` is its valid queue and raw host memory
    // outlives the returned event (this function's `# Safety`), which is `enqueue_raw`'s contract.
    match unsafe { enqueue_raw(shared, queue, command, wait, in_order) }? {
        Enqueued::Plain(event) => Ok((event, None)),
        Enqueued::Kernel(launched, status) => Ok((launched.into_event()?, status)),
    }
}

enum Enqueued {
    Plain(RawEvent),
    Kernel(Launched, Option<Arc<StatusWord>>),
}

/// [`enqueue`], without unwrapping a kernel launch: the commands that are
/// no OpenCL transfer first, then the one OpenCL call of a transfer
/// ([`native_transfer`]), else a helper kernel.
///
/// # Safety
/// As for [`enqueue`].
unsafe fn enqueue_raw(
    shared: &Arc<Shared>,
    queue: cl_command_queue,
    command: &Command,
    wait: &WaitList,
    in_order: bool,
) -> Result<Enqueued> {
    let target = Target::app_queue(shared, queue, wait, in_order);
    // SAFETY: the command's invariants hold (front end) and the queue and
    // the wait list are valid (this function's `# Safety`), which is what
    // each of these calls requires.
    unsafe {
        match command {
            Command::Native(native) => return native_command(queue, native, wait).map(Enqueued::Plain),
            Command::KernelLaunch(k) if k.range.global_size.contains(&0) => {
                return marker(shared, queue, wait).map(Enqueued::Plain);
            }
            Command::KernelLaunch(k) => {
                let (launched, status) = launch_kernel(shared, &target, k)?;
                return Ok(Enqueued::Kernel(launched, status));
            }
            Command::UsmPrefetch { .. } | Command::UsmAdvise { .. } => {
                return marker(shared, queue, wait).map(Enqueued::Plain);
            }
            Command::UsmFill { dst, pattern, size, .. } if !native_svm_fill(&shared.device.usm, dst, pattern) => {
                let launched = shared.helpers.fill(
                    &shared.context,
                    &shared.device.usm,
                    &target,
                    Side { ptr: Ptr::Usm(usm(dst)), offset: 0 },
                    pattern,
                    *size,
                )?;
                return Ok(Enqueued::Kernel(launched, None));
            }
            _ => {}
        }
    }
    // SAFETY: the command is validated and the queue and wait list valid
    // (this function's `# Safety`), `native_transfer`'s contract.
    match unsafe { native_transfer(shared, queue, command, wait)? } {
        // SAFETY: a new reference from a successful enqueue.
        Some(raw) => Ok(Enqueued::Plain(unsafe { RawEvent::from_raw(raw) })),
        // SAFETY: the same contract (`enqueue`'s), which `helper_command` asks for
        // its eager form.
        None => Ok(Enqueued::Kernel(unsafe { helper_command(shared, &target, command)? }, None)),
    }
}

/// A transfer as the one OpenCL call that does it, in the queue after the
/// wait list; `None` where OpenCL has none (a helper kernel does it).
///
/// # Safety
/// As for [`enqueue`].
unsafe fn native_transfer(
    shared: &Shared,
    queue: cl_command_queue,
    command: &Command,
    wait: &WaitList,
) -> Result<Option<cl_event>> {
    // SAFETY: the command is validated and the queue and wait list valid
    // (this function's `# Safety`), which each transfer function requires.
    unsafe {
        match command {
            Command::UsmMemcpy { dst: MemLoc::Usm(usm), src: MemLoc::Host(host), size, .. }
                if shared.device.svm_host_copies_staged =>
            {
                staged_svm_host_copy(shared, queue, usm, Staged::FromHost(host.as_ptr()), *size, wait)
            }
            Command::UsmMemcpy { dst: MemLoc::Host(host), src: MemLoc::Usm(usm), size, .. }
                if shared.device.svm_host_copies_staged =>
            {
                staged_svm_host_copy(shared, queue, usm, Staged::IntoHost(host.as_ptr()), *size, wait)
            }
            Command::UsmMemcpy { .. } | Command::UsmFill { .. } => {
                usm_transfer(&shared.device.usm, queue, command, wait)
            }
            Command::BufferCopy { .. } | Command::BufferCopyRect { .. } | Command::BufferFill { .. } => {
                buffer_transfer(queue, command, wait)
            }
            Command::BufferRead { .. } | Command::BufferWrite { .. } => host_transfer(queue, command, wait),
            Command::BufferReadRect { .. } | Command::BufferWriteRect { .. } => {
                host_rect_transfer(queue, command, wait)
            }
            _ => Ok(None),
        }
    }
}

/// The host side of a copy between SVM and host memory.
#[derive(Copy, Clone)]
enum Staged {
    FromHost(*const u8),
    IntoHost(*mut u8),
}

/// A copy between SVM and host memory on a driver whose `clEnqueueSVMMemcpy`
/// with host memory breaks the order of commands
/// ([`DeviceShared::svm_host_copies_staged`]). NVIDIA's OpenCL (H200,
/// driver 580) read the host bytes of a 128-byte copy into SVM when it was
/// enqueued, before the commands it waits for (or the earlier ones of its
/// in-order queue) had written them, and did so too for a buffer write into
/// the allocation seen as a buffer while a user event held the write back;
/// and a command of another queue waiting for a 128-byte copy out of SVM
/// into host memory read that memory before the bytes were there
/// (conformance `eager::host_copy_after_its_memory_is_written`). Host
/// memory is read and written in order by buffer reads and writes of a
/// buffer of the driver's own, so the host side moves through such a
/// buffer, and a device copy moves the bytes between it and the
/// allocation.
///
/// # Safety
/// As for [`enqueue`]: `svm` is checked for `size` bytes, and the host side
/// is host memory valid for `size` bytes until the returned event completes.
unsafe fn staged_svm_host_copy(
    shared: &Shared,
    queue: cl_command_queue,
    svm: &UsmRef,
    host: Staged,
    size: usize,
    wait: &WaitList,
) -> Result<Option<cl_event>> {
    let allocation = downcast::<ClUsm>(svm.imp() as &dyn Any, "a USM allocation")?;
    let (view, at) = allocation.as_buffer()?;
    let at = at + svm.offset();
    // SAFETY: a valid context; no host pointer, so nothing is read here.
    let staging = unsafe {
        cl3::memory::create_buffer(shared.context.get(), cl3::memory::CL_MEM_READ_WRITE, size, std::ptr::null_mut())
    }
    .cl("clCreateBuffer (staging a copy between SVM and the host)")?;
    // Released on return; OpenCL keeps it until the commands using it end.
    let _release = opencl3::memory::Buffer::<u8>::new(staging);
    // The first step waits for the list through a gate the driver does not
    // see through: a wait for another queue's command still running let
    // NVIDIA's driver move the host bytes before that command had.
    let gate = crate::gate::after(shared.context.get(), wait.handles())?;
    let gated = gate.as_ref().map(|g| [g.get()]);
    let (n, list) = gated.as_ref().map_or((0, std::ptr::null()), |g| (1, g.as_ptr()));
    let copy = |from, from_at, to, to_at, n, list: *const cl_event| {
        // SAFETY: both buffers hold their ranges (the allocation's buffer
        // spans it, the front end checked `size` bytes from `svm`, the
        // staging buffer has `size`); the queue and wait list are valid.
        unsafe { cl3::command_queue::enqueue_copy_buffer(queue, from, to, from_at, to_at, size, n, list) }
    };
    let last = match host {
        Staged::FromHost(src) => {
            // SAFETY: the host memory is readable for `size` bytes until the
            // write completes (this function's contract).
            let written = unsafe {
                cl3::command_queue::enqueue_write_buffer(queue, staging, CL_FALSE, 0, size, src.cast(), n, list)
            }
            .cl("clEnqueueWriteBuffer (staging a copy into SVM)")?;
            // SAFETY: a new reference from the enqueue.
            let written = unsafe { RawEvent::from_raw(written) };
            copy(staging, 0, view, at, 1, &written.get()).cl("clEnqueueCopyBuffer (staging a copy into SVM)")?
        }
        Staged::IntoHost(dst) => {
            let copied = copy(view, at, staging, 0, n, list).cl("clEnqueueCopyBuffer (staging a copy out of SVM)")?;
            // SAFETY: a new reference from the enqueue.
            let copied = unsafe { RawEvent::from_raw(copied) };
            // SAFETY: the host memory is writable for `size` bytes until the
            // read completes (this function's contract).
            unsafe {
                cl3::command_queue::enqueue_read_buffer(queue, staging, CL_FALSE, 0, size, dst.cast(), 1, &copied.get())
            }
            .cl("clEnqueueReadBuffer (staging a copy out of SVM)")?
        }
    };
    Ok(Some(last))
}

/// A USM copy, or a fill whose pattern OpenCL's SVM fill takes.
///
/// # Safety
/// As for [`enqueue`].
unsafe fn usm_transfer(
    device_usm: &Usm,
    queue: cl_command_queue,
    command: &Command,
    wait: &WaitList,
) -> Result<Option<cl_event>> {
    let (n, list) = (wait.len() as u32, wait.as_ptr());
    // SAFETY: the command's invariants hold (front end): ranges lie inside
    // their allocations and copies do not overlap; the queue and the wait
    // list are valid; OpenCL copies patterns before returning.
    let raw = unsafe {
        match command {
            Command::UsmMemcpy { dst, src, size, .. } => match device_usm {
                Usm::Intel(api) => {
                    api.memcpy(queue, loc(dst), loc(src), *size, wait.handles()).cl("clEnqueueMemcpyINTEL")?
                }
                _ => cl3::command_queue::enqueue_svm_mem_cpy(queue, CL_FALSE, loc(dst), loc(src), *size, n, list)
                    .cl("clEnqueueSVMMemcpy")?,
            },
            Command::UsmFill { dst, pattern, size, .. } if native_svm_fill(device_usm, dst, pattern) => {
                cl3::command_queue::enqueue_svm_mem_fill(
                    queue,
                    usm(dst),
                    pattern.as_ptr().cast(),
                    pattern.len(),
                    *size,
                    n,
                    list,
                )
                .cl("clEnqueueSVMMemFill")?
            }
            _ => return Ok(None),
        }
    };
    Ok(Some(raw))
}

/// A copy between buffers, or a fill whose pattern OpenCL's fill takes.
///
/// # Safety
/// As for [`enqueue`].
unsafe fn buffer_transfer(queue: cl_command_queue, command: &Command, wait: &WaitList) -> Result<Option<cl_event>> {
    let (n, list) = (wait.len() as u32, wait.as_ptr());
    // SAFETY: the command's invariants hold (front end): ranges lie inside
    // their buffers, copies do not overlap, fill sizes are multiples of the
    // pattern; the queue and the wait list are valid; OpenCL copies patterns
    // before returning.
    let raw = unsafe {
        match command {
            Command::BufferCopy { src, dst, src_offset, dst_offset, size, .. } => {
                cl3::command_queue::enqueue_copy_buffer(
                    queue,
                    mem(src)?,
                    mem(dst)?,
                    *src_offset,
                    *dst_offset,
                    *size,
                    n,
                    list,
                )
                .cl("clEnqueueCopyBuffer")?
            }
            Command::BufferCopyRect { src, dst, src_layout, dst_layout, region, .. } => {
                let (so, dof, r) = (origin(src_layout), origin(dst_layout), extent(region));
                let ([srp, ssp], [drp, dsp]) = (pitches(src_layout), pitches(dst_layout));
                cl3::command_queue::enqueue_copy_buffer_rect(
                    queue,
                    mem(src)?,
                    mem(dst)?,
                    so.as_ptr(),
                    dof.as_ptr(),
                    r.as_ptr(),
                    srp,
                    ssp,
                    drp,
                    dsp,
                    n,
                    list,
                )
                .cl("clEnqueueCopyBufferRect")?
            }
            Command::BufferFill { buffer, pattern, offset, size, .. } if native_pattern(pattern) => {
                cl3::command_queue::enqueue_fill_buffer(
                    queue,
                    mem(buffer)?,
                    pattern.as_ptr().cast(),
                    pattern.len(),
                    *offset,
                    *size,
                    n,
                    list,
                )
                .cl("clEnqueueFillBuffer")?
            }
            _ => return Ok(None),
        }
    };
    Ok(Some(raw))
}

/// A read or write between a buffer and raw host memory.
///
/// # Safety
/// As for [`enqueue`].
unsafe fn host_transfer(queue: cl_command_queue, command: &Command, wait: &WaitList) -> Result<Option<cl_event>> {
    let (n, list) = (wait.len() as u32, wait.as_ptr());
    // SAFETY: the command's invariants hold (front end): the range lies
    // inside the buffer and the host memory, valid until the command
    // completes; the queue and the wait list are valid.
    let raw = unsafe {
        match command {
            Command::BufferRead { buffer, offset, size, dst: MemLoc::Host(host), .. } => {
                cl3::command_queue::enqueue_read_buffer(
                    queue,
                    mem(buffer)?,
                    CL_FALSE,
                    *offset,
                    *size,
                    host.as_ptr().cast(),
                    n,
                    list,
                )
                .cl("clEnqueueReadBuffer")?
            }
            Command::BufferWrite { buffer, offset, size, src: MemLoc::Host(host), .. } => {
                cl3::command_queue::enqueue_write_buffer(
                    queue,
                    mem(buffer)?,
                    CL_FALSE,
                    *offset,
                    *size,
                    host.as_ptr().cast(),
                    n,
                    list,
                )
                .cl("clEnqueueWriteBuffer")?
            }
            _ => return Ok(None),
        }
    };
    Ok(Some(raw))
}

/// A rectangular read or write between a buffer and raw host memory.
///
/// # Safety
/// As for [`enqueue`].
unsafe fn host_rect_transfer(queue: cl_command_queue, command: &Command, wait: &WaitList) -> Result<Option<cl_event>> {
    let (n, list) = (wait.len() as u32, wait.as_ptr());
    // SAFETY: the command's invariants hold (front end): the region lies
    // inside the buffer and the host memory, valid until the command
    // completes; the queue and the wait list are valid.
    let raw = unsafe {
        match command {
            Command::BufferReadRect { buffer, buffer_layout, host_layout, region, dst: MemLoc::Host(host), .. } => {
                let (bo, ho, r) = (origin(buffer_layout), origin(host_layout), extent(region));
                let ([brp, bsp], [hrp, hsp]) = (pitches(buffer_layout), pitches(host_layout));
                cl3::command_queue::enqueue_read_buffer_rect(
                    queue,
                    mem(buffer)?,
                    CL_FALSE,
                    bo.as_ptr(),
                    ho.as_ptr(),
                    r.as_ptr(),
                    brp,
                    bsp,
                    hrp,
                    hsp,
                    host.as_ptr().cast(),
                    n,
                    list,
                )
                .cl("clEnqueueReadBufferRect")?
            }
            Command::BufferWriteRect {
                buffer, buffer_layout, host_layout, region, src: MemLoc::Host(host), ..
            } => {
                let (bo, ho, r) = (origin(buffer_layout), origin(host_layout), extent(region));
                let ([brp, bsp], [hrp, hsp]) = (pitches(buffer_layout), pitches(host_layout));
                cl3::command_queue::enqueue_write_buffer_rect(
                    queue,
                    mem(buffer)?,
                    CL_FALSE,
                    bo.as_ptr(),
                    ho.as_ptr(),
                    r.as_ptr(),
                    brp,
                    bsp,
                    hrp,
                    hsp,
                    host.as_ptr().cast(),
                    n,
                    list,
                )
                .cl("clEnqueueWriteBufferRect")?
            }
            _ => return Ok(None),
        }
    };
    Ok(Some(raw))
}

/// The USM side, `offset` bytes further, of a helper transfer whose other
/// side is a buffer: on SVM devices, the allocation as a buffer (see
/// [`ClUsm::as_buffer`]), so that the launch takes no SVM pointer beside a
/// buffer.
fn usm_beside_buffer(shared: &Shared, r: &UsmRef, offset: usize) -> Result<Side> {
    if !matches!(shared.device.usm, Usm::Svm) {
        return Ok(Side { ptr: Ptr::Usm(usm(r)), offset });
    }
    let allocation = downcast::<ClUsm>(r.imp() as &dyn Any, "a USM allocation")?;
    let (buffer, at) = allocation.as_buffer()?;
    Ok(Side { ptr: Ptr::Mem(buffer), offset: at + r.offset() + offset })
}

/// The commands both forms run with the helper kernels: transfers between
/// buffers and USM, and fills with patterns OpenCL cannot take.
///
/// # Safety
/// As for [`enqueue`] and [`record`].
unsafe fn helper_command(shared: &Shared, target: &Target<'_>, command: &Command) -> Result<Launched> {
    let h = &shared.helpers;
    let device_usm = &shared.device.usm;
    // SAFETY: the command's ranges are valid and do not overlap (front end).
    unsafe {
        match command {
            Command::BufferRead { buffer, offset, size, dst: MemLoc::Usm(dst), .. } => h.copy(
                device_usm,
                target,
                usm_beside_buffer(shared, dst, 0)?,
                Side { ptr: Ptr::Mem(mem(buffer)?), offset: *offset },
                *size,
            ),
            Command::BufferWrite { buffer, offset, size, src: MemLoc::Usm(src), .. } => h.copy(
                device_usm,
                target,
                Side { ptr: Ptr::Mem(mem(buffer)?), offset: *offset },
                usm_beside_buffer(shared, src, 0)?,
                *size,
            ),
            Command::BufferReadRect { buffer, buffer_layout, host_layout, region, dst: MemLoc::Usm(dst), .. } => h
                .copy_rect(
                    device_usm,
                    target,
                    usm_beside_buffer(shared, dst, host_layout.origin_offset())?,
                    pitches(host_layout),
                    rect_side(Ptr::Mem(mem(buffer)?), buffer_layout),
                    pitches(buffer_layout),
                    extent(region),
                ),
            Command::BufferWriteRect { buffer, buffer_layout, host_layout, region, src: MemLoc::Usm(src), .. } => h
                .copy_rect(
                    device_usm,
                    target,
                    rect_side(Ptr::Mem(mem(buffer)?), buffer_layout),
                    pitches(buffer_layout),
                    usm_beside_buffer(shared, src, host_layout.origin_offset())?,
                    pitches(host_layout),
                    extent(region),
                ),
            Command::BufferFill { buffer, pattern, offset, size, .. } => h.fill(
                &shared.context,
                device_usm,
                target,
                Side { ptr: Ptr::Mem(mem(buffer)?), offset: *offset },
                pattern,
                *size,
            ),
            Command::UsmFill { dst, pattern, size, .. } => {
                h.fill(&shared.context, device_usm, target, Side { ptr: Ptr::Usm(usm(dst)), offset: 0 }, pattern, *size)
            }
            Command::UsmMemcpy { dst: MemLoc::Usm(dst), src: MemLoc::Usm(src), size, .. } => h.copy(
                device_usm,
                target,
                Side { ptr: Ptr::Usm(usm(dst)), offset: 0 },
                Side { ptr: Ptr::Usm(usm(src)), offset: 0 },
                *size,
            ),
            other => Err(err!(Unknown, "no helper form for a {} command", other.kind())),
        }
    }
}

/// Records `command` into a command-buffer after the sync points `deps`
/// (and, with `kernels`, after the segment's previous launch of the same
/// kernel: see [`crate::one_launch`]).
///
/// # Safety
/// `command` was validated for this context and does not use raw host memory
/// ([`uses_host_memory`]); `buffer` is recording; `deps` are its sync points.
pub(crate) unsafe fn record(
    shared: &Arc<Shared>,
    api: &CommandBufferApi,
    buffer: cl_command_buffer_khr,
    command: &Command,
    deps: &[cl_sync_point_khr],
    kernels: Option<&RefCell<RecordedKernels>>,
    updatable: cl3::types::cl_bitfield,
) -> Result<Recorded> {
    let target = Target::Record { api, buffer, deps, kernels, updatable: 0 };
    let mutable_target = Target::Record { api, buffer, deps, kernels, updatable };
    let h = &shared.helpers;
    let device_usm = &shared.device.usm;
    // USM pointers in the SVM recording commands: SVM devices, and Intel's
    // runtimes with Intel USM (`DeviceShared::usm_in_svm_commands`).
    let svm = matches!(device_usm, Usm::Svm) || shared.device.usm_in_svm_commands;
    // SAFETY: for every call below, as for `enqueue`, with a recording buffer and
    // its own sync points.
    unsafe {
        match command {
            // Native commands have command-buffers of their own (`native_segment`).
            Command::Native(_) => Err(err!(Unknown, "a native command cannot be recorded among other commands")),
            Command::KernelLaunch(k) if k.range.global_size.contains(&0) => h.noop(&target)?.into_recorded(),
            Command::KernelLaunch(k) => launch_kernel(shared, &mutable_target, k)?.0.into_recorded(),
            Command::UsmPrefetch { .. } | Command::UsmAdvise { .. } => h.noop(&target)?.into_recorded(),
            Command::UsmMemcpy { dst: MemLoc::Usm(dst), src: MemLoc::Usm(src), size, .. }
                if svm && api.has_svm_memcpy() =>
            {
                api.svm_memcpy(buffer, usm(dst), usm(src), *size, deps).cl("clCommandSVMMemcpyKHR").map(Recorded::plain)
            }
            Command::UsmFill { dst, pattern, size, .. } if svm && api.has_svm_fill() && svm_fill_fits(dst, pattern) => {
                api.svm_fill(buffer, usm(dst), pattern, *size, deps).cl("clCommandSVMMemFillKHR").map(Recorded::plain)
            }
            Command::BufferCopy { src, dst, src_offset, dst_offset, size, .. } => api
                .copy_buffer(buffer, mem(src)?, mem(dst)?, *src_offset, *dst_offset, *size, deps)
                .cl("clCommandCopyBufferKHR")
                .map(Recorded::plain),
            Command::BufferCopyRect { src, dst, src_layout, dst_layout, region, .. } => api
                .copy_buffer_rect(
                    buffer,
                    mem(src)?,
                    mem(dst)?,
                    origin(src_layout),
                    origin(dst_layout),
                    extent(region),
                    pitches(src_layout),
                    pitches(dst_layout),
                    deps,
                )
                .cl("clCommandCopyBufferRectKHR")
                .map(Recorded::plain),
            Command::BufferFill { buffer: b, pattern, offset, size, .. } if native_pattern(pattern) => api
                .fill_buffer(buffer, mem(b)?, pattern, *offset, *size, deps)
                .cl("clCommandFillBufferKHR")
                .map(Recorded::plain),
            other if uses_host_memory(other) => {
                Err(err!(Unknown, "a {} command on raw host memory cannot be recorded", other.kind()))
            }
            other => helper_command(shared, &target, other)?.into_recorded(),
        }
    }
}
