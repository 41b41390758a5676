//! Commands as adapters receive them: validated once by the front end, owning
//! the objects they touch.
//!
//! The same [`Command`] is executed eagerly by a queue and recorded into a
//! command buffer, so validation is written once for both paths and the
//! software command buffer simply replays the commands it recorded.
//!
//! Every invariant listed on a variant holds for every command an adapter is
//! given; adapter code relies on them instead of re-checking.

use std::fmt;

use smallvec::SmallVec;

use crate::context::Context;
use crate::error::{Result, UrError};
use crate::interop::NativeCommand;
use crate::launch::KernelCommand;
use crate::memory::{HostPtr, MemBuffer, MemLoc, MigrationFlags, UsmAdvice, UsmPtr, UsmRef};
use crate::rect::{RectLayout, RectRegion};
use crate::{ensure, err};

/// A fill pattern: 1 to [`MAX_PATTERN_SIZE`] bytes.
pub type Pattern = SmallVec<[u8; 16]>;

/// The largest fill pattern, in bytes. Any length from 1 up to this is
/// accepted, not only powers of two.
pub const MAX_PATTERN_SIZE: usize = 256;

/// A validated command.
///
/// Every [`MemBuffer`] in a command is a root buffer and every buffer offset
/// and rect origin is absolute in it: a command made for a sub-buffer names
/// its parent, with the sub-buffer's offset added.
///
/// Only ur-core's validating builders make commands: every variant's fields
/// are `#[non_exhaustive]` (and [`KernelCommand`] and [`NativeCommand`]
/// cannot be built elsewhere), so other crates read and match them, with
/// `..` in patterns, but cannot construct them:
///
/// ```compile_fail,E0639
/// # use ur_core::{Command, MemLoc};
/// fn forged(dst: MemLoc, src: MemLoc) -> Command {
///     Command::UsmMemcpy { dst, src, size: usize::MAX } // error: non-exhaustive variant
/// }
/// ```
///
/// ```compile_fail,E0639
/// # use ur_core::{ArgValue, Command, Kernel, KernelCommand, NdRange};
/// fn forged(kernel: Kernel, range: NdRange, args: Vec<ArgValue>) -> Command {
///     Command::KernelLaunch(KernelCommand { kernel, range, args }) // error: non-exhaustive struct
/// }
/// ```
///
/// ```
/// # use ur_core::Command;
/// fn bytes(command: &Command) -> Option<usize> {
///     match command {
///         Command::UsmMemcpy { size, .. } | Command::UsmFill { size, .. } => Some(*size),
///         _ => None,
///     }
/// }
/// ```
#[derive(Clone, Debug)]
pub enum Command {
    /// A kernel launch (see [`KernelCommand`] for its invariants).
    KernelLaunch(KernelCommand),
    /// Copy `size` (> 0) bytes. At least one side is USM; both ranges lie in
    /// their allocations (or in host memory the caller vouched for); the
    /// ranges do not overlap.
    #[non_exhaustive]
    UsmMemcpy {
        /// Destination.
        dst: MemLoc,
        /// Source.
        src: MemLoc,
        /// Bytes.
        size: usize,
    },
    /// Repeat `pattern` over `size` bytes; `size` is a non-zero multiple of
    /// the pattern's length, and the range lies in its allocation.
    #[non_exhaustive]
    UsmFill {
        /// Start of the range.
        dst: UsmRef,
        /// The pattern (1 to 256 bytes).
        pattern: Pattern,
        /// Bytes.
        size: usize,
    },
    /// A migration hint over `size` (> 0) bytes inside one allocation.
    #[non_exhaustive]
    UsmPrefetch {
        /// Start of the range.
        mem: UsmRef,
        /// Bytes.
        size: usize,
        /// Direction.
        flags: MigrationFlags,
    },
    /// Advice over `size` (> 0) bytes inside one allocation.
    #[non_exhaustive]
    UsmAdvise {
        /// Start of the range.
        mem: UsmRef,
        /// Bytes.
        size: usize,
        /// The advice.
        advice: UsmAdvice,
    },
    /// Copy between buffers; both ranges in bounds, not overlapping when the
    /// buffers are the same.
    #[non_exhaustive]
    BufferCopy {
        /// Source buffer.
        src: MemBuffer,
        /// Destination buffer.
        dst: MemBuffer,
        /// Offset into the source.
        src_offset: usize,
        /// Offset into the destination.
        dst_offset: usize,
        /// Bytes (> 0).
        size: usize,
    },
    /// Rect copy between buffers; layouts resolved (non-zero pitches) and in
    /// bounds.
    #[non_exhaustive]
    BufferCopyRect {
        /// Source buffer.
        src: MemBuffer,
        /// Destination buffer.
        dst: MemBuffer,
        /// Source layout.
        src_layout: RectLayout,
        /// Destination layout.
        dst_layout: RectLayout,
        /// Region (no zero dimension).
        region: RectRegion,
    },
    /// Read `size` (> 0) bytes of a buffer into host-side memory.
    #[non_exhaustive]
    BufferRead {
        /// The buffer.
        buffer: MemBuffer,
        /// Offset into it.
        offset: usize,
        /// Bytes.
        size: usize,
        /// Destination, large enough.
        dst: MemLoc,
    },
    /// Write `size` (> 0) bytes of host-side memory into a buffer.
    #[non_exhaustive]
    BufferWrite {
        /// The buffer.
        buffer: MemBuffer,
        /// Offset into it.
        offset: usize,
        /// Bytes.
        size: usize,
        /// Source, large enough.
        src: MemLoc,
    },
    /// Rect read; both layouts resolved and in bounds (the host layout
    /// relative to `dst`).
    #[non_exhaustive]
    BufferReadRect {
        /// The buffer.
        buffer: MemBuffer,
        /// Layout in the buffer.
        buffer_layout: RectLayout,
        /// Layout in host memory.
        host_layout: RectLayout,
        /// Region.
        region: RectRegion,
        /// Host memory the host layout starts from.
        dst: MemLoc,
    },
    /// Rect write; as [`Command::BufferReadRect`] in the other direction.
    #[non_exhaustive]
    BufferWriteRect {
        /// The buffer.
        buffer: MemBuffer,
        /// Layout in the buffer.
        buffer_layout: RectLayout,
        /// Layout in host memory.
        host_layout: RectLayout,
        /// Region.
        region: RectRegion,
        /// Host memory the host layout starts from.
        src: MemLoc,
    },
    /// Repeat `pattern` over `size` bytes of a buffer from `offset`; both
    /// multiples of the pattern's length, in bounds.
    #[non_exhaustive]
    BufferFill {
        /// The buffer.
        buffer: MemBuffer,
        /// The pattern (1 to 256 bytes).
        pattern: Pattern,
        /// Offset into the buffer.
        offset: usize,
        /// Bytes.
        size: usize,
    },
    /// A native command: a callback doing backend-native work (see
    /// [`crate::interop`]); its memory buffers are of the command's context.
    Native(NativeCommand),
}

