//! Lanes at work: submitting to a lane's timeline, and finishing what was
//! submitted once the timeline has reached it.
//!
//! Every submission of the adapter signals the next value of its lane's
//! timeline semaphore. Semaphore signal operations on one queue complete in
//! submission order, so a lane's value `v` having been reached means every
//! submission of that lane up to `v` has completed. Each lane's completion
//! thread waits for its submissions in order and finishes them
//! ([`Completion::finish`]): it reads their timestamps, runs their
//! host-side copies, completes their events (which may start deferred work)
//! and releases what they held.
//!
//! Work that waits on events of other submissions waits on their timeline
//! values in `vkQueueSubmit` ([`wait_points`]); the adapter never submits a
//! wait whose signal has not been submitted yet (host-side dependencies such
//! as user events hold a submission back on the host instead), so no queue
//! ever blocks on the host.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ash::vk;
use cmdbuf_core::adapter::prelude::*;
use smallvec::SmallVec;

use crate::conv::VkResultExt;
use crate::profiling::QuerySpan;
use crate::shared::event::run_waiters;
use crate::shared::state::{Completion, EventCore, InFlight, Lane, Point, Waiter};

/// How long a host thread waiting for an event polls its lane's timeline
/// before it sleeps until the completion thread has finished the event.
const POLL: Duration = Duration::from_millis(1);

impl Lane {
    /// Submits `cmds` after the timeline points `waits`, signalling the
    /// lane's next value, and hands `completion` to the completion thread.
    /// Returns the waiters of the completion's event that the submission
    /// resolved; the caller runs them once it holds no lock.
    pub(crate) fn submit(
        self: &Arc<Self>,
        waits: &[(vk::Semaphore, u64)],
        cmds: &[vk::CommandBuffer],
        completion: Completion,
    ) -> Result<Vec<Waiter>> {
        self.submit_many(waits, cmds, || std::iter::once(completion))
    }

    /// [`submit`](Self::submit) for the commands of an eager batch: one
    /// submission, one timeline value, and one completion per command,
    /// finished in order once the value is reached. `completions` is called
    /// only once the work is submitted: on failure the caller still holds
    /// them.
    pub(crate) fn submit_many<I: IntoIterator<Item = Completion>>(
        self: &Arc<Self>,
        waits: &[(vk::Semaphore, u64)],
        cmds: &[vk::CommandBuffer],
        completions: impl FnOnce() -> I,
    ) -> Result<Vec<Waiter>> {
        crate::exit::check()?;
        let sems: SmallVec<[vk::Semaphore; 4]> = waits.iter().map(|w| w.0).collect();
        let values: SmallVec<[u64; 4]> = waits.iter().map(|w| w.1).collect();
        let stages: SmallVec<[vk::PipelineStageFlags; 4]> =
            waits.iter().map(|_| vk::PipelineStageFlags::ALL_COMMANDS).collect();
        let queue = self.hw.queue.lock();
        let value = self.submitted.load(Ordering::Relaxed) + 1;
        let signal = [self.timeline];
        let signal_values = [value];
        let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&values)
            .signal_semaphore_values(&signal_values);
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&sems)
            .wait_dst_stage_mask(&stages)
            .command_buffers(cmds)
            .signal_semaphores(&signal)
            .push_next(&mut timeline);
        // SAFETY: the queue is externally synchronised by its lock; the
        // command buffers are recorded and kept alive by `completion` until
        // the completion thread has seen them finish; every waited value has
        // a submitted signal (the scheduler only waits on submitted points);
        // the signalled value is greater than any earlier one of the lane.
        unsafe { self.gpu.device.queue_submit(*queue, &[submit], vk::Fence::null()) }.vk("vkQueueSubmit")?;
        self.submitted.store(value, Ordering::Relaxed);
        let mut waiters = Vec::new();
        // Pushed while the queue lock is held, so the queue of in-flight
        // work stays in value order.
        let mut fifo = self.fifo.lock();
        for completion in completions() {
            waiters
                .extend(completion.out.mark_submitted(Point { lane: self.clone(), value }, completion.has_host_work()));
            fifo.items.push_back(InFlight { value, completion });
        }
        drop(fifo);
        self.wake.notify_one();
        drop(queue);
        Ok(waiters)
    }

    /// Waits up to `timeout` for the timeline to reach `value`; whether it did.
    pub(super) fn reaches_within(&self, value: u64, timeout: Duration) -> bool {
        let sems = [self.timeline];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: the semaphore lives as long as the lane.
        unsafe { self.gpu.device.wait_semaphores(&info, nanos) }.is_ok()
    }

    fn wait_value(&self, value: u64) -> Result<()> {
        let sems = [self.timeline];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
        loop {
            // SAFETY: the semaphore lives as long as the lane.
            match unsafe { self.gpu.device.wait_semaphores(&info, 1_000_000_000) } {
                Ok(()) => return Ok(()),
                Err(vk::Result::TIMEOUT) => continue,
                Err(e) => return Err(crate::conv::vk_error(e, "vkWaitSemaphores")),
            }
        }
    }

    /// Polls the timeline for up to [`POLL`]; once it has reached `value`,
    /// finishes every submission of the lane up to it that no other thread
    /// has finished. A host thread waiting for an event does this first, as
    /// a driver's fence wait spins before it sleeps, so that a short
    /// submission costs no wake-up of the completion thread and then of the
    /// waiter. It polls (`vkGetSemaphoreCounterValue`) rather than blocking
    /// in `vkWaitSemaphores` beside the completion thread: with two threads
    /// blocked on one semaphore, NVIDIA's driver (580) woke one of them
    /// about 10 ms late, often. A CPU device is not polled (see
    /// [`Gpu::host_polls`]): there the waiting thread sleeps in
    /// `vkWaitSemaphores` until the value is reached, which takes no core
    /// from the device's work and spares the two wake-ups (the completion
    /// thread's, then the waiter's) of leaving the finish to the completion
    /// thread: a raw fence wait has one (issue 15, goal 3 on lavapipe).
    /// Returns whether it finished `value`; if not, the completion thread
    /// will.
    pub(crate) fn finish_if_reached_soon(&self, value: u64) -> bool {
        if crate::exit::driver_gone() {
            return false;
        }
        if !self.gpu.host_polls {
            // A failed wait is the completion thread's to report.
            if self.wait_value(value).is_err() {
                return false;
            }
            self.reached.fetch_max(value, Ordering::AcqRel);
            self.finish_reached(value, Ok(()));
            return true;
        }
        let start = Instant::now();
        let mut polls = 0u32;
        loop {
            // SAFETY: the semaphore lives as long as the lane.
            match unsafe { self.gpu.device.get_semaphore_counter_value(self.timeline) } {
                Ok(reached) if reached >= value => break,
                Ok(_) => {}
                // The completion thread's wait reports the failure.
                Err(_) => return false,
            }
            if start.elapsed() >= POLL {
                return false;
            }
            polls += 1;
            // Let other threads have the core now and then.
            if polls.is_multiple_of(16) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        self.reached.fetch_max(value, Ordering::AcqRel);
        self.finish_reached(value, Ok(()));
        true
    }

    /// Finishes the submissions up to `value` if the device has reached it
    /// now, without waiting: what a status query sees is then the device's
    /// progress, not the completion thread's. Returns whether it had.
    pub(crate) fn finish_if_reached(&self, value: u64) -> bool {
        if crate::exit::driver_gone() {
            return false;
        }
        // SAFETY: the semaphore lives as long as the lane.
        match unsafe { self.gpu.device.get_semaphore_counter_value(self.timeline) } {
            Ok(reached) if reached >= value => {
                self.reached.fetch_max(value, Ordering::AcqRel);
                self.finish_reached(value, Ok(()));
                true
            }
            // Not yet, or a failure the completion thread's wait reports.
            _ => false,
        }
    }

    /// Finishes the submissions up to `value`, oldest first, with `result`.
    pub(super) fn finish_reached(&self, value: u64, result: Result<()>) {
        let _order = self.finishing.lock();
        loop {
            let item = {
                let mut fifo = self.fifo.lock();
                match fifo.items.front() {
                    Some(item) if item.value <= value => fifo.items.pop_front().expect("a front item"),
                    _ => return,
                }
            };
            item.completion.finish(result.clone());
        }
    }

    /// The completion thread: finishes submissions in value order (those a
    /// waiting host thread has not finished first).
    pub(super) fn reap(self: Arc<Self>) {
        loop {
            let value = {
                let mut fifo = self.fifo.lock();
                loop {
                    if let Some(item) = fifo.items.front() {
                        break item.value;
                    }
                    if fifo.stop {
                        return;
                    }
                    self.wake.wait(&mut fifo);
                }
            };
            let result = self.wait_value(value);
            if result.is_ok() {
                self.reached.fetch_max(value, Ordering::AcqRel);
            } else {
                tracing::error!(lane = self.index, value, "waiting for a submission failed");
            }
            self.finish_reached(value, result);
        }
    }
}

