//! # cmdbuf-cpu
//!
//! The CPU adapter of cmdbuf-core, complete and native:
//! - kernels are Rust functions ([`cmdbuf_core::NativeKernel`]) registered by name
//!   in a program bundle, or C functions given as a kernel table
//!   (`include/ur_rs_cpu.h`, read by `ProgramBundle::from_binary`; a non-zero
//!   return fails the launch); a launch runs its work-groups in parallel on a
//!   persistent worker pool, each group with its own local memory;
//! - queues schedule commands as tasks that start when their wait lists and
//!   (in-order) predecessors complete;
//! - a finalized command buffer is a pre-built DAG executed with dependency
//!   counters: independent nodes run concurrently, and a node whose
//!   successor becomes ready runs it on the same worker without scheduling
//!   (the chain fast path);
//! - every update capability, command-buffer events and profiling;
//! - prefetch and advise are ordered no-ops (host memory needs no migration);
//! - a kernel that panics makes its event report `AdapterSpecific`; the
//!   process and later submissions carry on.
//!
//! The pool has `UR_CPU_THREADS` workers (default: the available parallelism;
//! at most [`max_threads`]).
#![deny(unsafe_op_in_unsafe_fn)]

mod command_buffer;
mod context;
mod device;
mod event;
mod exec;
mod host;
mod memory;
mod pool;
mod program;
mod queue;
mod sleep;
mod topology;
mod units;

use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{AdapterEntry, Device, DeviceSelector, Loader};

pub use device::{THREADS_ENV, max_threads, threads_from_env};

/// Opens the CPU adapter: one platform with one device.
#[derive(Copy, Clone, Debug, Default)]
pub struct CpuAdapterFactory;

impl AdapterFactory for CpuAdapterFactory {
    fn backend(&self) -> Backend {
        Backend::Cpu
    }

    fn check_env(&self) -> cmdbuf_core::Result<()> {
        threads_from_env().map(drop)
    }

    fn load(&self) -> Result<Vec<Arc<dyn PlatformImpl>>, String> {
        let platform = device::CpuPlatform::new()?;
        Ok(vec![Arc::new(platform)])
    }
}

/// The CPU device (`cpu:0`), loaded on its own: for examples and tests that
/// need a device without going through the `cmdbuf` crate's loader.
///
/// # Panics
/// When the worker pool cannot be started (the operating system refuses threads).
///
/// ```
/// let device = cmdbuf_cpu::default_device();
/// assert_eq!(device.id().to_string(), "cpu:0");
/// ```
pub fn default_device() -> Device {
    let loader = Loader::load(&[AdapterEntry::Compiled(&CpuAdapterFactory)], DeviceSelector::all());
    loader.devices().into_iter().next().expect("the CPU adapter always has a device")
}
