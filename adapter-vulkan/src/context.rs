//! Contexts: memory, programs, queues, command buffers and user events of
//! one device. Every context of a device shares its runtime.

use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;

use crate::command_buffer::VkCommandBuffer;
use crate::event::VkEvent;
use crate::memory::{MemKind, VkMemBuffer, VkUsm};
use crate::program::VkProgram;
use crate::queue::VkQueue;
use crate::shared::DeviceShared;

pub(crate) struct VulkanContext {
    rt: Arc<DeviceShared>,
    max_group: usize,
}

impl VulkanContext {
    pub(crate) fn new(rt: Arc<DeviceShared>, max_group: usize) -> VulkanContext {
        VulkanContext { rt, max_group }
    }
}

impl VulkanContext {
    /// Whether `other` is a context of the same logical device as this one.
    fn same_device(&self, other: &dyn ContextImpl) -> bool {
        (other as &dyn std::any::Any).downcast_ref::<VulkanContext>().is_some_and(|o| Arc::ptr_eq(&o.rt, &self.rt))
    }
}

impl ContextImpl for VulkanContext {
    /// The `VkDevice`.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(ash::vk::Handle::as_raw(self.rt.gpu.device.handle())))
    }

    /// Contexts of one device: their events are points on the same lanes'
    /// timelines, which a submission waits for as for its own context's.
    fn waits_on_events_of(&self, other: &dyn ContextImpl) -> bool {
        self.same_device(other)
    }

    /// Contexts of one device: their buffers are `VkBuffer`s of the same
    /// logical device.
    fn uses_buffers_of(&self, other: &dyn ContextImpl) -> bool {
        self.same_device(other)
    }

    unsafe fn usm_alloc(&self, kind: UsmKind, size: usize, align: usize) -> Result<Box<dyn UsmImpl>> {
        let kind = match kind {
            UsmKind::Device => MemKind::Device,
            UsmKind::Host => MemKind::Host,
            UsmKind::Shared => MemKind::Shared,
        };
        Ok(Box::new(VkUsm::new(&self.rt, kind, size as u64, align as u64)?))
    }

    unsafe fn buffer_create(&self, flags: MemFlags, size: usize, init: Option<&[u8]>) -> Result<Box<dyn BufferImpl>> {
        let kind = if flags.contains(MemFlags::ALLOC_HOST_POINTER) { MemKind::Host } else { MemKind::Device };
        Ok(Box::new(VkMemBuffer::new(&self.rt, kind, size as u64, init)?))
    }

    /// Imported with `VK_EXT_external_memory_host` and used in place where
    /// the device imports host memory (lavapipe, NVIDIA, AMD, Intel); a copy
    /// in device memory elsewhere.
    unsafe fn buffer_over_host(
        &self,
        _flags: MemFlags,
        host: std::ptr::NonNull<u8>,
        size: usize,
    ) -> Result<Box<dyn BufferImpl>> {
        // SAFETY: the memory stays valid for the buffer's life (the trait's contract).
        Ok(Box::new(unsafe { VkMemBuffer::over_host(&self.rt, host, size as u64)? }))
    }

    unsafe fn program_create(
        &self,
        bundle: &ProgramBundle,
        _form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        cmdbuf_core::program::options_ignored(options, "Vulkan compiles SPIR-V without options");
        Ok(Box::new(VkProgram::new(&self.rt.gpu, bundle, self.max_group)?))
    }

    unsafe fn queue_create(&self, properties: QueueProperties) -> Result<Box<dyn QueueImpl>> {
        Ok(Box::new(VkQueue::new(self.rt.clone(), properties)?))
    }

    /// A `VkQueue` of the device's lanes (compared, never called): a new
    /// in-order queue without profiling submitting to it (a `VkQueue` has
    /// no such properties, and Vulkan queues are never destroyed, so
    /// ownership changes nothing).
    unsafe fn queue_from_native(
        &self,
        handle: cmdbuf_core::NativeHandle,
        _ownership: cmdbuf_core::Ownership,
    ) -> Result<(Box<dyn QueueImpl>, QueueProperties)> {
        let lane = self
            .rt
            .lane_of(handle.0)
            .ok_or_else(|| cmdbuf_core::err!(InvalidQueue, "{handle:?} is not a VkQueue of this context's device"))?;
        let properties = QueueProperties::default();
        Ok((Box::new(VkQueue::on_lane(self.rt.clone(), lane, properties)?), properties))
    }

    unsafe fn command_buffer_create(&self, desc: &CommandBufferDesc) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        Ok(Box::new(VkCommandBuffer::new(self.rt.clone(), *desc)?))
    }

    fn user_event_create(&self) -> Result<Arc<dyn UserEventImpl>> {
        Ok(VkEvent::user())
    }
}
