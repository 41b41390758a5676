//! What a device is and can do: [`DeviceInfo`] and its parts, as adapters
//! report them at discovery.

use std::fmt;

use bitflags::bitflags;

use crate::types::backend::Backend;
use crate::types::program::SourceForm;

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
    /// By cmdbuf-core's software command buffer, replayed over the adapter's eager
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
    /// What an enqueue of a command buffer submits.
    pub replay_path: ReplayPath,
}

/// What an enqueue of a command buffer submits (`CommandBufferCaps::replay_path`).
///
/// A device reporting [`CommandBufferSupport::Native`] replays either a
/// driver object or the adapter's own plan; which one is decided per device
/// by the adapter (see docs/opencl.md, "Replay path", for OpenCL's rule).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReplayPath {
    /// The driver's recorded object (a CUDA graph exec, a
    /// `cl_khr_command_buffer`, Vulkan command buffers, the CPU adapter's
    /// pre-built DAG), enqueued once per submission.
    Driver,
    /// The adapter's pre-planned eager submission: each command enqueued on
    /// its own at every replay, with dependencies resolved at finalize. Used
    /// where it is faster than the driver's command buffer, or where the
    /// driver has none.
    Planned,
    /// cmdbuf-core's software command buffer ([`CommandBufferSupport::Emulated`]).
    Software,
}

impl ReplayPath {
    /// `driver`, `planned` or `software`.
    pub fn name(self) -> &'static str {
        match self {
            ReplayPath::Driver => "driver",
            ReplayPath::Planned => "planned",
            ReplayPath::Software => "software",
        }
    }
}

impl CommandBufferCaps {
    /// What the software command buffer offers on any adapter: every update
    /// and event, since it replays from its own record at each enqueue.
    pub const EMULATED: CommandBufferCaps = CommandBufferCaps {
        support: CommandBufferSupport::Emulated,
        update: UpdateCapabilities::all(),
        events: true,
        subgraphs: false,
        replay_path: ReplayPath::Software,
    };
}

bitflags! {
    /// Floating-point capabilities of one precision
    /// (`ur_device_fp_capability_flags_t`); empty for a precision the device
    /// does not support.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct FpCapabilities: u32 {
        /// Correctly rounded division and square root.
        const CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 0;
        /// Round to nearest even.
        const ROUND_TO_NEAREST = 1 << 1;
        /// Round toward zero.
        const ROUND_TO_ZERO = 1 << 2;
        /// Round toward positive and negative infinity.
        const ROUND_TO_INF = 1 << 3;
        /// Infinities and NaNs.
        const INF_NAN = 1 << 4;
        /// Denormals (not flushed to zero).
        const DENORM = 1 << 5;
        /// Fused multiply-add.
        const FMA = 1 << 6;
        /// Basic operations implemented in software.
        const SOFT_FLOAT = 1 << 7;
    }
}

bitflags! {
    /// Memory orders of atomic operations or fences
    /// (`ur_memory_order_capability_flags_t`).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MemoryOrders: u32 {
        /// Relaxed.
        const RELAXED = 1 << 0;
        /// Acquire.
        const ACQUIRE = 1 << 1;
        /// Release.
        const RELEASE = 1 << 2;
        /// Acquire-release.
        const ACQ_REL = 1 << 3;
        /// Sequentially consistent.
        const SEQ_CST = 1 << 4;
    }
}

bitflags! {
    /// Memory scopes of atomic operations or fences
    /// (`ur_memory_scope_capability_flags_t`).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MemoryScopes: u32 {
        /// One work-item.
        const WORK_ITEM = 1 << 0;
        /// A sub-group.
        const SUB_GROUP = 1 << 1;
        /// A work-group.
        const WORK_GROUP = 1 << 2;
        /// The device.
        const DEVICE = 1 << 3;
        /// The device and the host (and other devices).
        const SYSTEM = 1 << 4;
    }
}

/// How a device caches global memory (`ur_device_mem_cache_type_t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CacheType {
    /// No cache, or none the driver reports.
    None,
    /// A read-only cache.
    ReadOnly,
    /// A read-write cache.
    ReadWrite,
}

/// Where work-group local memory lives (`ur_device_local_mem_type_t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LocalMemType {
    /// Dedicated on-chip memory.
    Local,
    /// Carved out of global memory.
    Global,
    /// No local memory.
    None,
}

