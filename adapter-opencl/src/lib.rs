//! # cmdbuf-opencl
//!
//! The OpenCL adapter of cmdbuf-core. It loads the OpenCL library at run time
//! (through `opencl3`/`cl3`, `libOpenCL.so.1` or `OPENCL_DYLIB_PATH`), so a
//! machine without OpenCL reports the adapter absent with the reason.
//!
//! - **Kernels** are OpenCL C ([`cmdbuf_core::SourceForm::OpenClC`]); arguments
//!   are set on the `cl_kernel` under a lock and captured by the enqueue or
//!   the recording. A kernel may opt into a status word (see `program.rs`)
//!   through which it reports that it cannot run, which OpenCL C cannot
//!   otherwise express.
//! - **USM** is `cl_intel_unified_shared_memory` where the device has it,
//!   SVM otherwise (fine-grained for host and shared USM, coarse-grained for
//!   device USM; a device with coarse-grained SVM only offers device USM).
//! - **Eager commands** are one OpenCL command each; what OpenCL lacks
//!   (buffer to USM transfers, rect copies to USM, fills with patterns that
//!   are not a power of two up to 128 bytes) runs as the adapter's own
//!   kernels.
//! - **Command buffers** are native where the device reports
//!   `cl_khr_command_buffer` in a version this adapter knows (0.9.0 to
//!   0.9.x, whose entry points are resolved per platform with
//!   `clGetExtensionFunctionAddressForPlatform` and called through the
//!   function-pointer types of that version): every command, all six update
//!   capabilities and per-command events, with wait and signal events and
//!   raw host memory as eager steps between native segments, and updates
//!   re-recording at the next enqueue. Where that is slower than enqueueing
//!   the commands (PoCL's CPU devices) or absent (NVIDIA's OpenCL), command
//!   buffers are pre-planned eager submissions instead (`planned.rs`); the
//!   rule is `replay_path`, reported as `CommandBufferCaps::replay_path`.
//!   A planned submission on an in-order queue may be handed to a thread of
//!   the device's (`replayer.rs`; by default on devices other than the
//!   host's CPU, for submissions that come back to back), so that its
//!   caller's time does not grow with the buffer's commands.
//!
//! `docs/opencl.md` in the repository has the mechanism of every command per
//! extension version.
#![deny(unsafe_op_in_unsafe_fn)]

mod adopt;
mod clock;
mod command_buffer;
mod context;
mod conv;
mod device;
mod event;
mod exec;
mod ffi;
mod flush;
mod gate;
mod helpers;
pub mod info;
mod kernel_args;
mod launch;
mod memory;
mod mutable;
mod native_segment;
mod one_launch;
mod partition;
mod planned;
mod platform;
mod program;
mod queue;
mod replayer;
mod spir;
mod steps;
pub mod version;

use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;

#[doc(hidden)]
pub use clock::check_clock_paths;
pub use conv::cl_error;
pub use device::{
    CommandBufferSetup, DeviceSetup, MUTABLE_DISPATCH_ENV, OUT_OF_ORDER_ENV, REPLAY_ENV, Reported, UsmSetup,
    replay_path, replay_thread_rule, setup,
};
pub use replayer::{REPLAY_THREAD_ENV, ReplayThread};
#[doc(hidden)]
pub use replayer::{keep_replays_on_callers, replays_handed};

/// `CL_PLATFORM_NOT_FOUND_KHR`: the ICD loader found no driver.
const CL_PLATFORM_NOT_FOUND_KHR: i32 = -1001;

/// Opens the OpenCL adapter: one platform per OpenCL platform with devices.
#[derive(Copy, Clone, Debug, Default)]
pub struct OpenClAdapterFactory;

impl AdapterFactory for OpenClAdapterFactory {
    fn backend(&self) -> Backend {
        Backend::OpenCl
    }

    fn check_env(&self) -> cmdbuf_core::Result<()> {
        device::check_env()
    }

    fn load(&self) -> Result<Vec<Arc<dyn PlatformImpl>>, String> {
        if let Err(e) = cl3::load_library() {
            return Err(format!("no OpenCL library could be loaded ({e})"));
        }
        let ids = match cl3::platform::get_platform_ids() {
            Ok(ids) => ids,
            Err(CL_PLATFORM_NOT_FOUND_KHR) => return Err("the OpenCL ICD loader found no platform".into()),
            Err(code) => return Err(format!("clGetPlatformIDs failed: {}", cl3::error_codes::error_text(code))),
        };
        let platforms: Vec<Arc<dyn PlatformImpl>> = ids
            .into_iter()
            .filter_map(platform::ClPlatform::open)
            .map(|p| Arc::new(p) as Arc<dyn PlatformImpl>)
            .collect();
        if platforms.is_empty() {
            return Err("no OpenCL platform has a usable device".into());
        }
        Ok(platforms)
    }
}
