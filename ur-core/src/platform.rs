//! Backends and platforms: what the loader found.

use std::fmt;
use std::sync::Arc;

use crate::adapter::PlatformImpl;
use crate::device::Device;

/// The native API an adapter drives.
///
/// The set of adapter *implementations* is open (adapter crates depend on
/// ur-core), but the names users select them by are fixed, as in
/// `ONEAPI_DEVICE_SELECTOR`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// Rust kernels on a host thread pool (`adapter-cpu`).
    Cpu,
    /// OpenCL, with `cl_khr_command_buffer` where the device has it (`adapter-opencl`).
    OpenCl,
    /// Vulkan compute with secondary command buffers (`adapter-vulkan`).
    Vulkan,
    /// The CUDA driver API with CUDA Graphs (`adapter-cuda`).
    Cuda,
}

impl Backend {
    /// Every backend, in the order the loader reports them.
    pub const ALL: [Backend; 4] = [Backend::Cpu, Backend::OpenCl, Backend::Vulkan, Backend::Cuda];

    /// The name used in selectors and trial names: `cpu`, `opencl`, `vulkan`, `cuda`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::OpenCl => "opencl",
            Backend::Vulkan => "vulkan",
            Backend::Cuda => "cuda",
        }
    }

    /// Parses a backend name, case-insensitively; `native_cpu` (the SYCL
    /// name of the host device) is accepted for [`Backend::Cpu`].
    pub fn from_name(name: &str) -> Option<Backend> {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "cpu" | "native_cpu" => Some(Backend::Cpu),
            "opencl" => Some(Backend::OpenCl),
            "vulkan" => Some(Backend::Vulkan),
            "cuda" => Some(Backend::Cuda),
            _ => None,
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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
