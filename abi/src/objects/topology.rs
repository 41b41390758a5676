//! The platform and device structs, defined together because each holds
//! the other (a platform its devices, a device its platform); their
//! behaviour is in `platform.rs` and `device.rs` above, so that the two
//! modules import each other one way only.

use std::sync::{Arc, Weak};

use crate::handle::Handle;

/// A platform and its selected devices.
pub struct Platform {
    pub(crate) platform: cmdbuf_core::Platform,
    pub(crate) devices: Vec<Arc<Handle<Device>>>,
}

/// A device of a platform, or a sub-device of one of its devices.
pub struct Device {
    pub(crate) device: cmdbuf_core::Device,
    pub(crate) platform: Weak<Handle<Platform>>,
    /// A sub-device's parent, kept alive for `UR_DEVICE_INFO_PARENT_DEVICE`.
    pub(crate) parent: Option<DeviceRef>,
}

/// Keeps a device handle alive for objects that refer to it.
pub(crate) type DeviceRef = Arc<Handle<Device>>;
