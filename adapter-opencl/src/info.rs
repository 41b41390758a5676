//! A device's [`DeviceInfo`] from `clGetDeviceInfo`: what the driver
//! reports, converted to cmdbuf-core's types by pure functions (unit-tested
//! below), with the queries of optional extensions asked only where the
//! device lists the extension.

use crate::spir::IlPath;
use cl3::types::{cl_bitfield, cl_device_id, cl_uint};
use cmdbuf_core::{
    AtomicCaps, BinaryTarget, CacheType, CommandBufferCaps, DeviceInfo, DeviceType, FpCapabilities, FpConfigs,
    GlobalMemCache, LocalMemType, MemoryHardware, MemoryOrders, MemoryScopes, SourceForm, SubGroups, UsmKinds,
    VectorWidths,
};

const CL_DEVICE_TYPE_CPU: cl_bitfield = 1 << 1;
const CL_DEVICE_TYPE_GPU: cl_bitfield = 1 << 2;

// `cl_device_fp_config` bits.
const CL_FP_DENORM: cl_bitfield = 1 << 0;
const CL_FP_INF_NAN: cl_bitfield = 1 << 1;
const CL_FP_ROUND_TO_NEAREST: cl_bitfield = 1 << 2;
const CL_FP_ROUND_TO_ZERO: cl_bitfield = 1 << 3;
const CL_FP_ROUND_TO_INF: cl_bitfield = 1 << 4;
const CL_FP_FMA: cl_bitfield = 1 << 5;
const CL_FP_SOFT_FLOAT: cl_bitfield = 1 << 6;
const CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT: cl_bitfield = 1 << 7;

// `cl_device_atomic_capabilities` bits (OpenCL 3.0).
const CL_DEVICE_ATOMIC_ORDER_RELAXED: cl_bitfield = 1 << 0;
const CL_DEVICE_ATOMIC_ORDER_ACQ_REL: cl_bitfield = 1 << 1;
const CL_DEVICE_ATOMIC_ORDER_SEQ_CST: cl_bitfield = 1 << 2;
const CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM: cl_bitfield = 1 << 3;
const CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP: cl_bitfield = 1 << 4;
const CL_DEVICE_ATOMIC_SCOPE_DEVICE: cl_bitfield = 1 << 5;
const CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES: cl_bitfield = 1 << 6;

// `cl_device_mem_cache_type` and `cl_device_local_mem_type`.
const CL_READ_ONLY_CACHE: cl_uint = 1;
const CL_READ_WRITE_CACHE: cl_uint = 2;
const CL_LOCAL: cl_uint = 1;
const CL_GLOBAL: cl_uint = 2;

// Queries of extensions.
/// `CL_DEVICE_SUB_GROUP_SIZES_INTEL` (`cl_intel_required_subgroup_size`).
const CL_DEVICE_SUB_GROUP_SIZES_INTEL: cl_uint = 0x4108;
/// `CL_DEVICE_ID_INTEL` (`cl_intel_device_attribute_query`).
const CL_DEVICE_ID_INTEL: cl_uint = 0x4251;
/// `CL_DEVICE_IP_VERSION_INTEL` (`cl_intel_device_attribute_query`).
const CL_DEVICE_IP_VERSION_INTEL: cl_uint = 0x4250;
/// `CL_DEVICE_PCI_BUS_INFO_KHR` (`cl_khr_pci_bus_info`).
const CL_DEVICE_PCI_BUS_INFO_KHR: cl_uint = 0x410F;
/// `CL_DEVICE_UUID_KHR` (`cl_khr_device_uuid`).
const CL_DEVICE_UUID_KHR: cl_uint = 0x106A;
/// `CL_DEVICE_REGISTERS_PER_BLOCK_NV` (`cl_nv_device_attribute_query`).
const CL_DEVICE_REGISTERS_PER_BLOCK_NV: cl_uint = 0x4002;
/// `CL_DEVICE_GLOBAL_FREE_MEMORY_AMD` (`cl_amd_device_attribute_query`).
const CL_DEVICE_GLOBAL_FREE_MEMORY_AMD: cl_uint = 0x4039;

