//! The Vulkan instance and what a device is: discovery, requirements, and
//! what each device reports in its
//! [`DeviceInfo`](cmdbuf_core::DeviceInfo). The platform and the
//! devices' behaviour (`DeviceImpl`) are in `platform.rs`, above every
//! object.

use std::ffi::CStr;
use std::sync::Arc;

use ash::vk;
use cmdbuf_core::UpdateCapabilities;

use crate::conv::{vendor_name, version_string};

/// The lowest device API version the adapter uses (timeline semaphores,
/// buffer device addresses and 8-bit storage are core from 1.2).
pub(crate) const MIN_API: u32 = vk::API_VERSION_1_2;

/// The Vulkan loader and one instance.
pub(crate) struct Instance {
    /// The loader library, open while the instance lives.
    pub(crate) entry: ash::Entry,
    pub(crate) raw: ash::Instance,
    /// The API version the instance was created for.
    pub(crate) api_version: u32,
}

impl Instance {
    /// Opens the loader and creates an instance; `Err` says why Vulkan is absent.
    pub(crate) fn new() -> std::result::Result<Arc<Instance>, String> {
        // SAFETY: loading the loader library runs its initialisers, which is
        // what `Entry::load` documents as its contract; nothing else runs yet.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("the Vulkan loader could not be opened: {e}"))?;
        // SAFETY: a plain query of the loaded entry points.
        let loader_version = match unsafe { entry.try_enumerate_instance_version() } {
            Ok(Some(v)) => v,
            Ok(None) => vk::API_VERSION_1_0,
            Err(e) => return Err(format!("vkEnumerateInstanceVersion failed: {e}")),
        };
        if loader_version < MIN_API {
            return Err(format!(
                "the Vulkan loader offers version {}, the adapter needs {}",
                version_string(loader_version),
                version_string(MIN_API)
            ));
        }
        let api_version = loader_version.min(vk::API_VERSION_1_3);
        let app = vk::ApplicationInfo::default()
            .application_name(c"cmdbuf")
            .engine_name(c"cmdbuf")
            .engine_version(1)
            .api_version(api_version);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: `info` and what it points to live across the call.
        let raw = unsafe { entry.create_instance(&info, None) }.map_err(|e| format!("vkCreateInstance failed: {e}"))?;
        crate::exit::after_driver_loads();
        Ok(Arc::new(Instance { entry, raw, api_version }))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        let start = std::time::Instant::now();
        // SAFETY: every object created from the instance holds an `Arc` of it,
        // so this runs after all of them are destroyed.
        unsafe { self.raw.destroy_instance(None) };
        tracing::debug!(took = ?start.elapsed(), "Vulkan instance destroyed");
    }
}

/// What the adapter needs to know about a physical device.
pub(crate) struct PhysicalInfo {
    pub(crate) physical: vk::PhysicalDevice,
    pub(crate) name: String,
    pub(crate) vendor: String,
    pub(crate) driver: String,
    pub(crate) device_type: vk::PhysicalDeviceType,
    pub(crate) limits: vk::PhysicalDeviceLimits,
    pub(crate) memory: vk::PhysicalDeviceMemoryProperties,
    /// The queue family used, and how many of its queues.
    pub(crate) family: u32,
    pub(crate) family_queues: u32,
    /// Valid bits of the family's timestamps (0: no timestamps).
    pub(crate) timestamp_bits: u32,
    pub(crate) max_alloc: u64,
    pub(crate) compute_units: u32,
    /// What [`info::device_info`](crate::info::device_info) reports beyond the above.
    pub(crate) details: Details,
    /// Features the logical device enables where present.
    pub(crate) optional: OptionalFeatures,
}

/// Identity and shader properties, for the device's [`DeviceInfo`](cmdbuf_core::DeviceInfo).
#[derive(Clone, Debug)]
pub(crate) struct Details {
    pub(crate) vendor_id: u32,
    pub(crate) device_id: u32,
    pub(crate) uuid: [u8; 16],
    /// Domain, bus, device, function (`VK_EXT_pci_bus_info`).
    pub(crate) pci: Option<[u32; 4]>,
    /// The device's API version, capped at the instance's.
    pub(crate) api_version: u32,
    /// The API version the device reports.
    pub(crate) reported_api_version: u32,
    pub(crate) float_controls: FloatControls,
    pub(crate) subgroups: SubgroupProperties,
    /// `VK_EXT_memory_budget`.
    pub(crate) memory_budget: bool,
}

/// The float controls of one precision (`VkPhysicalDeviceFloatControlsProperties`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PrecisionControls {
    pub(crate) denorm_preserve: bool,
    pub(crate) rounding_rte: bool,
    pub(crate) rounding_rtz: bool,
    pub(crate) signed_zero_inf_nan_preserve: bool,
}

