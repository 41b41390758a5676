//! Queues: eager commands are recorded into the queue's open batch (one
//! primary command buffer, see `batch`) and submitted with it; a command
//! that cannot join is its own primary command buffer, submitted on the
//! queue's lane once its wait list and the queue's ordering allow.
//!
//! An in-order queue makes each command wait for the previous one; an
//! out-of-order queue only for the last barrier. Those waits, like every
//! wait list, are timeline-semaphore waits in `vkQueueSubmit` (or host-side
//! holds for events not yet submitted, such as user events).

use std::sync::{Arc, OnceLock};

use ash::vk;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::QueueOrder;
use smallvec::SmallVec;

use crate::cmd::{Pool, PooledCmd, host_barrier, record_ops};
use crate::event::cores_of;
use crate::lower::{Block, Sink, Staging, lower};
use crate::memory::Slice;
use crate::profiling::{Queries, QuerySpan};
use crate::program::ArgBlock;
use crate::shared::DeviceShared;
use crate::shared::batch::{Appended, Part};
use crate::shared::host_work::{Checks, Keep, Kept, Launches, StagingPtr, StatusCheck};
use crate::shared::state::{Batch, EventCore, Lane};
use crate::shared::submit::{Submission, schedule};

pub(crate) struct VkQueue {
    pub(crate) rt: Arc<DeviceShared>,
    pub(crate) lane: Arc<Lane>,
    pool: Arc<Pool>,
    queries: Option<Arc<Queries>>,
    /// Timestamp queries of timestamp recordings on a queue that does not
    /// profile, made on first use.
    stamps: OnceLock<Arc<Queries>>,
    ordering: QueueOrder<EventCore>,
    batch: Arc<Batch>,
}

impl Drop for VkQueue {
    fn drop(&mut self) {
        // Its commands' events may be waited for after the queue is gone.
        self.batch.flush();
    }
}

/// Argument blocks and staging of eager commands, from the runtime's arena.
pub(crate) struct ArenaSink<'a> {
    rt: &'a DeviceShared,
    pub(crate) keep: Keep,
    pub(crate) checks: Checks,
}

impl<'a> ArenaSink<'a> {
    pub(crate) fn new(rt: &'a DeviceShared) -> ArenaSink<'a> {
        ArenaSink { rt, keep: Keep::new(), checks: Checks::new() }
    }
}

impl ArenaSink<'_> {
    /// `slice` as an argument block, kept until the command completes.
    fn keep_block(&mut self, slice: Slice) -> Block {
        let block = Block { buffer: slice.buffer(), offset: slice.offset(), address: slice.address() };
        self.keep.push(Kept::Slice(slice));
        block
    }
}

impl Sink for ArenaSink<'_> {
    fn block(&mut self, bytes: &[u8]) -> Result<Block> {
        let slice = self.rt.arena.alloc(bytes.len() as u64)?;
        slice.write(bytes);
        Ok(self.keep_block(slice))
    }

    fn staging(&mut self, len: usize) -> Result<Staging> {
        let slice = self.rt.arena.alloc(len as u64)?;
        let staging = Staging { buffer: slice.buffer(), offset: slice.offset(), ptr: StagingPtr(slice.ptr()) };
        self.keep.push(Kept::Slice(slice));
        Ok(staging)
    }

    fn indirect(&self) -> bool {
        false
    }

    /// One arena slice for both: the block, then the status word.
    fn kernel_block(
        &mut self,
        kernel: &cmdbuf_core::Kernel,
        len: usize,
        contents: &mut dyn FnMut(u64) -> Result<ArgBlock>,
    ) -> Result<Block> {
        let at = len.next_multiple_of(4);
        let slice = self.rt.arena.alloc((at + 4) as u64)?;
        let bytes = contents(slice.address() + at as u64)?;
        debug_assert_eq!(bytes.len(), len, "a kernel's argument block of another length");
        slice.write(&bytes);
        slice.write_at(at, &0u32.to_le_bytes());
        // SAFETY: `at + 4` bytes were allocated, so the word lies inside the slice.
        let words = StagingPtr(unsafe { slice.ptr().add(at) });
        self.checks.push(StatusCheck { words, count: 1, what: Launches::One(kernel.clone()) });
        Ok(self.keep_block(slice))
    }
}

