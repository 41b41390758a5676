//! Eager batches: a queue's eager commands recorded one after the other into
//! one open primary command buffer, submitted together when something needs
//! the work started or finished.
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
//! A command that waits for work submitted earlier to the batch's own
//! `VkQueue` (the batch before, of this queue or another lane on the same
//! `VkQueue`) joins the batch behind a pipeline barrier, which orders it
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
//! - it holds [`MAX_COMMANDS`] commands, or its oldest command is older than
//!   [`MAX_AGE`] (checked at each append and by the device's batch timer, so
//!   that work is started without any further call: a program that polls
//!   host memory a kernel writes still sees it written).

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
use crate::shared::state::{Batch, Completion, EventCore, Lane, Open, Waiter};

/// Commands per batch at most. A submission's cost is then spread over
/// enough commands to be small against recording them (50 µs / 256 is about
/// 0.2 µs per command on NVIDIA), while the device does not wait for more
/// than a few hundred microseconds of recording before it starts.
pub(crate) const MAX_COMMANDS: usize = 256;

/// How long a batch stays open at most: work is started within about this
/// long without any further call, long enough to gather a chain of
/// commands a program enqueues in a loop, short against the kernels that
/// matter for latency.
pub(crate) const MAX_AGE: Duration = Duration::from_millis(1);

/// What one command of a batch adds beside its device operations.
pub(crate) struct Part<'a> {
    pub(crate) ops: &'a [GpuOp],
    pub(crate) span: Option<QuerySpan>,
    pub(crate) post: Vec<HostCopy>,
    pub(crate) keep: Keep,
    pub(crate) checks: Checks,
}

/// What [`Batch::append`] did.
pub(crate) enum Appended<'a> {
    /// The command is in the batch; its event.
    Batched(Arc<EventCore>),
    /// The command cannot join: the batch was submitted, and the command
    /// (its part handed back) is to be submitted on its own after waiting
    /// for these events (its wait list and the queue's order), completing
    /// this event. (Boxed: the part is large, this case rare.)
    Alone(Arc<EventCore>, SmallVec<[Arc<EventCore>; 4]>, Option<Box<Part<'a>>>),
}

impl Batch {
    /// An empty batch of the queue submitting on `lane`.
    pub(crate) fn new(gpu: Arc<Gpu>, lane: Arc<Lane>) -> Result<Arc<Batch>> {
        let pool = Pool::new(gpu.clone())?;
        Ok(Arc::new(Batch { gpu, lane, pool, open: Mutex::new(Open::default()) }))
    }

