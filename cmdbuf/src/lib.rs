//! # cmdbuf
//!
//! The crate applications depend on: the application's API of [`cmdbuf_core`]
//! (not its adapter interface), plus the adapters this build compiles in,
//! registered with the loader. `use cmdbuf::prelude::*` brings what a common
//! program names.
//!
//! The CPU adapter is always compiled in. The OpenCL, Vulkan and CUDA
//! adapters are compiled in by the cargo features `opencl`, `vulkan` and
//! `cuda` (on by default); they open the OpenCL library, the Vulkan loader
//! and the CUDA driver at run time, so a machine without them reports the
//! adapter absent with the reason.
//!
//! ```
//! let loader = cmdbuf::load_all();
//! let cpu = loader.devices().into_iter().find(|d| d.backend() == cmdbuf::Backend::Cpu).unwrap();
//! assert!(cpu.info().command_buffer.support == cmdbuf::CommandBufferSupport::Native);
//! ```
#![deny(unsafe_op_in_unsafe_fn)]

// The application's API, item by item: the adapter interface
// (`cmdbuf_core::adapter`), the fault injector and the modules of adapter helpers
// stay in cmdbuf-core, for adapter crates and tests.
/// Collectives (all-reduce, all-gather, reduce-scatter, broadcast) over a
/// group of devices: NCCL on CUDA, staged through the host elsewhere.
pub use cmdbuf_core::collective;
/// Kernels of the CPU adapter as tables of C functions.
pub use cmdbuf_core::cpu_table;
/// Errors: [`UrError`], named after UR's result codes, and its helpers.
pub use cmdbuf_core::error;
/// Native handles and native commands: what each backend's native objects are.
pub use cmdbuf_core::interop;
pub use cmdbuf_core::{
    AbsentAdapter, AdapterEntry, AffinityDomain, AffinityDomains, AppendOptions, Appended, ArgKind, ArgValue,
    AtomicCaps, Backend, BinaryTarget, BufferMapping, CGroup, CKernelFn, CacheConfig, CacheType, CapturedGraph,
    Command, CommandBuffer, CommandBufferCaps, CommandBufferDesc, CommandBufferSupport, CommandHandle, CommandKind,
    ComposedCommandBuffer, ComposedPart, Context, ContextId, Detail, Device, DeviceId, DeviceInfo, DeviceSelector,
    DeviceType, Event, EventStatus, FpCapabilities, FpConfigs, GlobalMemCache, HostPtr, InstantiatedGraph, Kernel,
    KernelArg, KernelCommand, KernelLaunch, KernelLaunchUpdate, KernelSignature, LiveObjects, Loader, LocalMemType,
    LocalSizeOrigin, LocalSizeUpdate, MapFlags, MemBuffer, MemFlags, MemLoc, MemoryHardware, MemoryOrders,
    MemoryScopes, MigrationFlags, NativeArg, NativeCommand, NativeFn, NativeHandle, NativeKernel, NativeKernelFn,
    NativeScope, NativeTarget, NdRange, Ownership, Partition, PartitionKind, PartitionSupport, Pattern, PeerAccess,
    Platform, ProfilingInfo, Program, ProgramBundle, ProgramSource, Queue, QueueProperties, RectLayout, RectOffset,
    RectRegion, ReplayPath, Result, RustKernelFn, SourceForm, SpirvModule, SubGroups, SyncPoint, Timestamps,
    UpdateCapabilities, UrError, UserEvent, UsmAdvice, UsmAllocation, UsmKind, UsmKinds, UsmPtr, UsmRef, VectorWidths,
    WorkGroup, WorkItem, capability_extensions, host_clock_ns, live_objects,
};
#[doc(hidden)]
pub use cmdbuf_core::{ensure, err};

mod logging;
pub mod prelude;

pub use logging::{LOG_ENV, init_logging};

use cmdbuf_cpu::CpuAdapterFactory;

static CPU: CpuAdapterFactory = CpuAdapterFactory;
#[cfg(feature = "opencl")]
static OPENCL: cmdbuf_opencl::OpenClAdapterFactory = cmdbuf_opencl::OpenClAdapterFactory;
#[cfg(feature = "vulkan")]
static VULKAN: cmdbuf_vulkan::VulkanAdapterFactory = cmdbuf_vulkan::VulkanAdapterFactory;
#[cfg(feature = "cuda")]
static CUDA: cmdbuf_cuda::CudaAdapterFactory = cmdbuf_cuda::CudaAdapterFactory;

/// The adapters of this build, in the order the loader opens them.
pub fn adapters() -> Vec<AdapterEntry<'static>> {
    vec![
        AdapterEntry::Compiled(&CPU),
        #[cfg(feature = "opencl")]
        AdapterEntry::Compiled(&OPENCL),
        #[cfg(not(feature = "opencl"))]
        AdapterEntry::NotCompiled(Backend::OpenCl, "compiled without the `opencl` feature of the `cmdbuf` crate"),
        #[cfg(feature = "vulkan")]
        AdapterEntry::Compiled(&VULKAN),
        #[cfg(not(feature = "vulkan"))]
        AdapterEntry::NotCompiled(Backend::Vulkan, "compiled without the `vulkan` feature of the `cmdbuf` crate"),
        #[cfg(feature = "cuda")]
        AdapterEntry::Compiled(&CUDA),
        #[cfg(not(feature = "cuda"))]
        AdapterEntry::NotCompiled(Backend::Cuda, "compiled without the `cuda` feature of the `cmdbuf` crate"),
    ]
}

/// Loads every compiled-in adapter and selects devices with
/// `UR_DEVICE_SELECTOR` (else `ONEAPI_DEVICE_SELECTOR`); a malformed selector,
/// or an invalid adapter setting (`UR_CPU_THREADS=0`), is an `InvalidValue`
/// error naming the variable and its valid values.
///
/// ```
/// use cmdbuf::prelude::*;
///
/// fn main() -> Result<()> {
///     let loader = cmdbuf::load()?;
///     // Every selected device, by backend then index (`cpu:0`, `opencl:0`, ...).
///     for device in loader.devices() {
///         println!("{device}: {}", device.info().name);
///     }
///     let device = loader.first_device()?;
///     let context = Context::new(&device)?;
///     let _queue = Queue::new(&context, QueueProperties::default())?;
///     Ok(())
/// }
/// ```
pub fn load() -> Result<Loader> {
    Loader::from_env(&adapters())
}

/// Loads every compiled-in adapter and selects every device, whatever the
/// environment says (tools that list devices, tests).
///
/// ```
/// let loader = cmdbuf::load_all();
/// assert!(loader.devices().iter().any(|d| d.backend() == cmdbuf::Backend::Cpu), "the CPU adapter is always present");
/// ```
pub fn load_all() -> Loader {
    Loader::load(&adapters(), DeviceSelector::all())
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
