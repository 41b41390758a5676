//! A device's [`DeviceInfo`] from what [`inspect`](crate::device::inspect)
//! read: Vulkan's properties, limits and features, converted by the
//! functions below. What Vulkan does not report (clocks, error correction)
//! is `None`, or the answer that claims nothing; caches are the host's for
//! CPU implementations and NVIDIA's published figures for its GPUs
//! ([`global_mem_cache`]).

use ash::vk;
use cmdbuf_core::{
    AtomicCaps, CacheType, CommandBufferCaps, CommandBufferSupport, DeviceInfo, FpCapabilities, FpConfigs,
    GlobalMemCache, LocalMemType, MemoryHardware, MemoryOrders, MemoryScopes, SourceForm, SubGroups, UsmKinds,
    VectorWidths, capability_extensions,
};

use crate::conv::{device_type, version_string};
use crate::device::{Instance, OptionalFeatures, PhysicalInfo, PrecisionControls, SubgroupProperties, UPDATE_CAPS};
use crate::memory::DEFAULT_USM_ALIGN;

/// The capabilities of one float precision: what its float controls
/// guarantee. A supported precision whose controls guarantee nothing still
/// rounds to nearest (Vulkan requires correctly rounded add, subtract and
/// multiply, and no driver rounds otherwise by default); an unsupported one
/// has none.
pub(crate) fn fp_capabilities(supported: bool, controls: PrecisionControls) -> FpCapabilities {
    if !supported {
        return FpCapabilities::empty();
    }
    let mut caps = FpCapabilities::empty();
    caps.set(FpCapabilities::ROUND_TO_NEAREST, controls.rounding_rte);
    caps.set(FpCapabilities::ROUND_TO_ZERO, controls.rounding_rtz);
    caps.set(FpCapabilities::DENORM, controls.denorm_preserve);
    caps.set(FpCapabilities::INF_NAN, controls.signed_zero_inf_nan_preserve);
    if caps.is_empty() { FpCapabilities::ROUND_TO_NEAREST } else { caps }
}

/// The Vulkan memory model has relaxed, acquire, release and
/// acquire-release semantics at invocation, subgroup, workgroup and (with
/// its device-scope feature) device scope, and no sequential consistency;
/// without it, shaders have relaxed atomics on workgroup and device memory.
pub(crate) fn atomic_caps(features: OptionalFeatures) -> AtomicCaps {
    let (orders, scopes) = if features.memory_model {
        let mut scopes = MemoryScopes::WORK_ITEM | MemoryScopes::SUB_GROUP | MemoryScopes::WORK_GROUP;
        scopes.set(MemoryScopes::DEVICE, features.memory_model_device_scope);
        (MemoryOrders::RELAXED | MemoryOrders::ACQUIRE | MemoryOrders::RELEASE | MemoryOrders::ACQ_REL, scopes)
    } else {
        (MemoryOrders::RELAXED, MemoryScopes::WORK_GROUP | MemoryScopes::DEVICE)
    };
    AtomicCaps {
        int64: features.int64_atomics,
        memory_orders: orders,
        memory_scopes: scopes,
        fence_orders: orders,
        fence_scopes: scopes,
    }
}

/// The subgroup sizes compute shaders may get: every power of two of the
/// size-control range, or the one default size.
pub(crate) fn sub_groups(props: SubgroupProperties, max_invocations: u32) -> SubGroups {
    if !props.compute || props.size == 0 {
        return SubGroups { sizes: Vec::new(), max_per_work_group: 0, independent_forward_progress: false };
    }
    let sizes = match props.range {
        Some((min, max)) if min > 0 && min <= max => {
            std::iter::successors(Some(min), |s| s.checked_mul(2)).take_while(|s| *s <= max).collect()
        }
        _ => vec![props.size],
    };
    let smallest = sizes.iter().copied().min().unwrap_or(props.size);
    SubGroups {
        max_per_work_group: props.max_per_workgroup.unwrap_or(max_invocations.div_ceil(smallest)),
        sizes,
        // Vulkan promises no forward progress between subgroups.
        independent_forward_progress: false,
    }
}

