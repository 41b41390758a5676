//! # ur-runtime
//!
//! The SYCL-level layer of ur-rs, built on ur-core's public API only, the
//! way DPC++'s libsycl sits on Unified Runtime.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod buffer;

pub use buffer::{
    AccessMode, AccessRange, Accessor, Buffer, BufferProperties, CommandGroup, HostAccessor, TransferStats,
};