/// Float controls of 16-, 32- and 64-bit floats.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FloatControls {
    pub(crate) f16: PrecisionControls,
    pub(crate) f32: PrecisionControls,
    pub(crate) f64: PrecisionControls,
}

/// Subgroups of compute shaders.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SubgroupProperties {
    /// Whether compute shaders have subgroups at all.
    pub(crate) compute: bool,
    /// The default size.
    pub(crate) size: u32,
    /// The range of sizes (`subgroupSizeControl`), where the device has it
    /// for compute shaders.
    pub(crate) range: Option<(u32, u32)>,
    /// Most subgroups in one work-group (`maxComputeWorkgroupSubgroups`).
    pub(crate) max_per_workgroup: Option<u32>,
}

/// Optional features the logical device enables when the physical device has them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OptionalFeatures {
    /// `shaderFloat64`.
    pub(crate) float64: bool,
    /// `shaderFloat16`.
    pub(crate) float16: bool,
    /// `shaderBufferInt64Atomics` and `shaderSharedInt64Atomics`.
    pub(crate) int64_atomics: bool,
    /// `vulkanMemoryModel`.
    pub(crate) memory_model: bool,
    /// `vulkanMemoryModelDeviceScope`.
    pub(crate) memory_model_device_scope: bool,
    /// `VK_EXT_calibrated_timestamps` with the device and `CLOCK_MONOTONIC`
    /// time domains.
    pub(crate) calibrated_timestamps: bool,
    /// `VK_EXT_external_memory_host`: the alignment of imported host memory
    /// (`minImportedHostPointerAlignment`), where the device imports it.
    pub(crate) host_import_align: Option<u64>,
}

fn c_name(bytes: &[std::ffi::c_char]) -> String {
    // SAFETY: reinterpreting `c_char`s as bytes of the same size.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast(), bytes.len()) };
    CStr::from_bytes_until_nul(bytes).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Inspects a physical device; `Err` says what it lacks.
pub(crate) fn inspect(instance: &Instance, physical: vk::PhysicalDevice) -> std::result::Result<PhysicalInfo, String> {
    let raw = &instance.raw;
    // SAFETY: `physical` was enumerated from this instance.
    let properties = unsafe { raw.get_physical_device_properties(physical) };
    let name = c_name(&properties.device_name);
    let api_version = properties.api_version.min(instance.api_version);
    if api_version < MIN_API {
        return Err(format!(
            "{name}: Vulkan {} (the adapter needs {})",
            version_string(properties.api_version),
            version_string(MIN_API)
        ));
    }

    let mut v11 = vk::PhysicalDeviceVulkan11Properties::default();
    let mut v12 = vk::PhysicalDeviceVulkan12Properties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut v11).push_next(&mut v12);
    // SAFETY: the chained structures are core in the device's API version (>= 1.2).
    unsafe { raw.get_physical_device_properties2(physical, &mut props2) };
    let driver = format!(
        "{} {} (Vulkan {})",
        c_name(&v12.driver_name),
        c_name(&v12.driver_info),
        version_string(properties.api_version)
    );

    let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut features2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f12);
    // SAFETY: as above.
    unsafe { raw.get_physical_device_features2(physical, &mut features2) };
    let core = features2.features;
    let missing = missing_features(&core, &f12);
    if !missing.is_empty() {
        return Err(format!("{name}: lacks {}", missing.join(", ")));
    }

    let (family, family_props) =
        compute_family(instance, physical).ok_or_else(|| format!("{name}: no queue family with compute"))?;

    // SAFETY: as above.
    let memory = unsafe { raw.get_physical_device_memory_properties(physical) };
    let max_alloc = max_allocation(instance, physical, api_version, v11.max_memory_allocation_size, &memory);

    // SAFETY: a plain query of an enumerated physical device.
    let extensions = unsafe { raw.enumerate_device_extension_properties(physical) }.unwrap_or_default();
    let has = |wanted: &CStr| extensions.iter().any(|e| e.extension_name_as_c_str() == Ok(wanted));
    let optional = OptionalFeatures {
        calibrated_timestamps: has(vk::EXT_CALIBRATED_TIMESTAMPS_NAME) && calibrateable(instance, physical),
        host_import_align: has(vk::EXT_EXTERNAL_MEMORY_HOST_NAME).then(|| host_import_align(instance, physical)),
        ..optional_features(&core, &f12)
    };
    let details = Details {
        vendor_id: properties.vendor_id,
        device_id: properties.device_id,
        uuid: v11.device_uuid,
        pci: has(vk::EXT_PCI_BUS_INFO_NAME).then(|| pci_bus_info(instance, physical)),
        api_version,
        reported_api_version: properties.api_version,
        float_controls: float_controls(&v12),
        subgroups: subgroups(instance, physical, api_version, &v11, &has),
        memory_budget: has(vk::EXT_MEMORY_BUDGET_NAME),
    };

    Ok(PhysicalInfo {
        physical,
        name,
        vendor: vendor_name(properties.vendor_id),
        driver,
        device_type: properties.device_type,
        limits: properties.limits,
        memory,
        family: family as u32,
        family_queues: family_props.queue_count,
        timestamp_bits: family_props.timestamp_valid_bits,
        max_alloc,
        compute_units: compute_units(instance, physical, &has),
        details,
        optional,
    })
}

