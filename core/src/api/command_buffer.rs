//! Command buffers: record once, replay many (the `urCommandBuffer*Exp` API).
//!
//! A command buffer is recorded with `append_*` calls, each of which returns
//! a [`SyncPoint`] that later appends of the same buffer can wait on, then
//! [`finalize`](CommandBuffer::finalize)d, then enqueued any number of times
//! with [`Queue::enqueue_command_buffer`](crate::Queue::enqueue_command_buffer). Updatable buffers hand out a
//! [`CommandHandle`] per command, through which kernel launches (arguments,
//! sizes, offset, kernel) and events can be changed between enqueues.
//!
//! Every rule is checked here, once, for every backend:
//!
//! | misuse | error |
//! |---|---|
//! | append after finalize, finalize twice | `InvalidOperation` |
//! | update before finalize, or of a buffer that is not updatable | `InvalidOperation` |
//! | enqueue or native handle before finalize | `InvalidOperation` |
//! | a sync point of another buffer, or one not yet issued | `InvalidSyncPointWaitList` |
//! | a command handle of another buffer, or of a non-kernel command for a kernel update | `InvalidCommandHandle` |
//! | an update or event feature the device lacks | `UnsupportedFeature` |
//! | sizes, patterns, bounds | `InvalidSize` |
//! | work dimensions, work-group sizes | `InvalidWorkDimension`, `InvalidWorkGroupSize` |
//!
//! This module only gathers the public types. The buffer is written by
//! phase: its types, lifecycle, finalize and submission in `recorded.rs`,
//! recording in `recorded/append.rs` (every `append_*` and the one shared
//! append tail), updates in `recorded/update.rs` (`merge_update`).
//! Compositions of command buffers of several contexts
//! ([`ComposedCommandBuffer`]) are `composed.rs`, above queues and
//! collectives, which command buffers know nothing of.
//!
//! ```
//! use cmdbuf::*;
//! # let device = cmdbuf_cpu::default_device();
//! let ctx = Context::new(&device)?;
//! let queue = Queue::new(&ctx, QueueProperties::default())?;
//! let buf = UsmAllocation::new(&ctx, UsmKind::Device, 64)?;
//! let cb = CommandBuffer::new(&ctx, &device, CommandBufferDesc::default())?;
//! let fill = cb.append_usm_fill(buf.ptr(), &[7], 64, AppendOptions::new())?;
//! cb.append_usm_fill(buf.ptr(), &[9], 32, AppendOptions::new().after(&[fill.sync_point]))?;
//! cb.finalize()?;
//! queue.enqueue_command_buffer(&cb, &[])?.wait()?;
//! let mut out = [0u8; 64];
//! queue.read_usm(buf.ptr(), &mut out, &[])?;
//! assert_eq!((out[0], out[63]), (9, 7));
//! # Ok::<(), cmdbuf::UrError>(())
//! ```

pub use crate::api::composed::{ComposedCommandBuffer, ComposedPart};
pub use crate::api::recorded::{
    AppendOptions, Appended, CommandBuffer, CommandHandle, KernelLaunchUpdate, LocalSizeUpdate, SyncPoint,
};
/// Native handles now live in [`crate::interop`]; re-exported here for
/// existing users.
pub use crate::interop::NativeHandle;
pub use crate::types::desc::CommandBufferDesc;
