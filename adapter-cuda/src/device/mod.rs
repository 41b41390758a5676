//! A CUDA device's definition, below everything that uses it:
//! - [`info`]: what a device is and can do, read once when it opens;
//! - [`shared`]: the per-device state every context shares
//!   ([`DeviceShared`]), and opening it;
//! - [`peer`]: peer access between two devices;
//! - here: the host clock, the host as a target, the hidden kernel argument
//!   a device's parameter limit leaves room for, and [`CudaContext`], the
//!   state of a context (its device's).
//!
//! What makes objects of these (the platform's discovery, `DeviceImpl`,
//! `ContextImpl`) sits above, in `platform.rs` and `context.rs`, so that the
//! modules of the objects a context makes can name a device and a context
//! without an import circle.

mod info;
pub(crate) mod peer;
mod shared;

use std::sync::Arc;

use cudarc::driver::sys;

pub(crate) use self::shared::{DeviceShared, Release, Word};

/// `CU_DEVICE_CPU`: the host, as a prefetch or advice target.
pub(crate) const DEVICE_CPU: sys::CUdevice = -1;

/// Size of the hidden `ur_launch` parameter (the kernel ABI, `program.rs`).
pub(crate) const LAUNCH_INFO_SIZE: usize = 32;

/// The host clock ([`cmdbuf_core::host_clock_ns`]): the timeline of every
/// profiling timestamp of this adapter, device times included (they are
/// mapped onto it through the device's base event).
pub(crate) fn now_ns() -> u64 {
    cmdbuf_core::host_clock_ns()
}

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