/// The UR capabilities of an OpenCL `cl_device_fp_config`.
pub fn fp_capabilities(config: cl_bitfield) -> FpCapabilities {
    [
        (CL_FP_DENORM, FpCapabilities::DENORM),
        (CL_FP_INF_NAN, FpCapabilities::INF_NAN),
        (CL_FP_ROUND_TO_NEAREST, FpCapabilities::ROUND_TO_NEAREST),
        (CL_FP_ROUND_TO_ZERO, FpCapabilities::ROUND_TO_ZERO),
        (CL_FP_ROUND_TO_INF, FpCapabilities::ROUND_TO_INF),
        (CL_FP_FMA, FpCapabilities::FMA),
        (CL_FP_SOFT_FLOAT, FpCapabilities::SOFT_FLOAT),
        (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT, FpCapabilities::CORRECTLY_ROUNDED_DIVIDE_SQRT),
    ]
    .into_iter()
    .filter(|(cl, _)| config & cl != 0)
    .fold(FpCapabilities::empty(), |caps, (_, ur)| caps | ur)
}

/// The orders and scopes of an OpenCL 3.0 `cl_device_atomic_capabilities`.
/// Acquire-release implies acquire and release alone.
pub fn atomic_capabilities(caps: cl_bitfield) -> (MemoryOrders, MemoryScopes) {
    let mut orders = MemoryOrders::empty();
    orders.set(MemoryOrders::RELAXED, caps & CL_DEVICE_ATOMIC_ORDER_RELAXED != 0);
    if caps & CL_DEVICE_ATOMIC_ORDER_ACQ_REL != 0 {
        orders |= MemoryOrders::ACQUIRE | MemoryOrders::RELEASE | MemoryOrders::ACQ_REL;
    }
    orders.set(MemoryOrders::SEQ_CST, caps & CL_DEVICE_ATOMIC_ORDER_SEQ_CST != 0);
    let mut scopes = MemoryScopes::empty();
    scopes.set(MemoryScopes::WORK_ITEM, caps & CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM != 0);
    scopes.set(MemoryScopes::WORK_GROUP, caps & CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP != 0);
    scopes.set(MemoryScopes::DEVICE, caps & CL_DEVICE_ATOMIC_SCOPE_DEVICE != 0);
    scopes.set(MemoryScopes::SYSTEM, caps & CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES != 0);
    (orders, scopes)
}

/// What OpenCL before 3.0 guarantees without a query: 2.x has the C11
/// orders at work-group and device scope, 1.x relaxed atomics only.
pub fn atomics_before_3_0(major: u32) -> (MemoryOrders, MemoryScopes) {
    let scopes = MemoryScopes::WORK_GROUP | MemoryScopes::DEVICE;
    if major >= 2 { (MemoryOrders::all(), scopes) } else { (MemoryOrders::RELAXED, scopes) }
}

/// The major version of an OpenCL version string (`OpenCL 3.0 PoCL ...`).
pub fn major_version(version: &str) -> Option<u32> {
    let number = version.strip_prefix("OpenCL ")?.split_whitespace().next()?;
    number.split('.').next()?.parse().ok()
}

/// The UR binary formats of a device that builds SPIR-V (`builds_spirv`:
/// natively or through the translator, see [`crate::spir::il_path`]) and
/// has this address width: SPIR-V in the device's address width. Decided
/// from the same path as the source forms and the IL version, so that device
/// info, `urDeviceSelectBinary` and program creation answer alike.
pub fn binary_targets(builds_spirv: bool, address_bits: u32) -> Vec<BinaryTarget> {
    if !builds_spirv {
        return Vec::new();
    }
    vec![if address_bits == 32 { BinaryTarget::Spirv32 } else { BinaryTarget::Spirv64 }]
}

/// `domain:bus:device.function` from `cl_device_pci_bus_info_khr` (four
/// `cl_uint`s).
pub fn pci_address(bytes: &[u8]) -> Option<String> {
    let words: Vec<u32> =
        bytes.chunks_exact(4).take(4).map(|w| u32::from_ne_bytes(w.try_into().expect("4 bytes"))).collect();
    let [domain, bus, device, function] = words[..] else { return None };
    Some(format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}"))
}

/// Sub-group sizes from `CL_DEVICE_SUB_GROUP_SIZES_INTEL` (`size_t[]`).
pub fn sub_group_sizes(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(size_of::<usize>())
        .filter_map(|w| u32::try_from(usize::from_ne_bytes(w.try_into().expect("usize bytes"))).ok())
        .collect()
}

