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
//! The thread starts with the first launch a queue would defer. Once its
//! list is empty it keeps looking for [`SPIN`] before it sleeps, so that
//! launches coming back to back cost no wake-up. While it sleeps (or before
//! it runs), a queue makes its launch itself and wakes it
//! ([`Launcher::rouse`]): the next launch finds it awake. A list longer than [`MAX_PENDING`] makes the caller wait
//! for room: an application enqueuing without end cannot hold unbounded
//! memory (the driver itself blocks `cuLaunchKernel` once its own queue of
//! launches is full).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cmdbuf_core::adapter::prelude::*;
use cudarc::driver::sys;
use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;

use crate::driver::{Ctx, CuEvent, EventPool, stream_wait_event};
use crate::params::LaunchParams;

/// How long the launcher keeps looking for launches once it has none,
/// before it sleeps.
const SPIN: Duration = Duration::from_micros(50);

/// How long a caller waiting for a launch keeps looking while the launcher
/// makes no launch, before it sleeps: a few launches of the driver's. It
/// looks as long as launches are being made, as `cuEventSynchronize` itself
/// spins by default: a caller put to sleep behind a backlog of a few
/// launches was woken 10 µs late, a wait for the fourth launch of a chain
/// took 8-9 µs per launch against 5.5-6.5 made on the caller's thread
/// (H200).
const WAIT_SPIN: Duration = Duration::from_micros(20);

/// Set to `0` to turn the launcher off: every queue then makes its launches'
/// driver calls on the calling thread.
pub const LAUNCHER_ENV: &str = "UR_RS_CUDA_LAUNCHER";

/// Events the launcher gives back to the device's pool at once.
const GIVE_BACK: usize = 32;

/// Launches handed and not yet taken by the launcher, at most.
pub(crate) const MAX_PENDING: usize = 1024;

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
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Whether the thread runs: read without the lock at every launch.
    running: AtomicBool,
    /// Off when [`LAUNCHER_ENV`] is `0`, or once the thread could not start.
    enabled: AtomicBool,
}

struct Inner {
    ctx: Ctx,
    /// The device's events: those the launcher held last go back to it.
    pool: Arc<EventPool>,
    state: Mutex<State>,
    /// The thread sleeps on it while it has nothing to launch.
    work: Condvar,
    /// Callers waiting for a ticket to be made, or for room in the list.
    progress: Condvar,
    /// The last ticket given (also under `state`: read without the lock
    /// by the thread while it looks for work).
    given: AtomicU64,
    /// Whether the thread sleeps; changed under `state`'s lock, so that a
    /// caller handing a launch under it knows whether to wake the thread.
    asleep: AtomicBool,
    /// Every launch with a ticket up to this one has been made.
    made: AtomicU64,
    /// The lowest ticket a caller sleeps for (`u64::MAX` when none does):
    /// the thread wakes callers once it has made that launch, not at each
    /// one (a wait at the end of a chain of a thousand would otherwise be
    /// woken a thousand times).
    wake_at: AtomicU64,
    /// Callers sleeping until there is room in the list.
    room_waiters: AtomicUsize,
    /// Launches that failed, by ticket, until their events go.
    failures: Mutex<Vec<(u64, UrError)>>,
    any_failed: AtomicBool,
}

