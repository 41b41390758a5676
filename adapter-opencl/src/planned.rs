//! Pre-planned eager replay: the command-buffer path of devices whose
//! driver has no usable `cl_khr_command_buffer`, or whose command buffer is
//! slower than enqueueing the commands (see [`crate::device::replay_path`]).
//!
//! The record is the validated commands (the adapter toolbox's
//! `Recording`), which knows from the appends, not anew at each submission,
//! which commands' events later commands wait for and which commands end the
//! buffer (its leaves). A submission, on the application's queue `Q`:
//! 1. a marker after the submission's wait list and the previous submission
//!    of this buffer (submissions stay in order across queues); on an
//!    in-order `Q` without profiling, the first command waits for those
//!    itself instead. The previous submission is left out of the list where
//!    it was made on the same in-order `Q`, whose order already puts it
//!    first (an eager launch waits for nothing either);
//! 2. every command, in append order (a topological order), enqueued
//!    directly with the adapter's eager form of the command. On an in-order
//!    `Q` the queue's order is the dependencies; on an out-of-order `Q` each
//!    command waits for the events of its dependencies (or the marker);
//!    either way a command also waits for its current wait events;
//! 3. on an out-of-order `Q`, a marker after the commands nothing waits for;
//!    on an in-order `Q` the last command ends the submission;
//! 4. one `clFlush`.
//!
//! Unlike cmdbuf-core's software command buffer, nothing is validated or
//! wrapped per command at replay, events are only kept where something
//! waits for them, and `Q` is flushed once, not per command. A one-command
//! submission on an in-order queue makes the OpenCL calls of one eager launch
//! and no more (issue 15, goal 4): no marker, no wait list, no extra event
//! references.
//!
//! A submission of two commands or more on an in-order queue of ours
//! without profiling, whose commands are all the device's own (no native
//! command, no raw host memory, no signal or wait events), may be handed
//! to the device's replayer where it takes submissions (`replayer.rs`,
//! which says when): the caller's time is then the same for
//! two commands as for a hundred. Its wait list is
//! held (a reference per event not of the same queue), and the record is
//! shared with the replayer, which reads it under its lock; updates wait
//! until the replayer has made every submission handed before them.
//!
//! A planned buffer has no `cl_command_buffer_khr`: its native handle is
//! `UnsupportedFeature`. Native commands run at each submission with `Q` as
//! their target, as on eager queues.

use std::any::Any;
use std::sync::Arc;

use cl3::types::cl_command_queue;
use parking_lot::Mutex;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::{RecordedCommand, Recording};

use crate::conv::ClResultExt;
use crate::device::Shared;
use crate::event::{ClEvent, HeldWaitList, PendingReplay, StatusWord, WaitList};
use crate::exec;
use crate::ffi::RawEvent;
use crate::flush::DeferredFlush;
use crate::queue::ClQueue;

/// The record, in append order.
type Records = Recording<ClEvent>;

/// A command buffer replayed as pre-planned eager submissions, being recorded.
pub(crate) struct PlannedCommandBuffer {
    shared: Arc<Shared>,
    desc: CommandBufferDesc,
    records: Records,
}

/// A finalized [`PlannedCommandBuffer`]: the planned record.
struct PlannedExecutable {
    shared: Arc<Shared>,
    desc: CommandBufferDesc,
    /// Shared with the submissions handed to the replayer, which read it
    /// while they enqueue.
    records: Arc<Mutex<Records>>,
    /// Whether a submission may be handed to the replayer, as far as the
    /// record goes ([`handable`]).
    handable: bool,
    /// The ticket of the latest submission handed to the replayer (0: none).
    handed: u64,
    /// The latest submission's event (held as the event, not as a second
    /// reference to its `cl_event`, which would cost a retain and a release
    /// per submission).
    previous: Option<Arc<ClEvent>>,
    /// The in-order queue the latest submission was made on, if it was one.
    previous_queue: Option<HeldQueue>,
}

/// A reference to a `cl_command_queue`, released on drop. Holding it keeps
/// the handle from being reused by another queue, so that comparing handles
/// tells the same queue.
pub(crate) struct HeldQueue(pub(crate) cl_command_queue);

// SAFETY: OpenCL command-queue handles may be retained, compared and
// released from any thread.
unsafe impl Send for HeldQueue {}

impl HeldQueue {
    /// A new reference to `queue`.
    ///
    /// # Safety
    /// `queue` is a valid command queue.
    pub(crate) unsafe fn retain(queue: cl_command_queue) -> Result<HeldQueue> {
        // SAFETY: a valid queue (the caller's contract); the new reference is
        // released on drop.
        unsafe { cl3::command_queue::retain_command_queue(queue) }.cl("clRetainCommandQueue")?;
        Ok(HeldQueue(queue))
    }
}

