//! The platform and the devices' behaviour: the Vulkan instance's usable
//! devices, and `DeviceImpl`, which makes contexts. Above every other
//! module: what a device is (`device.rs`) and the state its contexts share
//! (`shared.rs`) sit below the objects that name them.
//!
//! The logical device is created when the first context of a device is, so
//! that listing devices costs no device memory and no threads.

use std::sync::Arc;

use ash::vk;
use cmdbuf_core::DeviceInfo;
use cmdbuf_core::adapter::prelude::*;
use parking_lot::Mutex;

use crate::context::VulkanContext;
use crate::conv::version_string;
use crate::device::{Instance, PhysicalInfo, inspect};
use crate::shared::DeviceShared;

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
    /// The `VkInstance`.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(vk::Handle::as_raw(self.instance.raw.handle())))
    }

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
    pub(crate) info: PhysicalInfo,
    shared: Mutex<Option<Arc<DeviceShared>>>,
}

impl VulkanDevice {
    fn new(instance: Arc<Instance>, info: PhysicalInfo) -> VulkanDevice {
        VulkanDevice { instance, info, shared: Mutex::new(None) }
    }

    /// The state the device shares among its contexts, created on first use.
    pub(crate) fn shared(&self) -> Result<Arc<DeviceShared>> {
        let mut slot = self.shared.lock();
        if let Some(rt) = &*slot {
            return Ok(rt.clone());
        }
        let rt = DeviceShared::new(self.instance.clone(), &self.info)?;
        *slot = Some(rt.clone());
        Ok(rt)
    }
}

impl DeviceImpl for VulkanDevice {
    fn info(&self) -> DeviceInfo {
        crate::info::device_info(&self.info)
    }

    /// The `VkPhysicalDevice`.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(vk::Handle::as_raw(self.info.physical)))
    }

    fn free_memory(&self) -> Result<Option<u64>> {
        Ok(self.info.details.memory_budget.then(|| crate::info::free_memory(&self.instance, &self.info)))
    }

    fn timestamps(&self) -> Result<Timestamps> {
        crate::clock::timestamps(&*self.shared()?)
    }

    /// Every context of a device is over the device's one `VkDevice`, so
    /// two contexts of the same device share their USM (a copy between them
    /// is an ordinary copy on that device). Another physical device has no
    /// path: it could use this device's buffer addresses only inside one
    /// logical device of a device group (`vkEnumeratePhysicalDeviceGroups`),
    /// which this adapter does not create (one `VkDevice` per physical
    /// device), or through external memory imported on another physical
    /// device, which NVIDIA's driver does not allow between GPUs. Buffers
    /// move such data through the host instead.
    fn peer_access(&self, peer: &dyn DeviceImpl) -> Result<cmdbuf_core::PeerAccess> {
        let peer = cmdbuf_core::adapter::downcast::<VulkanDevice>(peer as &dyn std::any::Any, "the peer device")?;
        if std::ptr::eq(self, peer) {
            return Ok(cmdbuf_core::PeerAccess { supported: true, atomics: true });
        }
        Err(cmdbuf_core::err!(
            UnsupportedFeature,
            "Vulkan: USM of one VkDevice is not addressable from another (no multi-device group or cross-device external memory)"
        ))
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        let max_group = self.info.limits.max_compute_work_group_invocations as usize;
        Ok(Arc::new(VulkanContext::new(self.shared()?, max_group)))
    }

    /// Every context of the device is over the device's one `VkDevice`, so
    /// that is the only one adopted (compared, never called); the adapter
    /// created it and takes over no ownership of it.
    unsafe fn context_from_native(
        self: Arc<Self>,
        handle: cmdbuf_core::NativeHandle,
        ownership: cmdbuf_core::Ownership,
    ) -> Result<Arc<dyn ContextImpl>> {
        let rt = self.shared()?;
        if handle.0 != vk::Handle::as_raw(rt.gpu.device.handle()) {
            return Err(cmdbuf_core::err!(InvalidContext, "{handle:?} is not this device's VkDevice"));
        }
        if ownership == cmdbuf_core::Ownership::Transferred {
            return Err(cmdbuf_core::err!(
                UnsupportedFeature,
                "the VkDevice is the adapter's own: its ownership cannot be handed over"
            ));
        }
        let max_group = self.info.limits.max_compute_work_group_invocations as usize;
        Ok(Arc::new(VulkanContext::new(rt, max_group)))
    }
}

/// Test hook (`tests/clock.rs`): on every Vulkan device here, both ways of
/// reading the device clock agree: a submitted timestamp falls between two
/// calibrated pairs (where the device calibrates; elsewhere both are
/// submitted), and each pair's host time lies within the host clock around
/// it. The number of devices checked, or the first disagreement.
#[doc(hidden)]
pub fn check_clock_paths() -> std::result::Result<usize, String> {
    let platform = VulkanPlatform::new()?;
    for device in &platform.devices {
        let name = &device.info.name;
        let rt = device.shared().map_err(|e| format!("{name}: {e}"))?;
        let start = cmdbuf_core::host_clock_ns();
        let first = crate::clock::timestamps(&rt).map_err(|e| format!("{name}: {e}"))?;
        let submitted = crate::clock::submitted_timestamp(&rt).map_err(|e| format!("{name}: {e}"))?;
        let last = crate::clock::timestamps(&rt).map_err(|e| format!("{name}: {e}"))?;
        let end = cmdbuf_core::host_clock_ns();
        if !(first.device <= submitted.device && submitted.device <= last.device) {
            return Err(format!("{name}: device times out of order: {first:?} {submitted:?} {last:?}"));
        }
        if !(start <= first.host && first.host <= submitted.host && submitted.host <= last.host && last.host <= end) {
            return Err(format!("{name}: host times out of order: {start} {first:?} {submitted:?} {last:?} {end}"));
        }
    }
    Ok(platform.devices.len())
}
