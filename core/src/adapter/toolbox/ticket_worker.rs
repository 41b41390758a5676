//! A thread that runs jobs in the order they were handed, each with a
//! *ticket*, for adapters that take driver calls off their callers' threads.
//!
//! An adapter hands a job ([`TicketWorker::hand`]) and returns to its caller
//! at once with the ticket; whoever later needs what the job makes (an
//! event's driver handle, a queue's driver order) waits until that ticket is
//! made ([`TicketWorker::wait_made`]). Jobs run one after another, in ticket
//! order, so waiting for a ticket also waits for every job handed before it.
//!
//! Once it has nothing to run the thread keeps looking for a while before it
//! sleeps, so that jobs handed back to back cost no wake-up. An adapter asks
//! [`TicketWorker::ready`] before handing: a job handed to a sleeping thread
//! would wait for its wake-up (microseconds), so while it sleeps the caller
//! does the work itself and [`rouse`](TicketWorker::rouse)s it, and the next
//! job finds it awake. A list of [`MAX_PENDING`] jobs makes callers wait for
//! room: an application submitting without end holds bounded memory.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// How long the thread keeps looking for jobs once it has none, before it
/// sleeps.
const SPIN: Duration = Duration::from_micros(50);

/// How long a caller waiting for a ticket keeps looking while jobs are being
/// made, before it sleeps, unless the worker was given another time.
pub const WAIT_SPIN: Duration = Duration::from_micros(20);

/// Jobs handed and not yet taken by the thread, at most.
pub const MAX_PENDING: usize = 1024;

/// A thread that runs jobs in ticket order (see the module documentation).
///
/// ```
/// use cmdbuf_core::adapter::toolbox::{TicketWorker, WAIT_SPIN};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// let worker: TicketWorker<Box<dyn FnOnce() + Send>> = TicketWorker::new("example-worker", true, WAIT_SPIN);
/// let done = Arc::new(AtomicU32::new(0));
/// let counter = done.clone();
/// let ticket = worker.hand(Box::new(move || { counter.fetch_add(1, Ordering::SeqCst); })).ok().expect("the thread starts");
/// worker.wait_made(ticket);
/// assert_eq!(done.load(Ordering::SeqCst), 1);
/// ```
pub struct TicketWorker<J: FnOnce() + Send + 'static> {
    inner: Arc<Inner<J>>,
    name: &'static str,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Whether the thread runs: read without the lock at every hand.
    running: AtomicBool,
    /// Off when the adapter said so, or once the thread could not start.
    enabled: AtomicBool,
    /// How long a waiter looks while jobs are being made before it sleeps.
    wait_spin: Duration,
}

struct Inner<J> {
    state: Mutex<State<J>>,
    /// The thread sleeps on it while it has nothing to run.
    work: Condvar,
    /// Callers waiting for a ticket to be made, or for room in the list.
    progress: Condvar,
    /// The last ticket given (written under `state`, read without it by the
    /// thread while it looks for work).
    given: AtomicU64,
    /// Whether the thread sleeps; changed under `state`'s lock, so that a
    /// caller handing a job under it knows whether to wake the thread.
    asleep: AtomicBool,
    /// Every job with a ticket up to this one has been made.
    made: AtomicU64,
    /// The lowest ticket a caller sleeps for (`u64::MAX` when none does):
    /// the thread wakes callers once it has made that job, not at each one.
    wake_at: AtomicU64,
    /// Callers sleeping until there is room in the list.
    room_waiters: AtomicUsize,
}

struct State<J> {
    jobs: VecDeque<(u64, J)>,
    stop: bool,
}

