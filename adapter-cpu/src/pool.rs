//! The persistent worker pool and the clock of profiling timestamps.
//!
//! Modelled on the schedulers of Taskflow and dispenso: each worker owns a
//! LIFO deque (what it spawns, it runs next, hot in cache) that idle workers
//! steal from in batches; host threads hand work in through a shared
//! injector. Tasks never block on other tasks: dependencies are
//! continuations ([`crate::event`]), and [`parallel_for`] runs other tasks
//! while it waits.
//!
//! Idle workers: at most [`LOOKERS`] keep looking for work (yielding between
//! looks) for [`IDLE`] before they park; the others park at once
//! ([`crate::sleep`]). A single push wakes a parked worker only when none is
//! looking, and the last looker to find work wakes one to look in its place
//! (Taskflow's rule), so a stream of eager submissions is met by one or two
//! lookers instead of every idle worker scanning the queues against the
//! submitting thread. A burst (a span of `k` pieces: a command-buffer run's
//! roots, a fork's successors) wakes up to `k` parked workers at once, so
//! that a wide graph ramps up in one step rather than one woken worker at a
//! time. A worker that steals a batch announces what it keeps of it as a
//! push does, since a worker parking while the batch moved saw none of it.

use std::any::Any;
use std::cell::Cell;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use parking_lot::Mutex;

use crate::sleep::Sleepers;

/// Work queued as a closure (commands of queues, replay starts).
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// How long an idle looker keeps looking for work before it parks. It
/// yields between looks rather than spinning on `pause`: on a loaded machine
/// a spinning worker takes the core from the very thread that would give it
/// work (measured: 100 µs per handoff instead of 4), while on an idle one
/// `sched_yield` returns at once.
const IDLE: Duration = Duration::from_micros(100);

/// Idle workers that may look for work at once; the others park. Two, not
/// one: a worker that has just finished a task can take over looking while
/// the other runs the task it found, so an eager stream rarely needs a
/// wake-up. Every look scans the injector and all deques: with every idle
/// worker looking, the submitting thread's pushes meet that traffic, and
/// with as many workers as cores it shares a core with one (the likely
/// cause of eager kernels costing the host 3.7-6 µs on a 32-core host).
const LOOKERS: usize = 2;

/// A unit of work. `Raw` runs a function on a pointer and three numbers
/// without allocating: the command-buffer executor's spans of nodes.
pub(crate) enum Task {
    Job(Job),
    Raw(RawTask),
}

/// A function and what it works on, run once by a worker.
pub(crate) struct RawTask {
    /// Called exactly once with `data` and the three numbers.
    pub(crate) run: unsafe fn(data: *const (), a: u32, b: u32, c: u32),
    pub(crate) data: *const (),
    pub(crate) a: u32,
    pub(crate) b: u32,
    pub(crate) c: u32,
}

// SAFETY: whoever builds a RawTask promises (see `RawTask::run`'s users) that
// `data` may be used from any thread until `run` has been called.
unsafe impl Send for RawTask {}

impl Task {
    fn run(self) {
        // Tasks catch kernel panics themselves; anything else reaching here
        // is a bug in this crate, logged rather than killing the worker.
        let result = catch_unwind(AssertUnwindSafe(|| match self {
            Task::Job(job) => job(),
            // SAFETY: the builder of the task made `data` valid for one call.
            Task::Raw(t) => unsafe { (t.run)(t.data, t.a, t.b, t.c) },
        }));
        if result.is_err() {
            tracing::error!("a CPU adapter task panicked outside kernel code");
        }
    }
}

struct Shared {
    injector: Injector<Task>,
    stealers: Box<[Stealer<Task>]>,
    sleepers: Sleepers,
    /// Workers looking for work in [`Local::look`]: at most [`LOOKERS`]
    /// by choice, plus workers just woken.
    lookers: AtomicUsize,
    shutdown: AtomicBool,
}

