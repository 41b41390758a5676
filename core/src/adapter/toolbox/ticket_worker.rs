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
//!
//! What the thread does with a job is its [`JobRunner`]'s: [`CallJobs`] calls
//! closures; an adapter whose thread needs a setup (a driver context bound
//! to it) or tidies between jobs (driver objects given back a few at a time)
//! writes its own.

use std::collections::VecDeque;
use std::marker::PhantomData;
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

/// What a [`TicketWorker`]'s thread does with the jobs handed to it. The
/// runner moves to the thread when it starts and stays there.
///
/// ```
/// use cmdbuf_core::adapter::toolbox::{JobRunner, TicketWorker, WAIT_SPIN};
///
/// /// Adds numbers, and says how many it added once its list is empty.
/// struct Sum { total: u64, added: std::sync::mpsc::Sender<u64> }
///
/// impl JobRunner for Sum {
///     type Job = u64;
///     fn run(&mut self, _ticket: u64, job: u64) { self.total += job; }
///     fn tidy(&mut self, batch_end: bool) {
///         if batch_end { let _ = self.added.send(self.total); }
///     }
/// }
///
/// let (added, totals) = std::sync::mpsc::channel();
/// let worker = TicketWorker::new("example-sum", Sum { total: 0, added }, true, WAIT_SPIN);
/// let last = (1..=4).map(|n| worker.hand(n).expect("the thread starts")).last();
/// worker.wait_made(last.expect("four jobs"));
/// worker.stop();
/// assert_eq!(totals.iter().last(), Some(10));
/// ```
pub trait JobRunner: Send + 'static {
    /// What is handed.
    type Job: Send + 'static;

    /// Called once on the thread, before its first job.
    fn start(&mut self) {}

    /// Makes the job with `ticket`. Its waiters are told once it returns.
    fn run(&mut self, ticket: u64, job: Self::Job);

    /// Called after each job is made and its waiters told, for work no
    /// waiter needs; `batch_end` for the last of the jobs the thread took
    /// together, before it looks for more.
    fn tidy(&mut self, batch_end: bool) {
        let _ = batch_end;
    }
}

/// The runner of jobs that are closures: it calls each.
pub struct CallJobs<J>(PhantomData<fn(J)>);

impl<J> Default for CallJobs<J> {
    fn default() -> Self {
        CallJobs(PhantomData)
    }
}

impl<J: FnOnce() + Send + 'static> JobRunner for CallJobs<J> {
    type Job = J;

    fn run(&mut self, _ticket: u64, job: J) {
        job();
    }
}

