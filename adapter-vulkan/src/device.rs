//! The Vulkan instance, its platform and devices: discovery, requirements,
//! and the [`DeviceInfo`] each device reports.
//!
//! The logical device is created when the first context of a device is, so
//! that listing devices costs no device memory and no threads.

use std::ffi::CStr;
use std::sync::Arc;

use ash::vk;
use parking_lot::Mutex;
use ur_core::adapter::{ContextImpl, DeviceImpl, PlatformImpl};
use ur_core::{
    CommandBufferCaps, CommandBufferSupport, DeviceInfo, DeviceType, Result, SourceForm, UpdateCapabilities, UsmKinds,
};

use crate::context::VulkanContext;
use crate::conv::{device_type, vendor_name, version_string};
use crate::runtime::Runtime;

/// The lowest device API version the adapter uses (timeline semaphores,
/// buffer device addresses and 8-bit storage are core from 1.2).
pub(crate) const MIN_API: u32 = vk::API_VERSION_1_2;

/// The Vulkan loader and one instance.
pub(crate) struct Instance {
    /// Keeps the loader library open while the instance lives.
    _entry: ash::Entry,
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
            .application_name(c"ur-rs")
            .engine_name(c"ur-rs")
            .engine_version(1)
            .api_version(api_version);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: `info` and what it points to live across the call.
        let raw = unsafe { entry.create_instance(&info, None) }.map_err(|e| format!("vkCreateInstance failed: {e}"))?;
        Ok(Arc::new(Instance { _entry: entry, raw, api_version }))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: every object created from the instance holds an `Arc` of it,
        // so this runs after all of them are destroyed.
        unsafe { self.raw.destroy_instance(None) };
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
    let missing: Vec<&str> = [
        (f12.buffer_device_address, "bufferDeviceAddress"),
        (f12.timeline_semaphore, "timelineSemaphore"),
        (f12.storage_buffer8_bit_access, "storageBuffer8BitAccess"),
        (core.shader_int64, "shaderInt64"),
    ]
    .iter()
    .filter(|(present, _)| *present == vk::FALSE)
    .map(|(_, name)| *name)
    .collect();
    if !missing.is_empty() {
        return Err(format!("{name}: lacks {}", missing.join(", ")));
    }

    // SAFETY: plain queries of an enumerated physical device.
    let families = unsafe { raw.get_physical_device_queue_family_properties(physical) };
    let compute = |f: &vk::QueueFamilyProperties| f.queue_flags.contains(vk::QueueFlags::COMPUTE) && f.queue_count > 0;
    let family = families
        .iter()
        .position(|f| compute(f) && f.timestamp_valid_bits > 0)
        .or_else(|| families.iter().position(compute))
        .ok_or_else(|| format!("{name}: no queue family with compute"))?;
    let family_props = families[family];

    // SAFETY: as above.
    let memory = unsafe { raw.get_physical_device_memory_properties(physical) };
    let mut max_alloc = v11.max_memory_allocation_size;
    if api_version >= vk::API_VERSION_1_3 {
        let mut v13 = vk::PhysicalDeviceVulkan13Properties::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut v13);
        // SAFETY: Vulkan 1.3 structures, queried on a 1.3 device.
        unsafe { raw.get_physical_device_properties2(physical, &mut props2) };
        max_alloc = max_alloc.min(v13.max_buffer_size);
    }
    let largest_heap =
        memory.memory_heaps[..memory.memory_heap_count as usize].iter().map(|h| h.size).max().unwrap_or(0);
    max_alloc = max_alloc.min(largest_heap);

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
        compute_units: compute_units(instance, physical),
    })
}

/// Streaming multiprocessors where the driver reports them
/// (`VK_NV_shader_sm_builtins`), else 1: Vulkan has no general query.
fn compute_units(instance: &Instance, physical: vk::PhysicalDevice) -> u32 {
    // SAFETY: a plain query of an enumerated physical device.
    let extensions = unsafe { instance.raw.enumerate_device_extension_properties(physical) }.unwrap_or_default();
    let has_sm = extensions.iter().any(|e| e.extension_name_as_c_str() == Ok(vk::NV_SHADER_SM_BUILTINS_NAME));
    if !has_sm {
        return 1;
    }
    let mut sm = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut sm);
    // SAFETY: the device supports the extension whose structure is chained.
    unsafe { instance.raw.get_physical_device_properties2(physical, &mut props2) };
    sm.shader_sm_count.max(1)
}

