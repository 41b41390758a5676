//! Events with continuations.
//!
//! Nothing on the worker pool ever blocks on an event: work that depends on
//! events registers a continuation, which runs on whichever thread completes
//! the last of them. Only host threads block, in [`CpuEvent::wait`].
//!
//! An event counts generations so that command-buffer signal events can be
//! re-armed at each enqueue: the event is complete once the generation it
//! waits for (`target`) has completed. One-shot events wait for generation 1;
//! signal events start at target 0 (complete before the first execution).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::OrderedEvent;
use parking_lot::{Condvar, Mutex};

use crate::pool::{Pool, RawTask, Task, now_ns};

/// Work to run once some events have completed.
pub(crate) type Continuation = Box<dyn FnOnce() + Send>;

/// The work that completes an event, given the event
/// ([`CpuEvent::spawn_claimable`]).
pub(crate) type EventJob = Box<dyn FnOnce(&CpuEvent) + Send>;

/// How long a host thread waiting for an event polls it (yielding between
/// looks, see `pool::IDLE`) before it sleeps on the condition variable: a
/// wake-up through the kernel costs microseconds, more than most short
/// submissions take.
const WAIT_POLL: Duration = Duration::from_micros(50);

pub(crate) struct CpuEvent {
    state: Mutex<State>,
    /// `State::done`, readable without the lock for waiters that poll.
    done: AtomicU64,
    completed: Condvar,
    profiling: bool,
    /// The job that completes this event while no thread has taken it, for
    /// a host thread that waits for the event to run itself
    /// ([`CpuEvent::spawn_claimable`]).
    claim: Mutex<Option<EventJob>>,
}

struct State {
    target: u64,
    done: u64,
    running: bool,
    error: Option<UrError>,
    times: ProfilingInfo,
    waiters: Vec<Continuation>,
}

impl State {
    fn is_done(&self) -> bool {
        self.done >= self.target
    }
}

impl CpuEvent {
    /// A one-shot event for a command just queued.
    pub(crate) fn pending(profiling: bool) -> Arc<CpuEvent> {
        let now = if profiling { now_ns() } else { 0 };
        Arc::new(CpuEvent {
            state: Mutex::new(State {
                target: 1,
                done: 0,
                running: false,
                error: None,
                times: ProfilingInfo { queued: now, submit: now, start: 0, end: 0 },
                waiters: Vec::new(),
            }),
            done: AtomicU64::new(0),
            completed: Condvar::new(),
            profiling,
            claim: Mutex::new(None),
        })
    }

    /// A re-armable signal event, complete until first armed.
    pub(crate) fn signal(profiling: bool) -> Arc<CpuEvent> {
        let event = CpuEvent::pending(profiling);
        event.state.lock().target = 0;
        event
    }

    /// Starts a new generation (at a command-buffer enqueue) and returns it.
    pub(crate) fn rearm(&self) -> u64 {
        let mut s = self.state.lock();
        s.target += 1;
        s.running = false;
        s.error = None;
        if self.profiling {
            let now = now_ns();
            s.times = ProfilingInfo { queued: now, submit: now, start: 0, end: 0 };
        }
        s.target
    }

    pub(crate) fn is_done(&self) -> bool {
        self.state.lock().is_done()
    }

    /// Generation `generation` starts running.
    pub(crate) fn start(&self, generation: u64) {
        let mut s = self.state.lock();
        if s.target == generation {
            s.running = true;
            if self.profiling {
                s.times.start = now_ns();
            }
        }
    }

    /// Generation `generation` of a timestamp recording runs: its start and
    /// end are one reading of the clock.
    pub(crate) fn stamp(&self, generation: u64) {
        {
            let mut s = self.state.lock();
            if s.target == generation {
                let now = now_ns();
                s.times.start = now;
                s.times.end = now;
            }
        }
        self.finish(generation, Ok(()));
    }

    /// Generation `generation` has finished; runs the continuations if that
    /// completes the event.
    pub(crate) fn finish(&self, generation: u64, result: Result<(), UrError>) {
        let waiters = {
            let mut s = self.state.lock();
            s.done = s.done.max(generation);
            self.done.store(s.done, Ordering::Release);
            if s.target == generation {
                s.running = false;
                s.error = result.err();
                // A timestamp recording has set its end already (`stamp`).
                if self.profiling && s.times.end == 0 {
                    s.times.end = now_ns();
                    if s.times.start == 0 {
                        s.times.start = s.times.end;
                    }
                }
            }
            if !s.is_done() {
                return;
            }
            self.completed.notify_all();
            std::mem::take(&mut s.waiters)
        };
        for w in waiters {
            w();
        }
    }

