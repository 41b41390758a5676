//! Queue ordering kept on the host: what each new command of a queue waits
//! for so that an in-order queue runs one command after the other and an
//! out-of-order queue respects its barriers.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;

/// Outstanding events kept before a full sweep of completed ones: the
/// oldest are dropped as they complete, but on an out-of-order queue a long
/// command at the front would otherwise let the list grow without bound.
const SWEEP_AT: usize = 4096;

/// An adapter's event as [`QueueOrder`] tracks it.
pub trait OrderedEvent: Send + Sync {
    /// Whether the command has ended, complete or failed.
    fn is_done(&self) -> bool;
    /// Blocks until the command has ended. A command's own failure is
    /// reported by its event, not by the queue's `finish`, so the error
    /// is not asked for.
    fn wait_ended(&self);
}

/// The ordering state of one queue: its newest command (in order), its
/// newest barrier (out of order) and the commands not known to be complete.
pub struct QueueOrder<E> {
    in_order: bool,
    tail: Mutex<Tail<E>>,
}

struct Tail<E> {
    /// The newest command of an in-order queue.
    last: Option<Arc<E>>,
    /// The newest barrier of an out-of-order queue.
    barrier: Option<Arc<E>>,
    /// Commands not known to be complete, oldest first.
    outstanding: VecDeque<Arc<E>>,
}

impl<E: OrderedEvent> QueueOrder<E> {
    /// The state of an empty queue, in order or not.
    pub fn new(in_order: bool) -> QueueOrder<E> {
        QueueOrder { in_order, tail: Mutex::new(Tail { last: None, barrier: None, outstanding: VecDeque::new() }) }
    }

    /// Whether the queue runs its commands one after the other.
    pub fn in_order(&self) -> bool {
        self.in_order
    }

    /// Makes `event` the queue's newest command and returns what it must
    /// wait for besides its wait list: the previous command (in order), the
    /// last barrier (out of order), or every outstanding command when it is
    /// itself a barrier.
    pub fn order(&self, event: &Arc<E>, barrier: bool) -> SmallVec<[Arc<E>; 2]> {
        let mut deps = SmallVec::new();
        let mut tail = self.tail.lock();
        while tail.outstanding.front().is_some_and(|e| e.is_done()) {
            tail.outstanding.pop_front();
        }
        if tail.outstanding.len() >= SWEEP_AT {
            tail.outstanding.retain(|e| !e.is_done());
        }
        if barrier {
            deps.extend(tail.outstanding.iter().cloned());
        } else if self.in_order {
            deps.extend(tail.last.clone());
        } else {
            deps.extend(tail.barrier.clone());
        }
        if self.in_order {
            tail.last = Some(event.clone());
        } else if barrier {
            tail.barrier = Some(event.clone());
        }
        tail.outstanding.push_back(event.clone());
        deps
    }

    /// Waits until every command ordered so far has ended (`urQueueFinish`).
    pub fn finish(&self) {
        let outstanding: Vec<Arc<E>> = self.tail.lock().outstanding.iter().cloned().collect();
        for e in &outstanding {
            e.wait_ended();
        }
        self.tail.lock().outstanding.retain(|e| !e.is_done());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[derive(Default)]
    struct Flag(AtomicBool);

    impl OrderedEvent for Flag {
        fn is_done(&self) -> bool {
            self.0.load(Ordering::Relaxed)
        }
        fn wait_ended(&self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    fn ptrs(deps: &[Arc<Flag>]) -> Vec<*const Flag> {
        deps.iter().map(Arc::as_ptr).collect()
    }

    #[test]
    fn in_order_commands_wait_for_the_previous_one() {
        let order = QueueOrder::new(true);
        let (a, b, c) = (Arc::new(Flag::default()), Arc::new(Flag::default()), Arc::new(Flag::default()));
        assert!(order.order(&a, false).is_empty());
        assert_eq!(ptrs(&order.order(&b, false)), vec![Arc::as_ptr(&a)]);
        assert_eq!(ptrs(&order.order(&c, true)), vec![Arc::as_ptr(&a), Arc::as_ptr(&b)]);
    }

    #[test]
    fn out_of_order_commands_wait_only_for_the_last_barrier() {
        let order = QueueOrder::new(false);
        let [a, b, bar, c] = std::array::from_fn(|_| Arc::new(Flag::default()));
        assert!(order.order(&a, false).is_empty());
        assert!(order.order(&b, false).is_empty());
        a.wait_ended();
        // The completed command is dropped from the front; the barrier waits for the rest.
        assert_eq!(ptrs(&order.order(&bar, true)), vec![Arc::as_ptr(&b)]);
        assert_eq!(ptrs(&order.order(&c, false)), vec![Arc::as_ptr(&bar)]);
        order.finish();
        assert!([&b, &bar, &c].iter().all(|e| e.is_done()));
    }
}
