//! The replayer: a thread per device that makes the OpenCL calls of planned
//! command-buffer replays, so that a submission's cost to its caller does
//! not grow with the buffer's commands.
//!
//! A planned replay (`planned.rs`) is one OpenCL enqueue per command: on
//! Intel's OpenCL CPU runtime a graph of 100 kernels cost its caller 300 µs
//! per submission through libsycl against 3-5 µs for one kernel, where on
//! CUDA and Vulkan a submission costs the same whatever its size (issue 31,
//! docs/performance.md). A submission that may be handed over (see
//! [`crate::planned`]) is prepared on the caller's thread (its wait list,
//! made into references of its own) and handed to the device's replayer,
//! which enqueues its commands in the order handed; the caller returns at
//! once with an event that stands for the submission before its commands
//! are enqueued (`event.rs`'s `PendingReplay`).
//!
//! Every use of such an event's OpenCL handle (a wait list, a host wait, the
//! native handle) first waits until the replayer has made its submission;
//! its status reads `Queued` until then. Every command enqueued on the
//! submission's queue from another thread, and the queue's finish, flush,
//! native handle and release, first wait until the replayer has made every
//! submission handed for that queue (`ClQueue::drain`), so that the driver
//! sees the queue's commands in the order the application gave them.
//!
//! What it takes is [`REPLAY_THREAD_ENV`]'s value, and by default `on` on
//! a device that is not the host's CPU, `off` on a CPU device, whose
//! kernels run on the cores the replayer would take (`device.rs`'s
//! `replay_thread_rule` has the figures). With `on`, only submissions that
//! come back to back (no host wait for the queue since the one before) are
//! handed: the device is then busy with the one before, and the thread's
//! wake-up, where it sleeps, is not on its path; one submission waited for
//! at once pays no hand-over. With `always`, every submission that may be
//! handed is, the thread woken if it sleeps (the suite runs so in CI). A
//! process that may run on one CPU only has no replayer.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::time::Duration;

use cmdbuf_core::adapter::toolbox::{CallJobs, TicketWorker, WAIT_SPIN};

/// `on`: planned submissions that come back to back go to the replayer;
/// `always`: every submission that may be handed to it is, even while it
/// sleeps; `off`: every planned replay's OpenCL calls are made on the
/// submitting thread. Unset: `on` on a device that is not the host's CPU,
/// `off` on a CPU device
/// ([`replay_thread_rule`](crate::device::replay_thread_rule) says why).
pub const REPLAY_THREAD_ENV: &str = "UR_OPENCL_REPLAY_THREAD";

/// What a device's replayer takes (`device.rs`'s `replay_thread_rule`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReplayThread {
    /// Nothing: every planned submission is made on its caller's thread.
    Off,
    /// Submissions that come back to back.
    Awake,
    /// Every submission it may take, woken where it sleeps.
    Always,
}

/// Submissions handed to a replayer, process-wide.
static HANDED: AtomicU64 = AtomicU64::new(0);

/// How many command-buffer submissions the OpenCL adapter has handed to its
/// replayers in this process: for tests and benchmarks, which check that a
/// run took the path they measure.
#[doc(hidden)]
pub fn replays_handed() -> u64 {
    HANDED.load(Ordering::Relaxed)
}

/// Set: every planned submission is made on its caller's thread, whatever
/// [`REPLAY_THREAD_ENV`] says ([`keep_replays_on_callers`]).
static KEPT_ON_CALLERS: AtomicBool = AtomicBool::new(false);

/// With `true`, every planned submission made from now on is made on its
/// caller's thread, as with the replayer off; `false` hands them as
/// [`REPLAY_THREAD_ENV`] says again. For benchmarks, which compare a
/// submission handed with the same submission made by its caller in one
/// process, sampled in turn, where runs of two processes differ by more
/// than what they compare (docs/performance.md). Submissions handed before
/// are still made by the replayer, in order: a queue's next command made
/// on the caller's thread waits for them, as always.
#[doc(hidden)]
pub fn keep_replays_on_callers(kept: bool) {
    KEPT_ON_CALLERS.store(kept, Ordering::Relaxed);
}

/// A replay handed to the replayer.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The replayer of one device.
pub(crate) struct Replayer {
    pub(crate) worker: TicketWorker<CallJobs<Job>>,
    /// [`REPLAY_THREAD_ENV`]` = always`.
    always: bool,
}

impl Replayer {
    /// A new replayer taking what `mode` says (the device's
    /// [`replay_thread_rule`](crate::device::replay_thread_rule)), off where
    /// the process may run on one CPU only (there it could only take turns
    /// with its callers, as the CUDA launcher did: docs/cuda.md). On a CPU
    /// device a caller waiting for a submission to be made sleeps at once:
    /// the cores it would look on are the ones the device's kernels run on.
    pub(crate) fn new(mode: ReplayThread, cpu_device: bool) -> Replayer {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if mode != ReplayThread::Off && cpus < 2 {
            tracing::debug!(cpus, "one CPU available: OpenCL planned replays stay on their callers' threads");
        }
        Replayer {
            worker: TicketWorker::new(
                "ur-opencl-replay",
                CallJobs::default(),
                mode != ReplayThread::Off && cpus >= 2,
                if cpu_device { Duration::ZERO } else { WAIT_SPIN },
            ),
            always: mode == ReplayThread::Always,
        }
    }

    /// Whether the replayer takes submissions now: it runs, and
    /// [`keep_replays_on_callers`] does not keep them.
    pub(crate) fn takes_jobs(&self) -> bool {
        self.worker.enabled() && !KEPT_ON_CALLERS.load(Ordering::Relaxed)
    }

    /// Whether every submission that may be handed is ([`REPLAY_THREAD_ENV`]
    /// `= always`).
    pub(crate) fn always(&self) -> bool {
        self.always && self.worker.enabled()
    }

    /// Counts a submission handed ([`replays_handed`]).
    pub(crate) fn count_handed() {
        HANDED.fetch_add(1, Ordering::Relaxed);
    }
}
