//! Process-wide counts of live front-end objects, always on, so that a long
//! run (the `soak` benchmark) can show that nothing accumulates.
//!
//! Each counted object holds a zero-sized [`Live`] token: creating the token
//! increments its kind's counter and dropping it decrements it, so the count
//! follows the object without any change to its `Drop`. Objects shared
//! through an `Arc` (contexts, queues, USM allocations, command buffers,
//! programs, kernels) count once however many handles exist; an [`Event`]
//! is itself the handle, so events count live event handles (each clone is
//! one more retain of the adapter event).
//!
//! The counts are global (all contexts, all adapters). Each thread counts
//! in counters of its own, which only it writes: a plain load and store
//! where a shared counter took a locked read-modify-write, of which an eager
//! launch paid two (its event handle made and dropped) and which are about
//! half of the front end's share of a launch's host time on the GPU machine
//! (docs/performance.md). [`live_objects`] adds up the threads' counters and
//! those that exited threads left behind.
//!
//! These are not the fault injector's counts (`faults::LiveObjects`, feature
//! `fault-injection`): those count the *adapter* objects behind one wrapped
//! context, which may outlive their front-end handles, to check that a
//! failed scenario released everything; these count front-end handles in
//! every build, to show a long run does not accumulate them.
//! `docs/reliability.md` ("Two counters, and why both") compares them.
//!
//! [`Event`]: crate::Event

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The kinds counted, indexing the counters.
pub(crate) const CONTEXT: usize = 0;
pub(crate) const QUEUE: usize = 1;
pub(crate) const EVENT: usize = 2;
pub(crate) const USM: usize = 3;
pub(crate) const COMMAND_BUFFER: usize = 4;
pub(crate) const PROGRAM: usize = 5;
pub(crate) const KERNEL: usize = 6;
/// A kind no object counts: this module's tests, which run beside others
/// counting the real kinds.
#[cfg_attr(not(test), allow(dead_code))]
const UNUSED: usize = 7;
const KINDS: usize = 8;

/// One set of counts: a thread's, or what exited threads left. A thread's
/// own count of a kind may be negative (objects it dropped that another
/// thread made).
type Counts = [AtomicIsize; KINDS];

/// The counters of every live thread that counted, and what exited threads
/// counted; one lock, so that a thread's exit (its counts moved into
/// `exited`) and [`live_objects`] never see its counts twice or not at all.
struct Registry {
    threads: Vec<Arc<Counts>>,
    exited: [isize; KINDS],
}

impl Registry {
    /// Kind `k`'s count: every thread's, the exited threads', the late ones.
    fn count(&self, k: usize) -> isize {
        let threads: isize = self.threads.iter().map(|t| t[k].load(Ordering::Relaxed)).sum();
        self.exited[k] + LATE[k].load(Ordering::Relaxed) + threads
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { threads: Vec::new(), exited: [0; KINDS] });

/// Counts taken while the thread's own counters are unavailable (created or
/// dropped by another thread-local's destructor after this one's): the
/// one place that pays a read-modify-write.
static LATE: Counts = [const { AtomicIsize::new(0) }; KINDS];

/// This thread's counters, registered on first use; on exit, folded into
/// the registry's `exited`.
struct Local(Arc<Counts>);

impl Local {
    fn register() -> Local {
        let counts = Arc::new([const { AtomicIsize::new(0) }; KINDS]);
        registry().threads.push(counts.clone());
        Local(counts)
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let mut registry = registry();
        registry.threads.retain(|t| !Arc::ptr_eq(t, &self.0));
        for (left, count) in registry.exited.iter_mut().zip(self.0.iter()) {
            *left += count.load(Ordering::Relaxed);
        }
    }
}

thread_local! {
    static LOCAL: Local = Local::register();
}

/// The registry, also after a thread panicked holding it (its counts are
/// plain numbers, never left half-written in a way that matters).
fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Adds `delta` to kind `K`'s count of this thread.
fn count<const K: usize>(delta: isize) {
    let counted = LOCAL.try_with(|local| {
        // Only this thread writes its counters; others only read them.
        let counter = &local.0[K];
        counter.store(counter.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    });
    if counted.is_err() {
        LATE[K].fetch_add(delta, Ordering::Relaxed);
    }
}

/// A token that counts one live object of kind `K` while it exists; cloning
/// it counts one more.
pub(crate) struct Live<const K: usize>(());

impl<const K: usize> Live<K> {
    /// Counts one more live object of kind `K`.
    pub(crate) fn new() -> Live<K> {
        count::<K>(1);
        Live(())
    }
}

impl<const K: usize> Clone for Live<K> {
    fn clone(&self) -> Live<K> {
        Live::new()
    }
}

impl<const K: usize> Drop for Live<K> {
    fn drop(&mut self) {
        count::<K>(-1);
    }
}

/// How many front-end objects of each kind are live in this process now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LiveObjects {
    /// Contexts.
    pub contexts: usize,
    /// Queues.
    pub queues: usize,
    /// Event handles (every clone of an [`Event`](crate::Event) counts).
    pub events: usize,
    /// USM allocations.
    pub usm_allocations: usize,
    /// Command buffers.
    pub command_buffers: usize,
    /// Programs.
    pub programs: usize,
    /// Kernels.
    pub kernels: usize,
}

impl LiveObjects {
    /// All kinds together.
    pub fn total(&self) -> usize {
        self.contexts
            + self.queues
            + self.events
            + self.usm_allocations
            + self.command_buffers
            + self.programs
            + self.kernels
    }
}

/// The live front-end objects of this process, per kind: exact once the
/// threads that create or drop objects have done so (a joined thread's
/// counts, or those of threads the caller synchronised with). Counted while
/// other threads create and drop objects, a kind may be off by those they
/// are creating or dropping meanwhile, as each thread's counts are read in
/// turn.
pub fn live_objects() -> LiveObjects {
    let registry = registry();
    let n = |k: usize| registry.count(k).max(0) as usize;
    LiveObjects {
        contexts: n(CONTEXT),
        queues: n(QUEUE),
        events: n(EVENT),
        usm_allocations: n(USM),
        command_buffers: n(COMMAND_BUFFER),
        programs: n(PROGRAM),
        kernels: n(KERNEL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unused_count() -> isize {
        registry().count(UNUSED)
    }

    #[test]
    fn counts_follow_tokens_across_threads_and_their_exit() {
        let before = unused_count();
        let made = Live::<UNUSED>::new();
        let clone = made.clone();
        assert_eq!(unused_count(), before + 2);
        // Made on a thread that exits: its count outlives the thread.
        let kept = std::thread::spawn(Live::<UNUSED>::new).join().unwrap();
        assert_eq!(unused_count(), before + 3);
        // Dropped on a thread that exits: so does its drop.
        std::thread::spawn(move || drop(made)).join().unwrap();
        assert_eq!(unused_count(), before + 2);
        drop((clone, kept));
        assert_eq!(unused_count(), before);
    }
}
