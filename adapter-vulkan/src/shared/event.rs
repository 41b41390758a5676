//! Events.
//!
//! An [`EventCore`] goes through these phases:
//! - `Queued`: held back on the host (a dependency is a user event, or work
//!   that is itself held back), or recorded into its queue's open eager
//!   batch (`batch`), which anything that needs the event started submits
//!   first: a host wait, a status query, a waiter of another submission;
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
//! The event objects of the adapter interface over [`EventCore`] are in
//! `event.rs`, above this module.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use cmdbuf_core::adapter::prelude::*;
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::shared::batch::Batch;
use crate::shared::{Lane, Point};

/// Work to run when an event moves on.
pub(crate) type Waiter = Box<dyn FnOnce() + Send>;

/// What a command of an eager batch needs to run after an event
/// ([`EventCore::follow`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Follow {
    /// Nothing: the event is complete, or earlier in the same batch (whose
    /// commands run one after the other).
    Free,
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

enum Phase {
    Queued,
    Submitted(Point),
    Device(Point),
    Done(Option<UrError>),
}

struct State {
    phase: Phase,
    times: Option<ProfilingInfo>,
    /// Run once the event is resolved (`Device` or `Done`).
    on_resolved: Vec<Waiter>,
    /// Run once the event is `Done`.
    on_done: Vec<Waiter>,
    /// The open eager batch the event's command is recorded in, while it is
    /// not submitted.
    batch: Option<Arc<Batch>>,
}

/// The state of one event.
pub(crate) struct EventCore {
    state: Mutex<State>,
    done: Condvar,
    /// The event itself: an eager command's event is handed to the front
    /// end as this `Arc` (no wrapper to allocate), and a wait list that
    /// holds it gets its `Arc` back from here.
    pub(crate) me: Weak<EventCore>,
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
            Phase::Queued if s.batch.as_ref().is_some_and(|b| std::ptr::eq(&**b, batch)) => Follow::Free,
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

    /// Submits the batch holding the event, if it is one not yet submitted:
    /// whoever needs the event started (a host wait, a status query, a
    /// submission waiting for it) must not wait for a later flush.
    fn start(&self) {
        let batch = {
            let s = self.state.lock();
            match s.phase {
                Phase::Queued => s.batch.clone(),
                _ => None,
            }
        };
        if let Some(batch) = batch {
            batch.flush();
        }
    }

    /// Runs `waiter` once submissions may wait for this event, or hands it
    /// back when they already may.
    pub(crate) fn when_resolved(&self, waiter: Waiter) -> Option<Waiter> {
        let mut s = self.state.lock();
        match s.phase {
            Phase::Device(_) | Phase::Done(_) => Some(waiter),
            _ => {
                s.on_resolved.push(waiter);
                drop(s);
                self.start();
                None
            }
        }
    }

    /// Runs `waiter` once the event is complete, or hands it back when it is.
    pub(crate) fn when_done(&self, waiter: Waiter) -> Option<Waiter> {
        let mut s = self.state.lock();
        match s.phase {
            Phase::Done(_) => Some(waiter),
            _ => {
                s.on_done.push(waiter);
                drop(s);
                self.start();
                None
            }
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
        matches!(self.state.lock().phase, Phase::Done(_))
    }

    /// The status; a query starts the event's batch, so that polling the
    /// status until the event completes terminates.
    pub(crate) fn status(&self) -> EventStatus {
        self.start();
        // A submission the device has finished is finished here, so that an
        // event another completed command waited for reads as complete even
        // before its lane's completion thread came to it.
        let point = match &self.state.lock().phase {
            Phase::Submitted(p) | Phase::Device(p) => Some(p.clone()),
            _ => None,
        };
        if let Some(point) = point {
            point.lane.finish_if_reached(point.value);
        }
        self.status_quiet()
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

    /// Blocks until the event is complete.
    ///
    /// Once the event is submitted, the waiting thread first polls its
    /// lane's timeline for a short while and, once it is reached, finishes
    /// the lane's completed submissions itself (see
    /// [`Lane::finish_if_reached_soon`](crate::shared::Lane::finish_if_reached_soon)),
    /// as a host spins on a fence before it sleeps; then it sleeps until the
    /// completion thread has finished the event.
    pub(crate) fn wait(&self) -> Result<()> {
        self.start();
        let mut s = self.state.lock();
        let mut waited = false;
        loop {
            let point = match &s.phase {
                Phase::Done(e) => return e.clone().map_or(Ok(()), Err),
                Phase::Submitted(p) | Phase::Device(p) if !waited => p.clone(),
                _ => {
                    self.done.wait(&mut s);
                    continue;
                }
            };
            waited = true;
            MutexGuard::unlocked(&mut s, || point.lane.finish_if_reached_soon(point.value));
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
