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
//! becomes a [`Job`] in the adapter's one [`Held`] list, and its event (and, for
//! a command-buffer launch, the signal events of the buffer) a held event
//! whose gate opens when the job is issued. Whoever opens a gate (the thread
//! completing a user event) then issues, in enqueue order, every job whose
//! dependencies are open, holding no lock the submit path takes; one thread
//! issues at a time, and it scans again until nothing more is ready, so work
//! made ready meanwhile by other threads is not left behind.
//!
//! A stream therefore only ever waits for work already on a stream, which
//! finishes by itself, and driver calls that wait for the device return.
//!
//! The list is one for all devices, not one per device: a submission may
//! wait for held work of another device (front-end wait lists accept events
//! of any CUDA context, `CudaContext::waits_on_events_of`). With a list per
//! device, opening a gate scanned only that device's list, so another
//! device's job waiting on it stayed held until something of its own device
//! was released; and that device's scan, running while the first device's
//! batch was being issued, took a job *selected* in that batch (not yet
//! issued, its `CUevent` not yet recorded) as issued, and issued the
//! dependent job at once: `cuStreamWaitEvent` on an event whose last record
//! was of earlier, finished work waits for nothing, so the dependent work
//! overtook it (two H200s, a peer copy reading a half before the other
//! device's increments had run). One list, one issuing thread at a time,
//! makes *selected* mean "issued earlier in this batch" for every device.

use std::borrow::Cow;
use std::sync::Arc;

use cmdbuf_core::Result;
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::driver::CuEvent;
use crate::launcher::Pending;

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
pub(crate) struct Dep<'a> {
    /// Shut while device work may not wait for it yet; `None` when it may.
    pub(crate) gate: Option<Arc<Gate>>,
    /// The event a stream waits on for it, when it is device work the
    /// submission's stream must wait for: borrowed from the event waited
    /// for while the submission is being made (the wait list outlives the
    /// call), owned (kept alive) by held work. Retaining it for a submission
    /// issued at once cost two atomic read-modify-writes per dependency
    /// (issue 31).
    pub(crate) end: Option<Cow<'a, Arc<CuEvent>>>,
    /// The launch it stands for, while the device's launcher has not made
    /// it (see `launcher`): nothing may wait on its `end` before then.
    pub(crate) pending: Option<Pending<'a>>,
}

impl Dep<'_> {
    pub(crate) fn is_open(&self) -> bool {
        self.gate.as_ref().is_none_or(|g| g.is_open())
    }

    /// The dependency owning what it borrowed, for work held back: a launch
    /// not made yet is waited for here, so that the owned form needs no
    /// launcher.
    pub(crate) fn into_owned(self) -> Dep<'static> {
        if let Some(pending) = &self.pending {
            pending.wait();
        }
        Dep { gate: self.gate, end: self.end.map(|end| Cow::Owned(end.into_owned())), pending: None }
    }
}

/// A submission held back (`queue::Job`).
pub(crate) trait HeldJob {
    /// What it waits for.
    fn deps(&self) -> &[Dep<'_>];
    /// Its own gate, opened by [`issue`](Self::issue).
    fn gate(&self) -> &Gate;
    /// Issues it and opens its gate.
    fn issue(self);
}

struct HeldState<J> {
    /// Held jobs in enqueue order: a job's dependencies come before it.
    jobs: Vec<J>,
    /// A thread is issuing jobs.
    running: bool,
}

/// The locked list of a device's held jobs.
pub(crate) struct HeldList<'a, J>(MutexGuard<'a, HeldState<J>>);

impl<J: HeldJob> HeldList<'_, J> {
    /// Holds `job` until [`Held::release`] finds its dependencies open.
    pub(crate) fn push(&mut self, job: J) {
        self.0.jobs.push(job);
    }
}

/// A device's held jobs.
pub(crate) struct Held<J> {
    state: Mutex<HeldState<J>>,
}

impl<J> Held<J> {
    /// An empty list (a `static`'s initialiser).
    pub(crate) const fn new() -> Held<J> {
        Held { state: Mutex::new(HeldState { jobs: Vec::new(), running: false }) }
    }
}

impl<J> Default for Held<J> {
    fn default() -> Held<J> {
        Held::new()
    }
}

impl<J: HeldJob> Held<J> {
    /// Locks the list. A submission decides under this lock whether its
    /// dependencies are all open (then it is issued now) or it is held, so
    /// that a gate opening meanwhile is seen either by it or by the scan
    /// that follows the opening.
    pub(crate) fn lock(&self) -> HeldList<'_, J> {
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
            // Should issuing unwind, the next release still runs.
            let unwinding = Unwinding(self);
            for job in batch {
                job.issue();
            }
            std::mem::forget(unwinding);
        }
    }
}

/// Ends a release that unwinds, so that later ones are not left waiting.
struct Unwinding<'a, J>(&'a Held<J>);

