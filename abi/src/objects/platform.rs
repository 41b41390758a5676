//! The platform handle.

use std::sync::{Arc, Weak};

use cmdbuf_core::Backend;

use crate::handle::Handle;
use crate::objects::device::Device;
pub(crate) use crate::objects::topology::Platform;

impl Platform {
    /// A root handle for `platform` with its selected `devices`.
    pub(crate) fn new(platform: cmdbuf_core::Platform, devices: Vec<cmdbuf_core::Device>) -> Arc<Handle<Platform>> {
        let handle = Arc::new_cyclic(|me: &Weak<Handle<Platform>>| {
            let devices = devices.into_iter().map(|d| Handle::fixed(Device::new(d, me.clone()))).collect();
            Handle::unpublished_fixed(Platform { platform, devices })
        });
        handle.publish();
        handle
    }

    /// The cmdbuf-core platform.
    pub(crate) fn core(&self) -> &cmdbuf_core::Platform {
        &self.platform
    }

    /// The devices of this platform the selector kept.
    pub(crate) fn devices(&self) -> &[Arc<Handle<Device>>] {
        &self.devices
    }

    /// The cmdbuf-core backend.
    pub(crate) fn backend(&self) -> Backend {
        self.platform.backend()
    }

    /// The name reported to UR: says which cmdbuf adapter and which driver
    /// platform, so that it is never taken for UR's own adapters.
    pub(crate) fn name(&self) -> String {
        format!("cmdbuf {} ({})", self.platform.backend(), self.platform.name())
    }

    /// The driver's version string.
    pub(crate) fn version(&self) -> &str {
        self.platform.version()
    }
}
