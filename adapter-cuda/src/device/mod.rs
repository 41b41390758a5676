//! A CUDA device's definition, below everything that uses it:
//! - [`info`]: what a device is and can do, read once when it opens (with
//!   the hidden kernel argument a device's parameter limit leaves room for);
//! - [`shared`]: the per-device state every context shares
//!   ([`DeviceShared`]), opening it, and the host clock its timestamps are on;
//! - [`memory_kernels`]: the copy and fill kernels of command buffers;
//! - [`peer`]: peer access between two devices;
//! - here, above them: the host as a target, and [`CudaContext`], the state
//!   of a context (its device's).
//!
//! What makes objects of these (the platform's discovery, `DeviceImpl`,
//! `ContextImpl`) sits above, in `platform.rs` and `context.rs`, so that the
//! modules of the objects a context makes can name a device and a context
//! without an import circle.

mod info;
mod memory_kernels;
pub(crate) mod peer;
mod shared;

use std::sync::Arc;

use cudarc::driver::sys;

pub(crate) use self::info::{LAUNCH_INFO_SIZE, LAUNCH_STATUS_AT};
pub(crate) use self::memory_kernels::MemoryLaunch;
pub(crate) use self::shared::{DeviceShared, Release, StreamProgress, Word, now_ns};

/// `CU_DEVICE_CPU`: the host, as a prefetch or advice target.
pub(crate) const DEVICE_CPU: sys::CUdevice = -1;

/// A context: every context of a device is over the device's primary CUDA
/// context, so its state is the device's. Its behaviour (`ContextImpl`) is
/// in `context.rs`.
pub(crate) struct CudaContext {
    pub(crate) dev: Arc<DeviceShared>,
}

impl CudaContext {
    pub(crate) fn new(dev: Arc<DeviceShared>) -> CudaContext {
        CudaContext { dev }
    }

    /// The device.
    pub(crate) fn dev(&self) -> &Arc<DeviceShared> {
        &self.dev
    }
}
