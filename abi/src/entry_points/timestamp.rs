//! `urEnqueueTimestampRecordingExp`: an event whose profiling start and end
//! are the device time at which it ran, on any queue (cmdbuf-core's
//! `Queue::enqueue_timestamp`).

#![allow(non_snake_case)]

use crate::entry::guard;
use crate::objects::event::EagerCall;
use crate::sys::*;

/// # Safety
/// UR's contract for `urEnqueueTimestampRecordingExp`.
pub(crate) unsafe extern "C" fn urEnqueueTimestampRecordingExp(
    queue: ur_queue_handle_t,
    blocking: bool,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueTimestampRecordingExp", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        let done = call.core().enqueue_timestamp(&call.wait)?;
        // SAFETY: non-null because checks.rs rejected `NULL == phEvent`; writable per the contract ("Out-pointers"),
        // all `finish` needs.
        unsafe { call.finish(done, blocking, event, ur_command_t::UR_COMMAND_TIMESTAMP_RECORDING_EXP) }
    })
}
