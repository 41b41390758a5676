//! The event handle, the wait lists of event handles, emitting an event
//! handle for a command, and the start and end every eager `urEnqueue*`
//! shares ([`EagerCall`]).

use std::sync::Arc;

use cmdbuf_core::err;

use crate::entry::AbiResult;
use crate::handle::{Handle, get_list};
use crate::objects::context::ContextRef;
use crate::objects::queue::{Queue, QueueRef};
use crate::sys::*;

/// An event: its cmdbuf-core event, the queue and command that produced it.
pub struct Event {
    pub(crate) event: cmdbuf_core::Event,
    pub(crate) queue: Option<QueueRef>,
    pub(crate) context: ContextRef,
    pub(crate) command: ur_command_t,
}

impl Event {
    /// The cmdbuf-core event.
    pub(crate) fn core(&self) -> &cmdbuf_core::Event {
        &self.event
    }
}

/// The events of a C wait list, borrowed for the call.
///
/// # Safety
/// `list` is null or holds `count` handles, each null or one of this
/// adapter's (UR's contract for a wait list).
pub(crate) unsafe fn wait_list<'a>(
    list: *const ur_event_handle_t,
    count: u32,
) -> AbiResult<Vec<&'a cmdbuf_core::Event>> {
    // SAFETY: `list` is null or holds `count` handles, each null or one of this adapter's (this function's `# Safety`),
    // all `get_list` needs.
    let handles = unsafe {
        get_list::<Event>(list, count, || err!(InvalidEventWaitList, "the wait list and its count disagree"))?
    };
    Ok(handles.into_iter().map(|h| &h.value.event).collect())
}

/// Hands `event` to the caller through `out`, if it asked for one; the
/// event keeps the caller's reference to `queue`.
///
/// # Safety
/// `out` is null or writable.
pub(crate) unsafe fn emit(
    out: *mut ur_event_handle_t,
    event: cmdbuf_core::Event,
    queue: QueueRef,
    command: ur_command_t,
) {
    if out.is_null() {
        return;
    }
    let context = queue.value.context().clone();
    let value = Event { event, queue: Some(queue), context, command };
    // SAFETY: non-null and writable per the contract.
    unsafe { out.write(Handle::create(value)) };
}

/// Hands out an event that no queue produced (a command-buffer command's
/// signal event).
///
/// # Safety
/// `out` is null or writable.
pub(crate) unsafe fn emit_unqueued(
    out: *mut ur_event_handle_t,
    event: cmdbuf_core::Event,
    context: &ContextRef,
    command: ur_command_t,
) {
    if out.is_null() {
        return;
    }
    let value = Event { event, queue: None, context: context.clone(), command };
    // SAFETY: non-null and writable per the contract.
    unsafe { out.write(Handle::create(value)) };
}

/// What every eager `urEnqueue*` entry point does first and last: its queue
/// and wait list resolved ([`EagerCall::start`]), and once its command is
/// enqueued, the wait a blocking call makes and the event handed out when
/// the caller asked for one ([`EagerCall::finish`]). What lies between (the
/// command built from the call's other arguments, the queue operation) is
/// each entry point's own.
///
/// The call holds a counted reference to its queue until it returns: the
/// command it enqueues may run application code at once (a host task, a
/// native command) that releases the queue's last application reference
/// while the call is still recording the command on it.
pub(crate) struct EagerCall<'a> {
    pub(crate) queue: Arc<Handle<Queue>>,
    pub(crate) wait: Vec<&'a cmdbuf_core::Event>,
}

impl<'a> EagerCall<'a> {
    /// Resolves `queue` and the wait list.
    ///
    /// # Safety
    /// `queue` is null or one of this adapter's handles; `events` is null or
    /// holds `num_events` handles, each null or one of this adapter's (UR's
    /// contract for every `urEnqueue*`).
    pub(crate) unsafe fn start(
        queue: ur_queue_handle_t,
        events: *const ur_event_handle_t,
        num_events: u32,
    ) -> AbiResult<EagerCall<'a>> {
        // SAFETY: `queue` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
        let queue = unsafe { Handle::<Queue>::get(queue)? }.to_arc();
        // SAFETY: `events` is null or points to `num_events` event handles (this function's `# Safety`), all
        // `wait_list` needs.
        let wait = unsafe { wait_list(events, num_events)? };
        Ok(EagerCall { queue, wait })
    }

    /// The cmdbuf-core queue.
    pub(crate) fn core(&self) -> &cmdbuf_core::Queue {
        self.queue.value.core()
    }

    /// Waits for `done` when the call is `blocking`, then hands it out
    /// through `out` as an event of `command`.
    ///
    /// # Safety
    /// `out` is null or writable.
    pub(crate) unsafe fn finish(
        self,
        done: cmdbuf_core::Event,
        blocking: bool,
        out: *mut ur_event_handle_t,
        command: ur_command_t,
    ) -> AbiResult {
        if blocking {
            done.wait()?;
        }
        // SAFETY: `out` is null or writable (this function's `# Safety`), all `emit` needs.
        unsafe { emit(out, done, self.queue, command) };
        Ok(())
    }
}