impl Drop for HeldQueue {
    fn drop(&mut self) {
        // SAFETY: this value owns one reference to a valid queue.
        if let Err(code) = unsafe { cl3::command_queue::release_command_queue(self.0) } {
            tracing::error!(code, "clReleaseCommandQueue failed");
        }
    }
}

impl PlannedCommandBuffer {
    pub(crate) fn new(shared: Arc<Shared>, desc: CommandBufferDesc) -> PlannedCommandBuffer {
        PlannedCommandBuffer { shared, desc, records: Records::new() }
    }
}

impl RecordingCommandBufferImpl for PlannedCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        _alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let signal = signal.then(ClEvent::signal);
        self.records.push(command, deps, wait_events, signal.clone(), ())?;
        Ok(signal.map(|s| s as Arc<dyn EventImpl>))
    }

    fn finalize(self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed> {
        let PlannedCommandBuffer { shared, desc, records } = *self;
        tracing::debug!(
            commands = records.len(),
            replay = "planned",
            "OpenCL command buffer finalized for pre-planned eager replay"
        );
        Ok(Box::new(PlannedExecutable {
            shared,
            desc,
            handable: handable(&records),
            records: Arc::new(Mutex::new(records)),
            handed: 0,
            previous: None,
            previous_queue: None,
        }))
    }
}

/// Whether the replayer may make submissions of `records`: two commands or
/// more (one is an eager launch's calls, less than handing it over costs),
/// each of the device's own: no native command (the application's code,
/// run on its own thread), no raw host memory, no signal event (read by
/// other submissions as their command's latest execution) and no wait
/// event.
fn handable(records: &Records) -> bool {
    records.len() >= 2
        && records.iter().all(|record| {
            record.signal().is_none()
                && record.wait_events().is_empty()
                && !matches!(record.command(), Command::Native(_))
                && !exec::uses_host_memory(record.command())
        })
}

/// Where a submission's commands go.
#[derive(Clone)]
struct Target {
    queue: cl_command_queue,
    /// The queue's deferred flush, which its events tell of host waits.
    deferred: Arc<DeferredFlush>,
    in_order: bool,
    /// The queue profiles.
    queue_profiling: bool,
    /// The queue and the buffer profile.
    profiling: bool,
    /// Launches run in enqueue order ([`ClQueue::ordered_launches`]).
    ordered: bool,
}

// SAFETY: a command-queue handle is usable from any thread; a queue waits
// until the replayer has made every submission handed for it before it is
// released (`ClQueue::drain`).
unsafe impl Send for Target {}

impl Target {
    fn of(queue: &ClQueue, desc: &CommandBufferDesc) -> Target {
        Target {
            queue: queue.raw(),
            deferred: queue.deferred.clone(),
            in_order: queue.in_order(),
            queue_profiling: queue.profiling,
            profiling: queue.profiling && desc.profiling,
            ordered: queue.ordered_launches(),
        }
    }
}

/// The wait list of command `i` of a submission: the submission's start
/// for a fused first command, else the marker (no dependencies) or the
/// events of its dependencies out of order; plus its own wait events.
fn command_wait<'w>(
    i: usize,
    record: &RecordedCommand<ClEvent>,
    marker: Option<&RawEvent>,
    in_order: bool,
    start: &mut WaitList<'w>,
    events: &[Option<RawEvent>],
) -> Result<WaitList<'w>> {
    let mut wait = WaitList::default();
    match marker {
        None if i == 0 => std::mem::swap(&mut wait, start),
        // A fused start is on an in-order queue, whose order is the dependencies.
        None => {}
        Some(_) if in_order => {}
        Some(marker) => {
            if record.deps().is_empty() {
                wait.push(marker.retain());
            }
            for d in record.deps() {
                let event = events[*d as usize].as_ref().expect("dependencies keep their events");
                wait.push(event.retain());
            }
        }
    }
    for e in record.wait_events() {
        if let Some(resolved) = e.resolve() {
            wait.add_retained(downcast::<ClEvent>(&*resolved as &dyn Any, "a wait event")?);
        }
    }
    Ok(wait)
}

/// What the commands of one submission leave as they are enqueued.
struct Replayed<'w> {
    in_order: bool,
    /// The first command's event where it starts the submission and is
    /// not also its last.
    first_command: Option<RawEvent>,
    /// Events of commands that a later command waits for, by command number.
    events: Vec<Option<RawEvent>>,
    /// Events of the commands no other waits for (out of order).
    ends: WaitList<'w>,
    /// The last command's event (in order).
    last: Option<RawEvent>,
    /// Events whose kernels report a status word.
    checks: Vec<Arc<ClEvent>>,
}

