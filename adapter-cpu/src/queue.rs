//! Queues: each command becomes a task that starts when its wait list and,
//! on in-order queues, the previous command have completed.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;
use ur_core::adapter::{EventImpl, QueueImpl, downcast};
use ur_core::{Command, QueueProperties, Result};

use crate::event::{Continuation, CpuEvent, EventJob, after_all};
use crate::exec;
use crate::pool::Pool;

/// Outstanding events kept before a full sweep of completed ones.
const SWEEP_AT: usize = 4096;

pub(crate) struct CpuQueue {
    pool: Arc<Pool>,
    in_order: bool,
    profiling: bool,
    tail: Mutex<Tail>,
}

#[derive(Default)]
struct Tail {
    /// The newest command of an in-order queue.
    last: Option<Arc<CpuEvent>>,
    /// The newest barrier of an out-of-order queue.
    barrier: Option<Arc<CpuEvent>>,
    /// Commands not known to be complete, oldest first.
    outstanding: VecDeque<Arc<CpuEvent>>,
}

/// Downcasts a wait list to this adapter's events.
pub(crate) fn cpu_events<'a>(wait: &[&'a dyn EventImpl]) -> Result<SmallVec<[&'a CpuEvent; 8]>> {
    wait.iter().map(|e| downcast::<CpuEvent>(*e as &dyn Any, "a wait-list event")).collect()
}

impl CpuQueue {
    pub(crate) fn new(pool: Arc<Pool>, properties: QueueProperties) -> CpuQueue {
        CpuQueue { pool, in_order: !properties.out_of_order, profiling: properties.profiling, tail: Mutex::default() }
    }

    pub(crate) fn profiling(&self) -> bool {
        self.profiling
    }

    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// Makes `event` the queue's newest command and runs `start` once `wait`
    /// and the queue's ordering allow; `start` must eventually finish `event`.
    pub(crate) fn schedule(
        &self,
        wait: &[&dyn EventImpl],
        event: &Arc<CpuEvent>,
        barrier: bool,
        start: Continuation,
    ) -> Result<()> {
        let mut owned: SmallVec<[Arc<CpuEvent>; 8]> = SmallVec::new();
        let mut deps = cpu_events(wait)?;
        {
            let mut tail = self.tail.lock();
            while tail.outstanding.front().is_some_and(|e| e.is_done()) {
                tail.outstanding.pop_front();
            }
            if tail.outstanding.len() >= SWEEP_AT {
                tail.outstanding.retain(|e| !e.is_done());
            }
            if barrier {
                owned.extend(tail.outstanding.iter().cloned());
            } else if self.in_order {
                owned.extend(tail.last.clone());
            } else {
                owned.extend(tail.barrier.clone());
            }
            if self.in_order {
                tail.last = Some(event.clone());
            } else if barrier {
                tail.barrier = Some(event.clone());
            }
            tail.outstanding.push_back(event.clone());
        }
        deps.extend(owned.iter().map(|e| &**e));
        after_all(&deps, start);
        Ok(())
    }
}

impl QueueImpl for CpuQueue {
    unsafe fn enqueue(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let event = CpuEvent::pending(self.profiling);
        let (pool, command, done) = (self.pool.clone(), command.clone(), event.clone());
        let claimable = exec::single_threaded(&command);
        let start: Continuation = Box::new(move || {
            let job: EventJob = Box::new(move |done| {
                done.start(1);
                // SAFETY: the command was validated by the front end (the
                // trait's contract), and it runs after its dependencies.
                let result = unsafe { exec::execute(&command) };
                done.finish(1, result);
            });
            if claimable { done.spawn_claimable(&pool, job) } else { pool.spawn(move || job(&done)) }
        });
        self.schedule(wait, &event, false, start)?;
        Ok(event)
    }

    /// Both sides are host memory and every CPU context's events are
    /// `CpuEvent`s, so a peer copy is an ordinary copy.
    unsafe fn usm_copy_peer(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        // SAFETY: forwarded from the trait's contract.
        unsafe { self.enqueue(command, wait) }
    }

    unsafe fn enqueue_wait(&self, wait: &[&dyn EventImpl], barrier: bool) -> Result<Arc<dyn EventImpl>> {
        let event = CpuEvent::pending(self.profiling);
        let done = event.clone();
        self.schedule(
            wait,
            &event,
            barrier,
            Box::new(move || {
                done.start(1);
                done.finish(1, Ok(()));
            }),
        )?;
        Ok(event)
    }

    unsafe fn enqueue_timestamp(&self, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        // Timed whatever the queue's profiling: the device clock is the host's.
        let event = CpuEvent::pending(true);
        let done = event.clone();
        self.schedule(wait, &event, false, Box::new(move || done.stamp(1)))?;
        Ok(event)
    }

    fn finish(&self) -> Result<()> {
        let outstanding: Vec<Arc<CpuEvent>> = self.tail.lock().outstanding.iter().cloned().collect();
        for e in &outstanding {
            // A command's own failure is reported by its event, not by finish.
            let _ = e.wait();
        }
        self.tail.lock().outstanding.retain(|e| !e.is_done());
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// The callback is the work: it runs on a worker once its dependencies allow.
    fn native_commands_at_enqueue(&self) -> bool {
        false
    }
}