impl Completion {
    pub(crate) fn has_host_work(&self) -> bool {
        !self.post.is_empty() || !self.checks.is_empty()
    }

    /// Reads the timestamps, runs the host copies, completes the event and
    /// releases everything held.
    pub(crate) fn finish(self, mut result: Result<()>) {
        let times = if result.is_ok() { self.queries.as_ref().and_then(QuerySpan::read) } else { None };
        if result.is_ok() {
            // SAFETY: the words are kept alive by `keep` and were written by
            // the completed device work only.
            if let Some(e) = self.checks.iter().find_map(|c| unsafe { c.failure() }) {
                result = Err(e);
            } else if let Some(e) = self.inherit.as_ref().and_then(|e| e.error()) {
                result = Err(e);
            }
        }
        if result.is_ok() {
            for copy in &self.post {
                // SAFETY: the device part wrote the staging memory and has
                // completed; the host memory is valid until the event completes
                // (the command's contract), which happens below.
                unsafe { copy.copy_out() };
            }
        }
        let waiters = self.out.complete(result, times);
        // Release first: waiters may wait for memory this held to be reused.
        drop(self.cmd);
        drop(self.keep);
        drop(self.queries);
        run_waiters(waiters);
    }
}

/// Timeline values a submission waits for, one per lane.
pub(crate) type Points = SmallVec<[Point; 4]>;
/// The same as semaphore waits.
pub(crate) type SemaphoreWaits = SmallVec<[(vk::Semaphore, u64); 4]>;

/// The latest timeline value to wait for per lane, for resolved `deps`
/// (those complete or reached need no wait), and the same as semaphore waits.
pub(crate) fn wait_points(deps: &[Arc<EventCore>]) -> (Points, SemaphoreWaits) {
    let mut waits: SmallVec<[Point; 4]> = SmallVec::new();
    for dep in deps {
        if let Some(p) = dep.wait_point() {
            match waits.iter_mut().find(|w| Arc::ptr_eq(&w.lane, &p.lane)) {
                Some(w) => w.value = w.value.max(p.value),
                None => waits.push(p),
            }
        }
    }
    let values = waits.iter().map(|p| (p.lane.semaphore(), p.value)).collect();
    (waits, values)
}