/// The global-memory cache.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GlobalMemCache {
    /// Its kind.
    pub kind: CacheType,
    /// Line size in bytes, where the driver tells.
    pub line_size: Option<u32>,
    /// Size in bytes (of the last level), where the driver tells.
    pub size: Option<u64>,
}

/// Vector widths by element type (`UR_DEVICE_INFO_{PREFERRED,NATIVE}_VECTOR_WIDTH_*`),
/// in elements; 0 for a type the device does not support.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct VectorWidths {
    /// `char`.
    pub char: u32,
    /// `short`.
    pub short: u32,
    /// `int`.
    pub int: u32,
    /// `long` (and `long long`: 64 bits both).
    pub long: u32,
    /// `half`.
    pub half: u32,
    /// `float`.
    pub float: u32,
    /// `double`.
    pub double: u32,
}

impl VectorWidths {
    /// The widths of a SIMD register of `bytes` bytes, with `half` and
    /// `double` as the device supports them.
    pub fn of_register(bytes: u32, half: bool, double: bool) -> VectorWidths {
        VectorWidths {
            char: bytes,
            short: bytes / 2,
            int: bytes / 4,
            long: bytes / 8,
            half: if half { bytes / 2 } else { 0 },
            float: bytes / 4,
            double: if double { bytes / 8 } else { 0 },
        }
    }

    /// One element of every type: scalar (SIMT) devices.
    pub fn scalar(half: bool, double: bool) -> VectorWidths {
        VectorWidths { char: 1, short: 1, int: 1, long: 1, half: u32::from(half), float: 1, double: u32::from(double) }
    }
}

/// Floating-point capabilities by precision.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FpConfigs {
    /// 16-bit (empty: no `half`).
    pub half: FpCapabilities,
    /// 32-bit (never empty).
    pub single: FpCapabilities,
    /// 64-bit (empty: no `double`).
    pub double: FpCapabilities,
}

/// Atomic operations and fences.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtomicCaps {
    /// 64-bit atomic operations on global and local memory.
    pub int64: bool,
    /// Memory orders of atomic operations.
    pub memory_orders: MemoryOrders,
    /// Memory scopes of atomic operations.
    pub memory_scopes: MemoryScopes,
    /// Memory orders of fences.
    pub fence_orders: MemoryOrders,
    /// Memory scopes of fences.
    pub fence_scopes: MemoryScopes,
}

/// Sub-groups.
///
/// A device without sub-groups of its own (no `cl_khr_subgroups` or
/// `cl_intel_required_subgroup_size`, no Vulkan subgroup operations in
/// compute) runs every work-item as a sub-group of size 1: its kernels see
/// sub-groups of one item, as SYCL's and UR's own OpenCL adapter define it.
/// [`Device::info`](crate::Device::info) reports that, never an empty
/// list or a zero count, which runtimes such as libsycl take for a broken
/// device ([`SubGroups::or_single_items`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SubGroups {
    /// The sub-group sizes kernels may have; `[1]` where the device has no
    /// sub-groups of its own or does not say.
    pub sizes: Vec<u32>,
    /// Most sub-groups in one work-group: with sub-groups of one item, the
    /// largest work-group size.
    pub max_per_work_group: u32,
    /// Whether sub-groups of one work-group make independent forward
    /// progress.
    pub independent_forward_progress: bool,
}

impl SubGroups {
    /// These sub-groups as a device with work-groups of at most
    /// `max_work_group_size` items runs them: where no size is reported, one
    /// of 1 (every work-item its own sub-group); where no count is reported,
    /// as many as the smallest size fits in the largest work-group.
    pub fn or_single_items(mut self, max_work_group_size: usize) -> SubGroups {
        if self.sizes.is_empty() {
            self.sizes = vec![1];
        }
        if self.max_per_work_group == 0 {
            let smallest = self.sizes.iter().copied().min().unwrap_or(1).max(1) as usize;
            self.max_per_work_group = u32::try_from(max_work_group_size.max(1).div_ceil(smallest)).unwrap_or(u32::MAX);
        }
        self
    }
}