impl<J> Drop for Unwinding<'_, J> {
    fn drop(&mut self) {
        self.0.state.lock().running = false;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct TestJob {
        id: usize,
        deps: Vec<Dep<'static>>,
        gate: Arc<Gate>,
        log: Arc<Mutex<Vec<usize>>>,
    }

    impl HeldJob for TestJob {
        fn deps(&self) -> &[Dep<'_>] {
            &self.deps
        }

        fn gate(&self) -> &Gate {
            &self.gate
        }

        fn issue(self) {
            // A dependency issued in the same batch was issued before.
            for dep in &self.deps {
                assert!(dep.gate.as_ref().is_none_or(|g| g.is_open()), "job {} issued before a dependency", self.id);
            }
            self.log.lock().push(self.id);
            self.gate.open(Ok(()));
        }
    }

    fn on(gates: &[&Arc<Gate>]) -> Vec<Dep<'static>> {
        gates.iter().map(|g| Dep { gate: Some((*g).clone()), end: None, pending: None }).collect()
    }

    /// What a submission does: issued now when its dependencies are open,
    /// else held (decided under the list's lock).
    fn submit(held: &Held<TestJob>, job: TestJob) {
        let mut list = held.lock();
        if job.deps.iter().all(Dep::is_open) {
            drop(list);
            job.issue();
        } else {
            list.push(job);
        }
    }

    #[test]
    fn a_gate_opens_once_and_wakes_waiters() {
        let gate = Gate::new();
        assert!(!gate.is_open() && gate.result().is_none());
        let waiter = {
            let gate = gate.clone();
            std::thread::spawn(move || gate.wait())
        };
        assert!(gate.open(Err(cmdbuf_core::err!(InvalidOperation, "failed"))));
        assert!(!gate.open(Ok(())), "opened twice");
        assert!(waiter.join().expect("no panic").is_err(), "the first outcome stays");
        assert!(matches!(gate.result(), Some(Err(_))));
    }

    #[test]
    fn chains_are_issued_in_order_in_one_release() {
        let held = Held::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (user, other) = (Gate::new(), Gate::new());
        let gates: Vec<Arc<Gate>> = (0..4).map(|_| Gate::new()).collect();
        let job = |id: usize, deps: Vec<Dep<'static>>| TestJob { id, deps, gate: gates[id].clone(), log: log.clone() };
        submit(&held, job(0, on(&[&user])));
        submit(&held, job(1, on(&[&gates[0]])));
        submit(&held, job(2, on(&[&other])));
        submit(&held, job(3, on(&[&gates[1], &user])));
        assert!(log.lock().is_empty(), "nothing may be issued before its user event");
        user.open(Ok(()));
        held.release();
        assert_eq!(*log.lock(), vec![0, 1, 3]);
        // Issued work no longer holds anything back.
        submit(&held, job(3, on(&[&gates[3]])));
        assert_eq!(*log.lock(), vec![0, 1, 3, 3]);
        other.open(Ok(()));
        held.release();
        assert_eq!(*log.lock(), vec![0, 1, 3, 3, 2]);
    }

    #[test]
    fn a_failed_user_event_releases_its_dependants() {
        let held = Held::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let user = Gate::new();
        submit(&held, TestJob { id: 7, deps: on(&[&user]), gate: Gate::new(), log: log.clone() });
        user.open(Err(cmdbuf_core::err!(AdapterSpecific, "the producer gave up")));
        held.release();
        assert_eq!(*log.lock(), vec![7], "wait lists order; they do not propagate failure");
    }

    /// Threads submit chains on held work and open user gates concurrently:
    /// every job is issued, after its dependencies (no job is left behind by
    /// a gate that opened while it was being held).
    #[test]
    fn concurrent_submissions_and_completions_leave_nothing_held() {
        const THREADS: usize = 4;
        const JOBS: usize = 200;
        for _ in 0..20 {
            let held = Arc::new(Held::default());
            let log = Arc::new(Mutex::new(Vec::new()));
            let next = Arc::new(AtomicUsize::new(0));
            let users: Vec<Arc<Gate>> = (0..THREADS).map(|_| Gate::new()).collect();
            let threads: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (held, log, next, users) = (held.clone(), log.clone(), next.clone(), users.clone());
                    std::thread::spawn(move || {
                        let mut previous: Option<Arc<Gate>> = None;
                        for i in 0..JOBS {
                            let mut deps = on(&[&users[(t + i) % THREADS]]);
                            deps.extend(on(&previous.iter().collect::<Vec<_>>()));
                            let gate = Gate::new();
                            let id = next.fetch_add(1, Ordering::SeqCst);
                            submit(&held, TestJob { id, deps, gate: gate.clone(), log: log.clone() });
                            previous = Some(gate);
                            if i == JOBS / 2 && users[t].open(Ok(())) {
                                held.release();
                            }
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().expect("no panic");
            }
            assert_eq!(log.lock().len(), THREADS * JOBS, "jobs left held");
        }
    }
}
