//! Deferred `clFlush` of the application's queues after eager commands.
//!
//! OpenCL may hold a queue's commands back until the queue is flushed, and
//! a command that waits on another queue's event may wait forever where
//! that queue was not. Flushing after every eager command prevented both,
//! at a driver call per launch: 0.7 to 2 µs on NVIDIA's OpenCL (H200), 600
//! instructions on Intel's OpenCL CPU runtime, which starts a command
//! inside the enqueue anyway; UR's OpenCL adapter flushes on `urQueueFlush`
//! only. So an eager command (a kernel launch, a copy, a
//! marker or a barrier) marks its queue pending instead, and the queue is
//! flushed where something needs its work started:
//! - a status or profiling query or a host wait of one of its commands'
//!   events (`ClEvent::status`, `profiling` and `wait`; the front end's own
//!   bookkeeping asks `status_quiet`, which flushes nothing);
//! - a wait list of a command of another queue naming one of them (the
//!   command-buffer steps on the context's internal queue included): a
//!   queue orders its own commands by their wait lists unflushed;
//! - a native handle of the queue or of such an event handed to the
//!   application, which may do any of these with it.
//!
//! Where the queue of an event is not known, every pending queue is flushed
//! (a process-wide registry): PoCL's one-launch chain, where a launch waits
//! on another queue's launch of the same kernel, and a completion callback
//! registered with the driver (`gate`). `clFinish`, blocking commands and
//! releasing a queue flush by themselves (OpenCL's "Flush and Finish").
//! A command-buffer submission of one command replayed planned
//! (`planned.rs`) defers its flush the same way, through its event; other
//! submissions and timestamp recordings still flush at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cl3::types::cl_command_queue;
use parking_lot::Mutex;

/// One queue's deferred flush: whether commands were enqueued on it since
/// it was last flushed. Shared by the queue and, while pending, its registry.
pub(crate) struct DeferredFlush {
    queue: cl_command_queue,
    /// Whether the queue was made by the adapter without out-of-order
    /// execution: its own earlier commands then precede a new one by the
    /// queue's order, and their events need no place in its wait list.
    pub(crate) in_order: bool,
    pending: AtomicBool,
    registry: &'static Registry,
    /// Whether the host waited for the queue (its finish) or for one of its
    /// commands since the last planned command-buffer submission on it: a
    /// submission that follows no wait comes back to back with the one
    /// before, and may go to the replayer (`planned.rs`). Here because the
    /// queue's events hold this, and nothing else of the queue.
    waited: AtomicBool,
}

// SAFETY: an OpenCL queue handle may be flushed from any thread; the handle
// is only used while its queue lives (`forget` takes it out of the registry
// before the queue is released, under the lock the flush holds).
unsafe impl Send for DeferredFlush {}
// SAFETY: as for Send.
unsafe impl Sync for DeferredFlush {}

/// Queues with commands not yet flushed.
struct Registry {
    pending: Mutex<Vec<Arc<DeferredFlush>>>,
    /// `pending`'s length, read without the lock: what a status query costs
    /// where nothing is pending.
    count: AtomicUsize,
}

impl Registry {
    const fn new() -> Registry {
        Registry { pending: Mutex::new(Vec::new()), count: AtomicUsize::new(0) }
    }

    /// Takes every pending queue out and hands it to `flush`, under the lock
    /// that [`DeferredFlush::forget`] takes before its queue is released.
    fn drain(&self, mut flush: impl FnMut(cl_command_queue)) {
        let mut pending = self.pending.lock();
        for deferred in pending.drain(..) {
            // Cleared before the flush: a command enqueued after this store
            // marks the queue again, one enqueued before it is flushed here.
            deferred.pending.store(false, Ordering::SeqCst);
            flush(deferred.queue);
        }
        self.count.store(0, Ordering::SeqCst);
    }
}

/// The application's queues with eager commands not yet flushed.
static PENDING: Registry = Registry::new();

impl DeferredFlush {
    /// The deferred flush of `queue`, which must outlive every call but the
    /// last [`forget`](Self::forget); `in_order` as the field says.
    pub(crate) fn new(queue: cl_command_queue, in_order: bool) -> Arc<DeferredFlush> {
        DeferredFlush::in_registry(queue, in_order, &PENDING)
    }

    fn in_registry(queue: cl_command_queue, in_order: bool, registry: &'static Registry) -> Arc<DeferredFlush> {
        Arc::new(DeferredFlush {
            queue,
            in_order,
            pending: AtomicBool::new(false),
            registry,
            waited: AtomicBool::new(false),
        })
    }

    /// Notes that the host waits for the queue or one of its commands.
    pub(crate) fn host_waits(&self) {
        self.waited.store(true, Ordering::Relaxed);
    }

    /// Whether the host waited since the last call (see the field).
    pub(crate) fn take_host_waited(&self) -> bool {
        self.waited.swap(false, Ordering::Relaxed)
    }

    /// Notes commands just enqueued on the queue; the first since the last
    /// flush puts the queue among the pending ones.
    #[inline]
    pub(crate) fn enqueued(self: &Arc<Self>) {
        // Sequentially consistent with `Registry::drain`'s store: where this
        // load still sees `true`, the flush that clears it comes after the
        // command just enqueued and covers it.
        if !self.pending.load(Ordering::SeqCst) {
            self.mark();
        }
    }

    #[cold]
    fn mark(self: &Arc<Self>) {
        let mut pending = self.registry.pending.lock();
        if !self.pending.swap(true, Ordering::SeqCst) {
            pending.push(self.clone());
            self.registry.count.store(pending.len(), Ordering::SeqCst);
        }
    }

