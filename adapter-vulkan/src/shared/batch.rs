//! Eager batches: a queue's eager commands gathered one after the other
//! into a batch, recorded into one primary command buffer and submitted
//! together when something needs the work started or finished.
//!
//! A `vkQueueSubmit` costs tens of microseconds on some drivers (about 50 µs
//! on NVIDIA's), far more than recording a dispatch; so, like UR's Level
//! Zero v2 adapter appending to an immediate command list, AdaptiveCpp
//! flushing its DAG, or wgpu's command encoders, a queue records eager
//! commands and submits them in one go. The commands of a batch run one
//! after the other (a full memory barrier between two commands), which every
//! queue allows: an in-order queue requires it and an out-of-order queue may
//! serialise. Each command keeps its own event, timestamps and status word;
//! its event completes when the batch does.
//!
//! Enqueuing a command only lowers it and adds its device operations to the
//! open batch; the batch is recorded when it is submitted. A batch that
//! fills up is sealed and handed to the device's batch thread
//! ([`BatchThread`]), which records and submits it while the enqueuing
//! thread fills the next one: the driver's recording (the barrier, push
//! constant and dispatch of each command, about 0.6 to 1.2 µs a command on
//! NVIDIA's driver, docs/performance.md) is then off the enqueuing thread,
//! and a long run of commands is recorded and run while it is enqueued.
//! Every other submission (a wait, a flush, a command that cannot join)
//! records and submits on the calling thread, after the batches sealed
//! before it: sealed batches reach the lane in the order they were sealed
//! (`submitting`). Batches start small and double while they fill up
//! ([`FIRST_COMMANDS`] to [`MAX_COMMANDS`]), so that the device starts on
//! the first commands of a long run within microseconds.
//!
//! A command that waits for work submitted earlier to the batch's own
//! `VkQueue` (a batch before, of this queue, submitted or sealed to be, or
//! of another lane on the same `VkQueue`) joins the batch behind a pipeline barrier, which orders it
//! after every command earlier in that queue's submission order; only work
//! of other `VkQueue`s is waited for with timeline semaphores (a semaphore
//! wait is a driver-side dependency for the device's scheduler to resolve,
//! a barrier only an ordering inside the queue). The batch before may still
//! have host work to run (every eager kernel has a status word to check):
//! the lane's completion thread finishes its submissions in order, so that
//! work is done before this batch's events complete.
//!
//! A batch is submitted ([`Batch::flush`]) when:
//! - a host thread waits for one of its events, or queries one's status
//!   (so that polling until completion terminates), from any thread;
//! - a submission waits for one of its events: another queue, a command
//!   buffer, a host task (which waits on the host), a command of this queue
//!   that cannot join the batch;
//! - the queue is finished, flushed, dropped, or its native handle is asked
//!   for (interop may submit to the `VkQueue` directly);
//! - a command cannot join: a native command (its callback may call the
//!   queue), a write from host memory (its copy into staging waits on the
//!   host for its dependencies), or one whose wait list holds an event not
//!   yet submitted elsewhere (a user event, work held back) or submitted on
//!   another lane with host work still to run (status words, a copy into
//!   host memory): it is submitted after the batch, as every eager command
//!   was before batching;
//! - it is full (the batch thread submits it), or its oldest command is
//!   older than [`MAX_AGE`] (checked at each append and by the device's
//!   batch thread, so that work is started without any further call: a
//!   program that polls host memory a kernel writes still sees it written).

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use ash::vk;
use cmdbuf_core::Result;
use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;

use crate::cmd::{GpuOp, Pool, host_barrier, level_barrier, record_ops};
use crate::gpu::Gpu;
use crate::profiling::QuerySpan;
use crate::shared::event::{Follow, fail, run_waiters};
use crate::shared::host_work::{Checks, HostCopy, Keep, Kept};
use crate::shared::lane::wait_points;
use crate::shared::state::{Batch, Completion, EventCore, Gathered, Lane, Step, Waiter};