/// The SPIR-V versions a Vulkan version consumes, as OpenCL lists ILs.
pub(crate) fn spirv_versions(api_version: u32) -> String {
    let newest = match vk::api_version_minor(api_version) {
        0 => 0,
        1 => 3,
        2 => 5,
        _ => 6,
    };
    (0..=newest).map(|minor| format!("SPIR-V_1.{minor}")).collect::<Vec<_>>().join(" ")
}

/// Global memory free now: the budget left in device-local heaps
/// (`VK_EXT_memory_budget`).
pub(crate) fn free_memory(instance: &Instance, info: &PhysicalInfo) -> u64 {
    let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
    let mut props2 = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
    // SAFETY: the device lists VK_EXT_memory_budget, whose structure is chained.
    unsafe { instance.raw.get_physical_device_memory_properties2(info.physical, &mut props2) };
    let heaps = &info.memory.memory_heaps[..info.memory.memory_heap_count as usize];
    heaps
        .iter()
        .enumerate()
        .filter(|(_, h)| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
        .map(|(i, _)| budget.heap_budget[i].saturating_sub(budget.heap_usage[i]))
        .sum()
}

/// NVIDIA's PCI vendor id.
const NVIDIA: u32 = 0x10de;

/// L2 sizes of NVIDIA GPUs by PCI device id, as NVIDIA states them (the
/// Hopper architecture whitepaper: 50 MB of L2 on GH100 products, which
/// CUDA's `CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE` reports as 52428800 bytes):
/// H100 SXM5, H100 PCIe, H200 SXM.
const NVIDIA_L2: &[(u32, u64)] = &[(0x2330, 50 << 20), (0x2331, 50 << 20), (0x2335, 50 << 20)];

/// The global-memory cache, which Vulkan has no query for (no extension
/// reports cache sizes): for a CPU implementation (lavapipe), the host's
/// last-level cache, which caches the memory its shaders read; for NVIDIA
/// GPUs, 128-byte lines (CUDA C++ Programming Guide, "Global Memory") and
/// the L2 size of [`NVIDIA_L2`] where the device is listed; elsewhere
/// nothing is claimed.
pub(crate) fn global_mem_cache(device_type: vk::PhysicalDeviceType, vendor_id: u32, device_id: u32) -> GlobalMemCache {
    if device_type == vk::PhysicalDeviceType::CPU {
        let host = cmdbuf_core::adapter::toolbox::host_cache::last_level_cache();
        return GlobalMemCache {
            kind: if host.is_some() { CacheType::ReadWrite } else { CacheType::None },
            line_size: host.map(|c| c.line),
            size: host.map(|c| c.size),
        };
    }
    if vendor_id == NVIDIA {
        let size = NVIDIA_L2.iter().find(|(id, _)| *id == device_id).map(|(_, size)| *size);
        return GlobalMemCache { kind: CacheType::ReadWrite, line_size: Some(128), size };
    }
    GlobalMemCache { kind: CacheType::None, line_size: None, size: None }
}

/// Everything a device reports.
///
/// The literal stays one: [`DeviceInfo`] is cmdbuf-core's flat list of UR's
/// device queries, each field filled by one expression or a named helper
/// (those with sub-structs of their own, [`CommandBufferCaps`],
/// [`GlobalMemCache`], [`SubGroups`](cmdbuf_core::SubGroups), are built
/// apart); cutting the rest into partial structs would need groups
/// `DeviceInfo` does not have, or helpers returning tuples of fields, where
/// the literal shows which value fills which field.
pub(crate) fn device_info(i: &PhysicalInfo) -> DeviceInfo {
    let l = &i.limits;
    let d = &i.details;
    let global_mem = device_local_memory(&i.memory);
    let fp = fp_configs(i);
    let atomics = atomic_caps(i.optional);
    let vectors = VectorWidths::scalar(!fp.half.is_empty(), !fp.double.is_empty());
    let integrated = i.device_type == vk::PhysicalDeviceType::INTEGRATED_GPU;
    DeviceInfo {
        name: i.name.clone(),
        vendor: i.vendor.clone(),
        driver_version: i.driver.clone(),
        device_type: device_type(i.device_type),
        max_compute_units: i.compute_units,
        max_work_group_size: l.max_compute_work_group_invocations as usize,
        max_work_item_sizes: l.max_compute_work_group_size.map(|s| s as usize),
        global_mem_size: global_mem,
        local_mem_size: u64::from(l.max_compute_shared_memory_size),
        max_mem_alloc_size: i.max_alloc,
        usm: UsmKinds::all(),
        // A USM pointer is a buffer device address. CPU implementations
        // (lavapipe) address memory with host pointers; a GPU's addresses
        // differ from where the host maps the memory.
        usm_host_addressable: i.device_type == vk::PhysicalDeviceType::CPU,
        queue_profiling: i.timestamp_bits > 0,
        out_of_order_queues: true,
        source_forms: vec![SourceForm::SpirV],
        // Programs are built whole (PTX or SPIR-V modules are not linked).
        linker_available: false,
        command_buffer: command_buffer_caps(),
        vendor_id: d.vendor_id,
        device_id: Some(d.device_id),
        uuid: Some(d.uuid),
        pci_address: d
            .pci
            .map(|[domain, bus, device, function]| format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}")),
        ip_version: None,
        version: format!("Vulkan {}", version_string(d.reported_api_version)),
        extensions: capability_extensions(&fp, &atomics),
        il_version: Some(spirv_versions(d.api_version)),
        // Kernels are GLCompute SPIR-V of the adapter's ABI; every UR binary
        // format is code of another kind (OpenCL-flavour SPIR-V, PTX, ...).
        binary_targets: Vec::new(),
        integrated_gpu: integrated,
        host_unified_memory: integrated || i.device_type == vk::PhysicalDeviceType::CPU,
        max_clock_mhz: None,
        memory_hardware: MemoryHardware::default(),
        global_mem_cache: global_mem_cache(i.device_type, d.vendor_id, d.device_id),
        // Storage buffers are aligned to `minStorageBufferOffsetAlignment`,
        // USM to at least as much.
        mem_base_addr_align_bits: (l.min_storage_buffer_offset_alignment.min(DEFAULT_USM_ALIGN) * 8) as u32,
        // Arguments and constant data are read through device addresses
        // from ordinary memory: no limit but the allocation size.
        max_constant_buffer_size: i.max_alloc,
        max_constant_args: u32::MAX,
        max_parameter_size: usize::try_from(i.max_alloc).unwrap_or(usize::MAX),
        local_mem_type: LocalMemType::Local,
        error_correction: false,
        // Launches beyond `maxComputeWorkGroupCount` are split; sizes are
        // 32-bit in the kernel ABI.
        max_work_groups: [u32::MAX as usize; 3],
        max_registers_per_work_group: None,
        fp,
        preferred_vector_widths: vectors,
        native_vector_widths: vectors,
        sub_groups: sub_groups(d.subgroups, l.max_compute_work_group_invocations),
        atomics,
        profiling_timer_resolution_ns: (f64::from(l.timestamp_period).ceil() as u64).max(1),
        printf_buffer_size: 0,
        native_bfloat16_conversions: false,
    }
}

/// The size of the device-local heaps.
fn device_local_memory(memory: &vk::PhysicalDeviceMemoryProperties) -> u64 {
    memory.memory_heaps[..memory.memory_heap_count as usize]
        .iter()
        .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
        .map(|h| h.size)
        .sum()
}

/// The floating-point capabilities of each width the device has.
fn fp_configs(i: &PhysicalInfo) -> FpConfigs {
    let d = &i.details;
    FpConfigs {
        half: fp_capabilities(i.optional.float16, d.float_controls.f16),
        single: fp_capabilities(true, d.float_controls.f32),
        double: fp_capabilities(i.optional.float64, d.float_controls.f64),
    }
}

/// Native command buffers: secondary command buffers, with the updates of
/// [`UPDATE_CAPS`] and no child command buffers.
fn command_buffer_caps() -> CommandBufferCaps {
    CommandBufferCaps {
        support: CommandBufferSupport::Native,
        update: UPDATE_CAPS,
        events: true,
        subgraphs: false,
        replay_path: cmdbuf_core::ReplayPath::Driver,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controls(rte: bool, rtz: bool, denorm: bool, inf_nan: bool) -> PrecisionControls {
        PrecisionControls {
            rounding_rte: rte,
            rounding_rtz: rtz,
            denorm_preserve: denorm,
            signed_zero_inf_nan_preserve: inf_nan,
        }
    }

    #[test]
    fn caches_are_the_hosts_for_cpus_and_nvidias_figures_for_its_gpus() {
        let host = cmdbuf_core::adapter::toolbox::host_cache::last_level_cache();
        let cpu = global_mem_cache(vk::PhysicalDeviceType::CPU, 0x10005, 0);
        assert_eq!((cpu.size, cpu.line_size), (host.map(|c| c.size), host.map(|c| c.line)));
        let h200 = global_mem_cache(vk::PhysicalDeviceType::DISCRETE_GPU, NVIDIA, 0x2335);
        assert_eq!((h200.size, h200.line_size), (Some(52_428_800), Some(128)));
        let unlisted = global_mem_cache(vk::PhysicalDeviceType::DISCRETE_GPU, NVIDIA, 0x1234);
        assert_eq!((unlisted.size, unlisted.line_size), (None, Some(128)));
        let other = global_mem_cache(vk::PhysicalDeviceType::DISCRETE_GPU, 0x1002, 0x744c);
        assert_eq!(other, GlobalMemCache { kind: CacheType::None, line_size: None, size: None });
    }

    #[test]
    fn float_controls_become_fp_capabilities() {
        // lavapipe's 32-bit controls: RTE and inf/NaN preservation.
        assert_eq!(
            fp_capabilities(true, controls(true, false, false, true)),
            FpCapabilities::ROUND_TO_NEAREST | FpCapabilities::INF_NAN
        );
        assert_eq!(
            fp_capabilities(true, controls(true, true, true, true)),
            FpCapabilities::ROUND_TO_NEAREST
                | FpCapabilities::ROUND_TO_ZERO
                | FpCapabilities::DENORM
                | FpCapabilities::INF_NAN
        );
        assert_eq!(fp_capabilities(true, PrecisionControls::default()), FpCapabilities::ROUND_TO_NEAREST);
        assert_eq!(fp_capabilities(false, controls(true, true, true, true)), FpCapabilities::empty());
    }

    #[test]
    fn atomics_follow_the_memory_model() {
        let none = atomic_caps(OptionalFeatures::default());
        assert_eq!(none.memory_orders, MemoryOrders::RELAXED);
        assert!(!none.int64);
        let model = atomic_caps(OptionalFeatures {
            memory_model: true,
            memory_model_device_scope: true,
            int64_atomics: true,
            ..OptionalFeatures::default()
        });
        assert!(model.int64);
        assert!(!model.memory_orders.contains(MemoryOrders::SEQ_CST));
        assert!(model.memory_orders.contains(MemoryOrders::ACQ_REL));
        assert!(
            model.memory_scopes.contains(MemoryScopes::DEVICE) && !model.memory_scopes.contains(MemoryScopes::SYSTEM)
        );
        let workgroup_only = atomic_caps(OptionalFeatures { memory_model: true, ..OptionalFeatures::default() });
        assert!(!workgroup_only.memory_scopes.contains(MemoryScopes::DEVICE));
    }

    #[test]
    fn subgroup_sizes() {
        let lavapipe = SubgroupProperties { compute: true, size: 8, range: Some((8, 8)), max_per_workgroup: Some(32) };
        assert_eq!(
            sub_groups(lavapipe, 1024),
            SubGroups { sizes: vec![8], max_per_work_group: 32, independent_forward_progress: false }
        );
        let ranged = SubgroupProperties { compute: true, size: 32, range: Some((8, 64)), max_per_workgroup: None };
        let s = sub_groups(ranged, 1024);
        assert_eq!(s.sizes, vec![8, 16, 32, 64]);
        assert_eq!(s.max_per_work_group, 128);
        let fixed = SubgroupProperties { compute: true, size: 32, range: None, max_per_workgroup: None };
        assert_eq!(sub_groups(fixed, 1000).sizes, vec![32]);
        assert_eq!(sub_groups(fixed, 1000).max_per_work_group, 32);
        assert!(sub_groups(SubgroupProperties::default(), 1024).sizes.is_empty());
    }

    #[test]
    fn spirv_versions_by_vulkan_version() {
        assert_eq!(
            spirv_versions(vk::API_VERSION_1_2),
            "SPIR-V_1.0 SPIR-V_1.1 SPIR-V_1.2 SPIR-V_1.3 SPIR-V_1.4 SPIR-V_1.5"
        );
        assert!(spirv_versions(vk::API_VERSION_1_3).ends_with("SPIR-V_1.6"));
    }
}
