//! Contexts: allocation, programs, queues and command buffers.

use std::any::Any;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use cmdbuf_core::adapter::ComposePart;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{AdoptedBuffer, Ownership};

use crate::command_buffer::CpuCommandBuffer;
use crate::event::CpuEvent;
use crate::memory::{CpuBuffer, CpuUsm, HostBlock};
use crate::pool::Pool;
use crate::program::CpuProgram;
use crate::queue::CpuQueue;
use crate::units::CpuDevice;

/// Buffers by host address: their memory (not kept alive), size and flags.
type LiveBuffers = HashMap<u64, (Weak<HostBlock>, usize, MemFlags)>;

pub(crate) struct CpuContext {
    pub(crate) pool: Arc<Pool>,
    pub(crate) max_work_group_size: usize,
    /// The context's buffers by native handle (their host address), with
    /// their size and flags: the only values `buffer_from_native` adopts.
    pub(crate) buffers: Mutex<LiveBuffers>,
}

impl CpuContext {
    /// Wraps a block as a buffer, listed by its address so that its native
    /// handle can be adopted.
    fn register_buffer(&self, block: HostBlock, size: usize, flags: MemFlags) -> Box<dyn BufferImpl> {
        let block = Arc::new(block);
        let mut buffers = self.buffers.lock();
        buffers.retain(|_, (live, _, _)| live.strong_count() > 0);
        buffers.insert(block.ptr() as u64, (Arc::downgrade(&block), size, flags));
        Box::new(CpuBuffer(block))
    }
}

impl ContextImpl for CpuContext {
    /// Every CPU context's events are `CpuEvent`s whose waiters are
    /// continuations run by whichever thread completes them, whatever pool
    /// (device or sub-device) runs the work: a queue of any CPU context
    /// waits for them as for its own, with no thread blocked. A context
    /// wrapped for fault injection is another adapter's here.
    fn waits_on_events_of(&self, other: &dyn ContextImpl) -> bool {
        (other as &dyn Any).downcast_ref::<CpuContext>().is_some()
    }

    /// Any two CPU contexts: every buffer is the process's memory.
    fn uses_buffers_of(&self, other: &dyn ContextImpl) -> bool {
        (other as &dyn Any).downcast_ref::<CpuContext>().is_some()
    }

    /// Any two CPU contexts: their command buffers are DAGs of commands on
    /// the process's memory, which one DAG can hold together.
    fn composes_with(&self, other: &dyn ContextImpl) -> bool {
        (other as &dyn Any).downcast_ref::<CpuContext>().is_some()
    }

    unsafe fn compose_command_buffers(
        &self,
        parts: &mut [ComposePart<'_>],
    ) -> Result<Box<dyn ExecutableCommandBufferImpl>> {
        crate::command_buffer::compose(self.pool.clone(), parts)
    }

    unsafe fn usm_alloc(&self, _kind: UsmKind, size: usize, align: usize) -> Result<Box<dyn UsmImpl>> {
        Ok(Box::new(CpuUsm(HostBlock::new(size, align)?)))
    }

    unsafe fn buffer_create(&self, flags: MemFlags, size: usize, init: Option<&[u8]>) -> Result<Box<dyn BufferImpl>> {
        let block = HostBlock::new(size, 0)?;
        if let Some(init) = init {
            // SAFETY: the block has `size` bytes and `init` has exactly `size`
            // bytes (the trait's contract); a fresh block cannot overlap it.
            unsafe { std::ptr::copy_nonoverlapping(init.as_ptr(), block.ptr(), size) };
        }
        Ok(self.register_buffer(block, size, flags))
    }

    /// The lent memory is the buffer's storage: kernels and copies use it in place.
    unsafe fn buffer_over_host(&self, flags: MemFlags, host: NonNull<u8>, size: usize) -> Result<Box<dyn BufferImpl>> {
        Ok(self.register_buffer(HostBlock::lent(host), size, flags))
    }

    /// A buffer's native handle is its host address: adopting one shares the
    /// memory of the live buffer of this context at that address (ownership
    /// means nothing for memory that is reference-counted here).
    unsafe fn buffer_from_native(&self, handle: NativeHandle, _ownership: Ownership) -> Result<AdoptedBuffer> {
        let buffers = self.buffers.lock();
        let (block, size, flags) = buffers
            .get(&handle.0)
            .and_then(|(block, size, flags)| Some((block.upgrade()?, *size, *flags)))
            .ok_or_else(|| {
                err!(InvalidMemObject, "{handle:?} is not the host address of a live buffer of this context")
            })?;
        Ok(AdoptedBuffer { imp: Box::new(CpuBuffer(block)), size, flags })
    }

    unsafe fn program_create(
        &self,
        bundle: &ProgramBundle,
        _form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        cmdbuf_core::program::options_ignored(options, "native kernels are already compiled");
        Ok(Box::new(CpuProgram::new(bundle, self.max_work_group_size)?))
    }

    unsafe fn queue_create(&self, properties: QueueProperties) -> Result<Box<dyn QueueImpl>> {
        Ok(Box::new(CpuQueue::new(self.pool.clone(), properties)))
    }

    /// A sub-device's queue runs on the sub-device's own workers; the
    /// context's memory is host memory, which every worker reaches.
    unsafe fn sub_device_queue_create(
        &self,
        device: &dyn DeviceImpl,
        properties: QueueProperties,
    ) -> Result<Box<dyn QueueImpl>> {
        let device = downcast::<CpuDevice>(device as &dyn Any, "the sub-device")?;
        Ok(Box::new(CpuQueue::new(device.pool()?, properties)))
    }

    unsafe fn command_buffer_create(&self, desc: &CommandBufferDesc) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        Ok(Box::new(CpuCommandBuffer::new(self.pool.clone(), *desc)))
    }

    /// A sub-device's command buffer runs on the sub-device's workers.
    unsafe fn sub_device_command_buffer_create(
        &self,
        device: &dyn DeviceImpl,
        desc: &CommandBufferDesc,
    ) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        let device = downcast::<CpuDevice>(device as &dyn Any, "the sub-device")?;
        Ok(Box::new(CpuCommandBuffer::new(device.pool()?, *desc)))
    }

    fn user_event_create(&self) -> Result<Arc<dyn UserEventImpl>> {
        Ok(CpuEvent::pending(false))
    }
}
