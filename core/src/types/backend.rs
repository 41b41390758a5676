//! The backends adapters drive.

use std::fmt;

/// The native API an adapter drives.
///
/// The set of adapter *implementations* is open (adapter crates depend on
/// cmdbuf-core), but the names users select them by are fixed, as in
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