#[derive(Default)]
struct State {
    launches: VecDeque<(u64, Deferred)>,
    stop: bool,
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
        Launcher {
            inner: Arc::new(Inner {
                ctx,
                pool,
                state: Mutex::default(),
                work: Condvar::new(),
                progress: Condvar::new(),
                given: AtomicU64::new(0),
                asleep: AtomicBool::new(false),
                made: AtomicU64::new(0),
                wake_at: AtomicU64::new(u64::MAX),
                room_waiters: AtomicUsize::new(0),
                failures: Mutex::default(),
                any_failed: AtomicBool::new(false),
            }),
            thread: Mutex::new(None),
            running: AtomicBool::new(false),
            enabled: AtomicBool::new(
                std::env::var_os(LAUNCHER_ENV).is_none_or(|v| v != "0") && may_run_beside_callers(),
            ),
        }
    }

    /// Whether queues may hand it launches ([`LAUNCHER_ENV`], more than one
    /// CPU for the process, and a thread that could start).
    pub(crate) fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Whether the thread runs and is awake: a launch handed now is taken
    /// at once.
    pub(crate) fn ready(&self) -> bool {
        self.running.load(Ordering::Acquire) && !self.inner.asleep.load(Ordering::Acquire)
    }

    /// Starts the thread, or wakes it, for launches about to come. A thread
    /// woken only when the launch is handed starts it late: the wake-up
    /// took 5-10 µs on an H200's host, and a chain of four launches, the
    /// first on the caller's thread, took 1.3x-1.4x its time made on the
    /// caller's thread. Waking it while the caller makes a launch itself
    /// hides that.
    pub(crate) fn rouse(&self) {
        if !self.running.load(Ordering::Acquire) {
            self.start();
            return;
        }
        if self.inner.asleep.load(Ordering::Acquire) {
            let _state = self.inner.state.lock();
            self.inner.work.notify_one();
        }
    }

    /// Hands `launch` to the launcher; its ticket. `None` when the thread
    /// cannot run (it could not start, or the device is closing): the
    /// caller then launches itself.
    pub(crate) fn defer(&self, launch: Deferred) -> Option<u64> {
        if !self.running.load(Ordering::Acquire) && !self.start() {
            return None;
        }
        let inner = &*self.inner;
        let mut state = inner.state.lock();
        if state.stop {
            return None;
        }
        if state.launches.len() >= MAX_PENDING {
            inner.room_waiters.fetch_add(1, Ordering::SeqCst);
            while state.launches.len() >= MAX_PENDING && !state.stop {
                inner.progress.wait(&mut state);
            }
            inner.room_waiters.fetch_sub(1, Ordering::SeqCst);
            if state.stop {
                return None;
            }
        }
        let ticket = inner.given.load(Ordering::Relaxed) + 1;
        inner.given.store(ticket, Ordering::SeqCst);
        state.launches.push_back((ticket, launch));
        let wake = inner.asleep.load(Ordering::Acquire);
        drop(state);
        if wake {
            inner.work.notify_one();
        }
        Some(ticket)
    }

    /// Whether the launch with `ticket` has been made.
    pub(crate) fn made(&self, ticket: u64) -> bool {
        self.inner.made.load(Ordering::Acquire) >= ticket
    }

    /// Blocks until the launch with `ticket` (and every one before) has been made.
    pub(crate) fn wait_made(&self, ticket: u64) {
        let inner = &*self.inner;
        if self.made(ticket) {
            return;
        }
        let mut seen = inner.made.load(Ordering::Acquire);
        let mut since = Instant::now();
        loop {
            std::hint::spin_loop();
            let made = inner.made.load(Ordering::Acquire);
            if made >= ticket {
                return;
            }
            if made != seen {
                (seen, since) = (made, Instant::now());
            } else if since.elapsed() > WAIT_SPIN {
                break;
            }
        }
        let mut state = inner.state.lock();
        loop {
            // Asked under the lock, before reading `made`: the thread reads
            // `wake_at` after storing `made`, so one of the two sees the other.
            inner.wake_at.fetch_min(ticket, Ordering::SeqCst);
            if inner.made.load(Ordering::SeqCst) >= ticket {
                return;
            }
            inner.progress.wait(&mut state);
        }
    }

    /// The error of the launch with `ticket`, if it failed; it was made.
    pub(crate) fn failure(&self, ticket: u64) -> Option<UrError> {
        if !self.inner.any_failed.load(Ordering::Acquire) {
            return None;
        }
        self.inner.failures.lock().iter().find(|(t, _)| *t == ticket).map(|(_, e)| e.clone())
    }

    /// The event of the launch with `ticket` is gone: its error, if any, too.
    pub(crate) fn forget(&self, ticket: u64) {
        if self.inner.any_failed.load(Ordering::Acquire) {
            self.inner.failures.lock().retain(|(t, _)| *t != ticket);
        }
    }

    /// Starts the thread unless it runs; whether it runs.
    fn start(&self) -> bool {
        let mut thread = self.thread.lock();
        if self.running.load(Ordering::Acquire) {
            return true;
        }
        if thread.is_some() || self.inner.state.lock().stop {
            return false;
        }
        let inner = self.inner.clone();
        match std::thread::Builder::new().name("ur-cuda-launcher".into()).spawn(move || inner.run()) {
            Ok(handle) => {
                *thread = Some(handle);
                self.running.store(true, Ordering::Release);
                true
            }
            Err(e) => {
                // Queues then launch on their callers' threads, as without
                // it, and do not try again at each launch.
                tracing::warn!(error = %e, "cannot start the CUDA launcher thread; launches stay on their callers' threads");
                self.enabled.store(false, Ordering::Relaxed);
                false
            }
        }
    }

    /// Makes every launch handed so far, then stops the thread and joins it.
    pub(crate) fn stop(&self) {
        self.inner.state.lock().stop = true;
        self.inner.work.notify_all();
        self.inner.progress.notify_all();
        if let Some(handle) = self.thread.lock().take() {
            let _ = handle.join();
        }
        self.running.store(false, Ordering::Release);
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

impl Inner {
    fn run(&self) {
        let bound = self.ctx.bind();
        if let Err(e) = &bound {
            tracing::warn!(error = %e, "the CUDA launcher thread cannot bind its context; its launches fail");
        }
        let mut batch = VecDeque::new();
        // Events the launcher is done with, given back a few at a time.
        let mut used = Vec::with_capacity(2 * GIVE_BACK);
        loop {
            {
                let mut state = self.state.lock();
                while state.launches.is_empty() {
                    if state.stop {
                        return;
                    }
                    // Look a while without the lock before sleeping.
                    let looked = parking_lot::MutexGuard::unlocked(&mut state, || self.look_for_work());
                    if looked {
                        continue;
                    }
                    if state.launches.is_empty() && !state.stop {
                        self.asleep.store(true, Ordering::Release);
                        self.work.wait(&mut state);
                        self.asleep.store(false, Ordering::Release);
                    }
                }
                std::mem::swap(&mut batch, &mut state.launches);
            }
            // Room in the list for callers waiting for it.
            if self.room_waiters.load(Ordering::SeqCst) > 0 {
                let _state = self.state.lock();
                self.progress.notify_all();
            }
            for (ticket, mut launch) in batch.drain(..) {
                let result = bound.clone().and_then(|()| launch.make());
                if let Err(e) = result {
                    tracing::warn!(error = %e, ticket, "a deferred CUDA launch failed");
                    self.failures.lock().push((ticket, e));
                    self.any_failed.store(true, Ordering::Release);
                }
                self.made.store(ticket, Ordering::SeqCst);
                if self.wake_at.load(Ordering::SeqCst) <= ticket {
                    let _state = self.state.lock();
                    // Callers still waiting for later tickets ask again.
                    self.wake_at.store(u64::MAX, Ordering::SeqCst);
                    self.progress.notify_all();
                }
                let Deferred { waits, end, .. } = launch;
                used.extend(waits);
                used.push(end);
                if used.len() >= GIVE_BACK {
                    self.pool.recycle_all(&mut used);
                }
            }
            self.pool.recycle_all(&mut used);
        }
    }

    /// Looks for a launch for [`SPIN`]; whether one was handed.
    fn look_for_work(&self) -> bool {
        let start = Instant::now();
        while start.elapsed() < SPIN {
            // One pause at a time: a pause is some 140 cycles on recent
            // Xeons, and a handed launch should wait for no more.
            std::hint::spin_loop();
            if self.given.load(Ordering::SeqCst) > self.made.load(Ordering::Relaxed) {
                return true;
            }
        }
        false
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
