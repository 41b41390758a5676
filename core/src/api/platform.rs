//! Backends and platforms: what the loader found.

use std::fmt;
use std::sync::Arc;

use crate::adapter::PlatformImpl;
use crate::device::Device;
pub use crate::types::backend::Backend;

/// One platform of an adapter (an OpenCL platform, the CUDA driver, a Vulkan
/// instance, the CPU thread pool), with its devices.
#[derive(Clone)]
pub struct Platform {
    pub(crate) inner: Arc<PlatformInner>,
}

pub(crate) struct PlatformInner {
    pub(crate) backend: Backend,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) devices: Vec<Device>,
    pub(crate) _imp: Arc<dyn PlatformImpl>,
}

impl Platform {
    /// The backend this platform belongs to.
    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    /// The driver's name for the platform.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The driver's version string.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// The native object behind the platform (see [`crate::interop`] for each
    /// backend's); `UnsupportedFeature` where the backend has none.
    pub fn native_handle(&self) -> crate::Result<crate::NativeHandle> {
        self.inner._imp.native_handle()
    }

    /// The platform's devices, numbered per backend as selectors see them.
    pub fn devices(&self) -> &[Device] {
        &self.inner.devices
    }
}

impl fmt::Debug for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Platform")
            .field("backend", &self.inner.backend)
            .field("name", &self.inner.name)
            .field("devices", &self.inner.devices.len())
            .finish()
    }
}