    /// Hands `job`, which completes this event, to `pool`; a host thread
    /// that waits for the event before a worker has taken the job runs it
    /// itself, saving both thread handoffs (dispenso's and Taskflow's
    /// caller-runs). Only for jobs that run on one thread anyway: on a host
    /// thread a launch's work-groups would not be spread over the pool.
    ///
    /// The job stays in the event and the pool gets a task that takes it
    /// from there: no allocation beyond plain spawning (measured: a slot of
    /// its own per command made an eager chain 100-200 ns per kernel slower
    /// on the 2-core machine).
    pub(crate) fn spawn_claimable(self: Arc<Self>, pool: &Pool, job: EventJob) {
        *self.claim.lock() = Some(job);
        let data = Arc::into_raw(self).cast::<()>();
        pool.push(Task::Raw(RawTask { run: CpuEvent::run_claimed, data, a: 0, b: 0, c: 0 }));
    }

    /// # Safety
    /// `data` is a reference to an event leaked by
    /// [`CpuEvent::spawn_claimable`], used once.
    unsafe fn run_claimed(data: *const (), _: u32, _: u32, _: u32) {
        // SAFETY: from `Arc::into_raw` in `spawn_claimable`, reclaimed only here.
        let event = unsafe { Arc::from_raw(data.cast::<CpuEvent>()) };
        if let Some(job) = event.claim() {
            job(&event);
        }
    }

    /// The job of [`CpuEvent::spawn_claimable`], unless another thread took it.
    fn claim(&self) -> Option<EventJob> {
        self.claim.lock().take()
    }

    /// Runs `work` once the event is complete: now, on this thread, if it
    /// already is.
    pub(crate) fn on_complete(&self, work: Continuation) {
        let mut s = self.state.lock();
        if s.is_done() {
            drop(s);
            work();
        } else {
            s.waiters.push(work);
        }
    }
}

impl EventImpl for CpuEvent {
    fn status(&self) -> EventStatus {
        let s = self.state.lock();
        match (s.is_done(), &s.error, s.running) {
            (true, Some(_), _) => EventStatus::Error,
            (true, None, _) => EventStatus::Complete,
            (false, _, true) => EventStatus::Running,
            (false, _, false) => EventStatus::Submitted,
        }
    }

    fn wait(&self) -> Result<(), UrError> {
        let target = self.state.lock().target;
        if self.done.load(Ordering::Acquire) < target
            && let Some(job) = self.claim()
        {
            // As on a worker: kernel panics are caught inside the job.
            if catch_unwind(AssertUnwindSafe(|| job(self))).is_err() {
                tracing::error!("a CPU adapter job panicked outside kernel code");
            }
        }
        let start = Instant::now();
        while self.done.load(Ordering::Acquire) < target {
            let waited = start.elapsed();
            if waited > WAIT_POLL {
                break;
            }
            std::thread::yield_now();
        }
        let mut s = self.state.lock();
        while !s.is_done() {
            self.completed.wait(&mut s);
        }
        s.error.clone().map_or(Ok(()), Err)
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        let s = self.state.lock();
        (self.profiling && s.is_done() && s.target > 0).then_some(s.times)
    }
}

impl OrderedEvent for CpuEvent {
    fn is_done(&self) -> bool {
        CpuEvent::is_done(self)
    }

    fn wait_ended(&self) {
        // The error is the event's to report.
        let _ = self.wait();
    }
}

/// A user event is a one-shot event that the host finishes.
impl UserEventImpl for CpuEvent {
    fn complete(&self, result: Result<(), UrError>) {
        self.start(1);
        self.finish(1, result);
    }
}

/// Runs `work` once every event of `events` has completed.
pub(crate) fn after_all(events: &[&CpuEvent], work: Continuation) {
    if events.iter().all(|e| e.is_done()) {
        return work();
    }
    struct Join {
        remaining: AtomicUsize,
        work: Mutex<Option<Continuation>>,
    }
    impl Join {
        fn arrive(&self) {
            if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1
                && let Some(work) = self.work.lock().take()
            {
                work();
            }
        }
    }
    let join = Arc::new(Join { remaining: AtomicUsize::new(events.len() + 1), work: Mutex::new(Some(work)) });
    for e in events {
        let join = join.clone();
        e.on_complete(Box::new(move || join.arrive()));
    }
    join.arrive();
}
