//! Devices and what they can do.

use std::fmt;
use std::sync::Arc;

use bitflags::bitflags;

use crate::adapter::DeviceImpl;
use crate::platform::Backend;
use crate::program::SourceForm;

bitflags! {
    /// Which parts of a kernel command can be updated in a finalized command
    /// buffer (`ur_device_command_buffer_update_capability_flags_t`).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct UpdateCapabilities: u32 {
        /// Kernel arguments.
        const KERNEL_ARGUMENTS = 1 << 0;
        /// Local work size, including a switch to an implementation-chosen one.
        const LOCAL_WORK_SIZE = 1 << 1;
        /// Global work size.
        const GLOBAL_WORK_SIZE = 1 << 2;
        /// Global work offset.
        const GLOBAL_WORK_OFFSET = 1 << 3;
        /// Switching to a registered alternative kernel.
        const KERNEL_HANDLE = 1 << 4;
        /// A command's signal event and wait events.
        const EVENTS = 1 << 5;
    }
}

bitflags! {
    /// The kinds of unified shared memory a device can allocate.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct UsmKinds: u32 {
        /// Host memory the device can access.
        const HOST = 1 << 0;
        /// Device memory.
        const DEVICE = 1 << 1;
        /// Memory that migrates between host and device.
        const SHARED = 1 << 2;
    }
}

/// The broad class of a device, used by selector filters `cpu` and `gpu`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// A host processor.
    Cpu,
    /// A graphics processor.
    Gpu,
    /// Anything else (FPGA, DSP, ...).
    Accelerator,
}

/// How a device's command buffers are implemented.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CommandBufferSupport {
    /// By the adapter with the driver's own mechanism (a CUDA graph, a
    /// `cl_khr_command_buffer`, Vulkan secondaries, a pre-built CPU DAG).
    Native,
    /// By ur-core's software command buffer, replayed over the adapter's eager
    /// queue operations.
    Emulated,
}

/// Command-buffer capabilities of a device (`UR_DEVICE_INFO_COMMAND_BUFFER_*_EXP`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommandBufferCaps {
    /// Native or emulated.
    pub support: CommandBufferSupport,
    /// What an update may change.
    pub update: UpdateCapabilities,
    /// Whether appends accept wait events and produce signal events.
    pub events: bool,
    /// Whether command buffers can be appended into other command buffers.
    pub subgraphs: bool,
}

impl CommandBufferCaps {
    /// What the software command buffer offers on any adapter: every update
    /// and event, since it replays from its own record at each enqueue.
    pub const EMULATED: CommandBufferCaps = CommandBufferCaps {
        support: CommandBufferSupport::Emulated,
        update: UpdateCapabilities::all(),
        events: true,
        subgraphs: false,
    };
}

/// Everything the front end and users need to know about a device. Adapters
/// fill it once, at discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The driver's name for the device.
    pub name: String,
    /// The vendor's name.
    pub vendor: String,
    /// The driver's version string.
    pub driver_version: String,
    /// CPU, GPU or other.
    pub device_type: DeviceType,
    /// Parallel compute units (cores, SMs, CUs).
    pub max_compute_units: u32,
    /// Largest work-group (product of the local sizes) any kernel may use.
    pub max_work_group_size: usize,
    /// Largest local size in each dimension.
    pub max_work_item_sizes: [usize; 3],
    /// Global memory in bytes.
    pub global_mem_size: u64,
    /// Local (work-group) memory in bytes.
    pub local_mem_size: u64,
    /// Largest single allocation in bytes.
    pub max_mem_alloc_size: u64,
    /// USM kinds the device can allocate.
    pub usm: UsmKinds,
    /// Whether host and shared allocations sit at the same address for the
    /// host and the device: [`UsmAllocation::ptr`](crate::UsmAllocation::ptr)
    /// is then also the host's pointer. ur-core's own API does not need it
    /// (it hands out [`UsmAllocation::host_ptr`](crate::UsmAllocation::host_ptr)
    /// apart); UR's USM does, so the UR ABI offers host and shared USM only
    /// where it holds.
    pub usm_host_addressable: bool,
    /// Whether queues can record profiling timestamps.
    pub queue_profiling: bool,
    /// Whether queues can run commands out of order.
    pub out_of_order_queues: bool,
    /// The program source forms the adapter builds, in order of preference.
    pub source_forms: Vec<SourceForm>,
    /// Command-buffer capabilities.
    pub command_buffer: CommandBufferCaps,
}

/// Identifies a device the way selectors do: backend and index among that
/// backend's devices, displayed as `cpu:0`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    /// The device's backend.
    pub backend: Backend,
    /// Its index among the devices of that backend, across platforms.
    pub index: usize,
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.backend, self.index)
    }
}

/// A device of a platform. Cheap to clone.
///
/// A device may be viewed as [`emulated`](Device::emulated): contexts made
/// from that view build every command buffer with ur-core's software command
/// buffer, whatever the adapter offers natively. The conformance suite runs
/// both views so that both paths are tested on every run.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

pub(crate) struct DeviceInner {
    pub(crate) imp: Arc<dyn DeviceImpl>,
    pub(crate) info: DeviceInfo,
    pub(crate) id: DeviceId,
    /// For an emulated view, the native view it was made from.
    pub(crate) native: Option<Arc<DeviceInner>>,
}

impl Device {
    pub(crate) fn new(imp: Arc<dyn DeviceImpl>, id: DeviceId) -> Device {
        let info = imp.info();
        Device { inner: Arc::new(DeviceInner { imp, info, id, native: None }) }
    }

    /// The device's information.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The selector identity, such as `cuda:1`.
    pub fn id(&self) -> DeviceId {
        self.inner.id
    }

    /// The device's backend.
    pub fn backend(&self) -> Backend {
        self.inner.id.backend
    }

    /// Whether this view uses the software command buffer.
    pub fn is_emulated(&self) -> bool {
        self.inner.native.is_some()
    }

    /// A view of this device whose command buffers are ur-core's software
    /// command buffer, with its capabilities ([`CommandBufferCaps::EMULATED`]).
    pub fn emulated(&self) -> Device {
        if self.is_emulated() {
            return self.clone();
        }
        let mut info = self.inner.info.clone();
        info.command_buffer = CommandBufferCaps::EMULATED;
        Device {
            inner: Arc::new(DeviceInner {
                imp: self.inner.imp.clone(),
                info,
                id: self.inner.id,
                native: Some(self.inner.clone()),
            }),
        }
    }

    /// The adapter's own view of this device (itself unless emulated).
    pub fn native(&self) -> Device {
        match &self.inner.native {
            Some(native) => Device { inner: native.clone() },
            None => self.clone(),
        }
    }

    /// The adapter's object, for adapters and tests of adapters.
    pub fn imp(&self) -> &Arc<dyn DeviceImpl> {
        &self.inner.imp
    }

    /// Same physical device and same view.
    pub(crate) fn same_as(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
            || (Arc::ptr_eq(&self.inner.imp, &other.inner.imp) && self.is_emulated() == other.is_emulated())
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        self.same_as(other)
    }
}

impl Eq for Device {}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("id", &self.inner.id)
            .field("name", &self.inner.info.name)
            .field("emulated", &self.is_emulated())
            .finish()
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_emulated() { write!(f, "{} emulated", self.inner.id) } else { write!(f, "{}", self.inner.id) }
    }
}