impl Shared {
    /// One task was queued: wakes a parked worker unless one is looking (it
    /// will find the task, or wake a sleeper when it finds another).
    fn notify(&self) {
        // Pairs with the end of `Local::look_as_looker` (a looker that stops
        // then parks, and checks the queues there) and `Sleepers::park`:
        // either this sees the looker or the sleeper, or it sees the task.
        fence(Ordering::SeqCst);
        if self.lookers.load(Ordering::Relaxed) == 0 {
            self.sleepers.wake(1);
        }
    }

    /// `n` pieces of work were queued at once (or will be, split from the
    /// task just queued): wakes up to `n` parked workers whether or not one
    /// is looking.
    fn notify_burst(&self, n: usize) {
        if n <= 1 {
            return self.notify();
        }
        self.sleepers.wake(n);
    }

    /// Becomes one of the lookers, if fewer than [`LOOKERS`] are.
    fn try_look(&self) -> bool {
        self.lookers.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |n| (n < LOOKERS).then_some(n + 1)).is_ok()
    }

    fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }
}

/// A worker thread's own state, reachable through [`LOCAL`] while it runs.
struct Local {
    shared: Arc<Shared>,
    deque: Worker<Task>,
    index: usize,
}

impl Local {
    /// Own work first (newest first), then the injector, then other workers.
    fn find(&self) -> Option<Task> {
        if let Some(task) = self.deque.pop() {
            return Some(task);
        }
        loop {
            let mut retry = false;
            match self.shared.injector.steal_batch_and_pop(&self.deque) {
                Steal::Success(task) => return Some(self.stolen(task)),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let n = self.shared.stealers.len();
            for k in 1..n {
                match self.shared.stealers[(self.index + k) % n].steal_batch_and_pop(&self.deque) {
                    Steal::Success(task) => return Some(self.stolen(task)),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    /// A stolen batch's first task, after announcing the rest of the batch,
    /// now in this worker's deque, as a push would. Between its theft and
    /// its arrival here the batch was in neither deque, so a worker that
    /// checked the queues before parking in that moment saw none of it; a
    /// thief outside the lookers (a worker just done with a task) would
    /// otherwise leave the rest behind the task it runs while that worker
    /// sleeps. Lookers pass the wake-up on themselves (`look_as_looker`),
    /// so `notify` only checks them there.
    fn stolen(&self, task: Task) -> Task {
        if !self.deque.is_empty() {
            self.shared.notify();
        }
        task
    }

    /// Looks for work for up to `limit`, yielding between looks; `None` if
    /// none came (or the pool shuts down).
    fn look(&self, limit: Duration) -> Option<Task> {
        let start = Instant::now();
        loop {
            if let Some(task) = self.find() {
                return Some(task);
            }
            if start.elapsed() > limit || self.shared.shutdown.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::yield_now();
        }
    }

    /// Looks for work for up to `limit` as one of the lookers (counted in
    /// `lookers` by the caller), then stops being one.
    fn look_as_looker(&self, limit: Duration) -> Option<Task> {
        let found = self.look(limit);
        // The last looker to find work wakes a sleeper to look in its place
        // (Taskflow's rule): pushes skip the wake-up while a worker looks,
        // so work queued with this task, or just after it, would otherwise
        // wait for this task to finish.
        if self.shared.lookers.fetch_sub(1, Ordering::SeqCst) == 1 && found.is_some() && self.shared.has_work() {
            self.shared.sleepers.wake(1);
        }
        found
    }

    fn park(&self) {
        let shared = &self.shared;
        shared.sleepers.park(|| !shared.has_work() && !shared.shutdown.load(Ordering::Relaxed));
    }

    fn main_loop(&self) {
        let mut woken = false;
        while !self.shared.shutdown.load(Ordering::Relaxed) {
            let found = if woken {
                // A worker just woken looks once as a looker, whatever their
                // number, so that finding work with more still queued passes
                // the wake-up on (see `look_as_looker`). Looking longer, or
                // after each piece of a burst, measured no better on the
                // 16-core host (docs/performance.md, goal 5).
                self.shared.lookers.fetch_add(1, Ordering::SeqCst);
                self.look_as_looker(Duration::ZERO)
            } else {
                self.find()
            };
            let found = match found {
                Some(task) => Some(task),
                None if self.shared.try_look() => self.look_as_looker(IDLE),
                None => None,
            };
            woken = found.is_none();
            match found {
                Some(task) => task.run(),
                None => self.park(),
            }
        }
        // The pool is dropped, so nothing queues work any more; what is
        // queued still runs, once: a `RawTask` owns what its data points to
        // until then (a claimable event's reference, whose job a waiting
        // host thread may already have run, would otherwise leak).
        while let Some(task) = self.find() {
            task.run();
        }
    }
}

thread_local! {
    /// The worker state of this thread, null on threads outside any pool.
    static LOCAL: Cell<*const Local> = const { Cell::new(std::ptr::null()) };
}

/// Runs `f` with this thread's worker state, if it is a worker of `shared`.
fn with_local<R>(shared: Option<&Arc<Shared>>, f: impl FnOnce(Option<&Local>) -> R) -> R {
    let local = LOCAL.with(Cell::get);
    // SAFETY: LOCAL points to the `Local` on the stack of this thread's
    // worker loop while that loop runs, and is null otherwise.
    let local = unsafe { local.as_ref() };
    f(local.filter(|l| shared.is_none_or(|s| Arc::ptr_eq(&l.shared, s))))
}

/// Workers that run commands, command-buffer nodes and work-groups.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    threads: usize,
}

impl Pool {
    /// A pool of `threads` workers that run wherever the system puts them.
    pub(crate) fn new(threads: usize) -> Result<Pool, String> {
        Pool::pinned(threads, None)
    }

    /// A pool of `threads` workers, each kept to the logical CPUs `cpus`
    /// when given (a sub-device's share of the machine).
    pub(crate) fn pinned(threads: usize, cpus: Option<Vec<usize>>) -> Result<Pool, String> {
        let deques: Vec<Worker<Task>> = (0..threads).map(|_| Worker::new_lifo()).collect();
        let shared = Arc::new(Shared {
            injector: Injector::new(),
            stealers: deques.iter().map(Worker::stealer).collect(),
            sleepers: Sleepers::new(),
            lookers: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
        });
        #[cfg(test)]
        tests::LAST_SHARED.with(|l| *l.borrow_mut() = Some(Arc::downgrade(&shared)));
        let cpus = cpus.map(Arc::new);
        let mut started = Vec::with_capacity(threads);
        for (index, deque) in deques.into_iter().enumerate() {
            let worker_shared = shared.clone();
            let cpus = cpus.clone();
            let builder = std::thread::Builder::new().name(format!("ur-cpu-{index}"));
            #[cfg(test)]
            let builder = if tests::FAIL_SPAWN_AT.with(|f| f.get()) == Some(index) {
                // A stack no machine can map: the system refuses the thread.
                builder.stack_size(1 << 60)
            } else {
                builder
            };
            let spawned = builder.spawn(move || {
                if let Some(cpus) = cpus {
                    pin_current_thread(&cpus);
                }
                let local = Local { shared: worker_shared, deque, index };
                LOCAL.with(|l| l.set(&local));
                local.main_loop();
                LOCAL.with(|l| l.set(std::ptr::null()));
            });
            match spawned {
                Ok(handle) => started.push(handle),
                Err(e) => {
                    // No `Pool` exists yet whose drop would stop the workers
                    // already running: stop and join them here, so that a
                    // failed start leaves no threads behind.
                    shared.shutdown.store(true, Ordering::SeqCst);
                    shared.sleepers.wake_all();
                    for handle in started {
                        let _ = handle.join();
                    }
                    return Err(format!("the system refused worker thread {index} of {threads}: {e}"));
                }
            }
        }
        Ok(Pool { shared, threads })
    }

    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `task` on a worker, without waiting for it.
    pub(crate) fn spawn(&self, task: impl FnOnce() + Send + 'static) {
        self.push(Task::Job(Box::new(task)));
    }

    /// Queues `task`: on this worker's own deque when called from one of the
    /// pool's workers, else on the injector.
    pub(crate) fn push(&self, task: Task) {
        self.push_burst(task, 1);
    }

    /// Queues `task`, which is (or will split into) `pieces` pieces of work
    /// that can run at once: wakes up to that many parked workers.
    pub(crate) fn push_burst(&self, task: Task, pieces: usize) {
        with_local(Some(&self.shared), |local| match local {
            Some(local) => local.deque.push(task),
            None => self.shared.injector.push(task),
        });
        self.shared.notify_burst(pieces);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.sleepers.wake_all();
    }
}

/// Keeps the calling thread to the logical CPUs `cpus`. A failure (CPUs
/// taken away since they were listed) leaves the thread where it was, with
/// a warning: the work still runs, on other CPUs.
#[cfg(target_os = "linux")]
fn pin_current_thread(cpus: &[usize]) {
    // SAFETY: `cpu_set_t` is plain bits; zeroed, it is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for cpu in cpus.iter().filter(|c| **c < capacity) {
        // SAFETY: `cpu` is below the set's capacity in bits, so the bit
        // written lies inside `set`.
        unsafe { libc::CPU_SET(*cpu, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a live `cpu_set_t` of
    // the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        tracing::warn!(?cpus, error = %std::io::Error::last_os_error(), "a CPU sub-device's worker is not pinned");
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_current_thread(cpus: &[usize]) {
    tracing::debug!(?cpus, "workers are pinned on Linux only");
}

/// Calls `body` on chunks that cover `0..n`, in parallel on the pool of the
/// calling worker (on the calling thread alone elsewhere), and returns when
/// all have returned. While waiting, the caller runs other tasks, so this
/// never blocks a worker. A panic in `body` is resumed on the caller.
pub(crate) fn parallel_for(n: usize, body: &(dyn Fn(Range<usize>) + Sync)) {
    with_local(None, |local| {
        let helpers = local.map_or(0, |l| l.shared.stealers.len() - 1).min(n.saturating_sub(1));
        let Some(local) = local.filter(|_| helpers > 0) else {
            return body(0..n);
        };
        // Chunks claimed one at a time: a few per worker balance the load.
        let chunks = n.min((helpers + 1) * 4);
        let job = ForJob {
            body,
            n,
            chunks,
            next: AtomicUsize::new(0),
            // The helpers still to return: each holds a pointer to `job`.
            pending: AtomicUsize::new(helpers),
            panic: Mutex::new(None),
        };
        let data = std::ptr::from_ref(&job).cast::<()>();
        for _ in 0..helpers {
            local.deque.push(Task::Raw(RawTask { run: ForJob::help, data, a: 0, b: 0, c: 0 }));
        }
        local.shared.notify_burst(helpers);
        job.work();
        // `job` lives on this stack: wait until no helper can touch it.
        // Yielding, not spinning: the helper still running may be waiting
        // for this very core.
        while job.pending.load(Ordering::Acquire) > 0 {
            match local.find() {
                Some(task) => task.run(),
                None => std::thread::yield_now(),
            }
        }
        if let Some(payload) = job.panic.into_inner() {
            resume_unwind(payload);
        }
    })
}

/// A [`parallel_for`] in progress.
struct ForJob<'a> {
    body: &'a (dyn Fn(Range<usize>) + Sync),
    n: usize,
    chunks: usize,
    next: AtomicUsize,
    pending: AtomicUsize,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl ForJob<'_> {
    /// Claims and runs chunks until none are left.
    fn work(&self) {
        loop {
            let chunk = self.next.fetch_add(1, Ordering::Relaxed);
            if chunk >= self.chunks {
                return;
            }
            let range = chunk * self.n / self.chunks..(chunk + 1) * self.n / self.chunks;
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (self.body)(range))) {
                self.panic.lock().get_or_insert(payload);
            }
        }
    }

    /// # Safety
    /// `data` points to a live `ForJob` whose `pending` counts this call.
    unsafe fn help(data: *const (), _: u32, _: u32, _: u32) {
        // SAFETY: the caller of `parallel_for` keeps the job alive until
        // `pending` reaches zero, which happens only below.
        let job = unsafe { &*data.cast::<ForJob<'_>>() };
        job.work();
        job.pending.fetch_sub(1, Ordering::Release);
    }
}

/// The timebase of profiling info: the host clock, so that the device's
/// clock and the host's are one (`urDeviceGetGlobalTimestamps`).
pub(crate) fn now_ns() -> u64 {
    cmdbuf_core::host_clock_ns()
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::sync::Weak;
    use std::sync::atomic::AtomicU32;
    use std::sync::mpsc;

    use super::*;

    /// Runs `f` on a worker of a pool of `threads` and returns its result.
    fn on_worker<R: Send + 'static>(threads: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
        let pool = Pool::new(threads).unwrap();
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || tx.send(f()).unwrap());
        rx.recv_timeout(Duration::from_secs(30)).expect("the task ran")
    }

    #[test]
    fn parallel_for_covers_every_index_once() {
        for (threads, n) in [(1, 1000), (4, 1), (4, 3), (4, 1000), (4, 100_003)] {
            let hits = on_worker(threads, move || {
                let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
                parallel_for(n, &|chunk| {
                    for i in chunk {
                        hits[i].fetch_add(1, Ordering::Relaxed);
                    }
                });
                hits.into_iter().map(AtomicU32::into_inner).collect::<Vec<_>>()
            });
            assert!(hits.iter().all(|&h| h == 1), "{threads} workers, n = {n}");
        }
    }

    #[test]
    fn nested_parallel_for_completes() {
        let total = on_worker(3, || {
            let total = AtomicUsize::new(0);
            parallel_for(8, &|outer| {
                for _ in outer {
                    parallel_for(100, &|inner| {
                        total.fetch_add(inner.len(), Ordering::Relaxed);
                    });
                }
            });
            total.into_inner()
        });
        assert_eq!(total, 800);
    }

    #[test]
    fn a_panic_in_a_chunk_reaches_the_caller_after_all_chunks() {
        let (caught, ran) = on_worker(4, || {
            let ran = AtomicUsize::new(0);
            let caught = catch_unwind(AssertUnwindSafe(|| {
                parallel_for(64, &|chunk| {
                    ran.fetch_add(chunk.len(), Ordering::Relaxed);
                    if chunk.contains(&63) {
                        panic!("chunk with 63");
                    }
                })
            }));
            (caught.is_err(), ran.into_inner())
        });
        assert!(caught);
        assert_eq!(ran, 64);
    }

    #[test]
    fn outside_a_worker_parallel_for_runs_on_the_caller() {
        let sum = AtomicUsize::new(0);
        parallel_for(10, &|chunk| {
            sum.fetch_add(chunk.sum::<usize>(), Ordering::Relaxed);
        });
        assert_eq!(sum.into_inner(), 45);
    }

    /// Tasks that each wait for all of them to run at once finish only if
    /// every parked worker woke: single pushes from the host skip the
    /// wake-up while a worker looks, so the wake-ups must pass on.
    #[test]
    fn pushes_from_the_host_reach_every_parked_worker() {
        let threads = 8;
        let pool = Pool::new(threads).unwrap();
        for round in 0..3 {
            // Long enough for every worker to park.
            std::thread::sleep(IDLE * 20);
            let barrier = Arc::new(std::sync::Barrier::new(threads));
            let (tx, rx) = mpsc::channel();
            for _ in 0..threads {
                let (barrier, tx) = (barrier.clone(), tx.clone());
                pool.spawn(move || {
                    barrier.wait();
                    tx.send(()).unwrap();
                });
            }
            for _ in 0..threads {
                rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("round {round}: a worker slept"));
            }
        }
    }

    /// A burst of `k` wakes `k` parked workers, and they run the burst's
    /// pieces at once, even though its task reaches the pool as one and is
    /// split by whoever takes it. The split queues its pieces and announces
    /// them as a burst of its own, as a span's halves and `parallel_for`'s
    /// helpers are; that second wake-up is what starts them when the split
    /// ran late (the `delay`: its thread preempted on a loaded machine),
    /// after the workers the first burst woke had found nothing and parked
    /// again. Without it the pieces waited in the splitting worker's deque,
    /// and here, where every piece waits for all the others, forever.
    #[test]
    fn a_burst_wakes_as_many_workers_as_it_has_pieces() {
        let pool = Arc::new(Pool::new(8).unwrap());
        for delay in [Duration::ZERO, IDLE * 20] {
            std::thread::sleep(IDLE * 20);
            burst_meeting_at_a_barrier(&pool, delay, &format!("split after {delay:?}"));
        }
    }

    /// Bursts of pieces that each wait for all the others, queued back to
    /// back: each is split while workers of the last one are still
    /// returning from it, parking, leaving again and stealing outside the
    /// lookers. On a 16-core host that order of announcements, wake-ups and
    /// departures left a worker asleep and uncounted beside a queued piece
    /// (`Sleepers`), which here, where every piece waits for all the others,
    /// is a hang.
    #[test]
    fn back_to_back_bursts_reach_every_worker() {
        let pool = Arc::new(Pool::new(8).unwrap());
        for round in 0..300 {
            burst_meeting_at_a_barrier(&pool, Duration::ZERO, &format!("round {round}"));
        }
    }

    /// Queues one task that, after `delay`, splits into one piece per
    /// worker of `pool` (itself included), each waiting at a barrier for
    /// all the others; returns once every piece has passed it.
    fn burst_meeting_at_a_barrier(pool: &Arc<Pool>, delay: Duration, what: &str) {
        let threads = pool.threads();
        let barrier = Arc::new(std::sync::Barrier::new(threads));
        let (tx, rx) = mpsc::channel();
        let (inner, b, t) = (pool.clone(), barrier.clone(), tx.clone());
        let split = move || {
            std::thread::sleep(delay);
            with_local(Some(&inner.shared), |local| {
                let local = local.expect("on a worker");
                for _ in 1..threads {
                    let (b, t) = (b.clone(), t.clone());
                    local.deque.push(Task::Job(Box::new(move || {
                        b.wait();
                        t.send(()).unwrap();
                    })));
                }
                local.shared.notify_burst(threads - 1);
            });
            b.wait();
            t.send(()).unwrap();
        };
        pool.push_burst(Task::Job(Box::new(split)), threads);
        for _ in 0..threads {
            rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{what}: a piece never started"));
        }
    }

    /// `wake(n)` wakes `n` of the parked threads, not one and not all.
    #[test]
    fn sleepers_wake_as_many_as_asked() {
        let sleepers = Arc::new(Sleepers::new());
        let woke = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (sleepers, woke) = (sleepers.clone(), woke.clone());
                std::thread::spawn(move || {
                    sleepers.park(|| true);
                    woke.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        while sleepers.parked() < 6 {
            std::thread::yield_now();
        }
        // Every thread has counted itself; let each reach its wait.
        std::thread::sleep(Duration::from_millis(100));
        sleepers.wake(2);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(woke.load(Ordering::SeqCst), 2);
        assert_eq!(sleepers.parked(), 4);
        sleepers.wake(10);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(woke.load(Ordering::SeqCst), 6);
    }

    /// A worker that announced itself, then found work after a wake-up had
    /// taken its count, leaves without taking a count that is not its own:
    /// the worker that parks next, after that wake-up, is still counted and
    /// so still woken by the next one. Taking "one back" anyway took the
    /// sleeper's count, and the next wake-up found none and woke nobody.
    #[test]
    fn a_worker_leaving_after_a_wake_up_leaves_the_sleepers_counted() {
        let sleepers = Arc::new(Sleepers::new());
        let (announced, leave) = (mpsc::channel(), mpsc::channel::<()>());
        let (tell, go) = (announced.0.clone(), leave.1);
        let leaving = {
            let sleepers = sleepers.clone();
            std::thread::spawn(move || {
                sleepers.park(|| {
                    tell.send(()).unwrap();
                    go.recv().unwrap();
                    false
                })
            })
        };
        announced.1.recv().unwrap();
        // Takes the leaving worker's count; nobody sleeps yet.
        sleepers.wake(1);
        let (woke, woken) = mpsc::channel();
        {
            let (sleepers, tell) = (sleepers.clone(), announced.0.clone());
            std::thread::spawn(move || {
                sleepers.park(|| {
                    tell.send(()).unwrap();
                    true
                });
                woke.send(()).unwrap();
            });
        }
        announced.1.recv().unwrap();
        leave.0.send(()).unwrap();
        leaving.join().unwrap();
        assert_eq!(sleepers.parked(), 1, "the sleeper's count");
        sleepers.wake(1);
        woken.recv_timeout(Duration::from_secs(10)).expect("the sleeper was woken");
    }

    /// A pinned pool's workers run on its CPUs only.
    #[cfg(target_os = "linux")]
    #[test]
    fn pinned_workers_run_on_their_cpus() {
        let cpu = *crate::topology::allowed_cpus().last().expect("a CPU");
        let pool = Pool::pinned(2, Some(vec![cpu])).unwrap();
        let (tx, rx) = mpsc::channel();
        for _ in 0..8 {
            let tx = tx.clone();
            // SAFETY: sched_getcpu has no preconditions.
            pool.spawn(move || tx.send(unsafe { libc::sched_getcpu() }).unwrap());
        }
        for _ in 0..8 {
            assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), cpu as i32);
        }
    }

    #[test]
    fn parked_workers_wake_for_new_work() {
        let pool = Pool::new(2).unwrap();
        // Long enough for every worker to give up polling and park.
        std::thread::sleep(IDLE * 20);
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            pool.spawn(move || tx.send(i).unwrap());
        }
        let mut got: Vec<i32> = (0..100).map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap()).collect();
        got.sort();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
    }

    thread_local! {
        /// The worker this thread's next `Pool::pinned` fails to start.
        pub(super) static FAIL_SPAWN_AT: Cell<Option<usize>> = const { Cell::new(None) };
        /// The shared state of the last pool this thread started.
        pub(super) static LAST_SHARED: RefCell<Option<Weak<Shared>>> = const { RefCell::new(None) };
    }

    #[test]
    fn a_failed_start_stops_the_workers_already_running() {
        FAIL_SPAWN_AT.with(|f| f.set(Some(3)));
        let error = Pool::new(8).err().expect("worker 3 cannot start");
        FAIL_SPAWN_AT.with(|f| f.set(None));
        assert!(error.contains("worker thread 3 of 8"), "{error}");
        // Workers hold the shared state while they run: once every started
        // worker has been joined, nothing holds it.
        let shared = LAST_SHARED.with(|l| l.borrow_mut().take()).expect("the pool recorded its state");
        assert!(shared.upgrade().is_none(), "a worker of the failed pool is still running");
        // The same thread starts a whole pool afterwards.
        assert_eq!(Pool::new(2).unwrap().threads(), 2);
    }
}
