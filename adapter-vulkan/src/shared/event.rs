//! Events' state transitions.
//!
//! An [`EventCore`] goes through these phases:
//! - `Queued`: held back on the host (a dependency is a user event, or work
//!   that is itself held back), or recorded into its queue's open eager
//!   batch (`batch`), which anything that needs the event started submits
//!   first: a host wait, a status query, a waiter of another submission
//!   (`wait`, above the batches);
//! - `Submitted(point)`: submitted, with host-side work (a copy into host
//!   memory, kernel status words to check) still to run once the lane's
//!   timeline reaches `point`;
//! - `Device(point)`: submitted; it completes when its lane's timeline
//!   reaches `point`, and other submissions may wait for that value;
//! - `Done`: complete, with an error if it failed.
//!
//! Work waiting on an event registers a waiter: submissions wait until the
//! event is *resolved* (`Device` or `Done`: its timeline value can go in the
//! submission's wait list), host-side copies until it is `Done`. Waiters run
//! on whichever thread moves the event on (a lane's completion thread, or
//! the thread completing a user event), through a trampoline so that long
//! chains of deferred work do not deepen the stack.
//!
//! This module moves an event from phase to phase and names no lane's or
//! batch's behaviour; what starts an event's work before waiting for it is
//! in `wait`. The event objects of the adapter interface over
//! [`EventCore`] are in `event.rs`, above the shared state.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cmdbuf_core::adapter::prelude::*;
use parking_lot::{Condvar, Mutex};

use crate::shared::state::{Batch, EventCore, Lane, Phase, Point, State, Waiter};
/// What a command of an eager batch needs to run after an event
/// ([`EventCore::follow`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Follow {
    /// Nothing: the event is complete.
    Free,
    /// The event is an earlier command of the same queue's batches, the
    /// open one or one sealed before it and submitted first: the barrier
    /// between a batch's commands, or before a batch's first command, orders
    /// the command after it.
    Batched,
    /// A pipeline barrier: the event's work was submitted earlier to the
    /// same `VkQueue`, and a barrier orders against every command earlier in
    /// that queue's submission order, which a semaphore wait would do at a
    /// higher price on some drivers.
    Barrier,
    /// A wait for the event's timeline value (another `VkQueue`).
    Wait,
    /// The command cannot join the batch: the event is not submitted yet,
    /// or its host work on another lane is not done.
    Hold,
}

impl EventCore {
    /// A new event, held on the host until submitted or completed.
    pub(crate) fn new() -> Arc<EventCore> {
        EventCore::in_batch(None)
    }

    /// A new event of a command recorded into `batch`, not yet submitted.
    pub(crate) fn batched(batch: Arc<Batch>) -> Arc<EventCore> {
        EventCore::in_batch(Some(batch))
    }

    fn in_batch(batch: Option<Arc<Batch>>) -> Arc<EventCore> {
        Arc::new_cyclic(|me| EventCore {
            state: Mutex::new(State {
                phase: Phase::Queued,
                times: None,
                on_resolved: Vec::new(),
                on_done: Vec::new(),
                batch,
            }),
            done: Condvar::new(),
            ended: AtomicBool::new(false),
            me: me.clone(),
        })
    }

    /// The event is no longer in a batch: its command is submitted on its
    /// own (the caller holds the batch's lock, so no flush can miss it).
    pub(crate) fn unbatch(&self) {
        self.state.lock().batch = None;
    }

    /// How a command recorded into `batch`, which submits on `lane`, follows
    /// this event.
    pub(crate) fn follow(&self, batch: &Batch, lane: &Lane) -> Follow {
        let s = self.state.lock();
        match &s.phase {
            Phase::Queued if s.batch.as_ref().is_some_and(|b| std::ptr::eq(&**b, batch)) => Follow::Batched,
            Phase::Queued => Follow::Hold,
            Phase::Done(_) => Follow::Free,
            Phase::Device(p) if p.reached() => Follow::Free,
            Phase::Device(p) if p.lane.same_queue(lane) => Follow::Barrier,
            Phase::Device(_) => Follow::Wait,
            // The lane's completion thread finishes its submissions in order,
            // so this event's host work is done before any later command of
            // the lane completes: the command needs only the device order.
            Phase::Submitted(p) if std::ptr::eq(&*p.lane, lane) => Follow::Barrier,
            // Elsewhere, a command completing before this event's host work
            // would make waiting for the command not imply this event done.
            Phase::Submitted(_) => Follow::Hold,
        }
    }