impl<J: FnOnce() + Send + 'static> TicketWorker<J> {
    /// A worker whose thread, named `name`, starts with the first job or
    /// [`rouse`](Self::rouse); `enabled: false` makes [`hand`](Self::hand)
    /// refuse every job. A caller waiting for a ticket looks for
    /// `wait_spin` while jobs are being made before it sleeps
    /// ([`WAIT_SPIN`] is what the CUDA launcher found; a device that runs
    /// on the host's own cores loses them to a looking waiter).
    pub fn new(name: &'static str, enabled: bool, wait_spin: Duration) -> TicketWorker<J> {
        TicketWorker {
            inner: Arc::new(Inner {
                state: Mutex::new(State { jobs: VecDeque::new(), stop: false }),
                work: Condvar::new(),
                progress: Condvar::new(),
                given: AtomicU64::new(0),
                asleep: AtomicBool::new(false),
                made: AtomicU64::new(0),
                wake_at: AtomicU64::new(u64::MAX),
                room_waiters: AtomicUsize::new(0),
            }),
            name,
            thread: Mutex::new(None),
            running: AtomicBool::new(false),
            enabled: AtomicBool::new(enabled),
            wait_spin,
        }
    }

    /// Whether jobs may be handed (enabled, and a thread that could start).
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Whether the thread runs and is awake: a job handed now is taken at once.
    pub fn ready(&self) -> bool {
        self.running.load(Ordering::Acquire) && !self.inner.asleep.load(Ordering::Acquire)
    }

    /// Starts the thread, or wakes it, for jobs about to come: a thread
    /// woken only when a job is handed starts it late.
    pub fn rouse(&self) {
        if !self.enabled() {
            return;
        }
        if !self.running.load(Ordering::Acquire) {
            self.start();
            return;
        }
        if self.inner.asleep.load(Ordering::Acquire) {
            let _state = self.inner.state.lock();
            self.inner.work.notify_one();
        }
    }

    /// Hands `job` to the thread; its ticket. The job back when the worker
    /// is off, its thread cannot start, or it is stopping: the caller then
    /// does the work itself.
    pub fn hand(&self, job: J) -> std::result::Result<u64, J> {
        if !self.enabled() || (!self.running.load(Ordering::Acquire) && !self.start()) {
            return Err(job);
        }
        let inner = &*self.inner;
        let mut state = inner.state.lock();
        if state.stop {
            return Err(job);
        }
        if state.jobs.len() >= MAX_PENDING {
            inner.room_waiters.fetch_add(1, Ordering::SeqCst);
            while state.jobs.len() >= MAX_PENDING && !state.stop {
                inner.progress.wait(&mut state);
            }
            inner.room_waiters.fetch_sub(1, Ordering::SeqCst);
            if state.stop {
                return Err(job);
            }
        }
        let ticket = inner.given.load(Ordering::Relaxed) + 1;
        inner.given.store(ticket, Ordering::SeqCst);
        state.jobs.push_back((ticket, job));
        let wake = inner.asleep.load(Ordering::Acquire);
        drop(state);
        if wake {
            inner.work.notify_one();
        }
        Ok(ticket)
    }

    /// Whether the job with `ticket` has been made.
    pub fn made(&self, ticket: u64) -> bool {
        self.inner.made.load(Ordering::Acquire) >= ticket
    }

    /// Blocks until the job with `ticket`, and every one before it, has been
    /// made. Called from a job itself, for a later ticket, it would wait for
    /// ever: jobs wait only for earlier tickets.
    pub fn wait_made(&self, ticket: u64) {
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
            } else if since.elapsed() > self.wait_spin {
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
        match std::thread::Builder::new().name(self.name.into()).spawn(move || inner.run()) {
            Ok(handle) => {
                *thread = Some(handle);
                self.running.store(true, Ordering::Release);
                true
            }
            Err(e) => {
                // Callers then do the work themselves, as without it, and do
                // not try again at each job.
                tracing::warn!(error = %e, worker = self.name, "cannot start a worker thread; its work stays on its callers' threads");
                self.enabled.store(false, Ordering::Relaxed);
                false
            }
        }
    }

    /// Runs every job handed so far, then stops the thread and joins it,
    /// unless called from a job, when the thread ends once this job returns.
    pub fn stop(&self) {
        self.inner.state.lock().stop = true;
        self.inner.work.notify_all();
        self.inner.progress.notify_all();
        if let Some(handle) = self.thread.lock().take()
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
        self.running.store(false, Ordering::Release);
    }
}

