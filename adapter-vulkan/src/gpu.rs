//! The logical device and its fixed properties, which every Vulkan object
//! of the adapter holds: below everything that records, submits or
//! allocates.

use std::sync::Arc;

use ash::vk;

use crate::device::Instance;

/// The logical device and its fixed properties. Every Vulkan object of the
/// adapter holds an `Arc` of it, so the device is destroyed last.
pub(crate) struct Gpu {
    pub(crate) _instance: Arc<Instance>,
    pub(crate) device: ash::Device,
    pub(crate) family: u32,
    /// The one pipeline layout of every pipeline: an 8-byte push constant
    /// (the address of the argument block), no descriptor sets.
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) memory: vk::PhysicalDeviceMemoryProperties,
    /// `maxComputeWorkGroupCount`.
    pub(crate) max_groups: [u32; 3],
    /// Nanoseconds per timestamp tick.
    pub(crate) timestamp_period: f64,
    /// The valid bits of a timestamp (0: the family has no timestamps).
    pub(crate) timestamp_mask: u64,
    /// `vkGetCalibratedTimestampsEXT`, where the device calibrates its clock
    /// against the host's.
    pub(crate) calibrated: Option<ash::ext::calibrated_timestamps::Device>,
    /// `VK_EXT_external_memory_host` and its alignment, where the device
    /// imports host memory (buffers over lent host memory use it in place).
    pub(crate) host_import: Option<(ash::ext::external_memory_host::Device, u64)>,
    /// Whether a host thread waiting for an event polls the timeline first:
    /// not on a CPU device (lavapipe), whose work runs on the host's cores
    /// that the poll would take; there the waiting thread sleeps in
    /// `vkWaitSemaphores` itself.
    pub(crate) host_polls: bool,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        let start = std::time::Instant::now();
        // SAFETY: every object created from the device holds an `Arc` of this
        // value, so all are gone; waiting for idleness covers work submitted
        // by objects dropped while it ran.
        unsafe {
            let _ = self.device.device_wait_idle();
            let idle = start.elapsed();
            self.device.destroy_pipeline_layout(self.layout, None);
            self.device.destroy_device(None);
            // What a slow exit after a long run spends its time in.
            tracing::debug!(?idle, total = ?start.elapsed(), "Vulkan device destroyed");
        }
    }
}

/// Size in bytes of the push constants of every pipeline.
pub(crate) const PUSH_CONSTANT_BYTES: u32 = 8;
