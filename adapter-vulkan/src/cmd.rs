//! Command pools, barriers, and the recording of device operations.

use std::sync::Arc;

use ash::vk;
use cmdbuf_core::NativeCommand;
use cmdbuf_core::adapter::prelude::*;
use parking_lot::Mutex;

use crate::conv::VkResultExt;
use crate::gpu::Gpu;

/// A command pool. Recording holds its lock: Vulkan requires a pool to be
/// externally synchronised while any of its command buffers records.
pub(crate) struct Pool {
    gpu: Arc<Gpu>,
    inner: Mutex<PoolInner>,
}

struct PoolInner {
    raw: vk::CommandPool,
    free: [Vec<vk::CommandBuffer>; 2],
}

/// A recorded command buffer; dropping it returns it to its pool (it is then
/// no longer pending: whatever submitted it has completed).
pub(crate) struct PooledCmd {
    pool: Arc<Pool>,
    raw: vk::CommandBuffer,
    secondary: bool,
}

impl PooledCmd {
    /// The command buffer.
    pub(crate) fn raw(&self) -> vk::CommandBuffer {
        self.raw
    }
}

impl Drop for PooledCmd {
    fn drop(&mut self) {
        self.pool.inner.lock().free[usize::from(self.secondary)].push(self.raw);
    }
}

