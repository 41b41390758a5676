//! The launcher: a thread per device that makes the driver calls of eager
//! kernel launches.
//!
//! `cuLaunchKernel` costs 3.6-3.8 µs of host time on an H200 and the
//! `cuEventRecord` after it 0.2 more: 86% of an eager launch, whose caller
//! waited for both (issue 31, docs/performance.md). A queue that may defer
//! (in order or not, without profiling, over a stream of its own that no
//! caller was given) prepares a kernel launch on the calling thread (its
//! parameters, its stream, its end event and the events its stream waits
//! for) and hands it to the launcher, which makes the calls in the order
//! handed. The caller returns once the launch is queued here; the launcher
//! keeps the stream fed at the driver's own pace, so a chain of launches
//! costs its caller a fraction of the driver's time and the device sees
//! launches as fast as raw `cuLaunchKernel` issues them.
//!
//! Each deferred launch has a *ticket*, in the order handed; [`Launcher::made`]
//! says whether the launcher has made it. Everything that reads an event's
//! `CUevent` or uses a queue's stream directly first waits until the
//! tickets before it are made (`CudaEvent`'s `Pending`, the queue's drain),
//! so no one ever waits on an event not yet recorded or puts work on a
//! stream ahead of launches handed earlier. A launch that fails on the
//! launcher keeps its error here, by ticket, for its event to report.
//!
//! A process that may run on one CPU only has no launcher: its launches
//! are made on their callers' threads.
//!
//! The thread is the adapter toolbox's `TicketWorker`, whose runner here
//! binds the device's context when the thread starts and gives the events
//! it is done with back to the device's pool a few at a time. It starts
//! with the first launch a queue would defer. Once its list is empty it
//! keeps looking a while before it sleeps, so that launches coming back to
//! back cost no wake-up. While it sleeps (or before it runs), a queue makes
//! its launch itself and wakes it ([`Launcher::rouse`]): the next launch
//! finds it awake. A list of `MAX_PENDING` launches makes the caller wait
//! for room: an application enqueuing without end cannot hold unbounded
//! memory (the driver itself blocks `cuLaunchKernel` once its own queue of
//! launches is full).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::{JobRunner, TicketWorker, WAIT_SPIN};
use cudarc::driver::sys;
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::driver::{Ctx, CuEvent, EventPool, stream_wait_event};
use crate::params::LaunchParams;

/// Set to `0` to turn the launcher off: every queue then makes its launches'
/// driver calls on the calling thread.
pub const LAUNCHER_ENV: &str = "UR_RS_CUDA_LAUNCHER";

/// Events the launcher gives back to the device's pool at once.
const GIVE_BACK: usize = 32;

/// A kernel launch prepared by its queue, for the launcher to make.
pub(crate) struct Deferred {
    pub(crate) stream: sys::CUstream,
    /// Events the stream waits for before the launch.
    pub(crate) waits: SmallVec<[Arc<CuEvent>; 4]>,
    pub(crate) params: LaunchParams,
    /// Recorded after the launch.
    pub(crate) end: Arc<CuEvent>,
}

// SAFETY: the stream, the function and the events are driver handles, usable
// from any thread; the parameters are plain values owned by the launch.
unsafe impl Send for Deferred {}

/// The launcher of one device (see the module docs).
pub(crate) struct Launcher {
    worker: TicketWorker<LaunchRunner>,
    failures: Arc<Failures>,
}

/// Launches that failed, by ticket, until their events go.
#[derive(Default)]
struct Failures {
    list: Mutex<Vec<(u64, UrError)>>,
    any: AtomicBool,
}

/// What the launcher's thread does: it binds the context, makes each launch
/// and gives its events back.
struct LaunchRunner {
    ctx: Ctx,
    /// The context bound on the thread, or why not: each launch fails with it.
    bound: Result<()>,
    /// The device's events: those the launcher held last go back to it.
    pool: Arc<EventPool>,
    /// Events the launcher is done with, given back a few at a time.
    used: Vec<Arc<CuEvent>>,
    failures: Arc<Failures>,
}

/// A launch its event's reader must wait for: not made yet.
pub(crate) struct Pending<'a> {
    pub(crate) launcher: &'a Launcher,
    pub(crate) ticket: u64,
}

impl Pending<'_> {
    /// Blocks until the launch has been made.
    pub(crate) fn wait(&self) {
        self.launcher.wait_made(self.ticket);
    }
}

impl Launcher {
    /// The launcher of the device whose context is `ctx`; its thread starts
    /// with the first deferred launch.
    pub(crate) fn new(ctx: Ctx, pool: Arc<EventPool>) -> Launcher {
        let failures = Arc::new(Failures::default());
        let runner = LaunchRunner {
            ctx,
            bound: Ok(()),
            pool,
            used: Vec::with_capacity(2 * GIVE_BACK),
            failures: failures.clone(),
        };
        let enabled = std::env::var_os(LAUNCHER_ENV).is_none_or(|v| v != "0") && may_run_beside_callers();
        // A waiter looks for `WAIT_SPIN` while launches are being made, as
        // `cuEventSynchronize` itself spins by default: one put to sleep
        // behind a backlog of a few launches was woken 10 µs late, and a wait
        // for the fourth launch of a chain took 8-9 µs per launch against
        // 5.5-6.5 made on the caller's thread (H200).
        Launcher { worker: TicketWorker::new("ur-cuda-launcher", runner, enabled, WAIT_SPIN), failures }
    }

