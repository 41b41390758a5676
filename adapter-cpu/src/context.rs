//! Contexts: allocation, programs, queues and command buffers.

use std::sync::Arc;

use ur_core::adapter::{BufferImpl, CommandBufferImpl, ContextImpl, ProgramImpl, QueueImpl, UserEventImpl, UsmImpl};
use ur_core::{CommandBufferDesc, MemFlags, ProgramBundle, QueueProperties, Result, SourceForm, UsmKind};

use crate::command_buffer::CpuCommandBuffer;
use crate::event::CpuEvent;
use crate::memory::{CpuBuffer, CpuUsm, HostBlock};
use crate::pool::Pool;
use crate::program::CpuProgram;
use crate::queue::CpuQueue;

pub(crate) struct CpuContext {
    pub(crate) pool: Arc<Pool>,
    pub(crate) max_work_group_size: usize,
}

impl ContextImpl for CpuContext {
    unsafe fn usm_alloc(&self, _kind: UsmKind, size: usize, align: usize) -> Result<Box<dyn UsmImpl>> {
        Ok(Box::new(CpuUsm(HostBlock::new(size, align)?)))
    }

    unsafe fn buffer_create(&self, _flags: MemFlags, size: usize, init: Option<&[u8]>) -> Result<Box<dyn BufferImpl>> {
        let block = HostBlock::new(size, 0)?;
        if let Some(init) = init {
            // SAFETY: the block has `size` bytes and `init` has exactly `size`
            // bytes (the trait's contract); a fresh block cannot overlap it.
            unsafe { std::ptr::copy_nonoverlapping(init.as_ptr(), block.ptr(), size) };
        }
        Ok(Box::new(CpuBuffer(block)))
    }

    unsafe fn program_create(
        &self,
        bundle: &ProgramBundle,
        _form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        ur_core::program::options_ignored(options, "native kernels are already compiled");
        Ok(Box::new(CpuProgram::new(bundle, self.max_work_group_size)?))
    }

    unsafe fn queue_create(&self, properties: QueueProperties) -> Result<Box<dyn QueueImpl>> {
        Ok(Box::new(CpuQueue::new(self.pool.clone(), properties)))
    }

    unsafe fn command_buffer_create(&self, desc: &CommandBufferDesc) -> Result<Box<dyn CommandBufferImpl>> {
        Ok(Box::new(CpuCommandBuffer::new(self.pool.clone(), *desc)))
    }

    fn user_event_create(&self) -> Result<Arc<dyn UserEventImpl>> {
        Ok(CpuEvent::pending(false))
    }
}
