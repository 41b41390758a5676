//! `urEvent*`: events of commands, and the wait lists and output events
//! every enqueue and append shares.

#![allow(non_snake_case)]

use std::ffi::c_void;

use cmdbuf_core::{EventStatus, UrError, ensure, err};

use crate::entry::guard;
use crate::handle::Handle;
use crate::info::{InfoOut, query};
use crate::objects::event::{Event, wait_list};
use crate::sys::*;

fn ur_status(status: EventStatus) -> ur_event_status_t {
    match status {
        EventStatus::Queued => ur_event_status_t::UR_EVENT_STATUS_QUEUED,
        EventStatus::Submitted => ur_event_status_t::UR_EVENT_STATUS_SUBMITTED,
        EventStatus::Running => ur_event_status_t::UR_EVENT_STATUS_RUNNING,
        EventStatus::Complete => ur_event_status_t::UR_EVENT_STATUS_COMPLETE,
        EventStatus::Error => ur_event_status_t::UR_EVENT_STATUS_ERROR,
    }
}

/// # Safety
/// UR's contract for `urEventGetInfo`.
pub(crate) unsafe extern "C" fn urEventGetInfo(
    event: ur_event_handle_t,
    name: ur_event_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |handle: &Handle<Event>, out: InfoOut| {
        let e = &handle.value;
        match name {
            ur_event_info_t::UR_EVENT_INFO_COMMAND_QUEUE => {
                out.value(e.queue.as_ref().map_or(std::ptr::null_mut(), |q| q.raw()))
            }
            ur_event_info_t::UR_EVENT_INFO_CONTEXT => out.value(e.context.raw()),
            ur_event_info_t::UR_EVENT_INFO_COMMAND_TYPE => out.value(e.command),
            ur_event_info_t::UR_EVENT_INFO_COMMAND_EXECUTION_STATUS => out.value(ur_status(e.event.status())),
            ur_event_info_t::UR_EVENT_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
            other => Err(err!(InvalidEnumeration, "event info {}", other.0)),
        }
    };
    // SAFETY: `event` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urEventGetInfo", event, (size, value, size_ret), answer) }
}

/// # Safety
/// UR's contract for `urEventGetProfilingInfo`.
pub(crate) unsafe extern "C" fn urEventGetProfilingInfo(
    event: ur_event_handle_t,
    name: ur_profiling_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    guard("urEventGetProfilingInfo", || {
        // SAFETY: `event` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<Event>::get(event)? };
        // A timestamp recording is timed on any queue (as UR specifies).
        let profiled = handle.value.command == ur_command_t::UR_COMMAND_TIMESTAMP_RECORDING_EXP
            || handle.value.queue.as_ref().is_some_and(|q| q.value.core().properties().profiling);
        ensure!(profiled, ProfilingInfoNotAvailable, "the event's queue does not profile");
        let times = handle.value.event.profiling_info()?;
        // The outputs are looked at only once there is something to write:
        // `ur_api.h` gives no code for two null outputs here, and UR's CTS
        // (ReleaseEventWhileTimestampWritePending) asks an unprofiled event
        // with both null and expects PROFILING_INFO_NOT_AVAILABLE.
        // SAFETY: `value` is null or writable for `size` bytes, `size_ret` null or writable (entry_points doc, "Info
        // queries"), all `InfoOut::new` needs.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        let t = match name {
            ur_profiling_info_t::UR_PROFILING_INFO_COMMAND_QUEUED => times.queued,
            ur_profiling_info_t::UR_PROFILING_INFO_COMMAND_SUBMIT => times.submit,
            ur_profiling_info_t::UR_PROFILING_INFO_COMMAND_START => times.start,
            _ => times.end,
        };
        out.value(t)
    })
}

/// # Safety
/// UR's contract for `urEventWait`.
pub(crate) unsafe extern "C" fn urEventWait(count: u32, events: *const ur_event_handle_t) -> ur_result_t {
    guard("urEventWait", || {
        // SAFETY: `events` points to `count` event handles (entry_points doc, "Wait lists"; checks.rs rejected `NULL ==
        // phEventWaitList` and `numEvents == 0`), all `wait_list` needs.
        let events = unsafe { wait_list(events, count)? };
        cmdbuf_core::Event::wait_all(&events).map_err(|e| match e {
            // A wait refused (on a captured event), not a failed command.
            UrError::GraphCaptureUnsupported(_)
            | UrError::GraphCaptureInvalidated(_)
            | UrError::InvalidOperation(_) => e,
            e => in_wait_list(&e),
        })
    })
}

/// A failed command seen by a waiter: UR reports it as a failed event of the list.
fn in_wait_list(error: &UrError) -> UrError {
    err!(InEventListExecStatus, "an event of the wait list failed: {error}")
}

/// # Safety
/// UR's contract for `urEventRetain`.
pub(crate) unsafe extern "C" fn urEventRetain(event: ur_event_handle_t) -> ur_result_t {
    // SAFETY: `event` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urEventRetain", || unsafe { Handle::<Event>::retain(event) })
}

/// # Safety
/// UR's contract for `urEventRelease`.
pub(crate) unsafe extern "C" fn urEventRelease(event: ur_event_handle_t) -> ur_result_t {
    // SAFETY: `event` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urEventRelease", || unsafe { Handle::<Event>::release(event) })
}

/// # Safety
/// UR's contract for `urEventSetCallback`.
pub(crate) unsafe extern "C" fn urEventSetCallback(
    event: ur_event_handle_t,
    status: ur_execution_info_t,
    callback: ur_event_callback_t,
    user_data: *mut c_void,
) -> ur_result_t {
    guard("urEventSetCallback", || {
        // SAFETY: `event` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<Event>::get(event)? };
        let callback = callback.ok_or_else(|| err!(InvalidNullPointer, "pfnNotify is null"))?;
        // A status past QUEUED, and QUEUED itself (every event starts
        // queued), failed the generated checks (checks.rs).
        // UR calls the callback once the status is at or past the one asked
        // for; the end of the command is past SUBMITTED and RUNNING too, so
        // one mechanism serves all three.
        // The callback holds the event alive until it has run, and this call
        // until it returns: the callback may run at once on another thread
        // and release the application's last reference.
        let event = handle.to_arc();
        let held = event.clone();
        let user_data = SendPtr(user_data);
        held.value.event.on_complete(move |_| {
            let user_data = user_data;
            // SAFETY: the application registered this callback for the event
            // it names, with its own user data.
            unsafe { callback(event.raw(), status, user_data.0) };
        })
    })
}

/// A pointer the application lets its callback receive on another thread.
struct SendPtr(*mut c_void);
// SAFETY: UR's callbacks may run on any thread; the pointer is only handed back.
unsafe impl Send for SendPtr {}