impl<'w> Replayed<'w> {
    fn new(in_order: bool, commands: usize) -> Replayed<'w> {
        Replayed {
            in_order,
            first_command: None,
            events: Vec::with_capacity(if in_order { 0 } else { commands }),
            ends: WaitList::default(),
            last: None,
            checks: Vec::new(),
        }
    }

    /// Notes a command's `event`: its status check and signal event, the
    /// submission's first event where `fused_first`, and what later
    /// commands and the submission's end wait for.
    fn note(
        &mut self,
        record: &RecordedCommand<ClEvent>,
        event: RawEvent,
        status: Option<Arc<StatusWord>>,
        profiling: bool,
        fused_first: bool,
    ) {
        if status.is_some() || record.signal().is_some() {
            let wrapped = ClEvent::checked(event.retain(), profiling, status);
            if wrapped.has_status() {
                self.checks.push(wrapped.clone());
            }
            if let Some(signal) = record.signal() {
                signal.set_current(wrapped);
            }
        }
        if fused_first {
            self.first_command = Some(event.retain());
        }
        if self.in_order {
            // The queue orders everything: only the last event is kept.
            self.last = Some(event);
        } else {
            if record.is_leaf() {
                self.ends.push(event.retain());
            }
            self.events.push((!record.is_leaf()).then_some(event));
        }
    }
}

impl PlannedExecutable {
    /// Hands the submission to the replayer (see the module documentation);
    /// made here where the replayer takes no job.
    fn hand(
        &mut self,
        queue: &ClQueue,
        wait: &[&dyn EventImpl],
        target: Target,
        same_queue: bool,
    ) -> Result<Arc<ClEvent>> {
        let mut start = HeldWaitList::new(wait, &queue.deferred)?;
        if let Some(previous) = self.previous.as_ref().filter(|_| !same_queue) {
            start.add(previous.clone());
        }
        let device = &self.shared.device;
        let pending = PendingReplay::new(device.clone());
        let job: crate::replayer::Job = {
            let (shared, records, pending) = (self.shared.clone(), self.records.clone(), pending.clone());
            Box::new(move || {
                let start = start.resolve();
                let records = records.lock();
                // SAFETY: the record was validated for this context when
                // appended or updated, with raw host memory in none of its
                // commands (`handable`); the queue stays valid until every
                // submission handed for it is made (`Target`), and the wait
                // list's events are this context's, held by the list.
                let made = unsafe { replay(&shared, &records, &target, start) };
                pending.set(made.unwrap_or_else(|error| failed_submission(&shared, &target, error)));
            })
        };
        match device.replayer.worker.hand(job) {
            Ok(ticket) => {
                pending.handed(ticket);
                queue.handed_replay(ticket);
                self.handed = ticket;
            }
            Err(job) => {
                queue.drain();
                job();
            }
        }
        Ok(ClEvent::pending(pending, &queue.deferred))
    }

    /// Waits until the replayer has made every submission of this buffer
    /// handed to it: they read the record as it was when they were handed.
    fn drain(&self) {
        if self.handed != 0 {
            self.shared.device.replayer.worker.wait_made(self.handed);
        }
    }
}

/// The event of a submission the replayer could not make: behind a marker
/// after what it enqueued (the queue is in order), so that what waits for
/// it waits for that.
fn failed_submission(shared: &Arc<Shared>, target: &Target, error: UrError) -> Arc<ClEvent> {
    tracing::warn!(error = %error, "a command-buffer submission handed to the replayer failed");
    // SAFETY: the application's queue (valid, `Target`), and an empty list.
    let after = unsafe { exec::marker(shared, target.queue, &WaitList::default()) }.ok();
    let _ = cl3::command_queue::flush(target.queue);
    ClEvent::failed(error, after)
}

