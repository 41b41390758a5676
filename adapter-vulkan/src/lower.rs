//! Lowering: each [`Command`] becomes device operations, plus host-side
//! copies where it touches raw host memory, which the device cannot reach.
//!
//! | command | device operations |
//! |---|---|
//! | kernel launch | bind pipeline, push the argument block's address, dispatch (indirect in command buffers) |
//! | USM memcpy, buffer copy, read, write | `vkCmdCopyBuffer` between the buffers behind USM and memory buffers |
//! | rect copy, read, write | `vkCmdCopyBuffer` with one region per row (contiguous rows merged) |
//! | fill, 4-byte-compatible (pattern of 1, 2 or 4 bytes over a 4-aligned range) | `vkCmdFillBuffer` |
//! | any other fill | the fill shader |
//! | prefetch, advise | nothing: ordered no-ops (Vulkan has no migration) |
//!
//! Raw host memory (host slices, `*_host` entry points) is staged through
//! host-visible memory: a copy from host memory into staging before the
//! device part, or from staging into host memory after it.

use std::sync::Arc;

use ash::vk;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::rect::for_each_row;
use smallvec::SmallVec;

use crate::cmd::{GpuOp, Groups, fits_one_dispatch};
use crate::gpu::Gpu;
use crate::memory::{mem_buffer, usm_location};
use crate::program::{ArgBlock, Pipeline, VkKernel, group_counts};
use crate::shaders::{FillPlan, plan_fill};
use crate::shared::DeviceShared;
use crate::shared::host_work::{HostCopy, Keep, Kept, StagingPtr};

/// Where an argument block (kernel arguments, fill parameters) went.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Block {
    pub(crate) buffer: vk::Buffer,
    pub(crate) offset: u64,
    pub(crate) address: u64,
}

/// Host-visible staging memory.
#[derive(Copy, Clone)]
pub(crate) struct Staging {
    pub(crate) buffer: vk::Buffer,
    pub(crate) offset: u64,
    pub(crate) ptr: StagingPtr,
}

/// Where lowering puts argument blocks and staging.
pub(crate) trait Sink {
    /// Stores an argument block.
    fn block(&mut self, bytes: &[u8]) -> Result<Block>;
    /// Staging memory of `len` bytes.
    fn staging(&mut self, len: usize) -> Result<Staging>;
    /// Whether kernels dispatch indirectly from their block (so that an
    /// update of their sizes needs no re-recording).
    fn indirect(&self) -> bool;
    /// Stores the argument block of a launch of `kernel`, `len` bytes that
    /// `contents` makes given the address of the launch's status word.
    fn kernel_block(
        &mut self,
        kernel: &cmdbuf_core::Kernel,
        len: usize,
        contents: &mut dyn FnMut(u64) -> Result<ArgBlock>,
    ) -> Result<Block>;
}

/// A lowered command.
#[derive(Default)]
pub(crate) struct Lowered {
    /// Most commands lower to one operation and one pipeline at most: held
    /// inline, so that an eager command allocates no list for them.
    pub(crate) ops: SmallVec<[GpuOp; 1]>,
    pub(crate) pre: Vec<HostCopy>,
    pub(crate) post: Vec<HostCopy>,
    /// Pipelines the operations use.
    pub(crate) pipelines: SmallVec<[Arc<Pipeline>; 1]>,
}

impl Lowered {
    /// Moves what the operations need alive into `keep`.
    pub(crate) fn keep_into(&mut self, keep: &mut Keep) {
        for p in self.pipelines.drain(..) {
            keep.push(Kept::Pipeline(p));
        }
    }
}

/// Appends a copy region, merging it into the previous one when both sides continue it.
fn push_region(regions: &mut Vec<vk::BufferCopy>, src: u64, dst: u64, size: u64) {
    if let Some(last) = regions.last_mut()
        && last.src_offset + last.size == src
        && last.dst_offset + last.size == dst
    {
        last.size += size;
        return;
    }
    regions.push(vk::BufferCopy { src_offset: src, dst_offset: dst, size });
}

/// Appends a host-copy row, merging it with the previous one when contiguous.
fn push_row(rows: &mut SmallVec<[(usize, usize, usize); 1]>, host: usize, staging: usize, len: usize) {
    if let Some(last) = rows.last_mut()
        && last.0 + last.2 == host
        && last.1 + last.2 == staging
    {
        last.2 += len;
        return;
    }
    rows.push((host, staging, len));
}

/// One side of a copy: a buffer position, or host memory to stage.
enum Side {
    Device(vk::Buffer, u64),
    Host(cmdbuf_core::HostPtr),
}

fn side(loc: &MemLoc) -> Result<Side> {
    Ok(match loc {
        MemLoc::Usm(r) => {
            let (b, o) = usm_location(r)?;
            Side::Device(b, o)
        }
        MemLoc::Host(h) => Side::Host(*h),
    })
}

