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
//! The counts are global (all contexts, all adapters) and cost one relaxed
//! atomic add per creation and per drop.
//!
//! These are not the fault injector's counts (`faults::LiveObjects`, feature
//! `fault-injection`): those count the *adapter* objects behind one wrapped
//! context, which may outlive their front-end handles, to check that a
//! failed scenario released everything; these count front-end handles in
//! every build, to show a long run does not accumulate them.
//! `docs/reliability.md` ("Two counters, and why both") compares them.
//!
//! [`Event`]: crate::Event

use std::sync::atomic::{AtomicUsize, Ordering};

/// The kinds counted, indexing [`COUNTS`].
pub(crate) const CONTEXT: usize = 0;
pub(crate) const QUEUE: usize = 1;
pub(crate) const EVENT: usize = 2;
pub(crate) const USM: usize = 3;
pub(crate) const COMMAND_BUFFER: usize = 4;
pub(crate) const PROGRAM: usize = 5;
pub(crate) const KERNEL: usize = 6;
const KINDS: usize = 7;

static COUNTS: [AtomicUsize; KINDS] = [const { AtomicUsize::new(0) }; KINDS];

/// A token that counts one live object of kind `K` while it exists; cloning
/// it counts one more.
pub(crate) struct Live<const K: usize>(());

impl<const K: usize> Live<K> {
    /// Counts one more live object of kind `K`.
    pub(crate) fn new() -> Live<K> {
        COUNTS[K].fetch_add(1, Ordering::Relaxed);
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
        COUNTS[K].fetch_sub(1, Ordering::Relaxed);
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

/// The live front-end objects of this process, per kind. Other threads may
/// create or drop objects while the counters are read, so the kinds are each
/// exact but not one snapshot.
pub fn live_objects() -> LiveObjects {
    let n = |k: usize| COUNTS[k].load(Ordering::Relaxed);
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