    /// Whether queues may hand it launches ([`LAUNCHER_ENV`], more than one
    /// CPU for the process, and a thread that could start).
    pub(crate) fn enabled(&self) -> bool {
        self.worker.enabled()
    }

    /// Whether the thread runs and is awake: a launch handed now is taken
    /// at once.
    pub(crate) fn ready(&self) -> bool {
        self.worker.ready()
    }

    /// Starts the thread, or wakes it, for launches about to come. A thread
    /// woken only when the launch is handed starts it late: the wake-up
    /// took 5-10 µs on an H200's host, and a chain of four launches, the
    /// first on the caller's thread, took 1.3x-1.4x its time made on the
    /// caller's thread. Waking it while the caller makes a launch itself
    /// hides that.
    pub(crate) fn rouse(&self) {
        self.worker.rouse();
    }

    /// Hands `launch` to the launcher; its ticket. `None` when the thread
    /// cannot run (it could not start, or the device is closing): the
    /// caller then launches itself.
    pub(crate) fn defer(&self, launch: Deferred) -> Option<u64> {
        self.worker.hand(launch).ok()
    }

    /// Whether the launch with `ticket` has been made.
    pub(crate) fn made(&self, ticket: u64) -> bool {
        self.worker.made(ticket)
    }

    /// Blocks until the launch with `ticket` (and every one before) has been made.
    pub(crate) fn wait_made(&self, ticket: u64) {
        self.worker.wait_made(ticket);
    }

    /// The error of the launch with `ticket`, if it failed; it was made.
    pub(crate) fn failure(&self, ticket: u64) -> Option<UrError> {
        if !self.failures.any.load(Ordering::Acquire) {
            return None;
        }
        self.failures.list.lock().iter().find(|(t, _)| *t == ticket).map(|(_, e)| e.clone())
    }

    /// The event of the launch with `ticket` is gone: its error, if any, too.
    pub(crate) fn forget(&self, ticket: u64) {
        if self.failures.any.load(Ordering::Acquire) {
            self.failures.list.lock().retain(|(t, _)| *t != ticket);
        }
    }

    /// Makes every launch handed so far, then stops the thread and joins it.
    pub(crate) fn stop(&self) {
        self.worker.stop();
    }
}

/// Whether a launcher thread can run at the same time as the threads that
/// hand it launches: the process may use more than one CPU (its affinity
/// mask and cgroup quota, as `available_parallelism` reads them). On one
/// CPU the launcher only takes turns with its callers, and a caller waiting
/// for a chain's last launch spins in the launcher's time: pinned to one
/// CPU of an H200's host, a chain of 1,000 eager launches took 2.2x-2.6x
/// the wall time of raw `cuLaunchKernel` with it, 1.0x-1.1x pinned to two
/// (docs/performance.md).
fn may_run_beside_callers() -> bool {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        tracing::debug!(cpus, "one CPU available: CUDA launches stay on their callers' threads");
    }
    cpus >= 2
}

impl JobRunner for LaunchRunner {
    type Job = Deferred;

    fn start(&mut self) {
        self.bound = self.ctx.bind();
        if let Err(e) = &self.bound {
            tracing::warn!(error = %e, "the CUDA launcher thread cannot bind its context; its launches fail");
        }
    }

    fn run(&mut self, ticket: u64, mut launch: Deferred) {
        let result = self.bound.clone().and_then(|()| launch.make());
        if let Err(e) = result {
            tracing::warn!(error = %e, ticket, "a deferred CUDA launch failed");
            self.failures.list.lock().push((ticket, e));
            self.failures.any.store(true, Ordering::Release);
        }
        let Deferred { waits, end, .. } = launch;
        self.used.extend(waits);
        self.used.push(end);
    }

    fn tidy(&mut self, batch_end: bool) {
        if batch_end || self.used.len() >= GIVE_BACK {
            self.pool.recycle_all(&mut self.used);
        }
    }
}

impl Deferred {
    /// Makes the launch: the stream's waits, the launch, its end event.
    /// The end event is recorded even when the launch failed, so that
    /// waiting for it waits for the work before.
    fn make(&mut self) -> Result<()> {
        let waited = self.waits.iter().try_for_each(|w| stream_wait_event(self.stream, w.raw()));
        // SAFETY: the queue validated the launch, its memory stays valid
        // until its event completes and the stream stays alive until the
        // launch is made (the queue drains before it drops the stream); the
        // context is bound on this thread.
        let launched = waited.and_then(|()| unsafe { self.params.launch(self.stream) });
        let recorded = self.end.record(self.stream);
        launched.and(recorded)
    }
}