/// The memory system as the hardware reports it, where it does.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryHardware {
    /// Memory clock in MHz.
    pub clock_mhz: Option<u32>,
    /// Width of the memory bus in bits.
    pub bus_width: Option<u32>,
    /// Peak bandwidth in bytes per second.
    pub bandwidth: Option<u64>,
}

/// A device binary format, as UR names them in `ur_device_binary_t`
/// (`UR_DEVICE_BINARY_TARGET_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinaryTarget {
    /// 32-bit SPIR-V (`spir`).
    Spirv32,
    /// 64-bit SPIR-V (`spir64`).
    Spirv64,
    /// Ahead-of-time x86-64 code from SPIR-V (`spir64_x86_64`).
    Spirv64X86_64,
    /// Ahead-of-time Intel GPU code (`spir64_gen`).
    Spirv64Gen,
    /// Ahead-of-time FPGA code (`spir64_fpga`).
    Spirv64Fpga,
    /// PTX or cubin for NVIDIA GPUs (`nvptx64`).
    Nvptx64,
    /// AMD GPU code (`amdgcn`).
    Amdgcn,
    /// DPC++'s native CPU code (`native_cpu`).
    NativeCpu,
}

impl BinaryTarget {
    /// Every target, in the order of UR's header.
    pub const ALL: [BinaryTarget; 8] = [
        BinaryTarget::Spirv32,
        BinaryTarget::Spirv64,
        BinaryTarget::Spirv64X86_64,
        BinaryTarget::Spirv64Gen,
        BinaryTarget::Spirv64Fpga,
        BinaryTarget::Nvptx64,
        BinaryTarget::Amdgcn,
        BinaryTarget::NativeCpu,
    ];