impl<J: FnOnce() + Send + 'static> Drop for TicketWorker<J> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<J: FnOnce() + Send> Inner<J> {
    fn run(&self) {
        let mut batch = VecDeque::new();
        loop {
            {
                let mut state = self.state.lock();
                while state.jobs.is_empty() {
                    if state.stop {
                        return;
                    }
                    // Look a while without the lock before sleeping.
                    let looked = parking_lot::MutexGuard::unlocked(&mut state, || self.look_for_work());
                    if looked {
                        continue;
                    }
                    if state.jobs.is_empty() && !state.stop {
                        self.asleep.store(true, Ordering::Release);
                        self.work.wait(&mut state);
                        self.asleep.store(false, Ordering::Release);
                    }
                }
                std::mem::swap(&mut batch, &mut state.jobs);
            }
            if self.room_waiters.load(Ordering::SeqCst) > 0 {
                let _state = self.state.lock();
                self.progress.notify_all();
            }
            for (ticket, job) in batch.drain(..) {
                job();
                self.made.store(ticket, Ordering::SeqCst);
                if self.wake_at.load(Ordering::SeqCst) <= ticket {
                    let _state = self.state.lock();
                    // Callers still waiting for later tickets ask again.
                    self.wake_at.store(u64::MAX, Ordering::SeqCst);
                    self.progress.notify_all();
                }
            }
        }
    }

    /// Looks for a job for [`SPIN`]; whether one was handed.
    fn look_for_work(&self) -> bool {
        let start = Instant::now();
        while start.elapsed() < SPIN {
            std::hint::spin_loop();
            if self.given.load(Ordering::SeqCst) > self.made.load(Ordering::Relaxed) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    type Job = Box<dyn FnOnce() + Send>;

    #[test]
    fn jobs_run_in_ticket_order_and_waits_see_every_earlier_job() {
        let worker: TicketWorker<Job> = TicketWorker::new("ticket-order", true, WAIT_SPIN);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut last = 0;
        for i in 0..2000u32 {
            let seen = seen.clone();
            last = worker.hand(Box::new(move || seen.lock().push(i))).ok().expect("handed");
        }
        worker.wait_made(last);
        assert_eq!(*seen.lock(), (0..2000).collect::<Vec<_>>());
    }

    #[test]
    fn a_disabled_worker_refuses_jobs_and_starts_no_thread() {
        let worker: TicketWorker<Job> = TicketWorker::new("disabled", false, WAIT_SPIN);
        worker.rouse();
        assert!(worker.hand(Box::new(|| {})).is_err());
        assert!(!worker.ready());
    }

    #[test]
    fn a_job_may_drop_the_worker_without_joining_its_own_thread() {
        let slot: Arc<Mutex<Option<TicketWorker<Job>>>> =
            Arc::new(Mutex::new(Some(TicketWorker::new("self-drop", true, WAIT_SPIN))));
        let (done, ended) = std::sync::mpsc::channel();
        let taken = slot.clone();
        let job: Job = Box::new(move || {
            drop(taken.lock().take());
            let _ = done.send(());
        });
        assert!(slot.lock().as_ref().is_some_and(|worker| worker.hand(job).is_ok()));
        ended.recv_timeout(Duration::from_secs(10)).expect("the job ended after dropping the worker");
    }

    #[test]
    fn stop_makes_every_job_handed_before_it() {
        let worker: TicketWorker<Job> = TicketWorker::new("stop", true, WAIT_SPIN);
        let count = Arc::new(AtomicU32::new(0));
        for _ in 0..100 {
            let count = count.clone();
            let handed = worker.hand(Box::new(move || {
                std::thread::sleep(Duration::from_micros(10));
                count.fetch_add(1, Ordering::SeqCst);
            }));
            assert!(handed.is_ok());
        }
        worker.stop();
        assert_eq!(count.load(Ordering::SeqCst), 100);
        assert!(worker.hand(Box::new(|| {})).is_err());
    }
}
