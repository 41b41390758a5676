//! `urEnqueueTimestampRecordingExp`: an event whose profiling start and end
//! are the device time at which it ran, on any queue (cmdbuf-core's
//! `Queue::enqueue_timestamp`).

#![allow(non_snake_case)]

use crate::entry::guard;
use crate::handle::Handle;
use crate::objects::event::{emit, wait_list};
use crate::objects::queue::Queue;
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
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let queue = unsafe { Handle::<Queue>::get(queue)? };
        // SAFETY: `events` is null or points to `num_events` event handles (entry_points doc, "Wait lists"), all
        // `wait_list` needs.
        let wait = unsafe { wait_list(events, num_events)? };
        let done = queue.value.core().enqueue_timestamp(&wait)?;
        if blocking {
            done.wait()?;
        }
        // SAFETY: non-null because checks.rs rejected `NULL == phEvent`; writable per the contract ("Out-pointers").
        unsafe { emit(event, done, queue, ur_command_t::UR_COMMAND_TIMESTAMP_RECORDING_EXP) };
        Ok(())
    })
}