    /// UR's string for the target.
    pub fn name(self) -> &'static str {
        match self {
            BinaryTarget::Spirv32 => "spir",
            BinaryTarget::Spirv64 => "spir64",
            BinaryTarget::Spirv64X86_64 => "spir64_x86_64",
            BinaryTarget::Spirv64Gen => "spir64_gen",
            BinaryTarget::Spirv64Fpga => "spir64_fpga",
            BinaryTarget::Nvptx64 => "nvptx64",
            BinaryTarget::Amdgcn => "amdgcn",
            BinaryTarget::NativeCpu => "native_cpu",
        }
    }

    /// The target UR's string names, if it is one of UR's.
    pub fn from_name(name: &str) -> Option<BinaryTarget> {
        BinaryTarget::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl fmt::Display for BinaryTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The OpenCL-style extension names that describe capabilities libsycl
/// reads from the extension string (`cl_khr_fp16`, `cl_khr_fp64`, the 64-bit
/// atomics), for adapters whose driver has no extension string of its own.
pub fn capability_extensions(fp: &FpConfigs, atomics: &AtomicCaps) -> Vec<String> {
    let mut names = Vec::new();
    if !fp.half.is_empty() {
        names.push("cl_khr_fp16");
    }
    if !fp.double.is_empty() {
        names.push("cl_khr_fp64");
    }
    if atomics.int64 {
        names.extend(["cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"]);
    }
    names.into_iter().map(String::from).collect()
}

/// Everything the front end and users need to know about a device. Adapters
/// fill it once, at discovery.
///
/// Values the hardware or driver may not tell are `Option`s (`None`: not
/// known); what the adapter itself decides (alignment it guarantees,
/// argument limits) is stated by the adapter.
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
    /// is then also the host's pointer. cmdbuf-core's own API does not need it
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
    /// Whether programs compiled apart link into one
    /// ([`Program::link`](crate::Program::link) of several): OpenCL devices
    /// that take SPIR-V themselves and have a linker. Elsewhere programs
    /// are built whole.
    pub linker_available: bool,

    /// The vendor's PCI vendor id (or Khronos vendor id); 0 when unknown.
    pub vendor_id: u32,
    /// The vendor's id of the device model.
    pub device_id: Option<u32>,
    /// The device's UUID.
    pub uuid: Option<[u8; 16]>,
    /// The PCI address, `domain:bus:device.function` in hexadecimal.
    pub pci_address: Option<String>,
    /// An architecture version; newer devices have higher ones.
    pub ip_version: Option<u32>,
    /// The device's version as its driver states it (the OpenCL version
    /// string, a CUDA compute capability `major.minor`, ...).
    pub version: String,
    /// Extension names: the driver's where it has an extension string, else
    /// [`capability_extensions`].
    pub extensions: Vec<String>,
    /// The intermediate languages programs may be created from, as OpenCL
    /// writes them (`SPIR-V_1.0 SPIR-V_1.1`): the driver's, or what the
    /// adapter translates for it.
    pub il_version: Option<String>,
    /// The UR binary formats the device can run, most preferred first
    /// (empty: none of UR's formats).
    pub binary_targets: Vec<BinaryTarget>,
    /// Whether this is a GPU integrated with the host (sharing its memory).
    pub integrated_gpu: bool,
    /// Whether host and device share one physical memory.
    pub host_unified_memory: bool,
    /// Highest clock frequency in MHz.
    pub max_clock_mhz: Option<u32>,
    /// The memory system's clock, bus and bandwidth.
    pub memory_hardware: MemoryHardware,
    /// The global-memory cache.
    pub global_mem_cache: GlobalMemCache,
    /// Alignment in bits that the base address of every allocation has.
    pub mem_base_addr_align_bits: u32,
    /// Largest constant buffer in bytes.
    pub max_constant_buffer_size: u64,
    /// Most constant-memory arguments of one kernel.
    pub max_constant_args: u32,
    /// Largest total size in bytes of one kernel's arguments.
    pub max_parameter_size: usize,
    /// Where local memory lives.
    pub local_mem_type: LocalMemType,
    /// Whether global and local memory have error correction.
    pub error_correction: bool,
    /// Largest number of work-groups of a launch in each dimension.
    pub max_work_groups: [usize; 3],
    /// Registers one work-group may use.
    pub max_registers_per_work_group: Option<u32>,
    /// Floating-point capabilities.
    pub fp: FpConfigs,
    /// Vector widths kernels should prefer.
    pub preferred_vector_widths: VectorWidths,
    /// Vector widths the hardware operates on natively.
    pub native_vector_widths: VectorWidths,
    /// Sub-groups.
    pub sub_groups: SubGroups,
    /// Atomics and fences.
    pub atomics: AtomicCaps,
    /// Resolution of profiling timestamps in nanoseconds.
    pub profiling_timer_resolution_ns: u64,
    /// Size in bytes of the buffer kernels' `printf` writes to (0: kernels
    /// have no `printf`).
    pub printf_buffer_size: usize,
    /// Whether kernels convert to and from `bfloat16` in hardware.
    pub native_bfloat16_conversions: bool,
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

/// How a device may be partitioned into sub-devices (`ur_device_partition_t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PartitionKind {
    /// Into as many sub-devices of `n` compute units as fit.
    Equally,
    /// Into sub-devices of the listed numbers of compute units.
    ByCounts,
    /// Into sub-devices whose compute units share a memory subsystem.
    ByAffinityDomain,
}

impl PartitionKind {
    /// How UR's header and OpenCL's name it.
    pub fn name(self) -> &'static str {
        match self {
            PartitionKind::Equally => "equally",
            PartitionKind::ByCounts => "by counts",
            PartitionKind::ByAffinityDomain => "by affinity domain",
        }
    }
}

/// A level of the memory hierarchy that compute units share
/// (`ur_device_affinity_domain_flag_t`), or the first one that splits the
/// device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AffinityDomain {
    /// A NUMA node.
    Numa,
    /// A level-4 data cache.
    L4Cache,
    /// A level-3 data cache.
    L3Cache,
    /// A level-2 data cache.
    L2Cache,
    /// A level-1 data cache.
    L1Cache,
    /// The first of NUMA, L4, L3, L2, L1 along which the device splits into
    /// more than one sub-device.
    NextPartitionable,
}

impl AffinityDomain {
    /// The domains that name a level, in the order
    /// [`NextPartitionable`](AffinityDomain::NextPartitionable) tries them.
    pub const LEVELS: [AffinityDomain; 5] = [
        AffinityDomain::Numa,
        AffinityDomain::L4Cache,
        AffinityDomain::L3Cache,
        AffinityDomain::L2Cache,
        AffinityDomain::L1Cache,
    ];