fn data(id: cl_device_id, name: cl_uint) -> Option<Vec<u8>> {
    cl3::device::get_device_data(id, name).ok()
}

fn uint(id: cl_device_id, name: cl_uint) -> Option<u32> {
    Some(u32::from_ne_bytes(data(id, name)?.get(..4)?.try_into().ok()?))
}

/// Global memory free now, for devices with AMD's attribute query (the
/// first `size_t` of the answer is the free memory in KiB).
pub(crate) fn free_memory(id: cl_device_id, extensions: &[String]) -> Option<u64> {
    if !extensions.iter().any(|e| e == "cl_amd_device_attribute_query") {
        return None;
    }
    let bytes = data(id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD)?;
    let kib = usize::from_ne_bytes(bytes.get(..size_of::<usize>())?.try_into().ok()?);
    Some(kib as u64 * 1024)
}

/// The message of a required query that failed.
fn failed(what: &'static str) -> impl Fn(cl3::error_codes::ClError) -> String {
    move |e| format!("{what}: {}", e.0)
}

/// Floating-point capabilities: single precision is required, half only
/// with `cl_khr_fp16`, double 0 on devices without doubles.
fn fp_configs(device: &opencl3::device::Device, has: &dyn Fn(&str) -> bool) -> std::result::Result<FpConfigs, String> {
    Ok(FpConfigs {
        half: if has("cl_khr_fp16") {
            device.half_fp_config().map(fp_capabilities).unwrap_or_default()
        } else {
            FpCapabilities::empty()
        },
        single: fp_capabilities(device.single_fp_config().map_err(failed("CL_DEVICE_SINGLE_FP_CONFIG"))?),
        // 0 from devices without doubles (OpenCL 1.2 and later).
        double: device.double_fp_config().map(fp_capabilities).unwrap_or_default(),
    })
}

/// Atomic capabilities: OpenCL 3.0's queries, else what earlier versions
/// guarantee for `major`.
fn atomic_caps(device: &opencl3::device::Device, major: u32, has: &dyn Fn(&str) -> bool) -> AtomicCaps {
    let (memory_orders, memory_scopes) =
        device.atomic_memory_capabilities().map(atomic_capabilities).unwrap_or_else(|_| atomics_before_3_0(major));
    let (fence_orders, fence_scopes) =
        device.atomic_fence_capabilities().map(atomic_capabilities).unwrap_or_else(|_| atomics_before_3_0(major));
    AtomicCaps {
        int64: has("cl_khr_int64_base_atomics") && has("cl_khr_int64_extended_atomics"),
        memory_orders,
        memory_scopes,
        fence_orders,
        fence_scopes,
    }
}

/// Preferred and native vector widths, 0 where the device does not answer.
fn vector_widths(device: &opencl3::device::Device) -> (VectorWidths, VectorWidths) {
    let width = |w: Result<cl_uint, cl3::error_codes::ClError>| w.unwrap_or(0);
    let preferred_vector_widths = VectorWidths {
        char: width(device.max_preferred_vector_width_char()),
        short: width(device.max_preferred_vector_width_short()),
        int: width(device.max_preferred_vector_width_int()),
        long: width(device.max_preferred_vector_width_long()),
        half: width(device.preferred_vector_width_half()),
        float: width(device.max_preferred_vector_width_float()),
        double: width(device.max_preferred_vector_width_double()),
    };
    let native_vector_widths = VectorWidths {
        char: width(device.native_vector_width_char()),
        short: width(device.native_vector_width_short()),
        int: width(device.native_vector_width_int()),
        long: width(device.native_vector_width_long()),
        half: width(device.native_vector_width_half()),
        float: width(device.native_vector_width_float()),
        double: width(device.native_vector_width_double()),
    };
    (preferred_vector_widths, native_vector_widths)
}

/// The kind of device a `CL_DEVICE_TYPE` bit set names (a GPU first).
fn device_type(bits: cl3::types::cl_device_type) -> DeviceType {
    match bits {
        t if t & CL_DEVICE_TYPE_GPU != 0 => DeviceType::Gpu,
        t if t & CL_DEVICE_TYPE_CPU != 0 => DeviceType::Cpu,
        _ => DeviceType::Accelerator,
    }
}

