//! `urEnqueue*`: eager commands on a queue.
//!
//! Each entry point resolves its handles and wait list, builds the
//! cmdbuf-core [`Command`] (whose builder validates it) and enqueues it with
//! the queue's one generic `enqueue`, or calls the queue operation where
//! there is more than a command (a host copy, a host task, a kernel launch),
//! and hands the resulting event out when the caller asked for one.

#![allow(non_snake_case)]

use std::ffi::c_void;

use cmdbuf_core::{Command, UsmPtr, ensure};

use crate::boundary::conv::{migration, pattern, usm_advice};
use crate::entry::{AbiResult, guard};
use crate::handle::Handle;
use crate::objects::event::EagerCall;
use crate::objects::kernel::{Kernel, NdRangeArgs, launch_args};
use crate::sys::*;

/// # Safety
/// UR's contract for `urEnqueueUSMMemcpy`.
pub(crate) unsafe extern "C" fn urEnqueueUSMMemcpy(
    queue: ur_queue_handle_t,
    blocking: bool,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueUSMMemcpy", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: UR's contract: host memory given here stays valid until the
        // command completes (for a blocking copy, until this call returns).
        let done = unsafe { call.core().usm_memcpy_host(dst.cast(), src.cast(), size, &call.wait)? };
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, blocking, event, ur_command_t::UR_COMMAND_USM_MEMCPY) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueUSMFill`.
pub(crate) unsafe extern "C" fn urEnqueueUSMFill(
    queue: ur_queue_handle_t,
    mem: *mut c_void,
    pattern_size: usize,
    pattern_ptr: *const c_void,
    size: usize,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueUSMFill", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        let dst = UsmPtr::from_addr(mem as u64);
        // SAFETY: `pattern_ptr` is readable for `pattern_size` bytes (entry_points doc, "Arrays and strings"; not null:
        // checks.rs rejected `NULL == pPattern`), all `pattern` needs.
        let pattern = unsafe { pattern(pattern_ptr, pattern_size)? };
        let core = call.core();
        let done = core.enqueue(Command::usm_fill(core.context(), dst, pattern, size)?, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_USM_FILL) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueUSMPrefetch`.
