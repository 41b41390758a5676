//! The validating builders of [`Command`]s: the front end's half of
//! `command`, kept apart from the enum so that the adapter interface, which
//! hands commands to adapters, imports nothing of the front end.
use crate::command::{Command, Pattern};
use crate::context::Context;
use crate::launch::KernelCommand;
use crate::objects::{MemBuffer, MemLoc, UsmRef};
use crate::types::error::{Result, UrError};
use crate::types::memory::{HostPtr, MigrationFlags, UsmAdvice, UsmPtr};
use crate::types::rect::{RectLayout, RectRegion};
use crate::{ensure, err};

/// Host-side memory as an entry point receives it, before validation.
#[derive(Copy, Clone, Debug)]
pub(crate) enum HostSide {
    /// A USM pointer of the context: checked against its allocation.
    Usm(UsmPtr),
    /// A borrowed slice of this length, alive for a blocking call.
    Slice(*mut u8, usize),
    /// A pointer from an `unsafe` entry point: into a USM allocation of the
    /// context when it is in one (checked against it), else raw host memory
    /// the caller vouched for. UR's entry points take both as `void *`.
    Raw(*mut u8),
}

impl HostSide {
    fn resolve(self, context: &Context, needed: usize, what: &str) -> Result<MemLoc> {
        match self {
            HostSide::Usm(p) => Ok(MemLoc::Usm(context.find_usm(p, needed)?)),
            HostSide::Slice(p, len) => {
                ensure!(needed <= len, InvalidSize, "{what} needs {needed} bytes of host memory, the slice has {len}");
                Ok(MemLoc::Host(HostPtr(p)))
            }
            HostSide::Raw(p) => {
                ensure!(!p.is_null(), InvalidNullPointer, "{what}: pointer is null");
                match context.find_usm(UsmPtr::from_addr(p as u64), needed) {
                    Ok(usm) => Ok(MemLoc::Usm(usm)),
                    // Inside no allocation: host memory. A range that starts in
                    // an allocation and leaves it stays an error.
                    Err(UrError::InvalidValue(_)) => Ok(MemLoc::Host(HostPtr(p))),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

fn check_pattern(pattern: &[u8], size: usize) -> Result<Pattern> {
    let n = pattern.len();
    ensure!(n != 0, InvalidSize, "fill pattern of 0 bytes");
    ensure!(size != 0, InvalidSize, "fill of 0 bytes");
    ensure!(size.is_multiple_of(n), InvalidSize, "fill size {size} is not a multiple of the {n}-byte pattern");
    Ok(Pattern::from_slice(pattern))
}

fn ranges_overlap(a: usize, b: usize, size_a: usize, size_b: usize) -> bool {
    a < b + size_b && b < a + size_a
}

/// A USM memcpy (`urEnqueueUSMMemcpy`) once its sides are resolved.
pub(crate) enum Memcpy {
    /// At least one side in a USM allocation of the context: a device command.
    Command(Command),
    /// Neither side in a USM allocation: host memory the caller vouched for
    /// on both sides, copied on the host (`size` bytes, not overlapping).
    HostToHost {
        /// Destination.
        dst: HostPtr,
        /// Source.
        src: HostPtr,
    },
}

impl Memcpy {
    /// Resolves each side: a side in a USM allocation is checked against
    /// it (`InvalidSize` for 0 bytes, out of bounds as
    /// [`Context::find_usm`] says); overlapping ranges are `OverlappingRegions`.
    pub(crate) fn new(context: &Context, dst: HostSide, src: HostSide, size: usize) -> Result<Memcpy> {
        ensure!(size != 0, InvalidSize, "USM memcpy of 0 bytes");
        let dst = dst.resolve(context, size, "USM memcpy destination")?;
        let src = src.resolve(context, size, "USM memcpy source")?;
        match (dst, src) {
            (MemLoc::Host(dst), MemLoc::Host(src)) => {
                ensure!(
                    !ranges_overlap(dst.as_ptr() as usize, src.as_ptr() as usize, size, size),
                    OverlappingRegions,
                    "USM memcpy source and destination overlap"
                );
                Ok(Memcpy::HostToHost { dst, src })
            }
            (dst, src) => {
                if let (MemLoc::Usm(d), MemLoc::Usm(s)) = (&dst, &src) {
                    ensure!(
                        !(d.same_allocation(s) && ranges_overlap(d.offset(), s.offset(), size, size)),
                        OverlappingRegions,
                        "USM memcpy source and destination overlap"
                    );
                }
                Ok(Memcpy::Command(Command::UsmMemcpy { dst, src, size }))
            }
        }
    }
}

/// Builders of validated commands, shared by queues and command buffers.
/// The safe ones take no raw host memory, so the commands they build are
/// safe to keep, enqueue on queues of their context
/// ([`Queue::enqueue`](crate::Queue::enqueue)) and append to its command
/// buffers ([`CommandBuffer::append_command`](crate::CommandBuffer::append_command)).
/// The `unsafe` `*_host` builders take raw host memory: their caller's
/// promise covers every run of the command they build, wherever it is
/// enqueued or appended.
impl Command {
    /// A copy of `size` bytes between USM allocations of `context`
    /// (`InvalidSize`, out of bounds or in no allocation, `OverlappingRegions`).
    pub fn usm_copy(context: &Context, dst: UsmPtr, src: UsmPtr, size: usize) -> Result<Command> {
        Command::usm_memcpy(context, HostSide::Usm(dst), HostSide::Usm(src), size)
    }

    /// A copy of `size` bytes between two USM positions, which may lie in
    /// allocations of different contexts (a copy between devices, as
    /// [`Queue::usm_copy_peer`](crate::Queue::usm_copy_peer) executes it):
    /// `InvalidSize` for 0 bytes or a range past either allocation's end,
    /// `OverlappingRegions` for overlapping ranges of one allocation.
    pub fn usm_copy_between(dst: &UsmRef, src: &UsmRef, size: usize) -> Result<Command> {
        ensure!(size != 0, InvalidSize, "USM copy of 0 bytes");
        for (side, r) in [("destination", dst), ("source", src)] {
            ensure!(
                size <= r.remaining(),
                InvalidSize,
                "USM copy {side} has {} bytes to its allocation's end, the copy {size}",
                r.remaining()
            );
        }
        ensure!(
            !(dst.same_allocation(src) && ranges_overlap(dst.offset(), src.offset(), size, size)),
            OverlappingRegions,
            "USM copy source and destination overlap"
        );
        Ok(Command::UsmMemcpy { dst: MemLoc::Usm(dst.clone()), src: MemLoc::Usm(src.clone()), size })
    }

    /// A read of `size` bytes of `buffer` from `offset` into USM of `context`.
    pub fn buffer_read_to_usm(
        context: &Context,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: UsmPtr,
    ) -> Result<Command> {
        Command::buffer_read(context, buffer, offset, size, HostSide::Usm(dst))
    }

    /// A write of `size` bytes of USM of `context` into `buffer` at `offset`.
    pub fn buffer_write_from_usm(
        context: &Context,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: UsmPtr,
    ) -> Result<Command> {
        Command::buffer_write(context, buffer, offset, size, HostSide::Usm(src))
    }

    /// `InvalidContext` unless every memory object the command holds is of
    /// `context`; `InvalidValue` for a kernel launch, whose fields anyone can
    /// set (kernel launches are validated from a [`KernelLaunch`](crate::KernelLaunch)).
    /// What a queue's [`enqueue`](crate::Queue::enqueue) and a command
    /// buffer's [`append_command`](crate::CommandBuffer::append_command)
    /// check, for layers that keep a command before handing it to either
    /// (the runtime's queue recording into a graph).
    pub fn check_context(&self, context: &Context) -> Result<()> {
        let usm = |r: &UsmRef| r.belongs_to(context);
        let loc = |l: &MemLoc| !matches!(l, MemLoc::Usm(r) if !r.belongs_to(context));
        let ok = match self {
            Command::KernelLaunch(_) => {
                return Err(crate::err!(
                    InvalidValue,
                    "a kernel launch is appended from a KernelLaunch (append_kernel_launch), which validates it"
                ));
            }
            Command::UsmMemcpy { dst, src, .. } => loc(dst) && loc(src),
            Command::UsmFill { dst, .. } => usm(dst),
            Command::UsmPrefetch { mem, .. } | Command::UsmAdvise { mem, .. } => usm(mem),
            Command::BufferCopy { src, dst, .. } | Command::BufferCopyRect { src, dst, .. } => {
                src.check_context(context).and(dst.check_context(context)).is_ok()
            }
            Command::BufferRead { buffer, dst: other, .. }
            | Command::BufferWrite { buffer, src: other, .. }
            | Command::BufferReadRect { buffer, dst: other, .. }
            | Command::BufferWriteRect { buffer, src: other, .. } => {
                buffer.check_context(context).is_ok() && loc(other)
            }
            Command::BufferFill { buffer, .. } => buffer.check_context(context).is_ok(),
            Command::Native(native) => {
                native.mems().iter().all(|m| m.check_context(context).is_ok())
                    && native.child().is_none_or(|c| c.context() == context)
            }
        };
        crate::ensure!(ok, InvalidContext, "a {} command of another context", self.kind());
        Ok(())
    }

    /// A USM memcpy as a device command: a copy between two host memories
    /// is `UnsupportedFeature` here. Queues run that one on the host
    /// ([`Memcpy::HostToHost`]); command buffers (and 2D copies) record
    /// device commands only, and no backend's native command buffer can hold
    /// a host copy.
    pub(crate) fn usm_memcpy(context: &Context, dst: HostSide, src: HostSide, size: usize) -> Result<Command> {
        match Memcpy::new(context, dst, src, size)? {
            Memcpy::Command(command) => Ok(command),
            Memcpy::HostToHost { .. } => Err(err!(
                UnsupportedFeature,
                "USM memcpy between two host pointers (neither in a USM allocation of this context) is a host \
                 copy: a queue runs it (urEnqueueUSMMemcpy), a command buffer or a 2D copy does not record it"
            )),
        }
    }

    /// A fill of `size` bytes of USM of `context` with a pattern of any length dividing the size.
    pub fn usm_fill(context: &Context, dst: UsmPtr, pattern: &[u8], size: usize) -> Result<Command> {
        let pattern = check_pattern(pattern, size)?;
        let dst = context.find_usm(dst, size)?;
        Ok(Command::UsmFill { dst, pattern, size })
    }

    /// A migration hint over `size` bytes of USM of `context`.
    pub fn usm_prefetch(context: &Context, mem: UsmPtr, size: usize, flags: MigrationFlags) -> Result<Command> {
        ensure!(size != 0, InvalidSize, "USM prefetch of 0 bytes");
        ensure!(flags.bits().count_ones() <= 1, InvalidEnumeration, "prefetch flags {flags:?} name both directions");
        let mem = context.find_usm(mem, size)?;
        Ok(Command::UsmPrefetch { mem, size, flags })
    }

    /// Advice over `size` bytes of USM of `context`.
    pub fn usm_advise(context: &Context, mem: UsmPtr, size: usize, advice: UsmAdvice) -> Result<Command> {
        ensure!(size != 0, InvalidSize, "USM advise of 0 bytes");
        let mem = context.find_usm(mem, size)?;
        Ok(Command::UsmAdvise { mem, size, advice })
    }

    /// A copy of `size` bytes between buffers of `context`.
    pub fn buffer_copy(
        context: &Context,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_offset: usize,
        dst_offset: usize,
        size: usize,
    ) -> Result<Command> {
        src.check_context(context)?;
        dst.check_context(context)?;
        src.check_range(src_offset, size)?;
        dst.check_range(dst_offset, size)?;
        let (src, src_offset) = src.resolve(src_offset);
        let (dst, dst_offset) = dst.resolve(dst_offset);
        ensure!(
            !(src.same_buffer(&dst) && ranges_overlap(src_offset, dst_offset, size, size)),
            OverlappingRegions,
            "buffer copy source and destination overlap"
        );
        Ok(Command::BufferCopy { src, dst, src_offset, dst_offset, size })
    }

    /// A rect copy between buffers of `context`.
    pub fn buffer_copy_rect(
        context: &Context,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_layout: RectLayout,
        dst_layout: RectLayout,
        region: RectRegion,
    ) -> Result<Command> {
        src.check_context(context)?;
        dst.check_context(context)?;
        let src_layout = src_layout.resolve(&region, "source")?;
        let dst_layout = dst_layout.resolve(&region, "destination")?;
        check_rect_in_buffer(src, &src_layout, &region, "source")?;
        check_rect_in_buffer(dst, &dst_layout, &region, "destination")?;
        let (src, src_layout) = resolve_rect(src, src_layout);
        let (dst, dst_layout) = resolve_rect(dst, dst_layout);
        if src.same_buffer(&dst) {
            let (s0, d0) = (src_layout.origin_offset(), dst_layout.origin_offset());
            let (s1, d1) = (src_layout.extent(&region), dst_layout.extent(&region));
            ensure!(
                !ranges_overlap(s0, d0, s1 - s0, d1 - d0),
                OverlappingRegions,
                "rect copy source and destination overlap"
            );
        }
        Ok(Command::BufferCopyRect { src, dst, src_layout, dst_layout, region })
    }

    /// A read of `size` bytes of `buffer` from `offset` into memory: a USM
    /// pointer of `context` (checked against its allocation) or, in no USM
    /// allocation of it, raw host memory (`urEnqueueMemBufferRead`'s `pDst`).
    ///
    /// # Safety
    /// Outside USM, `dst` must be valid for `size` bytes of writes, and
    /// neither read nor freed by the host, whenever the command runs: until
    /// the events of every enqueue of it have completed, and at every
    /// execution of the command buffers (and graphs) it is appended to.
    pub unsafe fn buffer_read_host(
        context: &Context,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: *mut u8,
    ) -> Result<Command> {
        Command::buffer_read(context, buffer, offset, size, HostSide::Raw(dst))
    }

    /// A write of `size` bytes of memory into `buffer` at `offset`: a USM
    /// pointer of `context` or raw host memory, as for
    /// [`buffer_read_host`](Self::buffer_read_host).
    ///
    /// # Safety
    /// Outside USM, `src` must be valid for `size` bytes of reads, and not
    /// written or freed by the host, whenever the command runs (as for
    /// [`buffer_read_host`](Self::buffer_read_host)).
    pub unsafe fn buffer_write_host(
        context: &Context,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: *const u8,
    ) -> Result<Command> {
        Command::buffer_write(context, buffer, offset, size, HostSide::Raw(src.cast_mut()))
    }

    /// A rect read of `buffer` into memory laid out by `host_layout` from
    /// `dst`: a USM pointer of `context` or raw host memory, as for
    /// [`buffer_read_host`](Self::buffer_read_host).
    ///
    /// # Safety
    /// Outside USM, `dst` must be valid for writes over the host layout's
    /// extent, and neither read nor freed by the host, whenever the command
    /// runs (as for [`buffer_read_host`](Self::buffer_read_host)).
    pub unsafe fn buffer_read_rect_host(
        context: &Context,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        dst: *mut u8,
    ) -> Result<Command> {
        Command::buffer_read_rect(context, buffer, buffer_layout, host_layout, region, HostSide::Raw(dst))
    }

    /// A rect write into `buffer` of memory laid out by `host_layout` from
    /// `src`: a USM pointer of `context` or raw host memory, as for
    /// [`buffer_read_host`](Self::buffer_read_host).
    ///
    /// # Safety
    /// Outside USM, `src` must be valid for reads over the host layout's
    /// extent, and not written or freed by the host, whenever the command
    /// runs (as for [`buffer_read_host`](Self::buffer_read_host)).
    pub unsafe fn buffer_write_rect_host(
        context: &Context,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        src: *const u8,
    ) -> Result<Command> {
        let src = HostSide::Raw(src.cast_mut());
        Command::buffer_write_rect(context, buffer, buffer_layout, host_layout, region, src)
    }

    pub(crate) fn buffer_read(
        context: &Context,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: HostSide,
    ) -> Result<Command> {
        buffer.check_context(context)?;
        buffer.check_range(offset, size)?;
        let dst = dst.resolve(context, size, "buffer read destination")?;
        let (buffer, offset) = buffer.resolve(offset);
        Ok(Command::BufferRead { buffer, offset, size, dst })
    }

    pub(crate) fn buffer_write(
        context: &Context,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: HostSide,
    ) -> Result<Command> {
        buffer.check_context(context)?;
        buffer.check_range(offset, size)?;
        let src = src.resolve(context, size, "buffer write source")?;
        let (buffer, offset) = buffer.resolve(offset);
        Ok(Command::BufferWrite { buffer, offset, size, src })
    }

    pub(crate) fn buffer_read_rect(
        context: &Context,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        dst: HostSide,
    ) -> Result<Command> {
        let (buffer_layout, host_layout) = check_host_rect(context, buffer, buffer_layout, host_layout, &region)?;
        let dst = dst.resolve(context, host_layout.extent(&region), "rect read destination")?;
        let (buffer, buffer_layout) = resolve_rect(buffer, buffer_layout);
        Ok(Command::BufferReadRect { buffer, buffer_layout, host_layout, region, dst })
    }

    pub(crate) fn buffer_write_rect(
        context: &Context,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        src: HostSide,
    ) -> Result<Command> {
        let (buffer_layout, host_layout) = check_host_rect(context, buffer, buffer_layout, host_layout, &region)?;
        let src = src.resolve(context, host_layout.extent(&region), "rect write source")?;
        let (buffer, buffer_layout) = resolve_rect(buffer, buffer_layout);
        Ok(Command::BufferWriteRect { buffer, buffer_layout, host_layout, region, src })
    }

    /// A fill of `size` bytes of a buffer of `context` from `offset` with a pattern of any length dividing the size.
    pub fn buffer_fill(
        context: &Context,
        buffer: &MemBuffer,
        pattern: &[u8],
        offset: usize,
        size: usize,
    ) -> Result<Command> {
        buffer.check_context(context)?;
        let pattern = check_pattern(pattern, size)?;
        ensure!(
            offset.is_multiple_of(pattern.len()),
            InvalidSize,
            "fill offset {offset} is not a multiple of the {}-byte pattern",
            pattern.len()
        );
        buffer.check_range(offset, size)?;
        let (buffer, offset) = buffer.resolve(offset);
        Ok(Command::BufferFill { buffer, pattern, offset, size })
    }
}

fn check_rect_in_buffer(buffer: &MemBuffer, layout: &RectLayout, region: &RectRegion, side: &str) -> Result<()> {
    let extent = layout.extent(region);
    ensure!(
        extent <= buffer.size(),
        InvalidSize,
        "{side} rect reaches byte {extent} of a {}-byte buffer",
        buffer.size()
    );
    Ok(())
}

/// The root buffer of `buffer` and `layout` moved to where the sub-buffer
/// starts in it. The sub-buffer's offset joins the origin's byte coordinate,
/// which the layout's offset arithmetic adds like any other.
fn resolve_rect(buffer: &MemBuffer, layout: RectLayout) -> (MemBuffer, RectLayout) {
    let (root, base) = buffer.resolve(layout.origin.x);
    let mut layout = layout;
    layout.origin.x = base;
    (root, layout)
}

fn check_host_rect(
    context: &Context,
    buffer: &MemBuffer,
    buffer_layout: RectLayout,
    host_layout: RectLayout,
    region: &RectRegion,
) -> Result<(RectLayout, RectLayout)> {
    buffer.check_context(context)?;
    let buffer_layout = buffer_layout.resolve(region, "buffer")?;
    let host_layout = host_layout.resolve(region, "host")?;
    check_rect_in_buffer(buffer, &buffer_layout, region, "buffer")?;
    Ok((buffer_layout, host_layout))
}

/// Fails unless the command is a kernel launch: for handles of update calls.
pub(crate) fn expect_kernel(command: &Command) -> Result<&KernelCommand> {
    command
        .as_kernel()
        .ok_or_else(|| err!(InvalidCommandHandle, "the command is a {}, not a kernel launch", command.kind()))
}