/// The largest work-group extent per dimension, 1 beyond the device's
/// dimensions.
fn work_item_sizes(device: &opencl3::device::Device) -> std::result::Result<[usize; 3], String> {
    let items = device.max_work_item_sizes().map_err(failed("CL_DEVICE_MAX_WORK_ITEM_SIZES"))?;
    let mut sizes = [1; 3];
    for (d, s) in items.iter().take(3).enumerate() {
        sizes[d] = *s;
    }
    Ok(sizes)
}

/// The device's UUID and PCI address, where its extensions answer them.
fn khr_identity(id: cl_device_id, has: &dyn Fn(&str) -> bool) -> (Option<[u8; 16]>, Option<String>) {
    let uuid = if has("cl_khr_device_uuid") {
        data(id, CL_DEVICE_UUID_KHR).and_then(|b| b.get(..16)?.try_into().ok())
    } else {
        None
    };
    let pci = if has("cl_khr_pci_bus_info") {
        data(id, CL_DEVICE_PCI_BUS_INFO_KHR).and_then(|b| pci_address(&b))
    } else {
        None
    };
    (uuid, pci)
}

/// Where `__local` memory lives.
fn local_mem_type(device: &opencl3::device::Device) -> LocalMemType {
    match device.local_mem_type().unwrap_or(0) {
        CL_LOCAL => LocalMemType::Local,
        CL_GLOBAL => LocalMemType::Global,
        _ => LocalMemType::None,
    }
}

/// The global memory cache: its kind, line size and size where answered.
fn global_mem_cache(device: &opencl3::device::Device) -> GlobalMemCache {
    GlobalMemCache {
        kind: match device.global_mem_cache_type().unwrap_or(0) {
            CL_READ_ONLY_CACHE => CacheType::ReadOnly,
            CL_READ_WRITE_CACHE => CacheType::ReadWrite,
            _ => CacheType::None,
        },
        line_size: device.global_mem_cacheline_size().ok().filter(|l| *l > 0),
        size: device.global_mem_cache_size().ok().filter(|s| *s > 0),
    }
}

/// Sub-groups: the sizes Intel's extension lists, the count per work-group.
fn sub_groups(device: &opencl3::device::Device, has: &dyn Fn(&str) -> bool) -> SubGroups {
    SubGroups {
        sizes: if has("cl_intel_required_subgroup_size") {
            data(device.id(), CL_DEVICE_SUB_GROUP_SIZES_INTEL).map(|b| sub_group_sizes(&b)).unwrap_or_default()
        } else {
            Vec::new()
        },
        max_per_work_group: device.max_num_sub_groups().unwrap_or(0),
        independent_forward_progress: device.sub_group_independent_forward_progress().unwrap_or(false),
    }
}

/// cmdbuf takes SPIR-V for a driver without IL (translating it to SPIR
/// 1.2): the device advertises what the translator reads, and the extension
/// SYCL runtimes look for.
fn advertise_translated_il(info: &mut DeviceInfo) {
    info.il_version = Some("SPIR-V_1.0".into());
    if !info.extensions.iter().any(|e| e == "cl_khr_il_program") {
        info.extensions.push("cl_khr_il_program".into());
    }
}

/// What the rest of discovery decided, which `clGetDeviceInfo` does not say.
pub(crate) struct Decided {
    pub(crate) usm: UsmKinds,
    pub(crate) out_of_order: bool,
    pub(crate) command_buffer: CommandBufferCaps,
}

/// What several answers depend on, queried first: the kind of device, its
/// OpenCL version, extensions and IL, and how SPIR-V reaches it.
struct Survey {
    id: cl_device_id,
    device_type: DeviceType,
    version: String,
    major: u32,
    extensions: Vec<String>,
    il_version: Option<String>,
    address_bits: u32,
    host_unified_memory: bool,
    max_work_group_size: usize,
    il_path: Option<IlPath>,
}