impl VkQueue {
    pub(crate) fn new(rt: Arc<DeviceShared>, properties: QueueProperties) -> Result<VkQueue> {
        let lane = rt.next_lane();
        VkQueue::on_lane(rt, lane, properties)
    }

    /// A queue submitting through `lane`.
    pub(crate) fn on_lane(rt: Arc<DeviceShared>, lane: Arc<Lane>, properties: QueueProperties) -> Result<VkQueue> {
        let pool = Pool::new(rt.gpu.clone())?;
        let queries = properties.profiling.then(|| Queries::new(rt.gpu.clone()));
        tracing::debug!(lane = lane.index(), ?properties, "Vulkan queue created");
        let ordering = QueueOrder::new(!properties.out_of_order);
        let batch = Batch::new(rt.gpu.clone(), lane.clone())?;
        Ok(VkQueue { rt, lane, pool, queries, stamps: OnceLock::new(), ordering, batch })
    }

    /// Makes `out` the queue's newest command and returns what it must wait
    /// for to keep the queue's order.
    pub(crate) fn order(&self, out: &Arc<EventCore>, barrier: bool) -> SmallVec<[Arc<EventCore>; 2]> {
        self.ordering.order(out, barrier)
    }

    /// Records a command into the queue's batch, or submits it alone after
    /// the batch when it cannot join (`part` is `None`, or it waits for
    /// something not yet submitted): `alone` builds that submission when
    /// there is no part, else the part is recorded into a primary of its own.
    fn batched(
        &self,
        deps: SmallVec<[Arc<EventCore>; 4]>,
        barrier: bool,
        part: Option<Part>,
        alone: impl FnOnce(Arc<EventCore>) -> Result<Submission>,
    ) -> Result<Arc<dyn EventImpl>> {
        match self.batch.append(&self.rt.batch_thread, deps, |out| self.order(out, barrier), part)? {
            Appended::Batched(out) => Ok(out),
            Appended::Alone(out, deps, part) => {
                let built = match part {
                    Some(part) => self.alone(out.clone(), *part),
                    None => alone(out.clone()),
                };
                let mut sub = match built {
                    Ok(sub) => sub,
                    Err(e) => {
                        // The queue's later commands wait for this one.
                        crate::shared::event::fail(&out, e.clone());
                        return Err(e);
                    }
                };
                sub.deps.extend(deps);
                schedule(sub);
                Ok(out)
            }
        }
    }

    /// A batch's part submitted on its own: one primary command buffer (or
    /// none, for a marker without timestamps), as every eager command was
    /// before batching.
    fn alone(&self, out: Arc<EventCore>, part: Part) -> Result<Submission> {
        let mut sub = Submission::new(self.lane.clone(), out);
        if !part.ops.is_empty() || part.span.is_some() {
            let gpu = &self.rt.gpu;
            sub.cmd = Some(self.record(part.span.as_ref(), |cb| {
                let mut bound = vk::Pipeline::null();
                record_ops(gpu, cb, &part.ops, &mut bound)
            })?);
        }
        sub.post = part.post;
        sub.queries = part.span;
        sub.keep = part.keep;
        sub.checks = part.checks;
        Ok(sub)
    }

    /// A timestamp pair for a submission of this queue, when it profiles.
    pub(crate) fn span(&self) -> Result<Option<QuerySpan>> {
        self.queries.as_ref().map(|q| q.span()).transpose()
    }