pub(crate) unsafe extern "C" fn urEnqueueUSMPrefetch(
    queue: ur_queue_handle_t,
    mem: *const c_void,
    size: usize,
    flags: ur_usm_migration_flags_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueUSMPrefetch", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        let ptr = UsmPtr::from_addr(mem as u64);
        let core = call.core();
        let done = core.enqueue(Command::usm_prefetch(core.context(), ptr, size, migration(flags))?, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_USM_PREFETCH) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueUSMAdvise`.
pub(crate) unsafe extern "C" fn urEnqueueUSMAdvise(
    queue: ur_queue_handle_t,
    mem: *const c_void,
    size: usize,
    advice: ur_usm_advice_flags_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueUSMAdvise", || {
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), and no wait list
        // is given, all `start` needs.
        let call = unsafe { EagerCall::start(queue, std::ptr::null(), 0)? };
        let ptr = UsmPtr::from_addr(mem as u64);
        let core = call.core();
        let done = core.enqueue(Command::usm_advise(core.context(), ptr, size, usm_advice(advice))?, &[])?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_USM_ADVISE) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueEventsWait`.
pub(crate) unsafe extern "C" fn urEnqueueEventsWait(
    queue: ur_queue_handle_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueEventsWait", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        let done = call.core().events_wait(&call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_EVENTS_WAIT) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueEventsWaitWithBarrier`.
pub(crate) unsafe extern "C" fn urEnqueueEventsWaitWithBarrier(
    queue: ur_queue_handle_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueEventsWaitWithBarrier", || {
        // SAFETY: `queue`, `events` and `event` are as `barrier` requires (entry_points doc, "Handles", "Wait lists",
        // "Out-pointers").
        unsafe { barrier(queue, num_events, events, event) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueEventsWaitWithBarrierExt`.
pub(crate) unsafe extern "C" fn urEnqueueEventsWaitWithBarrierExt(
    queue: ur_queue_handle_t,
    _properties: *const ur_exp_enqueue_ext_properties_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueEventsWaitWithBarrierExt", || {
        // Flags outside the mask failed the generated check (checks.rs);
        // low-power events only change how a host waits, not what it waits for.
        // SAFETY: `queue`, `events` and `event` are as `barrier` requires (entry_points doc, "Handles", "Wait lists",
        // "Out-pointers").
        unsafe { barrier(queue, num_events, events, event) }
    })
}

/// # Safety
/// As UR's contract for `urEnqueueEventsWaitWithBarrier` gives them: `queue`
/// is null or one of this adapter's handles; `events` is null or holds
/// `num_events` handles, each null or one of this adapter's; `event` is null
/// or writable.
unsafe fn barrier(
    queue: ur_queue_handle_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> AbiResult {
    // SAFETY: `queue` and `events` are as `start` requires (this function's `# Safety`).
    let call = unsafe { EagerCall::start(queue, events, num_events)? };
    let done = call.core().barrier(&call.wait)?;
    // SAFETY: `event` is null or writable (this function's `# Safety`), all `finish` needs.
    unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_EVENTS_WAIT_WITH_BARRIER) }
}

/// A C function and its data, run once on a host thread.
struct HostTask {
    function: unsafe extern "C" fn(*mut c_void),
    data: *mut c_void,
}

// SAFETY: UR lets the host-task function run on any thread with its data.
unsafe impl Send for HostTask {}

/// # Safety
/// UR's contract for `urEnqueueHostTaskExp`.
pub(crate) unsafe extern "C" fn urEnqueueHostTaskExp(
    queue: ur_queue_handle_t,
    function: ur_exp_host_task_function_t,
    data: *mut c_void,
    _properties: *const ur_exp_host_task_properties_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueHostTaskExp", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        let function = function.ok_or_else(|| cmdbuf_core::err!(InvalidNullPointer, "pfnHostTask is null"))?;
        // Flags outside the mask failed the generated check (checks.rs); the
        // one inside it (TBD) asks nothing.
        let task = HostTask { function, data };
        let turn = call.queue.value.host_turn();
        let done = call.core().enqueue_host_task(&call.wait, move || {
            let task = task;
            let _turn = turn.lock();
            // SAFETY: the application enqueued this function with this data.
            unsafe { (task.function)(task.data) };
        })?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_HOST_TASK_EXP) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueKernelLaunchWithArgsExp`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn urEnqueueKernelLaunchWithArgsExp(
    queue: ur_queue_handle_t,
    kernel: ur_kernel_handle_t,
    work_dim: u32,
    global_offset: *const usize,
    global_size: *const usize,
    local_size: *const usize,
    num_args: u32,
    args: *const ur_exp_kernel_arg_properties_t,
    properties: *const ur_kernel_launch_ext_properties_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueKernelLaunchWithArgsExp", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: `kernel` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let kernel = unsafe { Handle::<Kernel>::get(kernel)? };
        // SAFETY: `properties` is null or a readable chain of launch properties (entry_points doc, "Arrays and
        // strings"), all `launch_flags` needs.
        unsafe { launch_flags(properties)? };
        // SAFETY: the work-size pointers are null or hold `work_dim` sizes (entry_points doc, "Arrays and strings"),
        // all `NdRangeArgs::new` needs.
        let range = unsafe { NdRangeArgs::new(work_dim, global_offset, global_size, local_size)? };
        // SAFETY: `args` is null or holds `num_args` properties valid for their type (entry_points doc, "Arrays and
        // strings"), all `launch_args` needs.
        let args = unsafe { launch_args(kernel.value.core(), num_args, args)? };
        let launch = range.launch(kernel.value.core(), &args);
        // SAFETY: UR's contract makes the caller responsible for the memory
        // the kernel's arguments reach until the launch completes.
        let done = unsafe { call.core().launch_kernel(&launch, &call.wait)? };
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_KERNEL_LAUNCH) }
    })
}

/// Checks a launch's extension properties: cmdbuf launches honour no flag
/// (cooperative launches and the like are not offered), so any flag the
/// generated check (checks.rs: the mask) let through is refused rather than
/// ignored.
///
/// # Safety
/// `properties` is null or a readable chain of launch properties.
unsafe fn launch_flags(properties: *const ur_kernel_launch_ext_properties_t) -> AbiResult {
    // SAFETY: null or readable per the contract.
    let Some(props) = (unsafe { properties.as_ref() }) else { return Ok(()) };
    ensure!(props.flags == 0, UnsupportedFeature, "launch flags {:#x}: cmdbuf has no special launches", props.flags);
    Ok(())
}