impl Survey {
    fn query(device: &opencl3::device::Device) -> std::result::Result<Survey, String> {
        let id = device.id();
        let device_type = device_type(device.dev_type().map_err(failed("CL_DEVICE_TYPE"))?);
        let version = device.version().map_err(failed("CL_DEVICE_VERSION"))?;
        let extensions: Vec<String> =
            device.extensions().unwrap_or_default().split_whitespace().map(String::from).collect();
        let il_version =
            device.il_version().ok().map(|s| s.trim_end_matches('\0').trim().to_string()).filter(|s| !s.is_empty());
        let max_work_group_size = device.max_work_group_size().map_err(failed("CL_DEVICE_MAX_WORK_GROUP_SIZE"))?;
        // How SPIR-V reaches this driver, decided once: the device info says
        // what programs may be created from, and builds take the same path.
        let il_path = crate::spir::il_path(id, il_version.as_deref(), &extensions, max_work_group_size);
        Ok(Survey {
            id,
            device_type,
            major: major_version(&version).unwrap_or(1),
            version,
            extensions,
            il_version,
            address_bits: device.address_bits().map_err(failed("CL_DEVICE_ADDRESS_BITS"))?,
            host_unified_memory: device.host_unified_memory().unwrap_or(device_type == DeviceType::Cpu),
            max_work_group_size,
            il_path,
        })
    }

    /// Whether the device lists extension `name`.
    fn has(&self, name: &str) -> bool {
        self.extensions.iter().any(|e| e == name)
    }
}

/// Who the device is: vendor, driver, and the identifiers its extensions
/// answer.
struct Identity {
    vendor: String,
    driver_version: String,
    vendor_id: u32,
    device_id: Option<u32>,
    uuid: Option<[u8; 16]>,
    pci_address: Option<String>,
    ip_version: Option<u32>,
}

fn identity(device: &opencl3::device::Device, survey: &Survey) -> Identity {
    let intel_attributes = survey.has("cl_intel_device_attribute_query");
    let (uuid, pci_address) = khr_identity(survey.id, &|e| survey.has(e));
    Identity {
        vendor: device.vendor().unwrap_or_default(),
        driver_version: device.driver_version().unwrap_or_default(),
        vendor_id: device.vendor_id().unwrap_or(0),
        device_id: if intel_attributes { uint(survey.id, CL_DEVICE_ID_INTEL) } else { None },
        uuid,
        pci_address,
        ip_version: if intel_attributes { uint(survey.id, CL_DEVICE_IP_VERSION_INTEL) } else { None },
    }
}

/// The device's memories: sizes, the global cache, `__local` and constant
/// memory, alignment.
struct Memory {
    global_mem_size: u64,
    local_mem_size: u64,
    max_mem_alloc_size: u64,
    global_mem_cache: GlobalMemCache,
    mem_base_addr_align_bits: u32,
    max_constant_buffer_size: u64,
    local_mem_type: LocalMemType,
    error_correction: bool,
}

fn memory(device: &opencl3::device::Device) -> std::result::Result<Memory, String> {
    Ok(Memory {
        global_mem_size: device.global_mem_size().unwrap_or(0),
        local_mem_size: device.local_mem_size().unwrap_or(0),
        max_mem_alloc_size: device.max_mem_alloc_size().map_err(failed("CL_DEVICE_MAX_MEM_ALLOC_SIZE"))?,
        global_mem_cache: global_mem_cache(device),
        mem_base_addr_align_bits: device.mem_base_addr_align().map_err(failed("CL_DEVICE_MEM_BASE_ADDR_ALIGN"))?,
        max_constant_buffer_size: device.max_constant_buffer_size().unwrap_or(0),
        local_mem_type: local_mem_type(device),
        error_correction: device.error_correction_support().unwrap_or(false),
    })
}

/// What a launch may use: compute units, work-group extents, arguments,
/// registers, and the clocks and buffers around it.
struct Limits {
    max_compute_units: u32,
    max_work_item_sizes: [usize; 3],
    max_constant_args: u32,
    max_parameter_size: usize,
    max_registers_per_work_group: Option<u32>,
    max_clock_mhz: Option<u32>,
    profiling_timer_resolution_ns: u64,
    printf_buffer_size: usize,
}