/// Commands per batch at most. A submission's cost is then spread over
/// enough commands to be small against recording them (50 µs / 256 is about
/// 0.2 µs per command on NVIDIA), while the device does not wait for more
/// than a few hundred microseconds of recording before it starts.
pub(crate) const MAX_COMMANDS: usize = 256;

/// Commands of a queue's first batch, and of the first after one was
/// submitted before it was full: each batch that fills up doubles the next
/// one's size, up to [`MAX_COMMANDS`]. The device then starts on the first
/// commands of a long run of them after a few microseconds rather than
/// after a full batch has been enqueued and recorded, and stays busy while
/// the later, larger batches are recorded.
const FIRST_COMMANDS: usize = 16;

/// How long a batch stays open at most: work is started within about this
/// long without any further call, long enough to gather a chain of
/// commands a program enqueues in a loop, short against the kernels that
/// matter for latency.
pub(crate) const MAX_AGE: Duration = Duration::from_millis(1);

/// Sealed batches of a queue that the batch thread may be behind on: a
/// queue that enqueues faster than the thread records (recording a kernel
/// costs more than enqueuing it on NVIDIA's driver, 1.0-1.35 µs against
/// 0.7-1.2) then records and submits them itself, so that what waits to
/// be recorded stays bounded (about 4,000 commands, some 1.6 MB, per
/// queue). Not fewer: a queue that records itself stops enqueuing
/// meanwhile (with a bound of 4, a chain of 10,000 kernels on the H200 took
/// 0.1-0.5 µs more wall time per kernel in one call of two,
/// docs/performance.md).
const MAX_SEALED: usize = 16;

/// Commands appended between two looks at the open batch's age.
const AGE_EVERY: usize = 8;

/// What one command of a batch adds beside its device operations.
pub(crate) struct Part {
    pub(crate) ops: SmallVec<[GpuOp; 1]>,
    pub(crate) span: Option<QuerySpan>,
    pub(crate) post: Vec<HostCopy>,
    pub(crate) keep: Keep,
    pub(crate) checks: Checks,
}

/// What [`Batch::append`] did.
pub(crate) enum Appended {
    /// The command is in the batch; its event.
    Batched(Arc<EventCore>),
    /// The command cannot join: the batch was submitted, and the command
    /// (its part handed back) is to be submitted on its own after waiting
    /// for these events (its wait list and the queue's order), completing
    /// this event. (Boxed: the part is large, this case rare.)
    Alone(Arc<EventCore>, SmallVec<[Arc<EventCore>; 4]>, Option<Box<Part>>),
}

impl Batch {
    /// An empty batch of the queue submitting on `lane`.
    pub(crate) fn new(gpu: Arc<Gpu>, lane: Arc<Lane>) -> Result<Arc<Batch>> {
        let pool = Pool::new(gpu.clone())?;
        Ok(Arc::new(Batch {
            gpu,
            lane,
            pool,
            open: Mutex::new(Gathered::default()),
            sealed: Mutex::new(VecDeque::new()),
            submitting: Mutex::new(()),
        }))
    }

