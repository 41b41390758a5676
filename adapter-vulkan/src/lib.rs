//! # cmdbuf-vulkan
//!
//! The Vulkan adapter of cmdbuf-core: Vulkan compute through `ash`, with the
//! Vulkan loader opened at run time (a machine without Vulkan reports the
//! adapter absent with the reason).
//!
//! - **Memory**: USM allocations and memory buffers are `VkBuffer`s with
//!   their own memory; a USM pointer is its buffer's device address
//!   (`bufferDeviceAddress`), which shaders dereference directly. Device,
//!   host and shared USM map onto device-local, host-cached and
//!   (where available) device-local host-visible memory types.
//! - **Kernels** are SPIR-V compute shaders following the adapter's kernel
//!   ABI ([below](crate#the-kernel-abi)): an argument block reached
//!   through a push-constant device address, local size and local-memory
//!   sizes as specialization constants.
//! - **Queues** record eager commands into an open primary command buffer
//!   (the queue's batch) and submit it on a lane (a hardware queue and a
//!   timeline semaphore) when something needs the work started or finished
//!   (`batch`); wait lists are timeline waits, held on the host only for
//!   events not yet submitted (user events).
//! - **Command buffers** are secondary command buffers recorded at finalize,
//!   with pipeline barriers between the levels of the DAG; an enqueue
//!   executes them from a primary command buffer. Arguments and sizes live
//!   in per-command argument blocks dispatched indirectly, so updating them
//!   needs no re-recording.
//! - **Events** carry timestamp-query profiling.
//!
//! Requirements: Vulkan 1.2 with `bufferDeviceAddress`, `timelineSemaphore`,
//! `storageBuffer8BitAccess` and `shaderInt64`; devices without them are
//! skipped with the reason.
//!
//! ## The kernel ABI
//!
//! A kernel is a SPIR-V module with one `GLCompute` entry point and no
//! descriptor sets. Its 8 bytes of push constants hold the device address of
//! its argument block (`GL_EXT_buffer_reference`):
//!
//! | bytes | field |
//! |---|---|
//! | 0..12 | `uvec3` work-group counts (the launch's `VkDispatchIndirectCommand`) |
//! | 12..16 | `uint` work dimension |
//! | 16..28 | `uvec3` global size |
//! | 32..44 | `uvec3` global offset |
//! | 48..56 | device address of the launch's status word (`uint`) |
//! | 64.. | the arguments, in signature order |
//!
//! Each argument starts at an offset aligned to 8 bytes (16 for values of
//! more than 8 bytes): a global pointer is its 8-byte device address, a
//! value its bytes. A local-memory argument `i` takes no bytes: its size in
//! bytes is specialization constant `100 + i`. The local size is
//! specialization constants 0, 1 and 2. The global id is
//! `gl_GlobalInvocationID` plus the global offset; the global size comes
//! from the block, not from `gl_NumWorkGroups` (large launches are split
//! into several dispatches). A kernel fails its launch by setting the status
//! word to a non-zero code; the launch's event then reports the error. The
//! conformance suite's kernel library (`conformance/src/kernels/vulkan/`) is
//! written to this ABI; `docs/vulkan.md` describes it in full.
#![deny(unsafe_op_in_unsafe_fn)]

mod clock;
mod cmd;
mod command_buffer;
mod context;
mod conv;
mod device;
mod event;
mod exit;
mod gpu;
mod info;
mod init;
mod lower;
mod memory;
mod platform;
mod profiling;
mod program;
mod queue;
mod shaders;
mod shared;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;

/// Opens the Vulkan loader and lists the devices that meet the adapter's
/// requirements, on one platform.
#[derive(Copy, Clone, Debug, Default)]
pub struct VulkanAdapterFactory;

impl AdapterFactory for VulkanAdapterFactory {
    fn backend(&self) -> Backend {
        Backend::Vulkan
    }

    fn load(&self) -> Result<Vec<Arc<dyn PlatformImpl>>, String> {
        // ash turns entry points the loader lacks into panicking stubs: a
        // broken driver must make the adapter absent, not abort the program.
        match catch_unwind(AssertUnwindSafe(platform::VulkanPlatform::new)) {
            Ok(Ok(platform)) => Ok(vec![Arc::new(platform)]),
            Ok(Err(reason)) => Err(reason),
            Err(payload) => Err(format!("the Vulkan driver failed: {}", cmdbuf_core::error::panic_message(&*payload))),
        }
    }
}

#[doc(hidden)]
pub use memory::arena_high_water;
#[doc(hidden)]
pub use platform::check_clock_paths;

/// The SPIR-V of the adapter's internal shaders, for tests that check it is
/// current: `(GLSL file name, SPIR-V bytes)`.
#[doc(hidden)]
pub fn internal_shaders() -> Vec<(&'static str, &'static [u8])> {
    vec![("fill.comp", shaders::FILL_SPV)]
}