fn limits(device: &opencl3::device::Device, survey: &Survey) -> std::result::Result<Limits, String> {
    Ok(Limits {
        max_compute_units: device.max_compute_units().unwrap_or(1),
        max_work_item_sizes: work_item_sizes(device)?,
        max_constant_args: device.max_constant_args().unwrap_or(0),
        max_parameter_size: device.max_parameter_size().map_err(failed("CL_DEVICE_MAX_PARAMETER_SIZE"))?,
        max_registers_per_work_group: survey
            .has("cl_nv_device_attribute_query")
            .then(|| uint(survey.id, CL_DEVICE_REGISTERS_PER_BLOCK_NV))
            .flatten(),
        max_clock_mhz: device.max_clock_frequency().ok().filter(|c| *c > 0),
        profiling_timer_resolution_ns: device.profiling_timer_resolution().unwrap_or(1).max(1) as u64,
        printf_buffer_size: device.printf_buffer_size().unwrap_or(0),
    })
}

/// What kernels may use: floating point, atomics, vectors, sub-groups.
struct KernelFeatures {
    fp: FpConfigs,
    atomics: AtomicCaps,
    preferred_vector_widths: VectorWidths,
    native_vector_widths: VectorWidths,
    sub_groups: SubGroups,
    native_bfloat16_conversions: bool,
}

fn kernel_features(device: &opencl3::device::Device, survey: &Survey) -> std::result::Result<KernelFeatures, String> {
    let has = |e: &str| survey.has(e);
    let (preferred_vector_widths, native_vector_widths) = vector_widths(device);
    Ok(KernelFeatures {
        fp: fp_configs(device, &has)?,
        atomics: atomic_caps(device, survey.major, &has),
        preferred_vector_widths,
        native_vector_widths,
        sub_groups: sub_groups(device, &has),
        native_bfloat16_conversions: has("cl_intel_bfloat16_conversions"),
    })
}