/// A copy of rows `(src offset, dst offset, len)` from `src` to `dst`, staging host sides.
fn copy_rows(
    out: &mut Lowered,
    sink: &mut dyn Sink,
    src: Side,
    dst: Side,
    rows: impl Iterator<Item = (usize, usize, usize)> + Clone,
) -> Result<()> {
    // Staging holds the rows packed, in order.
    let total: usize = rows.clone().map(|r| r.2).sum();
    let staging = match (&src, &dst) {
        (Side::Host(_), _) | (_, Side::Host(_)) => Some(sink.staging(total)?),
        _ => None,
    };
    let (src_buf, src_base) = match &src {
        Side::Device(b, o) => (*b, *o),
        Side::Host(_) => (staging.expect("staged").buffer, staging.expect("staged").offset),
    };
    let (dst_buf, dst_base) = match &dst {
        Side::Device(b, o) => (*b, *o),
        Side::Host(_) => (staging.expect("staged").buffer, staging.expect("staged").offset),
    };
    let mut regions = Vec::new();
    let mut host_rows = SmallVec::new();
    let mut packed = 0;
    for (s, d, n) in rows {
        let (s_dev, d_dev) = match (&src, &dst) {
            (Side::Host(_), _) => {
                push_row(&mut host_rows, s, packed, n);
                (packed, d)
            }
            (_, Side::Host(_)) => {
                push_row(&mut host_rows, d, packed, n);
                (s, packed)
            }
            _ => (s, d),
        };
        push_region(&mut regions, src_base + s_dev as u64, dst_base + d_dev as u64, n as u64);
        packed += n;
    }
    out.ops.push(GpuOp::Copy { src: src_buf, dst: dst_buf, regions });
    if let Some(st) = staging {
        match (src, dst) {
            (Side::Host(host), _) => out.pre.push(HostCopy { host, staging: st.ptr, rows: host_rows }),
            (_, Side::Host(host)) => out.post.push(HostCopy { host, staging: st.ptr, rows: host_rows }),
            _ => unreachable!("staging only for host sides"),
        }
    }
    Ok(())
}

/// A fill of `size` bytes at `offset` of `buffer` (device address `address`).
struct FillAt<'a> {
    buffer: vk::Buffer,
    offset: u64,
    address: u64,
    pattern: &'a [u8],
    size: u64,
}

fn fill(out: &mut Lowered, rt: &DeviceShared, sink: &mut dyn Sink, f: FillAt<'_>) -> Result<()> {
    let FillAt { buffer, offset, address, pattern, size } = f;
    match plan_fill(address, offset, pattern, size, rt.fill_group, rt.gpu.max_groups[0]) {
        FillPlan::Word(word) => out.ops.push(GpuOp::Fill { dst: buffer, offset, size, word }),
        FillPlan::Shader { params, groups } => {
            let block = sink.block(&params)?;
            out.ops.push(GpuOp::Dispatch {
                pipeline: rt.fill.raw(),
                params: block.address,
                groups: Groups::Direct([groups, 1, 1]),
            });
            out.pipelines.push(rt.fill.clone());
        }
    }
    Ok(())
}

/// Lowers a kernel launch.
pub(crate) fn lower_kernel(gpu: &Gpu, launch: &KernelCommand, sink: &mut dyn Sink) -> Result<Lowered> {
    let kernel = cmdbuf_core::adapter::downcast::<VkKernel>(launch.kernel.imp() as &dyn std::any::Any, "a kernel")?;
    let pipeline = kernel.pipeline(launch)?;
    let block = sink.kernel_block(&launch.kernel, kernel.block_len(), &mut |status| kernel.block(launch, status))?;
    let counts = group_counts(&launch.range)?;
    let mut out = Lowered::default();
    // An indirect dispatch reads its counts from the block header (offset 0);
    // it cannot be split, so counts beyond the limits dispatch directly.
    let groups = if sink.indirect() && fits_one_dispatch(gpu, counts) {
        Groups::Indirect(block.buffer, block.offset)
    } else {
        Groups::Direct(counts)
    };
    out.ops.push(GpuOp::Dispatch { pipeline: pipeline.raw(), params: block.address, groups });
    out.pipelines.push(pipeline);
    Ok(out)
}