/// Enqueues one submission of `records` on `target` after `start` (steps 1
/// to 4 of the module documentation); its event.
///
/// # Safety
/// The records were validated for this context when appended or updated,
/// and raw host memory in them is valid at every execution; `target.queue`
/// is a valid queue of this context and `start`'s events are its events.
unsafe fn replay(
    shared: &Arc<Shared>,
    records: &Records,
    target: &Target,
    mut start: WaitList<'_>,
) -> Result<Arc<ClEvent>> {
    let (q, in_order) = (target.queue, target.in_order);
    // On an in-order queue without profiling the first command takes the
    // start's wait list itself and its event starts the submission: a
    // marker there would be one more command per submission, which is
    // what a one-command replay would lose to an eager launch by.
    let fused_start = in_order && !target.queue_profiling && !records.is_empty();
    let marker = if fused_start {
        None
    } else {
        // SAFETY: the application's queue and events of this context.
        Some(unsafe { exec::marker(shared, q, &start)? })
    };
    let mut replayed = Replayed::new(in_order, records.len());
    for (i, record) in records.iter().enumerate() {
        let wait = command_wait(i, record, marker.as_ref(), in_order, &mut start, &replayed.events)?;
        // SAFETY: the command was validated for this context when appended
        // or updated; raw host memory in it is valid at every execution
        // (the append's contract); `q` and the events are this context's.
        let (event, status) = unsafe { exec::enqueue(shared, q, record.command(), &wait, target.ordered)? };
        let fused_first = i == 0 && marker.is_none() && records.len() > 1;
        replayed.note(record, event, status, target.profiling, fused_first);
    }
    let Replayed { first_command, ends, last, checks, .. } = replayed;
    // `None` only where the one command is the whole submission.
    let first = marker.or(first_command);
    let last = match last {
        Some(last) => last,
        None => {
            let mut ends = ends;
            let marker = first.as_ref().expect("without a fused start there is a marker");
            if ends.is_empty() {
                ends.push(marker.retain());
            }
            // SAFETY: the application's queue and events of this context.
            unsafe { exec::marker(shared, q, &ends)? }
        }
    };
    if first.is_none() {
        // One command is the whole submission: its flush is deferred as an
        // eager command's (`flush.rs`), which it would otherwise lose to by
        // a `clFlush` (0.7 to 2 µs on NVIDIA's OpenCL).
        target.deferred.enqueued();
    } else {
        cl3::command_queue::flush(q).cl("clFlush")?;
    }
    Ok(ClEvent::planned_submission(first, last, target.queue_profiling, checks, target.deferred.clone()))
}

impl ExecutableCommandBufferImpl for PlannedExecutable {
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let queue = downcast::<ClQueue>(queue as &dyn Any, "the queue")?;
        let target = Target::of(queue, &self.desc);
        let q = target.queue;
        // The same in-order queue already runs this submission after the
        // previous one: waiting for it would be one more event in the first
        // command's wait list than an eager launch has.
        let same_queue = target.in_order && self.previous_queue.as_ref().is_some_and(|held| held.0 == q);
        // Taken before anything is enqueued, so that a failure leaves no
        // submission half made.
        let held = match (target.in_order, same_queue) {
            // SAFETY: the application's queue, valid during the call.
            (true, false) => Some(unsafe { HeldQueue::retain(q)? }),
            _ => None,
        };
        // On a queue of our own that runs in order (whose order the replayer
        // keeps, `ClQueue::drain`), without profiling; back to back with the
        // submission before, with no host wait for the queue between (one
        // waited for at once would wait for the hand-over too: submitted
        // and waited for one at a time, handed, they took 1.8x on PoCL 3.1,
        // performance.md). The device is busy with the one before, so the
        // thread's wake-up, where it sleeps, is not on the device's path.
        let replayer = &self.shared.device.replayer;
        let handable = self.handable && target.ordered && !target.queue_profiling && replayer.takes_jobs();
        let back_to_back = handable && !queue.deferred.take_host_waited();
        let submission = if handable && (replayer.always() || queue.replays_pending() || back_to_back) {
            self.hand(queue, wait, target, same_queue)?
        } else {
            queue.drain();
            let mut start = WaitList::new(wait, &queue.deferred)?;
            if let Some(previous) = self.previous.as_ref().filter(|_| !same_queue) {
                start.add(previous);
            }
            let records = self.records.lock();
            // SAFETY: the record was validated for this context when appended
            // or updated (raw host memory in it valid at every execution, the
            // append's contract); `queue` and the events are this context's.
            unsafe { replay(&self.shared, &records, &target, start)? }
        };
        self.previous = Some(submission.clone());
        if !same_queue {
            self.previous_queue = held;
        }
        Ok(submission)
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        // Submissions in flight hold their own references: the record is only
        // read while enqueueing.
        self.drain();
        self.records.lock().update_launches(updates)
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        self.drain();
        ClEvent::renew_signal(&mut self.records.lock(), command)
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        self.drain();
        let mut records = self.records.lock();
        records.set_wait_events(command, events)?;
        self.handable = handable(&records);
        Ok(())
    }

    /// `UnsupportedFeature`: a pre-planned buffer has no
    /// `cl_command_buffer_khr` (see the module documentation).
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(err!(
            UnsupportedFeature,
            "this device replays command buffers as pre-planned eager submissions: there is no cl_command_buffer_khr"
        ))
    }
}