    /// Adds one command to the open batch, after ordering it with `order`
    /// (which makes its event the queue's newest and returns what it must
    /// wait for besides `deps`), or, when it cannot join (`part` is `None`,
    /// or a dependency is neither in the queue's batches nor submitted),
    /// submits the batches and hands the command back to be submitted
    /// alone. `thread` (the device's batch thread) watches the batch once it opens, and
    /// submits it once it is full.
    pub(crate) fn append(
        self: &Arc<Self>,
        thread: &BatchThread,
        mut deps: SmallVec<[Arc<EventCore>; 4]>,
        order: impl FnOnce(&Arc<EventCore>) -> SmallVec<[Arc<EventCore>; 2]>,
        part: Option<Part>,
    ) -> Result<Appended> {
        // Checked before the command is ordered: a failure here leaves the
        // queue's order untouched.
        crate::exit::check()?;
        let mut open = self.open.lock();
        let first = open.entries.is_empty();
        let out = EventCore::batched(self.clone());
        deps.extend(order(&out));
        // Whether the command waits for work submitted earlier to the
        // batch's `VkQueue`, or to be, in a batch of this queue sealed
        // before (a barrier before it orders it), and the events of other
        // queues it waits for (their timeline values, at submission).
        let mut after_queue = false;
        let mut elsewhere: SmallVec<[usize; 4]> = SmallVec::new();
        let mut joins = part.is_some();
        for (i, d) in deps.iter().enumerate().filter(|_| part.is_some()) {
            match d.follow(self, &self.lane) {
                Follow::Free => {}
                Follow::Batched | Follow::Barrier => after_queue = true,
                Follow::Wait => elsewhere.push(i),
                Follow::Hold => {
                    joins = false;
                    break;
                }
            }
        }
        let part = match part {
            Some(part) if joins => part,
            part => {
                out.unbatch();
                // Submitted before the command: it may follow commands of
                // the queue's batches.
                self.seal(&mut open);
                drop(open);
                run_waiters(self.drain());
                return Ok(Appended::Alone(out, deps, part.map(Box::new)));
            }
        };
        if first {
            open.opened = Some(Instant::now());
            if open.limit == 0 {
                open.limit = FIRST_COMMANDS;
            }
            // Allocated once per batch rather than grown command by command.
            let limit = open.limit;
            open.entries.reserve(limit);
            open.steps.reserve(limit);
            open.ops.reserve(limit);
            thread.watch(self);
        }
        open.ops.extend(part.ops);
        // Every command but the first has a barrier before it anyway.
        let step = Step { end: open.ops.len(), after: !first || after_queue };
        open.steps.push(step);
        for d in elsewhere.into_iter().map(|i| &deps[i]) {
            if !open.waits.iter().any(|w| Arc::ptr_eq(w, d)) {
                open.waits.push(d.clone());
            }
        }
        open.entries.push(Completion {
            out: out.clone(),
            post: part.post,
            queries: part.span,
            cmd: None,
            keep: part.keep,
            checks: part.checks,
            inherit: None,
        });
        let full = open.entries.len() >= open.limit;
        // The age is read every [`AGE_EVERY`] commands (a clock read costs
        // about 50 ns on the H200's virtual machine): the batch thread
        // looks every MAX_AGE anyway.
        let old = open.entries.len().is_multiple_of(AGE_EVERY) && open.opened.is_some_and(|t| t.elapsed() >= MAX_AGE);
        if full || old {
            let next = if full { (open.limit * 2).min(MAX_COMMANDS) } else { FIRST_COMMANDS };
            let pending = self.seal(&mut open);
            open.limit = next;
            drop(open);
            // The batch thread records and submits it while this thread
            // goes on enqueuing; without that thread, or when it has fallen
            // [`MAX_SEALED`] batches behind this queue, this one does.
            if pending > MAX_SEALED || !thread.hand_off(self) {
                run_waiters(self.drain());
            }
        }
        Ok(Appended::Batched(out))
    }

    /// Submits the queue's batches, the open one and those sealed: every
    /// command appended before the call is submitted when it returns.
    pub(crate) fn flush(&self) {
        let mut open = self.open.lock();
        self.seal(&mut open);
        drop(open);
        run_waiters(self.drain());
    }

    /// Submits the sealed batches, and the open one if it has been open for
    /// [`MAX_AGE`]; returns when it will be that old otherwise (`None`:
    /// nothing open).
    fn flush_if_old(&self) -> Option<Instant> {
        let mut open = self.open.lock();
        let due = open.opened.map(|t| t + MAX_AGE);
        let still_open = match due {
            Some(due) if Instant::now() < due => Some(due),
            _ => {
                self.seal(&mut open);
                None
            }
        };
        drop(open);
        run_waiters(self.drain());
        still_open
    }

    /// Moves the open batch, if it holds any command, behind the sealed
    /// ones; returns how many are sealed now. Called with `open` locked, so
    /// batches are sealed in the order of their commands.
    fn seal(&self, open: &mut Gathered) -> usize {
        let mut sealed = self.sealed.lock();
        if !open.entries.is_empty() {
            sealed.push_back(std::mem::take(open));
        }
        sealed.len()
    }