/// The kind of a command, for diagnostics and queries.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum CommandKind {
    KernelLaunch,
    UsmMemcpy,
    UsmFill,
    UsmPrefetch,
    UsmAdvise,
    BufferCopy,
    BufferCopyRect,
    BufferRead,
    BufferWrite,
    BufferReadRect,
    BufferWriteRect,
    BufferFill,
    Native,
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl Command {
    /// This command's kind.
    pub fn kind(&self) -> CommandKind {
        match self {
            Command::KernelLaunch(_) => CommandKind::KernelLaunch,
            Command::UsmMemcpy { .. } => CommandKind::UsmMemcpy,
            Command::UsmFill { .. } => CommandKind::UsmFill,
            Command::UsmPrefetch { .. } => CommandKind::UsmPrefetch,
            Command::UsmAdvise { .. } => CommandKind::UsmAdvise,
            Command::BufferCopy { .. } => CommandKind::BufferCopy,
            Command::BufferCopyRect { .. } => CommandKind::BufferCopyRect,
            Command::BufferRead { .. } => CommandKind::BufferRead,
            Command::BufferWrite { .. } => CommandKind::BufferWrite,
            Command::BufferReadRect { .. } => CommandKind::BufferReadRect,
            Command::BufferWriteRect { .. } => CommandKind::BufferWriteRect,
            Command::BufferFill { .. } => CommandKind::BufferFill,
            Command::Native(_) => CommandKind::Native,
        }
    }

    /// The kernel launch, when this is one.
    pub fn as_kernel(&self) -> Option<&KernelCommand> {
        match self {
            Command::KernelLaunch(k) => Some(k),
            _ => None,
        }
    }
}

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
    ensure!(
        (1..=MAX_PATTERN_SIZE).contains(&n),
        InvalidSize,
        "fill pattern of {n} bytes; patterns have 1 to {MAX_PATTERN_SIZE} bytes"
    );
    ensure!(size != 0, InvalidSize, "fill of 0 bytes");
    ensure!(size.is_multiple_of(n), InvalidSize, "fill size {size} is not a multiple of the {n}-byte pattern");
    Ok(Pattern::from_slice(pattern))
}

fn ranges_overlap(a: usize, b: usize, size_a: usize, size_b: usize) -> bool {
    a < b + size_b && b < a + size_a
}

/// Builders of validated commands, shared by queues and command buffers.
/// The public ones take no raw host memory, so the commands they build are
/// safe to keep and append to command buffers of their context
/// ([`CommandBuffer::append_command`](crate::CommandBuffer::append_command)).
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
    pub(crate) fn check_appendable(&self, context: &Context) -> Result<()> {
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

    pub(crate) fn usm_memcpy(context: &Context, dst: HostSide, src: HostSide, size: usize) -> Result<Command> {
        ensure!(size != 0, InvalidSize, "USM memcpy of 0 bytes");
        let dst = dst.resolve(context, size, "USM memcpy destination")?;
        let src = src.resolve(context, size, "USM memcpy source")?;
        ensure!(
            matches!(dst, MemLoc::Usm(_)) || matches!(src, MemLoc::Usm(_)),
            InvalidValue,
            "USM memcpy between two host pointers: neither lies in a USM allocation of this context"
        );
        if let (MemLoc::Usm(d), MemLoc::Usm(s)) = (&dst, &src) {
            ensure!(
                !(d.same_allocation(s) && ranges_overlap(d.offset(), s.offset(), size, size)),
                OverlappingRegions,
                "USM memcpy source and destination overlap"
            );
        }
        Ok(Command::UsmMemcpy { dst, src, size })
    }

    /// A fill of `size` bytes of USM of `context` with a 1- to 256-byte pattern.
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

    /// A fill of `size` bytes of a buffer of `context` from `offset` with a 1- to 256-byte pattern.
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