/// The required features the device lacks, by their Vulkan names.
fn missing_features(
    core: &vk::PhysicalDeviceFeatures,
    f12: &vk::PhysicalDeviceVulkan12Features<'_>,
) -> Vec<&'static str> {
    [
        (f12.buffer_device_address, "bufferDeviceAddress"),
        (f12.timeline_semaphore, "timelineSemaphore"),
        (f12.storage_buffer8_bit_access, "storageBuffer8BitAccess"),
        (core.shader_int64, "shaderInt64"),
    ]
    .iter()
    .filter(|(present, _)| *present == vk::FALSE)
    .map(|(_, name)| *name)
    .collect()
}

/// The queue family kernels run on, with its properties: one with compute
/// and timestamps, else one with compute.
fn compute_family(instance: &Instance, physical: vk::PhysicalDevice) -> Option<(usize, vk::QueueFamilyProperties)> {
    // SAFETY: plain queries of an enumerated physical device.
    let families = unsafe { instance.raw.get_physical_device_queue_family_properties(physical) };
    let compute = |f: &vk::QueueFamilyProperties| f.queue_flags.contains(vk::QueueFlags::COMPUTE) && f.queue_count > 0;
    let family = families
        .iter()
        .position(|f| compute(f) && f.timestamp_valid_bits > 0)
        .or_else(|| families.iter().position(compute))?;
    Some((family, families[family]))
}

/// The largest allocation: Vulkan 1.1's limit, Vulkan 1.3's largest buffer
/// and the largest heap, whichever is least.
fn max_allocation(
    instance: &Instance,
    physical: vk::PhysicalDevice,
    api_version: u32,
    max_memory_allocation_size: u64,
    memory: &vk::PhysicalDeviceMemoryProperties,
) -> u64 {
    let mut max_alloc = max_memory_allocation_size;
    if api_version >= vk::API_VERSION_1_3 {
        let mut v13 = vk::PhysicalDeviceVulkan13Properties::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut v13);
        // SAFETY: Vulkan 1.3 structures, queried on a 1.3 device.
        unsafe { instance.raw.get_physical_device_properties2(physical, &mut props2) };
        max_alloc = max_alloc.min(v13.max_buffer_size);
    }
    let largest_heap =
        memory.memory_heaps[..memory.memory_heap_count as usize].iter().map(|h| h.size).max().unwrap_or(0);
    max_alloc.min(largest_heap)
}

/// The optional features kernels may use, as the device reports them
/// (calibrated timestamps are the caller's: they need an extension).
fn optional_features(
    core: &vk::PhysicalDeviceFeatures,
    f12: &vk::PhysicalDeviceVulkan12Features<'_>,
) -> OptionalFeatures {
    OptionalFeatures {
        float64: core.shader_float64 == vk::TRUE,
        float16: f12.shader_float16 == vk::TRUE,
        int64_atomics: f12.shader_buffer_int64_atomics == vk::TRUE && f12.shader_shared_int64_atomics == vk::TRUE,
        memory_model: f12.vulkan_memory_model == vk::TRUE,
        memory_model_device_scope: f12.vulkan_memory_model == vk::TRUE
            && f12.vulkan_memory_model_device_scope == vk::TRUE,
        calibrated_timestamps: false,
        host_import_align: None,
    }
}

/// `minImportedHostPointerAlignment`; the caller checked that the device
/// lists `VK_EXT_external_memory_host`.
fn host_import_align(instance: &Instance, physical: vk::PhysicalDevice) -> u64 {
    let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
    // SAFETY: the chained structure is the listed extension's.
    unsafe { instance.raw.get_physical_device_properties2(physical, &mut props2) };
    host.min_imported_host_pointer_alignment.max(1)
}

fn precision(denorm: vk::Bool32, rte: vk::Bool32, rtz: vk::Bool32, inf_nan: vk::Bool32) -> PrecisionControls {
    PrecisionControls {
        denorm_preserve: denorm == vk::TRUE,
        rounding_rte: rte == vk::TRUE,
        rounding_rtz: rtz == vk::TRUE,
        signed_zero_inf_nan_preserve: inf_nan == vk::TRUE,
    }
}