    /// Records and submits the sealed batches, oldest first; returns the
    /// waiters to run once no lock is held. A batch sealed before the call
    /// is submitted when it returns, by this thread or by another that was
    /// submitting it meanwhile.
    fn drain(&self) -> Vec<Waiter> {
        let _order = self.submitting.lock();
        let mut waiters = Vec::new();
        loop {
            let next = self.sealed.lock().pop_front();
            match next {
                Some(batch) => waiters.extend(self.submit_sealed(batch)),
                None => return waiters,
            }
        }
    }

    /// Records `batch` into one primary command buffer (its commands in
    /// order, each after a barrier where its step says, inside its
    /// timestamps where it has them, then the barrier that makes device
    /// writes visible to the host) and submits it. Called with
    /// `submitting` held, which makes this thread the pool's only user.
    fn submit_sealed(&self, batch: Gathered) -> Vec<Waiter> {
        let Gathered { mut entries, ops, steps, waits, .. } = batch;
        let gpu = &self.gpu;
        let recorded = self.pool.record(|cb| {
            let mut bound = vk::Pipeline::null();
            let mut start = 0;
            for (step, entry) in steps.iter().zip(&entries) {
                if step.after {
                    level_barrier(gpu, cb, false);
                }
                match &entry.queries {
                    Some(s) if step.after => s.begin_after_previous(cb),
                    Some(s) => s.begin(cb),
                    None => {}
                }
                record_ops(gpu, cb, &ops[start..step.end], &mut bound)?;
                if let Some(s) = &entry.queries {
                    s.end(cb);
                }
                start = step.end;
            }
            host_barrier(gpu, cb);
            Ok(())
        });
        drop(ops);
        let cmd = match recorded {
            Ok(cmd) => cmd,
            Err(e) => return fail_all(entries, e),
        };
        let (points, values) = wait_points(&waits);
        let raw = [cmd.raw()];
        let last = entries.last_mut().expect("a sealed batch holds a command");
        // Released once the whole batch has completed: the command buffer,
        // and the lanes waited on (with their semaphores).
        last.cmd = Some(cmd);
        last.keep.push(Kept::Other(Box::new(points)));
        tracing::trace!(commands = entries.len(), lane = self.lane.index(), "eager batch submitted");
        match self.lane.submit_many(&values, &raw, || entries.drain(..)) {
            Ok(waiters) => waiters,
            Err(e) => {
                // The completions (with the command buffer) are dropped
                // unsubmitted; their events fail.
                let outs: Vec<Arc<EventCore>> = entries.drain(..).map(|c| c.out).collect();
                for out in &outs {
                    fail(out, e.clone());
                }
                Vec::new()
            }
        }
    }
}

/// Fails the events of unsubmitted `entries`.
fn fail_all(entries: Vec<Completion>, error: cmdbuf_core::UrError) -> Vec<Waiter> {
    tracing::error!(%error, "a Vulkan eager batch failed");
    let mut waiters = Vec::new();
    for c in entries {
        waiters.extend(c.out.complete(Err(error.clone()), None));
    }
    waiters
}

/// The device's batch thread: it records and submits the batches queues
/// hand it once full ([`BatchThread::hand_off`]), and submits batches that
/// have been open for [`MAX_AGE`] when no call of their queues has.
pub(crate) struct BatchThread {
    inner: Arc<ThreadInner>,
    /// Whether the thread was started (read without the lock on every
    /// batch opened).
    started: std::sync::atomic::AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

struct ThreadInner {
    state: Mutex<ThreadState>,
    wake: Condvar,
}

#[derive(Default)]
struct ThreadState {
    batches: Vec<Weak<Batch>>,
    stop: bool,
    /// The thread sleeps until woken (no batch was open for a whole
    /// period); otherwise it looks every MAX_AGE, so that opening a batch
    /// costs no wake-up while batches keep opening.
    idle: bool,
    /// A batch was handed off since the thread last looked: it looks again
    /// at once rather than at the next period.
    handed: bool,
}

impl BatchThread {
    pub(crate) fn new() -> BatchThread {
        BatchThread {
            inner: Arc::new(ThreadInner { state: Mutex::default(), wake: Condvar::new() }),
            started: std::sync::atomic::AtomicBool::new(false),
            thread: Mutex::new(None),
        }
    }