    /// Records one command into the batch, after ordering it with `order`
    /// (which makes its event the queue's newest and returns what it must
    /// wait for besides `deps`), or, when it cannot join (`part` is `None`,
    /// or a dependency is neither in the batch nor submitted), submits the
    /// batch and hands the command back to be submitted alone. `timer` (the
    /// device's) watches the batch once it opens.
    pub(crate) fn append<'a>(
        self: &Arc<Self>,
        timer: &BatchTimer,
        mut deps: SmallVec<[Arc<EventCore>; 4]>,
        order: impl FnOnce(&Arc<EventCore>) -> SmallVec<[Arc<EventCore>; 2]>,
        part: Option<Part<'a>>,
    ) -> Result<Appended<'a>> {
        let mut open = self.open.lock();
        // Opened before the command is ordered: a failure here leaves the
        // queue's order untouched.
        let first = open.cmd.is_none();
        if first && part.is_some() {
            open.cmd = Some(self.pool.begin_open()?);
        }
        let out = EventCore::batched(self.clone());
        deps.extend(order(&out));
        // Whether the command waits for work submitted earlier to the
        // batch's `VkQueue` (a barrier before it orders it), and the events of
        // other queues it waits for (their timeline values, at submission).
        let mut after_queue = false;
        let mut elsewhere: SmallVec<[usize; 4]> = SmallVec::new();
        let mut joins = part.is_some();
        for (i, d) in deps.iter().enumerate().filter(|_| part.is_some()) {
            match d.follow(self, &self.lane) {
                Follow::Free => {}
                Follow::Barrier => after_queue = true,
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
                let waiters = self.submit(&mut open);
                drop(open);
                run_waiters(waiters);
                return Ok(Appended::Alone(out, deps, part.map(Box::new)));
            }
        };
        if first {
            open.opened = Some(Instant::now());
            timer.watch(self);
        }
        // Every command but the first has a barrier before it anyway.
        let recorded = self.record_part(&mut open, &part, !first || after_queue);
        if let Err(e) = recorded {
            // Only native commands' callbacks fail while recording, and they
            // never join a batch; the command buffer would hold half a
            // command, so it and its commands fail together.
            let mut waiters = self.abandon(&mut open, e.clone());
            waiters.extend(out.complete(Err(e.clone()), None));
            drop(open);
            run_waiters(waiters);
            return Err(e);
        }
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
        let full = open.entries.len() >= MAX_COMMANDS || open.opened.is_some_and(|t| t.elapsed() >= MAX_AGE);
        if full {
            let waiters = self.submit(&mut open);
            drop(open);
            run_waiters(waiters);
        }
        Ok(Appended::Batched(out))
    }

    /// Records `part` into the open command buffer, after a barrier when
    /// `after` (it follows commands of the batch, or submitted earlier to the
    /// same `VkQueue`), inside its timestamp span where it has one.
    fn record_part(&self, open: &mut Open, part: &Part<'_>, after: bool) -> Result<()> {
        let gpu = &self.gpu;
        let cb = open.cmd.as_ref().expect("an open command buffer").raw();
        let mut bound = open.bound;
        let recorded = self.pool.recording(|| {
            if after {
                level_barrier(gpu, cb, false);
            }
            match &part.span {
                Some(s) if after => s.begin_after_previous(cb),
                Some(s) => s.begin(cb),
                None => {}
            }
            record_ops(gpu, cb, part.ops, &mut bound)?;
            if let Some(s) = &part.span {
                s.end(cb);
            }
            Ok(())
        });
        open.bound = bound;
        recorded
    }

    /// Submits the batch, if it holds any command.
    pub(crate) fn flush(&self) {
        let mut open = self.open.lock();
        let waiters = self.submit(&mut open);
        drop(open);
        run_waiters(waiters);
    }

    /// Submits the batch if it has been open for [`MAX_AGE`]; returns when
    /// it will be that old otherwise (`None`: nothing open).
    fn flush_if_old(&self) -> Option<Instant> {
        let mut open = self.open.lock();
        let due = open.opened? + MAX_AGE;
        if Instant::now() < due {
            return Some(due);
        }
        let waiters = self.submit(&mut open);
        drop(open);
        run_waiters(waiters);
        None
    }

    /// Ends and submits the open command buffer; returns the waiters to run
    /// once the lock is released.
    fn submit(&self, open: &mut Open) -> Vec<Waiter> {
        let Some(cmd) = open.cmd.take() else { return Vec::new() };
        open.opened = None;
        open.bound = vk::Pipeline::null();
        let waits = std::mem::take(&mut open.waits);
        let entries = &mut open.entries;
        if entries.is_empty() {
            // Opened for a command that then could not join: nothing to run.
            let _ = self.pool.end_open(&cmd);
            return Vec::new();
        }
        self.pool.recording(|| host_barrier(&self.gpu, cmd.raw()));
        if let Err(e) = self.pool.end_open(&cmd) {
            return fail_all(std::mem::take(entries), e);
        }
        let (points, values) = wait_points(&waits);
        let raw = [cmd.raw()];
        let last = entries.last_mut().expect("an open batch holds a command");
        // Released once the whole batch has completed: the command buffer,
        // and the lanes waited on (with their semaphores).
        last.cmd = Some(cmd);
        last.keep.push(Kept::Other(Box::new(points)));
        tracing::trace!(commands = entries.len(), lane = self.lane.index(), "eager batch submitted");
        // Drained, not moved: the next batch records into the same list,
        // allocated and grown once per queue rather than once per batch.
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

    /// Drops the open command buffer, failing its commands with `error`.
    fn abandon(&self, open: &mut Open, error: cmdbuf_core::UrError) -> Vec<Waiter> {
        let Some(cmd) = open.cmd.take() else { return Vec::new() };
        open.opened = None;
        open.bound = vk::Pipeline::null();
        open.waits.clear();
        let entries = std::mem::take(&mut open.entries);
        // Ending it makes it executable again, so its pool may reuse it.
        let _ = self.pool.end_open(&cmd);
        drop(cmd);
        fail_all(entries, error)
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

/// The device's batch timer: a thread that submits batches that have been
/// open for [`MAX_AGE`] when no call of their queues has.
pub(crate) struct BatchTimer {
    inner: Arc<TimerInner>,
    /// Whether the thread was started (read without the lock on every
    /// batch opened).
    started: std::sync::atomic::AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

struct TimerInner {
    state: Mutex<TimerState>,
    wake: Condvar,
}

#[derive(Default)]
struct TimerState {
    batches: Vec<Weak<Batch>>,
    stop: bool,
    /// The thread sleeps until woken (no batch was open for a whole
    /// period); otherwise it looks every MAX_AGE, so that opening a batch
    /// costs no wake-up while batches keep opening.
    idle: bool,
}

impl BatchTimer {
    pub(crate) fn new() -> BatchTimer {
        BatchTimer {
            inner: Arc::new(TimerInner { state: Mutex::default(), wake: Condvar::new() }),
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
                Err(e) => tracing::warn!(error = %e, "cannot start the Vulkan batch timer"),
            }
            self.started.store(true, std::sync::atomic::Ordering::Release);
        }
    }
}

impl TimerInner {
    fn run(&self) {
        let mut state = self.state.lock();
        // Periods in a row without an open batch.
        let mut quiet = 0u32;
        loop {
            if state.stop {
                return;
            }
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
            // Batches watched while this round ran are looked at within MAX_AGE.
            let due = next.unwrap_or_else(|| Instant::now() + MAX_AGE);
            self.wake.wait_until(&mut state, due);
        }
    }
}

impl BatchTimer {
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

impl Drop for BatchTimer {
    fn drop(&mut self) {
        self.stop();
    }
}