fn float_controls(v12: &vk::PhysicalDeviceVulkan12Properties<'_>) -> FloatControls {
    FloatControls {
        f16: precision(
            v12.shader_denorm_preserve_float16,
            v12.shader_rounding_mode_rte_float16,
            v12.shader_rounding_mode_rtz_float16,
            v12.shader_signed_zero_inf_nan_preserve_float16,
        ),
        f32: precision(
            v12.shader_denorm_preserve_float32,
            v12.shader_rounding_mode_rte_float32,
            v12.shader_rounding_mode_rtz_float32,
            v12.shader_signed_zero_inf_nan_preserve_float32,
        ),
        f64: precision(
            v12.shader_denorm_preserve_float64,
            v12.shader_rounding_mode_rte_float64,
            v12.shader_rounding_mode_rtz_float64,
            v12.shader_signed_zero_inf_nan_preserve_float64,
        ),
    }
}

fn subgroups(
    instance: &Instance,
    physical: vk::PhysicalDevice,
    api_version: u32,
    v11: &vk::PhysicalDeviceVulkan11Properties<'_>,
    has: &dyn Fn(&CStr) -> bool,
) -> SubgroupProperties {
    let compute = v11.subgroup_supported_stages.contains(vk::ShaderStageFlags::COMPUTE);
    let mut out = SubgroupProperties { compute, size: v11.subgroup_size, range: None, max_per_workgroup: None };
    if !compute || (api_version < vk::API_VERSION_1_3 && !has(vk::EXT_SUBGROUP_SIZE_CONTROL_NAME)) {
        return out;
    }
    let mut control = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut control);
    // SAFETY: the structure is core in 1.3 or comes with the extension the
    // device lists.
    unsafe { instance.raw.get_physical_device_properties2(physical, &mut props2) };
    if control.required_subgroup_size_stages.contains(vk::ShaderStageFlags::COMPUTE) {
        out.range = Some((control.min_subgroup_size, control.max_subgroup_size));
    }
    out.max_per_workgroup = Some(control.max_compute_workgroup_subgroups).filter(|n| *n > 0);
    out
}

fn pci_bus_info(instance: &Instance, physical: vk::PhysicalDevice) -> [u32; 4] {
    let mut pci = vk::PhysicalDevicePCIBusInfoPropertiesEXT::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut pci);
    // SAFETY: the device lists VK_EXT_pci_bus_info, whose structure is chained.
    unsafe { instance.raw.get_physical_device_properties2(physical, &mut props2) };
    [pci.pci_domain, pci.pci_bus, pci.pci_device, pci.pci_function]
}

/// Streaming multiprocessors where the driver reports them
/// (`VK_NV_shader_sm_builtins`), else 1: Vulkan has no general query.
fn compute_units(instance: &Instance, physical: vk::PhysicalDevice, has: &dyn Fn(&CStr) -> bool) -> u32 {
    if !has(vk::NV_SHADER_SM_BUILTINS_NAME) {
        return 1;
    }
    let mut sm = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut sm);
    // SAFETY: the device supports the extension whose structure is chained.
    unsafe { instance.raw.get_physical_device_properties2(physical, &mut props2) };
    sm.shader_sm_count.max(1)
}

/// The update capabilities of native command buffers: all of them (argument
/// blocks and indirect dispatch for arguments and sizes, re-recording for
/// local sizes and kernels, resolution at enqueue for events).
pub(crate) const UPDATE_CAPS: UpdateCapabilities = UpdateCapabilities::all();

/// The host time domain matching cmdbuf-core's host clock, where Vulkan has one.
#[cfg(unix)]
pub(crate) const HOST_DOMAIN: Option<vk::TimeDomainEXT> = Some(vk::TimeDomainEXT::CLOCK_MONOTONIC);
#[cfg(not(unix))]
pub(crate) const HOST_DOMAIN: Option<vk::TimeDomainEXT> = None;

/// Whether the device calibrates its own clock against the host clock.
/// The caller checked that it lists `VK_EXT_calibrated_timestamps`.
pub(crate) fn calibrateable(instance: &Instance, physical: vk::PhysicalDevice) -> bool {
    let Some(host) = HOST_DOMAIN else { return false };
    let ext = ash::ext::calibrated_timestamps::Instance::new(&instance.entry, &instance.raw);
    // SAFETY: a plain query of an enumerated physical device that has the extension.
    match unsafe { ext.get_physical_device_calibrateable_time_domains(physical) } {
        Ok(domains) => domains.contains(&vk::TimeDomainEXT::DEVICE) && domains.contains(&host),
        Err(e) => {
            tracing::debug!(error = %e, "calibrateable time domains unavailable");
            false
        }
    }
}
