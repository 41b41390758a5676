//! The device handle, and the live handles of sub-devices, so that a
//! partition of the same device returns them again.

use std::sync::Weak;

use parking_lot::Mutex;

use crate::handle::Handle;
use crate::objects::topology::Platform;
pub(crate) use crate::objects::topology::{Device, DeviceRef};
use crate::sys::*;

impl Device {
    pub(crate) fn new(device: cmdbuf_core::Device, platform: Weak<Handle<Platform>>) -> Device {
        Device { device, platform, parent: None }
    }

    /// The handle of a sub-device's parent; `None` for a root device.
    pub(crate) fn parent(&self) -> Option<&DeviceRef> {
        self.parent.as_ref()
    }

    /// The cmdbuf-core device (the view the adapter was configured with).
    pub(crate) fn core(&self) -> &cmdbuf_core::Device {
        &self.device
    }

    pub(crate) fn platform_raw(&self) -> ur_platform_handle_t {
        // Platforms are root handles, alive for the process.
        self.platform.upgrade().map_or(std::ptr::null_mut(), |p| p.raw())
    }
}

/// The sub-devices `urDevicePartition` handed out, while any reference
/// keeps them, so that adopting a sub-device's native handle
/// (`urDeviceCreateWithNativeHandle`) gives its handle back.
pub(crate) static SUB_DEVICES: Mutex<Vec<Weak<Handle<Device>>>> = Mutex::new(Vec::new());

/// The handle of a sub-device the application holds whose native handle
/// is `native`, with one more application reference; `None` if none.
pub(crate) fn live_sub_device(native: cmdbuf_core::NativeHandle) -> Option<ur_device_handle_t> {
    let live = SUB_DEVICES.lock();
    let found = live
        .iter()
        .filter_map(Weak::upgrade)
        .find(|d| d.reference_count() > 0 && d.value.device.native_handle().ok() == Some(native))?;
    found.retain_ref();
    Some(found.raw())
}
