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

use crate::launch::KernelCommand;
use crate::operands::{MemBuffer, MemLoc, NativeCommand, UsmRef};
use crate::types::memory::{MigrationFlags, UsmAdvice};
use crate::types::rect::{RectLayout, RectRegion};

/// A fill pattern: one byte or more, of any length (not only powers of
/// two), dividing the fill's size.
pub type Pattern = SmallVec<[u8; 16]>;

/// A validated command.
///
/// Every [`MemBuffer`] in a command is a root buffer and every buffer offset
/// and rect origin is absolute in it: a command made for a sub-buffer names
/// its parent, with the sub-buffer's offset added.
///
/// Only cmdbuf-core's validating builders make commands: every variant's fields
/// are `#[non_exhaustive]` (and [`KernelCommand`] and [`NativeCommand`]
/// cannot be built elsewhere), so other crates read and match them, with
/// `..` in patterns, but cannot construct them:
///
/// ```compile_fail,E0639
/// # use cmdbuf::{Command, MemLoc};
/// fn forged(dst: MemLoc, src: MemLoc) -> Command {
///     Command::UsmMemcpy { dst, src, size: usize::MAX } // error: non-exhaustive variant
/// }
/// ```
///
/// ```compile_fail,E0639
/// # use cmdbuf::{ArgValue, Command, Kernel, KernelCommand, NdRange};
/// fn forged(kernel: Kernel, range: NdRange, args: Vec<ArgValue>) -> Command {
///     Command::KernelLaunch(KernelCommand { kernel, range, args }) // error: non-exhaustive struct
/// }
/// ```
///
/// ```
/// # use cmdbuf::Command;
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
        /// The pattern (one byte or more, dividing the size).
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
        /// The pattern (one byte or more, dividing the size).
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
