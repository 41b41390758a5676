//! Queues: each command becomes a task that starts when its wait list and,
//! on in-order queues, the previous command have completed.

use std::any::Any;
use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::QueueOrder;
use smallvec::SmallVec;

use crate::event::{Continuation, CpuEvent, EventJob, after_all};
use crate::exec;
use crate::pool::Pool;

pub(crate) struct CpuQueue {
    pool: Arc<Pool>,
    profiling: bool,
    order: QueueOrder<CpuEvent>,
}

/// Downcasts a wait list to this adapter's events.
pub(crate) fn cpu_events<'a>(wait: &[&'a dyn EventImpl]) -> Result<SmallVec<[&'a CpuEvent; 8]>> {
    wait.iter().map(|e| downcast::<CpuEvent>(*e as &dyn Any, "a wait-list event")).collect()
}

impl CpuQueue {
    pub(crate) fn new(pool: Arc<Pool>, properties: QueueProperties) -> CpuQueue {
        CpuQueue { pool, profiling: properties.profiling, order: QueueOrder::new(!properties.out_of_order) }
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
        // Declared first: `deps` borrows from it.
        let owned;
        let mut deps = cpu_events(wait)?;
        owned = self.order.order(event, barrier);
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
                // What the command keeps alive (its kernel, buffers) goes
                // before its event completes: a thread woken by the event
                // finds it released, not still held by this worker.
                drop(command);
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
        // SAFETY: both sides are host memory and every CPU context's events are `CpuEvent`s (this
        // method's doc), so the trait's `usm_copy_peer` contract gives `enqueue`'s: a validated
        // command whose host memory stays valid until it completes.
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
        self.order.finish();
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
