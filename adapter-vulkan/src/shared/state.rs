//! The definitions of the shared state's objects, whose behaviour is in the
//! modules above: a lane and the points on its timeline (`lane`), an
//! event's state (`event`, `wait`), what a lane's completion thread does
//! once a submission has finished (`lane`), and a queue's open eager batch
//! (`batch`).
//!
//! They are defined together because they hold each other: a lane's
//! in-flight submissions complete events, an event waits on a point of a
//! lane and names the batch its command is recorded in, and a batch holds
//! its lane, its commands' completions and the events it waits for. Their
//! `impl` blocks, which call each other's, are spread one way over the
//! modules above, as cmdbuf-core defines its objects in `adapter/objects.rs`
//! and gives them behaviour in `api/`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use ash::vk;
use cmdbuf_core::adapter::prelude::*;
use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;

use crate::cmd::{GpuOp, Pool, PooledCmd};
use crate::gpu::Gpu;
use crate::profiling::QuerySpan;
use crate::shared::host_work::{Checks, HostCopy, Keep};

/// A hardware queue; lanes on the same queue share it (and its lock, which
/// `vkQueueSubmit` needs).
pub(super) struct HwQueue {
    pub(super) queue: Mutex<vk::Queue>,
}

/// A point on a lane's timeline: the completion of one submission.
#[derive(Clone)]
pub(crate) struct Point {
    pub(crate) lane: Arc<Lane>,
    pub(crate) value: u64,
}

impl Point {
    /// Whether the completion thread has seen the point reached.
    pub(crate) fn reached(&self) -> bool {
        self.lane.reached.load(Ordering::Acquire) >= self.value
    }
}

/// One timeline of submissions, on one hardware queue.
pub(crate) struct Lane {
    pub(super) index: usize,
    pub(super) gpu: Arc<Gpu>,
    pub(super) hw: Arc<HwQueue>,
    pub(super) timeline: vk::Semaphore,
    /// The last value submitted; changes under the hardware queue's lock.
    pub(super) submitted: AtomicU64,
    /// The last value the completion thread saw reached.
    pub(super) reached: AtomicU64,
    pub(super) fifo: Mutex<Fifo>,
    pub(super) wake: Condvar,
    /// Held while finishing submissions, so that they finish in value order
    /// whichever thread finishes them.
    pub(super) finishing: Mutex<()>,
}

#[derive(Default)]
pub(super) struct Fifo {
    pub(super) items: VecDeque<InFlight>,
    pub(super) stop: bool,
}

pub(super) struct InFlight {
    pub(super) value: u64,
    pub(super) completion: Completion,
}

impl Lane {
    /// The `VkQueue` this lane submits to (shared with other lanes where the
    /// family has fewer queues than lanes).
    pub(crate) fn raw_queue(&self) -> vk::Queue {
        *self.hw.queue.lock()
    }

    /// The timeline semaphore.
    pub(crate) fn semaphore(&self) -> vk::Semaphore {
        self.timeline
    }

    /// Whether `other` submits to the same `VkQueue`.
    pub(crate) fn same_queue(&self, other: &Lane) -> bool {
        Arc::ptr_eq(&self.hw, &other.hw)
    }

    /// Which lane this is, for diagnostics.
    pub(crate) fn index(&self) -> usize {
        self.index
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        // SAFETY: the lane is dropped once nothing refers to its points any
        // more, and its completion thread has finished every submission.
        unsafe { self.gpu.device.destroy_semaphore(self.timeline, None) };
    }
}

/// Work to run when an event moves on.
pub(crate) type Waiter = Box<dyn FnOnce() + Send>;

pub(super) enum Phase {
    Queued,
    Submitted(Point),
    Device(Point),
    Done(Option<UrError>),
}

pub(super) struct State {
    pub(super) phase: Phase,
    pub(super) times: Option<ProfilingInfo>,
    /// Run once the event is resolved (`Device` or `Done`).
    pub(super) on_resolved: Vec<Waiter>,
    /// Run once the event is `Done`.
    pub(super) on_done: Vec<Waiter>,
    /// The open eager batch the event's command is recorded in, while it is
    /// not submitted.
    pub(super) batch: Option<Arc<Batch>>,
}

/// The state of one event.
pub(crate) struct EventCore {
    pub(super) state: Mutex<State>,
    pub(super) done: Condvar,
    /// Whether `state`'s phase is `Done`, set under the lock when it
    /// becomes so and never cleared: read without the lock by the queue's
    /// order at every enqueue, where taking the lock, last held by the
    /// completion thread, cost a cache line's round trip per command.
    pub(super) ended: AtomicBool,
    /// The event itself: an eager command's event is handed to the front
    /// end as this `Arc` (no wrapper to allocate), and a wait list that
    /// holds it gets its `Arc` back from here.
    pub(crate) me: Weak<EventCore>,
}

/// What the completion thread does once a submission has finished.
pub(crate) struct Completion {
    pub(crate) out: Arc<EventCore>,
    /// Copies out of staging into host memory.
    pub(crate) post: Vec<HostCopy>,
    pub(crate) queries: Option<QuerySpan>,
    pub(crate) cmd: Option<PooledCmd>,
    pub(crate) keep: Keep,
    /// Status words of the kernels it ran.
    pub(crate) checks: Checks,
    /// An event whose failure this submission reports too (the stage before,
    /// in a command-buffer submission of several stages).
    pub(crate) inherit: Option<Arc<EventCore>>,
}

/// The eager batches of one queue: the open one, which its commands join,
/// and those sealed and not yet submitted.
pub(crate) struct Batch {
    pub(super) gpu: Arc<Gpu>,
    pub(super) lane: Arc<Lane>,
    /// The batches' own command pool: used only under `submitting`'s lock.
    pub(super) pool: Arc<Pool>,
    pub(super) open: Mutex<Gathered>,
    /// Batches taken out of `open` (sealed, under its lock, so in the
    /// order of their commands), oldest first, to be recorded and submitted.
    pub(super) sealed: Mutex<VecDeque<Gathered>>,
    /// Held while sealed batches are recorded and submitted, so that they
    /// reach the lane in the order they were sealed.
    pub(super) submitting: Mutex<()>,
}

/// A batch's commands, not yet recorded: each command's device operations
/// and completion. They are recorded into one primary command buffer when
/// the batch is submitted, so that the thread enqueuing the commands does
/// not pay the driver's recording.
#[derive(Default)]
pub(super) struct Gathered {
    /// One completion per command, in order.
    pub(super) entries: Vec<Completion>,
    /// The device operations of the commands, in order.
    pub(super) ops: Vec<GpuOp>,
    /// Per command: where its operations end in `ops`, and whether a
    /// barrier goes before it.
    pub(super) steps: Vec<Step>,
    /// Submitted events outside the batch that its commands wait for.
    pub(super) waits: SmallVec<[Arc<EventCore>; 4]>,
    pub(super) opened: Option<Instant>,
    /// The commands at which the batch is full (0: the first batch's size).
    pub(super) limit: usize,
}

/// One command's place in a batch ([`Gathered::steps`]).
#[derive(Copy, Clone)]
pub(super) struct Step {
    /// The end of its operations in [`Gathered::ops`].
    pub(super) end: usize,
    /// A pipeline barrier before it: it follows commands of the batch, or
    /// work submitted earlier to the same `VkQueue`.
    pub(super) after: bool,
}
