//! Contexts: every context of a device shares the device's primary CUDA
//! context, so memory, modules and events of one device mix freely in the
//! driver; the front end keeps the API's contexts apart.
//!
//! This is a context's behaviour, `ContextImpl`, which makes queues, memory,
//! programs and command buffers: it sits above their modules. The context's
//! state, `CudaContext`, is defined with the device (`device/mod.rs`), so
//! that those modules can name it.

use std::any::Any;
use std::sync::Arc;

use cmdbuf_core::adapter::ComposePart;
use cmdbuf_core::adapter::prelude::*;

use crate::command_buffer::CudaCommandBuffer;
use crate::device::CudaContext;
use crate::event::CudaUserEvent;
use crate::memory::{CudaBuffer, CudaUsm};
use crate::program::CudaProgram;
use crate::queue::CudaQueue;

impl ContextImpl for CudaContext {
    /// A stream may wait on a `CUevent` of any context of the process
    /// (`cuStreamWaitEvent` across devices needs no peer access), and work
    /// held back on the host (see `hold`) is held in one list for every
    /// device, so a submission waiting for another device's held work is
    /// issued only after that work has recorded its event. A context wrapped
    /// for fault injection is another adapter's here.
    fn waits_on_events_of(&self, other: &dyn ContextImpl) -> bool {
        (other as &dyn Any).downcast_ref::<CudaContext>().is_some()
    }

    /// Contexts of one GPU: both are its primary context, whose addresses
    /// every buffer's device pointer is.
    fn uses_buffers_of(&self, other: &dyn ContextImpl) -> bool {
        (other as &dyn Any).downcast_ref::<CudaContext>().is_some_and(|o| Arc::ptr_eq(&o.dev, &self.dev))
    }

    /// Any two CUDA contexts, of one GPU or two: a CUDA graph holds nodes of
    /// several devices, each kernel, memcpy and memset node carrying its
    /// context (`command_buffer::compose`).
    fn composes_with(&self, other: &dyn ContextImpl) -> bool {
        (other as &dyn Any).downcast_ref::<CudaContext>().is_some()
    }

    unsafe fn compose_command_buffers(
        &self,
        parts: &mut [ComposePart<'_>],
    ) -> Result<Box<dyn ExecutableCommandBufferImpl>> {
        crate::command_buffer::compose(&self.dev, parts)
    }

    /// The `CUcontext` (the device's primary context).
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(self.dev.ctx.0 as u64))
    }

    unsafe fn usm_alloc(&self, kind: UsmKind, size: usize, align: usize) -> Result<Box<dyn UsmImpl>> {
        Ok(Box::new(CudaUsm::new(&self.dev, kind, size, align)?))
    }

    unsafe fn buffer_create(&self, flags: MemFlags, size: usize, init: Option<&[u8]>) -> Result<Box<dyn BufferImpl>> {
        Ok(Box::new(CudaBuffer::new(&self.dev, flags, size, init)?))
    }

    unsafe fn buffer_over_host(
        &self,
        _flags: MemFlags,
        host: std::ptr::NonNull<u8>,
        size: usize,
    ) -> Result<Box<dyn BufferImpl>> {
        // SAFETY: the memory stays valid for the buffer's life (the trait's contract).
        Ok(Box::new(unsafe { CudaBuffer::over_host(&self.dev, host, size)? }))
    }

    unsafe fn program_create(
        &self,
        bundle: &ProgramBundle,
        form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        Ok(Box::new(CudaProgram::new(&self.dev, bundle, form, options)?))
    }

    unsafe fn queue_create(&self, properties: QueueProperties) -> Result<Box<dyn QueueImpl>> {
        Ok(Box::new(CudaQueue::new(self.dev.clone(), properties)?))
    }

    /// A `CUstream` of the device's primary context: an in-order queue
    /// without profiling over it (a stream carries no such property).
    unsafe fn queue_from_native(
        &self,
        handle: cmdbuf_core::NativeHandle,
        ownership: cmdbuf_core::Ownership,
    ) -> Result<(Box<dyn QueueImpl>, QueueProperties)> {
        // CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name default streams,
        // whose synchronising modes cmdbuf does not offer.
        if handle.0 <= 2 {
            return Err(cmdbuf_core::err!(UnsupportedFeature, "CUDA's default streams are not adopted"));
        }
        let raw = handle.0 as cudarc::driver::sys::CUstream;
        self.dev.bind()?;
        let mut ctx: cudarc::driver::sys::CUcontext = std::ptr::null_mut();
        // SAFETY: a live stream (the trait's contract); writes one handle.
        unsafe { crate::driver::cu!(cuStreamGetCtx(raw, &mut ctx))? };
        if ctx != self.dev.ctx.0 {
            return Err(cmdbuf_core::err!(InvalidQueue, "the CUstream belongs to another CUDA context"));
        }
        let stream = crate::driver::Stream::from_raw(raw);
        Ok((Box::new(CudaQueue::adopt(self.dev.clone(), stream, ownership)), QueueProperties::default()))
    }

    /// A `CUmodule` loaded in the device's primary context.
    unsafe fn program_from_native(
        &self,
        handle: cmdbuf_core::NativeHandle,
        ownership: cmdbuf_core::Ownership,
    ) -> Result<cmdbuf_core::adapter::AdoptedProgram> {
        // SAFETY: the trait asks for a live native program of the backend's type, which on CUDA is a
        // `CUmodule` of the device's primary context (this method's doc; the only context this adapter
        // uses), as `adopt_module` requires.
        unsafe { crate::program::adopt_module(&self.dev, handle, ownership) }
    }

    /// A `CUfunction` of a module of the device's primary context.
    unsafe fn kernel_from_native(
        &self,
        handle: cmdbuf_core::NativeHandle,
        _ownership: cmdbuf_core::Ownership,
    ) -> Result<cmdbuf_core::adapter::AdoptedKernel> {
        // SAFETY: the trait asks for a live native kernel of the backend's type, which on CUDA is a
        // `CUfunction` of a module of the device's primary context (this method's doc), as
        // `adopt_function` requires.
        unsafe { crate::program::adopt_function(&self.dev, handle) }
    }

    unsafe fn command_buffer_create(&self, desc: &CommandBufferDesc) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        Ok(Box::new(CudaCommandBuffer::new(self.dev.clone(), *desc)?))
    }

    fn user_event_create(&self) -> Result<Arc<dyn UserEventImpl>> {
        Ok(Arc::new(CudaUserEvent::new()))
    }
}
