//! Profiling: a pair of timestamp queries around each submission of a
//! profiling queue.
//!
//! Timestamps are device ticks (`timestampPeriod` nanoseconds each, the
//! family's `timestampValidBits` valid). Vulkan has no queued or submitted
//! time on the device clock, so `queued` and `submit` report the start.

use std::sync::Arc;

use ash::vk;
use cmdbuf_core::{ProfilingInfo, Result};
use parking_lot::Mutex;

use crate::conv::VkResultExt;
use crate::gpu::Gpu;

/// Queries per pool (two per submission).
const PER_POOL: u32 = 256;

/// The timestamp query pools of one queue.
pub(crate) struct Queries {
    gpu: Arc<Gpu>,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    pools: Vec<vk::QueryPool>,
    /// Free pairs: pool and first query.
    free: Vec<(vk::QueryPool, u32)>,
}

impl Queries {
    pub(crate) fn new(gpu: Arc<Gpu>) -> Arc<Queries> {
        Arc::new(Queries { gpu, inner: Mutex::default() })
    }

    /// Two queries for one submission.
    pub(crate) fn span(self: &Arc<Self>) -> Result<QuerySpan> {
        let mut inner = self.inner.lock();
        if inner.free.is_empty() {
            crate::exit::check()?;
            let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(PER_POOL);
            // SAFETY: a valid device and create info.
            let pool = unsafe { self.gpu.device.create_query_pool(&info, None) }.vk("vkCreateQueryPool")?;
            inner.pools.push(pool);
            inner.free.extend((0..PER_POOL / 2).rev().map(|i| (pool, i * 2)));
        }
        let (pool, first) = inner.free.pop().expect("a pool was just added");
        Ok(QuerySpan { owner: self.clone(), pool, first, call: None })
    }
}

impl Drop for Queries {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        for pool in self.inner.get_mut().pools.drain(..) {
            // SAFETY: every span holds an `Arc` of this value, so none is in use.
            unsafe { self.gpu.device.destroy_query_pool(pool, None) };
        }
    }
}

/// The start and end timestamps of one submission.
pub(crate) struct QuerySpan {
    owner: Arc<Queries>,
    pool: vk::QueryPool,
    first: u32,
    /// For a timestamp recording: the device-clock time of the call.
    call: Option<u64>,
}

impl QuerySpan {
    /// The span of a timestamp recording called at device time `call`: it
    /// reads as [`ProfilingInfo::recording`], the recorded time being the end
    /// timestamp (written once the work before it has finished).
    pub(crate) fn recording(mut self, call: u64) -> QuerySpan {
        self.call = Some(call);
        self
    }

    /// Records the reset of the pair and the start timestamp.
    pub(crate) fn begin(&self, cb: vk::CommandBuffer) {
        self.begin_at(cb, vk::PipelineStageFlags::TOP_OF_PIPE);
    }

    /// Records the reset of the pair and a start timestamp that is written
    /// only once everything recorded before it in `cb` has completed: for a
    /// command that follows others in one command buffer (an eager batch),
    /// whose start must not read earlier than the end of the command before
    /// it, as it cannot when each command is a submission of its own.
    pub(crate) fn begin_after_previous(&self, cb: vk::CommandBuffer) {
        self.begin_at(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE);
    }

    fn begin_at(&self, cb: vk::CommandBuffer, stage: vk::PipelineStageFlags) {
        let device = &self.owner.gpu.device;
        // SAFETY: `cb` is recording, outside a render pass; the pair is this
        // span's alone.
        unsafe {
            device.cmd_reset_query_pool(cb, self.pool, self.first, 2);
            device.cmd_write_timestamp(cb, stage, self.pool, self.first);
        }
    }

    /// Records the end timestamp.
    pub(crate) fn end(&self, cb: vk::CommandBuffer) {
        // SAFETY: as for `begin`.
        unsafe {
            self.owner.gpu.device.cmd_write_timestamp(
                cb,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                self.pool,
                self.first + 1,
            )
        };
    }

    /// The times, once the submission has completed.
    pub(crate) fn read(&self) -> Option<ProfilingInfo> {
        let gpu = &self.owner.gpu;
        let mut ticks = [0u64; 2];
        // SAFETY: the pair was written by a completed submission.
        let read = unsafe {
            gpu.device.get_query_pool_results(self.pool, self.first, &mut ticks, vk::QueryResultFlags::TYPE_64)
        };
        if let Err(e) = read {
            tracing::warn!(error = %e, "timestamps unavailable");
            return None;
        }
        let ns = |t: u64| ((t & gpu.timestamp_mask) as f64 * gpu.timestamp_period) as u64;
        match self.call {
            Some(call) => Some(ProfilingInfo::recording(call, ns(ticks[1]).max(ns(ticks[0])))),
            None => Some(times_from(ns(ticks[0]), ns(ticks[1]))),
        }
    }
}

impl Drop for QuerySpan {
    fn drop(&mut self) {
        self.owner.inner.lock().free.push((self.pool, self.first));
    }
}

/// Times of a completed submission from its two timestamps.
pub(crate) fn times_from(start: u64, end: u64) -> ProfilingInfo {
    ProfilingInfo { queued: start, submit: start, start, end: end.max(start) }
}
