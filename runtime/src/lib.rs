//! # cmdbuf-runtime
//!
//! The SYCL-level layer of cmdbuf, built on cmdbuf-core's public API only, the
//! way DPC++'s libsycl sits on Unified Runtime: buffers and accessors
//! ([`buffer`]), a queue that can record ([`queue`]) and SYCL's
//! `command_graph` ([`graph`]).
#![deny(unsafe_op_in_unsafe_fn)]

pub mod aspect;
pub mod buffer;
pub mod graph;
pub mod pool;
pub mod queue;
mod queue_group;
mod recording;

pub use buffer::{
    AccessMode, AccessRange, Accessor, Buffer, BufferProperties, CommandGroup, HostAccessor, TransferStats,
};
pub use pool::{MemoryPool, MemoryPoolProperties};
pub use queue::{Event, Queue, QueueState, SubmitGraph};
pub use queue_group::QueueGroup;
