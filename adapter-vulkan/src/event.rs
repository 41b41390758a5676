//! The adapter's event objects: [`EventCore`] itself (eager commands),
//! [`VkEvent`] (command-buffer submissions, user events), [`SignalEvent`] (a
//! command-buffer command's signal event, which stands for its latest
//! execution) and [`RunEvent`] (a command-buffer submission that was split
//! into several device submissions). The events' state and how it moves on
//! are `EventCore`'s, in the device's shared state (defined in
//! `shared/state.rs`, moved on in `shared/event.rs` by its lanes and
//! batches, waited for in `shared/wait.rs`); the interface's behaviour is
//! here, above it.

use std::any::Any;
use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::{ForwardingEvent, OrderedEvent};

use crate::shared::event::run_waiters;
use crate::shared::state::EventCore;

// What a signal event forwards to, and an eager command's event.
impl EventImpl for EventCore {
    fn status(&self) -> EventStatus {
        EventCore::status(self)
    }

    fn status_quiet(&self) -> EventStatus {
        EventCore::status_quiet(self)
    }

    fn wait(&self) -> Result<()> {
        EventCore::wait(self)
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        EventCore::profiling(self)
    }
}

impl OrderedEvent for EventCore {
    fn is_done(&self) -> bool {
        EventCore::is_done(self)
    }

    fn wait_ended(&self) {
        // The error is the event's to report.
        let _ = EventCore::wait(self);
    }
}

/// An event of a command, a submission or a user event.
#[derive(Clone)]
pub(crate) struct VkEvent(pub(crate) Arc<EventCore>);

impl VkEvent {
    /// A user event: complete when the host says so.
    pub(crate) fn user() -> Arc<VkEvent> {
        Arc::new(VkEvent(EventCore::new()))
    }
}

impl EventImpl for VkEvent {
    fn status(&self) -> EventStatus {
        self.0.status()
    }

    fn status_quiet(&self) -> EventStatus {
        self.0.status_quiet()
    }

    fn wait(&self) -> Result<()> {
        self.0.wait()
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        self.0.profiling()
    }
}

impl UserEventImpl for VkEvent {
    fn complete(&self, result: Result<()>) {
        run_waiters(self.0.complete(result, None));
    }
}

/// A command-buffer command's signal event: the event of the command's
/// latest execution, complete before the first.
pub(crate) type SignalEvent = ForwardingEvent<EventCore>;

/// A command-buffer submission split into several device submissions (one
/// per stage, see `command_buffer`): from the first stage's start to the
/// last stage's end.
pub(crate) struct RunEvent {
    pub(crate) first: Arc<EventCore>,
    pub(crate) last: Arc<EventCore>,
}

impl EventImpl for RunEvent {
    fn status(&self) -> EventStatus {
        match self.last.status() {
            EventStatus::Queued => self.first.status(),
            s => s,
        }
    }

    fn wait(&self) -> Result<()> {
        self.last.wait()
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        let (first, last) = (self.first.profiling()?, self.last.profiling()?);
        Some(ProfilingInfo { queued: first.queued, submit: first.submit, start: first.start, end: last.end })
    }
}

/// The event core a wait on `event` means now: `None` when there is nothing
/// to wait for (a signal event before its first execution).
pub(crate) fn core_of(event: &dyn EventImpl) -> Result<Option<Arc<EventCore>>> {
    let any = event as &dyn Any;
    if let Some(e) = any.downcast_ref::<EventCore>() {
        // A live reference to the event: its `Arc` is alive.
        return e.me.upgrade().map(Some).ok_or_else(|| err!(InvalidEvent, "an event being dropped"));
    }
    if let Some(e) = any.downcast_ref::<VkEvent>() {
        return Ok(Some(e.0.clone()));
    }
    if let Some(s) = any.downcast_ref::<SignalEvent>() {
        return Ok(s.current());
    }
    if let Some(r) = any.downcast_ref::<RunEvent>() {
        return Ok(Some(r.last.clone()));
    }
    Err(err!(InvalidEvent, "a wait-list event belongs to another adapter"))
}

/// The cores of a wait list.
pub(crate) fn cores_of(events: &[&dyn EventImpl]) -> Result<Vec<Arc<EventCore>>> {
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        out.extend(core_of(*e)?);
    }
    Ok(out)
}