    /// The event's work was submitted and completes at `point`; with host
    /// work after it, the event stays unresolved until that work is done.
    /// Returns the waiters to run.
    pub(crate) fn mark_submitted(&self, point: Point, host_work: bool) -> Vec<Waiter> {
        let mut s = self.state.lock();
        s.batch = None;
        if matches!(s.phase, Phase::Done(_)) {
            return Vec::new();
        }
        if host_work {
            s.phase = Phase::Submitted(point);
            Vec::new()
        } else {
            s.phase = Phase::Device(point);
            std::mem::take(&mut s.on_resolved)
        }
    }

    /// Completes the event; returns the waiters to run.
    pub(crate) fn complete(&self, result: Result<()>, times: Option<ProfilingInfo>) -> Vec<Waiter> {
        let mut s = self.state.lock();
        s.batch = None;
        s.phase = Phase::Done(result.err());
        self.ended.store(true, Ordering::Release);
        if times.is_some() {
            s.times = times;
        }
        self.done.notify_all();
        let mut waiters = std::mem::take(&mut s.on_resolved);
        waiters.append(&mut s.on_done);
        waiters
    }

    /// The timeline point a submission waiting on this event must wait for:
    /// `None` once the event is complete (or its point already reached).
    /// Only meaningful once the event is resolved.
    pub(crate) fn wait_point(&self) -> Option<Point> {
        match &self.state.lock().phase {
            Phase::Device(p) if !p.reached() => Some(p.clone()),
            _ => None,
        }
    }

    /// The error of a failed, complete event.
    pub(crate) fn error(&self) -> Option<UrError> {
        match &self.state.lock().phase {
            Phase::Done(e) => e.clone(),
            _ => None,
        }
    }

    /// Whether the event is complete.
    pub(crate) fn is_done(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// The status without starting the event's batch (the front end's
    /// bookkeeping at each submission: starting the batch there would
    /// submit it whenever the oldest command in flight is in it).
    pub(crate) fn status_quiet(&self) -> EventStatus {
        match &self.state.lock().phase {
            Phase::Queued => EventStatus::Queued,
            Phase::Submitted(_) | Phase::Device(_) => EventStatus::Submitted,
            Phase::Done(None) => EventStatus::Complete,
            Phase::Done(Some(_)) => EventStatus::Error,
        }
    }

    pub(crate) fn profiling(&self) -> Option<ProfilingInfo> {
        let s = self.state.lock();
        match s.phase {
            Phase::Done(_) => s.times,
            _ => None,
        }
    }
}

thread_local! {
    /// Waiters queued on this thread while an outer frame drains them.
    static TRAMPOLINE: RefCell<Option<VecDeque<Waiter>>> = const { RefCell::new(None) };
}

/// Runs waiters. A waiter that completes more events queues their waiters
/// here instead of recursing; the outermost call drains them.
pub(crate) fn run_waiters(waiters: Vec<Waiter>) {
    if waiters.is_empty() {
        return;
    }
    let nested = TRAMPOLINE.with(|t| {
        let mut t = t.borrow_mut();
        match t.as_mut() {
            Some(queue) => {
                queue.extend(waiters);
                true
            }
            None => {
                *t = Some(waiters.into());
                false
            }
        }
    });
    if nested {
        return;
    }
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            TRAMPOLINE.with(|t| *t.borrow_mut() = None);
        }
    }
    let _reset = Reset;
    while let Some(waiter) = TRAMPOLINE.with(|t| t.borrow_mut().as_mut().and_then(VecDeque::pop_front)) {
        waiter();
    }
}

/// Completes `out` with an error.
pub(crate) fn fail(out: &EventCore, error: UrError) {
    tracing::error!(%error, "a Vulkan submission failed");
    run_waiters(out.complete(Err(error), None));
}