    /// Watches `batch`, which has just opened; starts the thread on first use.
    fn watch(&self, batch: &Arc<Batch>) {
        let mut state = self.inner.state.lock();
        if !state.batches.iter().any(|b| std::ptr::eq(b.as_ptr(), Arc::as_ptr(batch))) {
            state.batches.push(Arc::downgrade(batch));
        }
        let wake = state.idle;
        drop(state);
        if wake {
            self.inner.wake.notify_one();
        }
        if self.started.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let mut thread = self.thread.lock();
        if thread.is_none() {
            let inner = self.inner.clone();
            match std::thread::Builder::new().name("ur-vulkan-batches".into()).spawn(move || inner.run()) {
                Ok(handle) => *thread = Some(handle),
                // Batches are then submitted by their queues' calls only
                // (and at MAX_COMMANDS); not fatal.
                Err(e) => tracing::warn!(error = %e, "cannot start the Vulkan batch thread"),
            }
            self.started.store(true, std::sync::atomic::Ordering::Release);
        }
    }
}

impl BatchThread {
    /// Has the thread record and submit `batch`'s sealed batches now;
    /// `false` when the thread is not running (the caller submits them).
    fn hand_off(&self, batch: &Arc<Batch>) -> bool {
        if self.thread.lock().is_none() {
            return false;
        }
        let mut state = self.inner.state.lock();
        if state.stop {
            return false;
        }
        if !state.batches.iter().any(|b| std::ptr::eq(b.as_ptr(), Arc::as_ptr(batch))) {
            state.batches.push(Arc::downgrade(batch));
        }
        state.handed = true;
        drop(state);
        self.inner.wake.notify_one();
        true
    }
}

impl ThreadInner {
    fn run(&self) {
        let mut state = self.state.lock();
        // Periods in a row without an open batch.
        let mut quiet = 0u32;
        loop {
            if state.stop {
                return;
            }
            state.handed = false;
            let batches: Vec<Arc<Batch>> = state.batches.drain(..).filter_map(|b| b.upgrade()).collect();
            if batches.is_empty() {
                if quiet >= 1 {
                    state.idle = true;
                    self.wake.wait(&mut state);
                    state.idle = false;
                    quiet = 0;
                } else {
                    quiet += 1;
                    self.wake.wait_for(&mut state, MAX_AGE);
                }
                continue;
            }
            quiet = 0;
            let mut next: Option<Instant> = None;
            let mut still = Vec::new();
            parking_lot::MutexGuard::unlocked(&mut state, || {
                for b in batches {
                    if let Some(due) = b.flush_if_old() {
                        next = Some(next.map_or(due, |n| n.min(due)));
                        still.push(Arc::downgrade(&b));
                    }
                }
            });
            for b in still {
                if !state.batches.iter().any(|x| x.ptr_eq(&b)) {
                    state.batches.push(b);
                }
            }
            // Batches handed off while this round ran are looked at now,
            // those watched within MAX_AGE.
            if state.handed {
                continue;
            }
            let due = next.unwrap_or_else(|| Instant::now() + MAX_AGE);
            self.wake.wait_until(&mut state, due);
        }
    }
}

impl BatchThread {
    /// Stops the thread and joins it (unless it is the caller); batches are
    /// then submitted by their queues' calls only.
    pub(crate) fn stop(&self) {
        self.inner.state.lock().stop = true;
        self.inner.wake.notify_all();
        if let Some(handle) = self.thread.lock().take()
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
    }

    /// Submits every watched batch that holds commands.
    pub(crate) fn flush_watched(&self) {
        let batches: Vec<Arc<Batch>> = self.inner.state.lock().batches.drain(..).filter_map(|b| b.upgrade()).collect();
        for batch in batches {
            batch.flush();
        }
    }
}

impl Drop for BatchThread {
    fn drop(&mut self) {
        self.stop();
    }
}
