//! Work held back on the host: the device never waits for the host.
//!
//! CUDA has no event the host signals. Letting a stream wait for one (a
//! host-mapped word and `cuStreamWaitValue32`, or a host function that
//! blocks) makes device work wait for as long as the host pleases, and the
//! driver calls that wait for the device (`cuModuleLoadDataEx`,
//! `cuMemFree`, `cuMemFreeHost`, `cuStreamDestroy`, ...) then wait for the
//! host too: when the thread that would complete the user event is the one
//! blocked in such a call, or waits for one that is (the driver serialises
//! calls behind a module load), the process deadlocks. Other users of the
//! primary context (a second adapter instance, the CUDA runtime) are caught
//! as well, so no lock in the adapter can prevent it.
//!
//! So nothing the host completes ever reaches a stream. Each thing device
//! work may have to wait for has a [`Gate`]: a user event's opens when the
//! host completes it, a held command's when it is issued to a stream. A
//! submission whose dependencies (wait list, in-order predecessor, barrier,
//! the events its graph's wait nodes wait on) all have open gates goes to a
//! stream at once, waiting there only for issued device work. Otherwise it
//! becomes a [`Job`] in its device's [`Held`] list, and its event (and, for
//! a command-buffer launch, the signal events of the buffer) a held event
//! whose gate opens when the job is issued. Whoever opens a gate (the thread
//! completing a user event) then issues, in enqueue order, every job whose
//! dependencies are open, holding no lock the submit path takes; one thread
//! issues at a time, and it scans again until nothing more is ready, so work
//! made ready meanwhile by other threads is not left behind.
//!
//! A stream therefore only ever waits for work already on a stream, which
//! finishes by itself, and driver calls that wait for the device return.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};
use ur_core::Result;

use crate::driver::CuEvent;
use crate::queue::Job;

enum GateState {
    /// What it stands for has not happened.
    Shut,
    /// Its job is in the batch being issued, ahead of the jobs after it.
    Selected,
    /// It happened (with the outcome of a user event, or of issuing a job).
    Open(Result<()>),
}

/// Whether device work may wait for something yet: see the module docs.
pub(crate) struct Gate {
    state: Mutex<GateState>,
    opened: Condvar,
}

impl Gate {
    pub(crate) fn new() -> Arc<Gate> {
        Arc::new(Gate { state: Mutex::new(GateState::Shut), opened: Condvar::new() })
    }

    pub(crate) fn is_open(&self) -> bool {
        matches!(*self.state.lock(), GateState::Open(_))
    }

    /// The outcome, once open.
    pub(crate) fn result(&self) -> Option<Result<()>> {
        match &*self.state.lock() {
            GateState::Open(result) => Some(result.clone()),
            _ => None,
        }
    }

    /// Opens the gate; `false` when it already was.
    pub(crate) fn open(&self, result: Result<()>) -> bool {
        let mut state = self.state.lock();
        if matches!(*state, GateState::Open(_)) {
            return false;
        }
        *state = GateState::Open(result);
        self.opened.notify_all();
        true
    }

    /// Blocks until the gate is open; its outcome.
    pub(crate) fn wait(&self) -> Result<()> {
        let mut state = self.state.lock();
        loop {
            if let GateState::Open(result) = &*state {
                return result.clone();
            }
            self.opened.wait(&mut state);
        }
    }

    /// Open, or ahead in the batch being issued.
    fn passes_in_batch(&self) -> bool {
        !matches!(*self.state.lock(), GateState::Shut)
    }

    fn select(&self) {
        let mut state = self.state.lock();
        if matches!(*state, GateState::Shut) {
            *state = GateState::Selected;
        }
    }
}

/// One dependency of a submission.
pub(crate) struct Dep {
    /// Shut while device work may not wait for it yet; `None` when it may.
    pub(crate) gate: Option<Arc<Gate>>,
    /// The event a stream waits on for it, when it is device work the
    /// submission's stream must wait for (kept alive until then).
    pub(crate) end: Option<Arc<CuEvent>>,
}

impl Dep {
    pub(crate) fn is_open(&self) -> bool {
        self.gate.as_ref().is_none_or(|g| g.is_open())
    }
}

#[derive(Default)]
struct HeldState {
    /// Held jobs in enqueue order: a job's dependencies come before it.
    jobs: Vec<Job>,
    /// A thread is issuing jobs.
    running: bool,
}

/// The locked list of a device's held jobs.
pub(crate) struct HeldList<'a>(MutexGuard<'a, HeldState>);

impl HeldList<'_> {
    /// Holds `job` until [`Held::release`] finds its dependencies open.
    pub(crate) fn push(&mut self, job: Job) {
        self.0.jobs.push(job);
    }
}

/// A device's held jobs.
#[derive(Default)]
pub(crate) struct Held {
    state: Mutex<HeldState>,
}

impl Held {
    /// Locks the list. A submission decides under this lock whether its
    /// dependencies are all open (then it is issued now) or it is held, so
    /// that a gate opening meanwhile is seen either by it or by the scan
    /// that follows the opening.
    pub(crate) fn lock(&self) -> HeldList<'_> {
        HeldList(self.state.lock())
    }

    /// Issues every job whose dependencies are open, in enqueue order; to be
    /// called after opening a gate, holding no lock of the adapter.
    pub(crate) fn release(&self) {
        {
            let mut state = self.state.lock();
            if state.running {
                // The running thread scans again after its batch, under the
                // lock taken after this gate opened.
                return;
            }
            state.running = true;
        }
        loop {
            let batch = {
                let mut state = self.state.lock();
                let mut batch = Vec::new();
                let mut kept = Vec::with_capacity(state.jobs.len());
                for job in std::mem::take(&mut state.jobs) {
                    if job.deps().iter().all(|d| d.gate.as_ref().is_none_or(|g| g.passes_in_batch())) {
                        job.gate().select();
                        batch.push(job);
                    } else {
                        kept.push(job);
                    }
                }
                state.jobs = kept;
                if batch.is_empty() {
                    state.running = false;
                    return;
                }
                batch
            };
            tracing::debug!(jobs = batch.len(), "held CUDA work issued");
            for job in batch {
                job.issue();
            }
        }
    }
}