/// Lowers `command`.
pub(crate) fn lower(rt: &DeviceShared, command: &Command, sink: &mut dyn Sink) -> Result<Lowered> {
    let mut out = Lowered::default();
    match command {
        Command::KernelLaunch(k) => return lower_kernel(&rt.gpu, k, sink),
        Command::Native(native) => out.ops.push(GpuOp::Native(native.clone())),
        Command::UsmMemcpy { dst, src, size, .. } => {
            copy_rows(&mut out, sink, side(src)?, side(dst)?, std::iter::once((0, 0, *size)))?;
        }
        Command::UsmFill { dst, pattern, size, .. } => {
            let (buffer, offset) = usm_location(dst)?;
            let at = FillAt { buffer, offset, address: dst.address(), pattern, size: *size as u64 };
            fill(&mut out, rt, sink, at)?;
        }
        Command::UsmPrefetch { .. } | Command::UsmAdvise { .. } => {}
        Command::BufferCopy { src, dst, src_offset, dst_offset, size, .. } => {
            let ((s, s0), (d, d0)) = (mem_buffer(src)?.at(), mem_buffer(dst)?.at());
            copy_rows(
                &mut out,
                sink,
                Side::Device(s, s0),
                Side::Device(d, d0),
                std::iter::once((*src_offset, *dst_offset, *size)),
            )?;
        }
        Command::BufferCopyRect { src, dst, src_layout, dst_layout, region, .. } => {
            let ((s, s0), (d, d0)) = (mem_buffer(src)?.at(), mem_buffer(dst)?.at());
            let rows = rect_rows(src_layout, dst_layout, region);
            copy_rows(&mut out, sink, Side::Device(s, s0), Side::Device(d, d0), rows.into_iter())?;
        }
        Command::BufferRead { buffer, offset, size, dst, .. } => {
            let (b, b0) = mem_buffer(buffer)?.at();
            copy_rows(&mut out, sink, Side::Device(b, b0), side(dst)?, std::iter::once((*offset, 0, *size)))?;
        }
        Command::BufferWrite { buffer, offset, size, src, .. } => {
            let (b, b0) = mem_buffer(buffer)?.at();
            copy_rows(&mut out, sink, side(src)?, Side::Device(b, b0), std::iter::once((0, *offset, *size)))?;
        }
        Command::BufferReadRect { buffer, buffer_layout, host_layout, region, dst, .. } => {
            let (b, b0) = mem_buffer(buffer)?.at();
            let rows = rect_rows(buffer_layout, host_layout, region);
            copy_rows(&mut out, sink, Side::Device(b, b0), side(dst)?, rows.into_iter())?;
        }
        Command::BufferWriteRect { buffer, buffer_layout, host_layout, region, src, .. } => {
            let (b, b0) = mem_buffer(buffer)?.at();
            let rows = rect_rows(host_layout, buffer_layout, region);
            copy_rows(&mut out, sink, side(src)?, Side::Device(b, b0), rows.into_iter())?;
        }
        Command::BufferFill { buffer, pattern, offset, size, .. } => {
            let target = mem_buffer(buffer)?;
            let (b, b0) = target.at();
            let address = target.address() + *offset as u64;
            let at = FillAt { buffer: b, offset: b0 + *offset as u64, address, pattern, size: *size as u64 };
            fill(&mut out, rt, sink, at)?;
        }
    }
    Ok(out)
}

/// The rows of a rect: `(src offset, dst offset, width)`.
fn rect_rows(
    src: &cmdbuf_core::RectLayout,
    dst: &cmdbuf_core::RectLayout,
    region: &cmdbuf_core::RectRegion,
) -> Vec<(usize, usize, usize)> {
    let mut rows = Vec::with_capacity(region.height * region.depth);
    for_each_row(src, dst, region, |s, d, n| rows.push((s, d, n)));
    rows
}

/// The bytes of argument block a command needs in a command buffer.
pub(crate) fn block_bytes(command: &Command) -> Result<usize> {
    Ok(match command {
        Command::KernelLaunch(k) => {
            let kernel = cmdbuf_core::adapter::downcast::<VkKernel>(k.kernel.imp() as &dyn std::any::Any, "a kernel")?;
            kernel.layout.size() as usize
        }
        Command::UsmFill { dst, pattern, size, .. } => {
            let (_, offset) = usm_location(dst)?;
            crate::shaders::fill_block_bytes(dst.address(), offset, pattern, *size as u64)
        }
        Command::BufferFill { buffer, pattern, offset, size, .. } => {
            let target = mem_buffer(buffer)?;
            let (_, b0) = target.at();
            crate::shaders::fill_block_bytes(
                target.address() + *offset as u64,
                b0 + *offset as u64,
                pattern,
                *size as u64,
            )
        }
        _ => 0,
    })
}

/// Whether a command touches raw host memory before (`pre`) or after (`post`)
/// its device part.
pub(crate) fn host_sides(command: &Command) -> (bool, bool) {
    let host = |l: &MemLoc| matches!(l, MemLoc::Host(_));
    match command {
        Command::UsmMemcpy { dst, src, .. } => (host(src), host(dst)),
        Command::BufferRead { dst, .. } | Command::BufferReadRect { dst, .. } => (false, host(dst)),
        Command::BufferWrite { src, .. } | Command::BufferWriteRect { src, .. } => (host(src), false),
        _ => (false, false),
    }
}