    /// Takes the queue out of the pending ones without flushing it: it is
    /// about to be flushed (`urQueueFlush`), so that a later status query
    /// need not flush it again, or released (`clReleaseCommandQueue`
    /// flushes it), after which its handle is never used here.
    pub(crate) fn forget(self: &Arc<Self>) {
        if self.pending.load(Ordering::SeqCst) {
            self.take_pending(&mut self.registry.pending.lock());
        }
    }

    /// Flushes the queue if eager commands were enqueued on it since it
    /// was last flushed: one of them is waited for, polled or handed out.
    #[inline]
    pub(crate) fn flush(self: &Arc<Self>) {
        if self.pending.load(Ordering::SeqCst) {
            self.flush_with(flush_queue);
        }
    }

    /// [`flush`](Self::flush) through `flush`, under the registry's lock:
    /// the queue is still pending there, so its `forget`, which comes
    /// before its release, has not run.
    #[cold]
    fn flush_with(self: &Arc<Self>, flush: impl FnOnce(cl_command_queue)) {
        let mut pending = self.registry.pending.lock();
        if self.take_pending(&mut pending) {
            flush(self.queue);
        }
    }

    /// Clears the pending mark and takes the queue out of `pending`, the
    /// registry's list, locked; whether it was pending.
    fn take_pending(self: &Arc<Self>, pending: &mut Vec<Arc<DeferredFlush>>) -> bool {
        if !self.pending.swap(false, Ordering::SeqCst) {
            return false;
        }
        if let Some(at) = pending.iter().position(|d| Arc::ptr_eq(d, self)) {
            pending.swap_remove(at);
        }
        self.registry.count.store(pending.len(), Ordering::SeqCst);
        true
    }

    /// Whether commands were enqueued since the last flush.
    #[cfg(test)]
    fn is_pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst)
    }
}

/// Flushes every queue with commands not yet flushed. A failed `clFlush` is
/// logged: the commands' own events report what went wrong with them.
#[inline]
pub(crate) fn flush_pending() {
    if PENDING.count.load(Ordering::SeqCst) != 0 {
        flush_all();
    }
}

#[cold]
fn flush_all() {
    PENDING.drain(flush_queue);
}

fn flush_queue(queue: cl_command_queue) {
    if let Err(code) = cl3::command_queue::flush(queue) {
        tracing::warn!(code, "clFlush of a queue with eager commands failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry of the test's own, whose handles are never passed to a
    /// driver: `drain` is given a closure that records them instead.
    static REGISTRY: Registry = Registry::new();

    fn fake_queue(n: usize) -> cl_command_queue {
        std::ptr::without_provenance_mut(n * 16)
    }

    fn drained() -> Vec<cl_command_queue> {
        let mut flushed = Vec::new();
        REGISTRY.drain(|queue| flushed.push(queue));
        flushed.sort();
        flushed
    }

    fn count() -> usize {
        REGISTRY.count.load(Ordering::SeqCst)
    }

    #[test]
    fn a_queue_is_flushed_once_after_its_commands_and_never_after_it_is_forgotten() {
        let a = DeferredFlush::in_registry(fake_queue(1), false, &REGISTRY);
        let b = DeferredFlush::in_registry(fake_queue(2), false, &REGISTRY);
        assert!(drained().is_empty());
        assert!(!a.is_pending());

        // Many commands, one flush; a queue without commands is not flushed.
        for _ in 0..3 {
            a.enqueued();
        }
        assert!(a.is_pending() && !b.is_pending());
        assert_eq!(count(), 1);
        assert_eq!(drained(), vec![fake_queue(1)]);
        assert!(!a.is_pending());
        assert_eq!(count(), 0);

        // A command after the flush marks the queue again.
        a.enqueued();
        b.enqueued();
        assert_eq!(count(), 2);
        assert_eq!(drained(), vec![fake_queue(1), fake_queue(2)]);

        // A forgotten queue (released, which flushes it) is not flushed later.
        a.enqueued();
        b.enqueued();
        a.forget();
        assert!(!a.is_pending());
        assert_eq!(count(), 1);
        assert_eq!(drained(), vec![fake_queue(2)]);
        b.forget();
        assert!(drained().is_empty());
    }

    #[test]
    fn one_queue_is_flushed_alone_and_only_while_pending() {
        static ONE: Registry = Registry::new();
        let a = DeferredFlush::in_registry(fake_queue(3), false, &ONE);
        let b = DeferredFlush::in_registry(fake_queue(4), false, &ONE);
        let flushed = |d: &Arc<DeferredFlush>| {
            let mut flushed = None;
            d.flush_with(|queue| flushed = Some(queue));
            flushed
        };
        assert_eq!(flushed(&a), None, "nothing enqueued");
        a.enqueued();
        b.enqueued();
        assert_eq!(flushed(&a), Some(fake_queue(3)));
        assert_eq!(flushed(&a), None, "flushed already");
        assert!(!a.is_pending() && b.is_pending());
        assert_eq!(ONE.count.load(Ordering::SeqCst), 1);
        let mut rest = Vec::new();
        ONE.drain(|queue| rest.push(queue));
        assert_eq!(rest, vec![fake_queue(4)], "the other queue stays pending until flushed");
        b.enqueued();
        b.forget();
        assert_eq!(flushed(&b), None, "a forgotten queue is never flushed");

        // Flushed by `urQueueFlush`: not again at the next status query.
        a.enqueued();
        a.forget();
        assert!(!a.is_pending());
        assert_eq!(ONE.count.load(Ordering::SeqCst), 0);
        assert_eq!(flushed(&a), None);
    }
}