    /// The domain's flag.
    pub fn flag(self) -> AffinityDomains {
        match self {
            AffinityDomain::Numa => AffinityDomains::NUMA,
            AffinityDomain::L4Cache => AffinityDomains::L4_CACHE,
            AffinityDomain::L3Cache => AffinityDomains::L3_CACHE,
            AffinityDomain::L2Cache => AffinityDomains::L2_CACHE,
            AffinityDomain::L1Cache => AffinityDomains::L1_CACHE,
            AffinityDomain::NextPartitionable => AffinityDomains::NEXT_PARTITIONABLE,
        }
    }

    /// The domain of a flag holding exactly one domain.
    pub fn from_flag(flag: AffinityDomains) -> Option<AffinityDomain> {
        AffinityDomain::LEVELS.into_iter().chain([AffinityDomain::NextPartitionable]).find(|d| d.flag() == flag)
    }

    /// The cache level (1 to 4) of a cache domain.
    pub fn cache_level(self) -> Option<u32> {
        match self {
            AffinityDomain::L4Cache => Some(4),
            AffinityDomain::L3Cache => Some(3),
            AffinityDomain::L2Cache => Some(2),
            AffinityDomain::L1Cache => Some(1),
            AffinityDomain::Numa | AffinityDomain::NextPartitionable => None,
        }
    }
}

bitflags! {
    /// Affinity domains (`ur_device_affinity_domain_flags_t`), bit for bit
    /// UR's and OpenCL's.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct AffinityDomains: u32 {
        /// A NUMA node.
        const NUMA = 1 << 0;
        /// A level-4 data cache.
        const L4_CACHE = 1 << 1;
        /// A level-3 data cache.
        const L3_CACHE = 1 << 2;
        /// A level-2 data cache.
        const L2_CACHE = 1 << 3;
        /// A level-1 data cache.
        const L1_CACHE = 1 << 4;
        /// The next level that splits the device.
        const NEXT_PARTITIONABLE = 1 << 5;
    }
}

/// What partitions a device offers (`UR_DEVICE_INFO_SUPPORTED_PARTITIONS`,
/// `PARTITION_AFFINITY_DOMAIN`, `PARTITION_MAX_SUB_DEVICES`); the default,
/// nothing, for devices that do not partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PartitionSupport {
    /// The kinds of partition offered (empty: none).
    pub kinds: Vec<PartitionKind>,
    /// The affinity domains offered, where [`PartitionKind::ByAffinityDomain`] is.
    pub affinity_domains: AffinityDomains,
    /// Most sub-devices of one partition (0 where the device does not partition).
    pub max_sub_devices: u32,
}

impl PartitionSupport {
    /// Whether `kind` is offered.
    pub fn offers(&self, kind: PartitionKind) -> bool {
        self.kinds.contains(&kind)
    }
}

/// One partition of a device (the property list of `urDevicePartition`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Partition {
    /// Sub-devices of this many compute units each, as many as fit.
    Equally(u32),
    /// One sub-device per count, of that many compute units, in order.
    ByCounts(Vec<u32>),
    /// One sub-device per instance of the domain that the device's compute
    /// units share.
    ByAffinityDomain(AffinityDomain),
}

impl Partition {
    /// The partition's kind.
    pub fn kind(&self) -> PartitionKind {
        match self {
            Partition::Equally(_) => PartitionKind::Equally,
            Partition::ByCounts(_) => PartitionKind::ByCounts,
            Partition::ByAffinityDomain(_) => PartitionKind::ByAffinityDomain,
        }
    }

    /// The compute units of each sub-device of an equal or counted partition
    /// of `compute_units` units into at most `max_sub_devices`; `None` for
    /// an affinity partition. For adapters that split compute units
    /// themselves.
    pub fn counts(&self, compute_units: u32, max_sub_devices: u32) -> Option<Vec<u32>> {
        match self {
            Partition::Equally(n) => {
                let fits = compute_units.checked_div(*n).unwrap_or(0).min(max_sub_devices);
                Some(vec![*n; fits as usize])
            }
            Partition::ByCounts(counts) => Some(counts.clone()),
            Partition::ByAffinityDomain(_) => None,
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Equally(n) => write!(f, "equally, {n} compute units each"),
            Partition::ByCounts(counts) => write!(f, "by counts {counts:?}"),
            Partition::ByAffinityDomain(domain) => write!(f, "by affinity domain {domain:?}"),
        }
    }
}
