//! # cmdbuf-cuda
//!
//! The CUDA adapter of cmdbuf-core, on the CUDA driver API through cudarc's
//! `sys` bindings, loaded at run time (building needs no CUDA; a machine
//! without a driver reports the adapter absent with the reason
//! "no CUDA driver", never a panic):
//! - every device the driver reports is a device of the one platform; all
//!   contexts of a device share its primary CUDA context;
//! - queues are non-blocking streams (several for out-of-order queues);
//!   events are CUDA events, with timing on profiling queues; user events
//!   live on the host: the device never waits for the host, so work that
//!   waits (perhaps through other work) for a user event not yet complete is
//!   held back on the host and issued when it completes (`hold.rs`), and
//!   driver calls that wait for the device (module loads, frees) can never
//!   wait for the host;
//! - USM is `cuMemAlloc` (device), pinned mapped host memory (host) and
//!   managed memory (shared); buffers are device (or pinned host) memory;
//! - programs are PTX, or CUDA C compiled at run time with NVRTC (loaded at
//!   run time too); the kernel ABI is documented in `program.rs` and
//!   `docs/cuda.md`;
//! - command buffers are CUDA graphs built node by node and instantiated at
//!   finalize, with every update capability applied to the executable graph
//!   in place, command-buffer events as event-record and event-wait nodes,
//!   and profiling.
#![deny(unsafe_op_in_unsafe_fn)]

mod command_buffer;
mod context;
mod conv;
mod device;
mod driver;
mod event;
mod exec;
mod graph;
mod hold;
pub mod lanes;
mod launcher;
mod lower;
mod memory;
mod nccl;
pub mod nccl_lib;
mod nvrtc;
mod params;
mod platform;
mod program;
mod queue;

use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;

pub use driver::NO_DRIVER;
pub use graph::GRAPH_DOT_ENV;
#[doc(hidden)]
pub use graph::write_graph_dot;
pub use launcher::LAUNCHER_ENV;
pub use nvrtc::NVRTC_ENV;

/// Opens the CUDA adapter: one platform with every device the driver reports.
#[derive(Copy, Clone, Debug, Default)]
pub struct CudaAdapterFactory;

impl AdapterFactory for CudaAdapterFactory {
    fn backend(&self) -> Backend {
        Backend::Cuda
    }

    fn load(&self) -> Result<Vec<Arc<dyn PlatformImpl>>, String> {
        let platform = platform::CudaPlatform::open()?;
        Ok(vec![Arc::new(platform)])
    }
}