    /// Records a primary command buffer: timestamps (when profiling) around
    /// `body`, and the barrier that makes device writes visible to the host.
    pub(crate) fn record(
        &self,
        span: Option<&QuerySpan>,
        body: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<PooledCmd> {
        self.record_in(&self.pool, span, body)
    }

    /// [`record`](Self::record) with a command pool of the caller's.
    fn record_in(
        &self,
        pool: &Arc<Pool>,
        span: Option<&QuerySpan>,
        body: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<PooledCmd> {
        pool.record(|cb| {
            if let Some(s) = span {
                s.begin(cb);
            }
            body(cb)?;
            host_barrier(&self.rt.gpu, cb);
            if let Some(s) = span {
                s.end(cb);
            }
            Ok(())
        })
    }
}

impl QueueImpl for VkQueue {
    /// Only asked for two contexts of this queue's device (the one pair
    /// `peer_access` supports), whose allocations and events are of the
    /// same `VkDevice`: an ordinary copy.
    unsafe fn usm_copy_peer(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        // SAFETY: both contexts are of this queue's `VkDevice` (this method's doc), so the trait's
        // `usm_copy_peer` contract gives `enqueue`'s: a validated command of memory this device
        // reaches, host memory valid until it completes.
        unsafe { self.enqueue(command, wait) }
    }

    unsafe fn enqueue(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let deps: SmallVec<[Arc<EventCore>; 4]> = cores_of(wait)?.into_iter().collect();
        let mut sink = ArenaSink::new(&self.rt);
        let mut lowered = lower(&self.rt, command, &mut sink)?;
        let span = self.span()?;
        let gpu = &self.rt.gpu;
        // A native command's callback may call this queue's methods while it
        // records, and a write from host memory copies into staging on the
        // host once its dependencies are complete: both are submitted alone.
        if !matches!(command, Command::Native(_)) && lowered.pre.is_empty() {
            let mut keep = sink.keep;
            lowered.keep_into(&mut keep);
            let part =
                Part { ops: std::mem::take(&mut lowered.ops), span, post: lowered.post, keep, checks: sink.checks };
            return self.batched(deps, false, Some(part), |out| Ok(Submission::new(self.lane.clone(), out)));
        }
        // A native command's callback may call this queue's methods while it
        // records: it gets a command pool of its own, so that the queue's
        // pool is not locked meanwhile.
        let pool = match command {
            Command::Native(_) => Pool::new(gpu.clone())?,
            _ => self.pool.clone(),
        };
        // Recorded before the command is ordered: a failing callback must
        // not leave the queue waiting for a command that never runs.
        let cmd = self.record_in(&pool, span.as_ref(), |cb| {
            let mut bound = vk::Pipeline::null();
            record_ops(gpu, cb, &lowered.ops, &mut bound)
        })?;
        let mut keep = sink.keep;
        lowered.keep_into(&mut keep);
        self.batched(deps, false, None, |out| {
            let mut sub = Submission::new(self.lane.clone(), out).with_cmd(cmd);
            sub.pre = lowered.pre;
            sub.post = lowered.post;
            sub.queries = span;
            sub.keep = keep;
            sub.checks = sink.checks;
            Ok(sub)
        })
    }

    unsafe fn enqueue_wait(&self, wait: &[&dyn EventImpl], barrier: bool) -> Result<Arc<dyn EventImpl>> {
        let deps: SmallVec<[Arc<EventCore>; 4]> = cores_of(wait)?.into_iter().collect();
        let span = self.span()?;
        // In a batch, a marker is its timestamps (if any) between its
        // neighbours, which the batch runs in order; alone, a submission of
        // no command buffer when it has no timestamps to take.
        let part = Part { ops: SmallVec::new(), span, post: Vec::new(), keep: Keep::new(), checks: Checks::new() };
        self.batched(deps, barrier, Some(part), |out| Ok(Submission::new(self.lane.clone(), out)))
    }

    unsafe fn enqueue_timestamp(&self, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let deps: SmallVec<[Arc<EventCore>; 4]> = cores_of(wait)?.into_iter().collect();
        let queries = match &self.queries {
            Some(queries) => queries,
            None => self.stamps.get_or_init(|| Queries::new(self.rt.gpu.clone())),
        };
        // An empty command buffer between the pair of timestamp queries,
        // reported as the header has it: queued and submit at the device time
        // of this call, start and end at the recorded time.
        let span = queries.span()?.recording(crate::clock::device_now(&self.rt)?);
        let part =
            Part { ops: SmallVec::new(), span: Some(span), post: Vec::new(), keep: Keep::new(), checks: Checks::new() };
        self.batched(deps, false, Some(part), |out| Ok(Submission::new(self.lane.clone(), out)))
    }

    fn finish(&self) -> Result<()> {
        self.batch.flush();
        self.ordering.finish();
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        // Submits the batch; everything else goes to the device as soon as
        // its dependencies allow.
        self.batch.flush();
        Ok(())
    }

    /// The `VkQueue` of the queue's lane. The batch is submitted first:
    /// interop may submit to that queue, after the work enqueued so far.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        self.batch.flush();
        Ok(cmdbuf_core::NativeHandle(vk::Handle::as_raw(self.lane.raw_queue())))
    }
}