/// A thread that runs jobs in ticket order (see the module documentation).
///
/// ```
/// use cmdbuf_core::adapter::toolbox::{CallJobs, TicketWorker, WAIT_SPIN};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// let worker: TicketWorker<CallJobs<Box<dyn FnOnce() + Send>>> =
///     TicketWorker::new("example-worker", CallJobs::default(), true, WAIT_SPIN);
/// let done = Arc::new(AtomicU32::new(0));
/// let counter = done.clone();
/// let ticket = worker.hand(Box::new(move || { counter.fetch_add(1, Ordering::SeqCst); })).ok().expect("the thread starts");
/// worker.wait_made(ticket);
/// assert_eq!(done.load(Ordering::SeqCst), 1);
/// ```
pub struct TicketWorker<R: JobRunner> {
    inner: Arc<Inner<R::Job>>,
    name: &'static str,
    /// Until the thread starts, with it.
    runner: Mutex<Option<R>>,
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

impl<R: JobRunner> TicketWorker<R> {
    /// A worker whose thread, named `name`, starts with the first job or
    /// [`rouse`](Self::rouse) and gives each job to `runner`;
    /// `enabled: false` makes [`hand`](Self::hand) refuse every job. A
    /// caller waiting for a ticket looks for `wait_spin` while jobs are
    /// being made before it sleeps ([`WAIT_SPIN`] is what the CUDA launcher
    /// found; a device that runs on the host's own cores loses them to a
    /// looking waiter).
    pub fn new(name: &'static str, runner: R, enabled: bool, wait_spin: Duration) -> TicketWorker<R> {
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
            runner: Mutex::new(Some(runner)),
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
    pub fn hand(&self, job: R::Job) -> std::result::Result<u64, R::Job> {
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
        let Some(runner) = self.runner.lock().take() else { return false };
        let inner = self.inner.clone();
        match std::thread::Builder::new().name(self.name.into()).spawn(move || inner.run(runner)) {
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

impl<R: JobRunner> Drop for TicketWorker<R> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<J: Send + 'static> Inner<J> {
    fn run<R: JobRunner<Job = J>>(&self, mut runner: R) {
        runner.start();
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
            let taken = batch.len();
            for (made, (ticket, job)) in batch.drain(..).enumerate() {
                runner.run(ticket, job);
                self.made.store(ticket, Ordering::SeqCst);
                if self.wake_at.load(Ordering::SeqCst) <= ticket {
                    let _state = self.state.lock();
                    // Callers still waiting for later tickets ask again.
                    self.wake_at.store(u64::MAX, Ordering::SeqCst);
                    self.progress.notify_all();
                }
                runner.tidy(made + 1 == taken);
            }
        }
    }

    /// Looks for a job for [`SPIN`]; whether one was handed.
    fn look_for_work(&self) -> bool {
        let start = Instant::now();
        while start.elapsed() < SPIN {
            // One pause at a time: a pause is some 140 cycles on recent
            // Xeons, and a handed job should wait for no more.
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

    fn worker(name: &'static str) -> TicketWorker<CallJobs<Job>> {
        TicketWorker::new(name, CallJobs::default(), true, WAIT_SPIN)
    }

    #[test]
    fn jobs_run_in_ticket_order_and_waits_see_every_earlier_job() {
        let worker = worker("ticket-order");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut last = 0;
        for i in 0..2000u32 {
            let seen = seen.clone();
            last = worker.hand(Box::new(move || seen.lock().push(i))).ok().expect("handed");
        }
        worker.wait_made(last);
        assert_eq!(*seen.lock(), (0..2000).collect::<Vec<_>>());
    }

    /// Writes down what its thread is asked, in order.
    struct Diary(Arc<Mutex<Vec<String>>>);

    impl JobRunner for Diary {
        type Job = ();
        fn start(&mut self) {
            self.0.lock().push(format!("start on {:?}", std::thread::current().name()));
        }
        fn run(&mut self, ticket: u64, (): ()) {
            self.0.lock().push(format!("run {ticket}"));
        }
        fn tidy(&mut self, batch_end: bool) {
            self.0.lock().push(format!("tidy {batch_end}"));
        }
    }

    #[test]
    fn the_runner_starts_on_the_thread_and_tidies_after_each_job() {
        let diary = Arc::new(Mutex::new(Vec::new()));
        let worker = TicketWorker::new("diary", Diary(diary.clone()), true, WAIT_SPIN);
        let tickets: Vec<u64> = (0..300).map(|_| worker.hand(()).expect("handed")).collect();
        worker.wait_made(*tickets.last().expect("300 jobs"));
        worker.stop();
        let diary = diary.lock();
        assert_eq!(diary[0], "start on Some(\"diary\")");
        assert_eq!(diary.iter().filter(|entry| entry.starts_with("start")).count(), 1);
        let runs: Vec<&String> = diary.iter().filter(|entry| entry.starts_with("run")).collect();
        assert_eq!(runs, tickets.iter().map(|t| format!("run {t}")).collect::<Vec<_>>().iter().collect::<Vec<_>>());
        // Each run is followed by its tidy, and the last of all ends a batch.
        for pair in diary[1..].chunks(2) {
            assert!(pair[0].starts_with("run ") && pair[1].starts_with("tidy "), "{pair:?}");
        }
        assert_eq!(diary.last().map(String::as_str), Some("tidy true"));
    }

    #[test]
    fn a_disabled_worker_refuses_jobs_and_starts_no_thread() {
        let worker: TicketWorker<CallJobs<Job>> = TicketWorker::new("disabled", CallJobs::default(), false, WAIT_SPIN);
        worker.rouse();
        assert!(worker.hand(Box::new(|| {})).is_err());
        assert!(!worker.ready());
    }

    #[test]
    fn a_job_may_drop_the_worker_without_joining_its_own_thread() {
        let slot = Arc::new(Mutex::new(Some(worker("self-drop"))));
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
        let worker = worker("stop");
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