impl Pool {
    pub(crate) fn new(gpu: Arc<Gpu>) -> Result<Arc<Pool>> {
        crate::exit::check()?;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(gpu.family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: a valid device and create info.
        let raw = unsafe { gpu.device.create_command_pool(&info, None) }.vk("vkCreateCommandPool")?;
        Ok(Arc::new(Pool { gpu, inner: Mutex::new(PoolInner { raw, free: [Vec::new(), Vec::new()] }) }))
    }

    /// Records a primary command buffer for one submission.
    pub(crate) fn record(self: &Arc<Self>, f: impl FnOnce(vk::CommandBuffer) -> Result<()>) -> Result<PooledCmd> {
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        self.record_level(false, &begin, f)
    }

    /// Records a primary command buffer to be submitted again and again:
    /// with `flags` empty never while pending (the caller tracks that), with
    /// `SIMULTANEOUS_USE` also while pending in other submissions.
    pub(crate) fn record_reusable(
        self: &Arc<Self>,
        flags: vk::CommandBufferUsageFlags,
        f: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<PooledCmd> {
        self.record_level(false, &vk::CommandBufferBeginInfo::default().flags(flags), f)
    }

    /// Records a secondary command buffer that may be executed by several
    /// pending primaries at once (repeated submissions of a command buffer).
    pub(crate) fn record_secondary(
        self: &Arc<Self>,
        f: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<PooledCmd> {
        let inheritance = vk::CommandBufferInheritanceInfo::default();
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE)
            .inheritance_info(&inheritance);
        self.record_level(true, &begin, f)
    }

    fn record_level(
        self: &Arc<Self>,
        secondary: bool,
        begin: &vk::CommandBufferBeginInfo<'_>,
        f: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<PooledCmd> {
        crate::exit::check()?;
        let device = &self.gpu.device;
        let mut inner = self.inner.lock();
        let raw = match inner.free[usize::from(secondary)].pop() {
            Some(cb) => cb,
            None => {
                let level = if secondary { vk::CommandBufferLevel::SECONDARY } else { vk::CommandBufferLevel::PRIMARY };
                let info = vk::CommandBufferAllocateInfo::default()
                    .command_pool(inner.raw)
                    .level(level)
                    .command_buffer_count(1);
                // SAFETY: the pool is locked.
                unsafe { device.allocate_command_buffers(&info) }.vk("vkAllocateCommandBuffers")?[0]
            }
        };
        let cmd = PooledCmd { pool: self.clone(), raw, secondary };
        // SAFETY: the pool is locked for the whole recording; the buffer is not
        // pending (it was free), and beginning resets it (the pool allows that).
        let recorded = unsafe {
            device.begin_command_buffer(raw, begin).vk("vkBeginCommandBuffer").and_then(|()| {
                let r = f(raw);
                let end = device.end_command_buffer(raw).vk("vkEndCommandBuffer");
                r.and(end)
            })
        };
        drop(inner);
        recorded.map(|()| cmd)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        // SAFETY: every command buffer of the pool holds an `Arc` of it, so
        // none is pending or recording; destroying the pool frees them.
        unsafe { self.gpu.device.destroy_command_pool(self.inner.get_mut().raw, None) };
    }
}

/// The stages device work of the adapter runs in.
const WORK: vk::PipelineStageFlags = vk::PipelineStageFlags::from_raw(
    vk::PipelineStageFlags::COMPUTE_SHADER.as_raw() | vk::PipelineStageFlags::TRANSFER.as_raw(),
);

fn memory_barrier(
    gpu: &Gpu,
    cb: vk::CommandBuffer,
    src: vk::PipelineStageFlags,
    dst: vk::PipelineStageFlags,
    src_access: vk::AccessFlags,
    dst_access: vk::AccessFlags,
) {
    let barrier = [vk::MemoryBarrier::default().src_access_mask(src_access).dst_access_mask(dst_access)];
    // SAFETY: `cb` is recording, outside a render pass; the stages exist on a
    // compute queue.
    unsafe { gpu.device.cmd_pipeline_barrier(cb, src, dst, vk::DependencyFlags::empty(), &barrier, &[], &[]) };
}

/// Orders everything recorded before against everything after: between the
/// levels of a command buffer's dependency graph. With `indirect`, the
/// dispatches after it read their group counts from memory written before.
pub(crate) fn level_barrier(gpu: &Gpu, cb: vk::CommandBuffer, indirect: bool) {
    let read_write = vk::AccessFlags::SHADER_READ
        | vk::AccessFlags::SHADER_WRITE
        | vk::AccessFlags::TRANSFER_READ
        | vk::AccessFlags::TRANSFER_WRITE;
    let (dst, dst_access) = if indirect {
        (WORK | vk::PipelineStageFlags::DRAW_INDIRECT, read_write | vk::AccessFlags::INDIRECT_COMMAND_READ)
    } else {
        (WORK, read_write)
    };
    memory_barrier(gpu, cb, WORK, dst, vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE, dst_access);
}

/// Makes argument blocks just copied visible to shaders and indirect dispatches.
pub(crate) fn params_barrier(gpu: &Gpu, cb: vk::CommandBuffer) {
    memory_barrier(
        gpu,
        cb,
        vk::PipelineStageFlags::TRANSFER,
        WORK | vk::PipelineStageFlags::DRAW_INDIRECT,
        vk::AccessFlags::TRANSFER_WRITE,
        vk::AccessFlags::SHADER_READ | vk::AccessFlags::INDIRECT_COMMAND_READ | vk::AccessFlags::TRANSFER_READ,
    );
}

/// Makes device writes visible to the host once the submission's timeline
/// value is reached (host-visible USM, staging memory).
pub(crate) fn host_barrier(gpu: &Gpu, cb: vk::CommandBuffer) {
    memory_barrier(
        gpu,
        cb,
        WORK,
        vk::PipelineStageFlags::HOST,
        vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE,
        vk::AccessFlags::HOST_READ,
    );
}

/// Orders a transfer that reads results (kernel status words) after all
/// work recorded before it.
pub(crate) fn results_barrier(gpu: &Gpu, cb: vk::CommandBuffer) {
    memory_barrier(
        gpu,
        cb,
        WORK,
        vk::PipelineStageFlags::TRANSFER,
        vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE,
        vk::AccessFlags::TRANSFER_READ,
    );
}

/// [`host_barrier`] and, in the same barrier, lets transfers after it
/// overwrite what transfers before it read (clearing the status words just
/// copied out).
pub(crate) fn host_and_transfer_barrier(gpu: &Gpu, cb: vk::CommandBuffer) {
    memory_barrier(
        gpu,
        cb,
        WORK,
        vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::HOST,
        vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE,
        vk::AccessFlags::TRANSFER_WRITE | vk::AccessFlags::HOST_READ,
    );
}

/// How a dispatch gets its work-group counts.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Groups {
    /// Counts recorded in the command buffer (split into several dispatches
    /// where they exceed `maxComputeWorkGroupCount`).
    Direct([u32; 3]),
    /// Counts read at execution from a buffer (`vkCmdDispatchIndirect`), so
    /// that updates need no re-recording.
    Indirect(vk::Buffer, u64),
}

/// One device operation of a command.
pub(crate) enum GpuOp {
    /// A native command: its callback records into the command buffer.
    Native(NativeCommand),
    Copy {
        src: vk::Buffer,
        dst: vk::Buffer,
        regions: Vec<vk::BufferCopy>,
    },
    /// `vkCmdFillBuffer` with a 4-byte word.
    Fill {
        dst: vk::Buffer,
        offset: u64,
        size: u64,
        word: u32,
    },
    /// A compute dispatch whose push constant is `params`, the address of
    /// its argument block.
    Dispatch {
        pipeline: vk::Pipeline,
        params: u64,
        groups: Groups,
    },
}

/// Records `ops`; `bound` tracks the pipeline bound in `cb` to skip rebinding.
///
/// Native commands' callbacks run here, recording into `cb`; the first one
/// that fails (panics) ends the recording with its error.
pub(crate) fn record_ops(gpu: &Gpu, cb: vk::CommandBuffer, ops: &[GpuOp], bound: &mut vk::Pipeline) -> Result<()> {
    let d = &gpu.device;
    for op in ops {
        // SAFETY: `cb` is recording outside a render pass; the buffers,
        // pipelines and ranges come from validated commands and live at
        // least until the submissions executing `cb` complete. A native
        // command's target is `cb`, after the command's dependencies
        // (barriers between levels, semaphores between submissions) and
        // before its dependents.
        unsafe {
            match op {
                GpuOp::Copy { src, dst, regions } => d.cmd_copy_buffer(cb, *src, *dst, regions),
                GpuOp::Fill { dst, offset, size, word } => d.cmd_fill_buffer(cb, *dst, *offset, *size, *word),
                GpuOp::Native(native) => {
                    native.invoke(Backend::Vulkan, NativeTarget::Recording(NativeHandle(vk::Handle::as_raw(cb))))?;
                    // The callback may have bound a pipeline of its own.
                    *bound = vk::Pipeline::null();
                }
                GpuOp::Dispatch { pipeline, params, groups } => {
                    if *bound != *pipeline {
                        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, *pipeline);
                        *bound = *pipeline;
                    }
                    d.cmd_push_constants(cb, gpu.layout, vk::ShaderStageFlags::COMPUTE, 0, &params.to_le_bytes());
                    match groups {
                        Groups::Indirect(buffer, offset) => d.cmd_dispatch_indirect(cb, *buffer, *offset),
                        Groups::Direct(counts) => dispatch_split(gpu, cb, *counts),
                    }
                }
            }
        }
    }
    Ok(())
}

/// Dispatches `counts` groups, in several dispatches with base offsets where
/// a count exceeds the device's limit (the shader sees the same group ids).
fn dispatch_split(gpu: &Gpu, cb: vk::CommandBuffer, counts: [u32; 3]) {
    if counts.contains(&0) {
        return;
    }
    let max = gpu.max_groups;
    if (0..3).all(|i| counts[i] <= max[i]) {
        // SAFETY: recording, with a compute pipeline bound.
        unsafe { gpu.device.cmd_dispatch(cb, counts[0], counts[1], counts[2]) };
        return;
    }
    for z in (0..counts[2]).step_by(max[2] as usize) {
        for y in (0..counts[1]).step_by(max[1] as usize) {
            for x in (0..counts[0]).step_by(max[0] as usize) {
                let n = [(counts[0] - x).min(max[0]), (counts[1] - y).min(max[1]), (counts[2] - z).min(max[2])];
                // SAFETY: as above; every pipeline is created with DISPATCH_BASE.
                unsafe { gpu.device.cmd_dispatch_base(cb, x, y, z, n[0], n[1], n[2]) };
            }
        }
    }
}

/// Whether counts fit one dispatch, so an indirect dispatch can run them.
pub(crate) fn fits_one_dispatch(gpu: &Gpu, counts: [u32; 3]) -> bool {
    (0..3).all(|i| counts[i] <= gpu.max_groups[i])
}