/// The platform: one Vulkan instance and its usable devices.
pub(crate) struct VulkanPlatform {
    pub(crate) instance: Arc<Instance>,
    pub(crate) devices: Vec<Arc<VulkanDevice>>,
}

impl VulkanPlatform {
    /// Creates the instance and lists the devices that meet the adapter's
    /// requirements; `Err` names why none does.
    pub(crate) fn new() -> std::result::Result<VulkanPlatform, String> {
        let instance = Instance::new()?;
        // SAFETY: a plain query of a live instance.
        let physicals = unsafe { instance.raw.enumerate_physical_devices() }
            .map_err(|e| format!("vkEnumeratePhysicalDevices failed: {e}"))?;
        let mut devices = Vec::new();
        let mut rejected = Vec::new();
        for physical in physicals {
            match inspect(&instance, physical) {
                Ok(info) => {
                    tracing::debug!(device = %info.name, driver = %info.driver, "Vulkan device usable");
                    devices.push(Arc::new(VulkanDevice::new(instance.clone(), info)));
                }
                Err(why) => {
                    tracing::debug!(%why, "Vulkan device skipped");
                    rejected.push(why);
                }
            }
        }
        if devices.is_empty() {
            return Err(if rejected.is_empty() {
                "the Vulkan loader lists no device".to_string()
            } else {
                format!("no Vulkan device meets the adapter's requirements: {}", rejected.join("; "))
            });
        }
        Ok(VulkanPlatform { instance, devices })
    }
}

impl PlatformImpl for VulkanPlatform {
    fn name(&self) -> String {
        "Vulkan".into()
    }

    fn version(&self) -> String {
        version_string(self.instance.api_version)
    }

    fn devices(&self) -> Vec<Arc<dyn DeviceImpl>> {
        self.devices.iter().map(|d| d.clone() as Arc<dyn DeviceImpl>).collect()
    }
}

/// A physical device; its logical device and threads start with its first context.
pub(crate) struct VulkanDevice {
    instance: Arc<Instance>,
    info: PhysicalInfo,
    runtime: Mutex<Option<Arc<Runtime>>>,
}

impl VulkanDevice {
    fn new(instance: Arc<Instance>, info: PhysicalInfo) -> VulkanDevice {
        VulkanDevice { instance, info, runtime: Mutex::new(None) }
    }

    /// The device's runtime, created on first use.
    pub(crate) fn runtime(&self) -> Result<Arc<Runtime>> {
        let mut slot = self.runtime.lock();
        if let Some(rt) = &*slot {
            return Ok(rt.clone());
        }
        let rt = Runtime::new(self.instance.clone(), &self.info)?;
        *slot = Some(rt.clone());
        Ok(rt)
    }
}

/// The update capabilities of native command buffers: all of them (argument
/// blocks and indirect dispatch for arguments and sizes, re-recording for
/// local sizes and kernels, resolution at enqueue for events).
pub(crate) const UPDATE_CAPS: UpdateCapabilities = UpdateCapabilities::all();

impl DeviceImpl for VulkanDevice {
    fn info(&self) -> DeviceInfo {
        let i = &self.info;
        let l = &i.limits;
        let global_mem: u64 = i.memory.memory_heaps[..i.memory.memory_heap_count as usize]
            .iter()
            .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
            .map(|h| h.size)
            .sum();
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
            usm_host_addressable: device_type(i.device_type) == DeviceType::Cpu,
            queue_profiling: i.timestamp_bits > 0,
            out_of_order_queues: true,
            source_forms: vec![SourceForm::SpirV],
            command_buffer: CommandBufferCaps {
                support: CommandBufferSupport::Native,
                update: UPDATE_CAPS,
                events: true,
                subgraphs: false,
            },
        }
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        let max_group = self.info.limits.max_compute_work_group_invocations as usize;
        Ok(Arc::new(VulkanContext::new(self.runtime()?, max_group)))
    }
}
