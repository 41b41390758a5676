//! Waiting for an event, from the host or from another submission.
//!
//! Each of these first starts the event's work: an event recorded into a
//! queue's open eager batch is submitted only when something needs it
//! (`batch` lists when), and whoever waits for it, queries its status or
//! registers a waiter on it is that something, so the batch is flushed
//! here rather than left to a later call or the batch thread. A host wait
//! then finishes the event's lane itself when the device gets there soon
//! (`Lane::finish_if_reached_soon`).

use parking_lot::MutexGuard;

use cmdbuf_core::adapter::prelude::*;

use crate::shared::state::{EventCore, Phase, Waiter};

impl EventCore {
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

    /// Blocks until the event is complete.
    ///
    /// Once the event is submitted, the waiting thread first polls its
    /// lane's timeline for a short while and, once it is reached, finishes
    /// the lane's completed submissions itself (see
    /// [`Lane::finish_if_reached_soon`](crate::shared::state::Lane::finish_if_reached_soon)),
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
}