/// Queries everything [`DeviceInfo`] holds, in named steps by what they
/// query ([`Survey`] first, which the others depend on), and puts their
/// answers together with what the rest of discovery `decided`. Queries
/// every device answers since OpenCL 1.2 fail the device; newer or optional
/// ones are `None`, 0 or empty when the device does not answer them.
///
/// Each step is a struct of the fields it answers, so that the literal here
/// (cmdbuf-core's flat list of UR's device queries) still names every field
/// and which step answers it, and a field added to `DeviceInfo` without an
/// answer fails to compile.
pub(crate) fn device_info(
    device: &opencl3::device::Device,
    name: String,
    decided: Decided,
) -> std::result::Result<(DeviceInfo, Option<IlPath>), String> {
    let survey = Survey::query(device)?;
    let who = identity(device, &survey);
    let mem = memory(device)?;
    let limits = limits(device, &survey)?;
    let kernels = kernel_features(device, &survey)?;
    let il_path = survey.il_path;
    let mut info = DeviceInfo {
        name,
        vendor: who.vendor,
        driver_version: who.driver_version,
        device_type: survey.device_type,
        max_compute_units: limits.max_compute_units,
        max_work_group_size: survey.max_work_group_size,
        max_work_item_sizes: limits.max_work_item_sizes,
        global_mem_size: mem.global_mem_size,
        local_mem_size: mem.local_mem_size,
        max_mem_alloc_size: mem.max_mem_alloc_size,
        usm: decided.usm,
        // SVM and Intel USM pointers are host pointers too (fine-grained SVM
        // and host/shared Intel USM are the only host kinds offered).
        usm_host_addressable: true,
        queue_profiling: true,
        out_of_order_queues: decided.out_of_order,
        source_forms: if il_path.is_some() {
            vec![SourceForm::OpenClC, SourceForm::SpirvKernel]
        } else {
            vec![SourceForm::OpenClC]
        },
        command_buffer: decided.command_buffer,
        // SPIR-V modules compiled apart are linked by the driver, where it
        // takes SPIR-V itself (not through SPIR translation).
        linker_available: matches!(il_path, Some(IlPath::Native)) && device.linker_available().unwrap_or(false),
        vendor_id: who.vendor_id,
        device_id: who.device_id,
        uuid: who.uuid,
        pci_address: who.pci_address,
        ip_version: who.ip_version,
        version: survey.version,
        binary_targets: binary_targets(il_path.is_some(), survey.address_bits),
        il_version: survey.il_version,
        extensions: survey.extensions,
        integrated_gpu: survey.device_type == DeviceType::Gpu && survey.host_unified_memory,
        host_unified_memory: survey.host_unified_memory,
        max_clock_mhz: limits.max_clock_mhz,
        memory_hardware: MemoryHardware::default(),
        global_mem_cache: mem.global_mem_cache,
        mem_base_addr_align_bits: mem.mem_base_addr_align_bits,
        max_constant_buffer_size: mem.max_constant_buffer_size,
        max_constant_args: limits.max_constant_args,
        max_parameter_size: limits.max_parameter_size,
        local_mem_type: mem.local_mem_type,
        error_correction: mem.error_correction,
        // OpenCL has no limit on work-group counts other than the size_t of
        // its global sizes.
        max_work_groups: [usize::MAX; 3],
        max_registers_per_work_group: limits.max_registers_per_work_group,
        sub_groups: kernels.sub_groups,
        fp: kernels.fp,
        preferred_vector_widths: kernels.preferred_vector_widths,
        native_vector_widths: kernels.native_vector_widths,
        atomics: kernels.atomics,
        profiling_timer_resolution_ns: limits.profiling_timer_resolution_ns,
        printf_buffer_size: limits.printf_buffer_size,
        native_bfloat16_conversions: kernels.native_bfloat16_conversions,
    };
    if matches!(il_path, Some(IlPath::Translate(_))) {
        advertise_translated_il(&mut info);
    }
    Ok((info, il_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp_configs_map_bit_by_bit() {
        // PoCL 3.1's single precision: everything but soft float.
        let pocl = CL_FP_DENORM
            | CL_FP_INF_NAN
            | CL_FP_ROUND_TO_NEAREST
            | CL_FP_ROUND_TO_ZERO
            | CL_FP_ROUND_TO_INF
            | CL_FP_FMA
            | CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT;
        assert_eq!(fp_capabilities(pocl), FpCapabilities::all() - FpCapabilities::SOFT_FLOAT);
        assert_eq!(fp_capabilities(CL_FP_SOFT_FLOAT), FpCapabilities::SOFT_FLOAT);
        assert_eq!(
            fp_capabilities(CL_FP_INF_NAN | CL_FP_ROUND_TO_NEAREST),
            FpCapabilities::INF_NAN | FpCapabilities::ROUND_TO_NEAREST
        );
        assert_eq!(fp_capabilities(0), FpCapabilities::empty());
    }

    #[test]
    fn atomic_capabilities_split_into_orders_and_scopes() {
        // PoCL 3.1's memory capabilities: relaxed, acq_rel, seq_cst at
        // work-group, device and all-devices scope.
        let caps = 0b111
            | CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP
            | CL_DEVICE_ATOMIC_SCOPE_DEVICE
            | CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES;
        let (orders, scopes) = atomic_capabilities(caps);
        assert_eq!(orders, MemoryOrders::all());
        assert_eq!(scopes, MemoryScopes::WORK_GROUP | MemoryScopes::DEVICE | MemoryScopes::SYSTEM);
        let (orders, scopes) = atomic_capabilities(CL_DEVICE_ATOMIC_ORDER_RELAXED | CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM);
        assert_eq!((orders, scopes), (MemoryOrders::RELAXED, MemoryScopes::WORK_ITEM));
        assert_eq!(atomics_before_3_0(2).0, MemoryOrders::all());
        assert_eq!(atomics_before_3_0(1).0, MemoryOrders::RELAXED);
    }

    #[test]
    fn versions_targets_and_addresses() {
        assert_eq!(major_version("OpenCL 3.0 PoCL HSTR: pthread-x86_64"), Some(3));
        assert_eq!(major_version("OpenCL 1.2 CUDA"), Some(1));
        assert_eq!(major_version("3.0"), None);
        assert_eq!(binary_targets(true, 64), vec![BinaryTarget::Spirv64]);
        assert_eq!(binary_targets(true, 32), vec![BinaryTarget::Spirv32]);
        assert!(binary_targets(false, 64).is_empty());
        let bus: Vec<u8> = [0u32, 0x3b, 0, 1].iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(pci_address(&bus).as_deref(), Some("0000:3b:00.1"));
        assert_eq!(pci_address(&bus[..12]), None);
        let sizes: Vec<u8> = [8usize, 16, 32].iter().flat_map(|s| s.to_ne_bytes()).collect();
        assert_eq!(sub_group_sizes(&sizes), vec![8, 16, 32]);
    }
}
