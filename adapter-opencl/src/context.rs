//! Contexts: an OpenCL context on one device, or over several devices of one
//! platform (a root device and/or its sub-devices, or unrelated devices),
//! its internal queue, the helper kernels, and the objects it makes. Its
//! state, which every object shares, is [`Shared`] in `device.rs`.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use cl3::info_type::InfoType;
use cl3::types::{cl_context, cl_device_id};
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::{AdoptedKernel, AdoptedProgram};
use cmdbuf_core::{AdoptedBuffer, Ownership, ReplayPath};

use crate::adopt::keep;
use crate::command_buffer::ClCommandBuffer;
use crate::conv::ClResultExt;
use crate::device::{ClDevice, DeviceShared, Helpers, NativeContext, Shared, Usm, create_queue};
use crate::event::ClEvent;
use crate::ffi::{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CL_QUEUE_PROFILING_ENABLE, RawEvent};
use crate::memory::{ClBuffer, ClUsm};
use crate::planned::PlannedCommandBuffer;
use crate::program::ClProgram;
use crate::queue::ClQueue;

/// A context of this adapter.
pub(crate) struct ClContext {
    pub(crate) shared: Arc<Shared>,
}

impl ClContext {
    /// A context on `device` alone, in the `cl_context` every other such
    /// context of the device is in ([`NativeContext`]).
    pub(crate) fn new(device: Arc<DeviceShared>) -> Result<ClContext> {
        let context = NativeContext::of_device(&device)?;
        ClContext::with_context(device.clone(), vec![device], context)
    }

    /// A context over `devices` (at least two distinct devices of one
    /// platform, `primary` among them): a `cl_context` of exactly those
    /// devices, so that each takes queues in it as OpenCL requires (Intel's
    /// CPU runtime takes no queue on a sub-device in its parent's context),
    /// with programs built for all of them. `primary` runs the context's own
    /// queues.
    pub(crate) fn over(primary: Arc<DeviceShared>, devices: Vec<Arc<DeviceShared>>) -> Result<ClContext> {
        let mut members = vec![primary.clone()];
        members.extend(devices.into_iter().filter(|d| d.id != primary.id));
        let ids: Vec<cl_device_id> = members.iter().map(|d| d.id).collect();
        let context = opencl3::context::Context::from_devices(&ids, &[], None, std::ptr::null_mut())
            .cl("clCreateContext (several devices)")?;
        let context = Arc::new(NativeContext::new(context, members.clone()));
        let made = ClContext::with_context(primary, members, context)?;
        let shared = &made.shared;
        let checked = shared.devices.len() > 1 && matches!(shared.device.usm, Usm::Svm);
        if let Err(why) = if checked { crate::memory::svm_reaches_every_device(shared) } else { Ok(()) } {
            let reason = format!(
                "this OpenCL driver's SVM does not reach kernels in a context of several devices ({why}); use buffers, or a context per device"
            );
            tracing::info!(%reason, "USM refused in an OpenCL context of several devices");
            let _ = shared.usm_refused.set(reason);
        }
        Ok(made)
    }

    /// A context of this adapter over `context`, which holds `devices`
    /// (`device` first; one made here, or an adopted one), whose programs
    /// are built for `devices`.
    pub(crate) fn with_context(
        device: Arc<DeviceShared>,
        devices: Vec<Arc<DeviceShared>>,
        context: Arc<NativeContext>,
    ) -> Result<ClContext> {
        debug_assert!(devices.first().is_some_and(|d| d.id == device.id), "the context's device comes first");
        let mut properties = 0;
        if device.driver_out_of_order {
            properties |= CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
        }
        if let Some(cb) = &device.command_buffers {
            if !cb.setup.out_of_order {
                properties &= !CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
            }
            if cb.setup.profiling_queue {
                properties |= CL_QUEUE_PROFILING_ENABLE;
            }
        }
        let internal = create_queue(&context, &device, properties)?;
        let ids: Vec<cl_device_id> = devices.iter().map(|d| d.id).collect();
        let helpers = Helpers::build(&context, &ids)?;
        let complete = cl3::event::create_user_event(context.get()).cl("clCreateUserEvent")?;
        // SAFETY: a new reference from clCreateUserEvent.
        let complete = unsafe { RawEvent::from_raw(complete) };
        cl3::event::set_user_event_status(complete.get(), 0).cl("clSetUserEventStatus")?;
        tracing::debug!(device = %device.info.name, devices = devices.len(), "OpenCL context created");
        Ok(ClContext {
            shared: Arc::new(Shared {
                device,
                devices,
                context,
                internal,
                helpers,
                complete,
                status: OnceLock::new(),
                stamps: OnceLock::new(),
                usm_refused: OnceLock::new(),
            }),
        })
    }

    /// Adopts a `cl_context` that holds `device`.
    ///
    /// # Safety
    /// `handle` is a live `cl_context`.
    pub(crate) unsafe fn from_native(
        device: Arc<DeviceShared>,
        handle: NativeHandle,
        ownership: Ownership,
    ) -> Result<ClContext> {
        let raw = handle.0 as cl_context;
        let devices = match cl3::context::get_context_info(raw, cl3::context::CL_CONTEXT_DEVICES)
            .cl("clGetContextInfo")?
        {
            InfoType::VecIntPtr(devices) => devices,
            other => return Err(err!(Unknown, "clGetContextInfo(CL_CONTEXT_DEVICES): unexpected answer {other:?}")),
        };
        if !devices.contains(&(device.id as isize)) {
            return Err(err!(InvalidContext, "the native context does not hold the device {}", device.info.name));
        }
        // SAFETY: a live context (the contract).
        keep(ownership, || unsafe { cl3::context::retain_context(raw) }, "clRetainContext")?;
        let ids: Vec<_> = devices.iter().map(|d| *d as cl3::types::cl_device_id).collect();
        // Programs are built for the one device the context is adopted for.
        let context = NativeContext::new(opencl3::context::Context::new(raw, &ids), vec![device.clone()]);
        ClContext::with_context(device.clone(), vec![device], Arc::new(context))
    }

    /// Whether `other` is a context of this adapter in the same `cl_context`
    /// (made on the same one device, or adopted from this one's handle),
    /// whose buffers and events this context's commands can use.
    fn in_same_cl_context(&self, other: &dyn ContextImpl) -> bool {
        (other as &dyn Any)
            .downcast_ref::<ClContext>()
            .is_some_and(|o| o.shared.context.get() == self.shared.context.get())
    }
}

impl ContextImpl for ClContext {
    /// The `cl_context`.
    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.shared.context.get() as u64))
    }

    /// Contexts in one `cl_context` (every context made on one device): an
    /// OpenCL wait list takes any event of the queue's `cl_context`.
    fn waits_on_events_of(&self, other: &dyn ContextImpl) -> bool {
        self.in_same_cl_context(other)
    }

    /// Contexts in one `cl_context`: its `cl_mem` objects are every queue's
    /// of it.
    fn uses_buffers_of(&self, other: &dyn ContextImpl) -> bool {
        self.in_same_cl_context(other)
    }

    unsafe fn usm_alloc(&self, kind: UsmKind, size: usize, align: usize) -> Result<Box<dyn UsmImpl>> {
        if let Some(reason) = self.shared.usm_refused.get() {
            return Err(err!(UnsupportedFeature, "{reason}"));
        }
        Ok(Box::new(ClUsm::new(self.shared.clone(), kind, size, align)?))
    }

    unsafe fn buffer_create(&self, flags: MemFlags, size: usize, init: Option<&[u8]>) -> Result<Box<dyn BufferImpl>> {
        Ok(Box::new(ClBuffer::new(&self.shared, flags, size, init)?))
    }

    /// `CL_MEM_USE_HOST_PTR`: whether the driver uses the memory in place is
    /// its choice, so the buffer answers no `host_memory` and maps copy into
    /// the lent memory (defined for `USE_HOST_PTR` buffers, and free where
    /// the driver does use it in place).
    unsafe fn buffer_over_host(
        &self,
        _flags: MemFlags,
        host: std::ptr::NonNull<u8>,
        size: usize,
    ) -> Result<Box<dyn BufferImpl>> {
        Ok(Box::new(ClBuffer::over_host(&self.shared, size, host)?))
    }

    unsafe fn program_create(
        &self,
        bundle: &ProgramBundle,
        form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        match bundle.source_of(form) {
            Some(cmdbuf_core::ProgramSource::OpenClC(source)) => {
                Ok(Box::new(ClProgram::build(self.shared.clone(), source, options)?))
            }
            Some(cmdbuf_core::ProgramSource::Il(il)) => {
                Ok(Box::new(ClProgram::build_il(self.shared.clone(), il, options)?))
            }
            _ => Err(err!(InvalidBinary, "the OpenCL adapter builds OpenCL C and SPIR-V kernels only")),
        }
    }

    unsafe fn program_link(
        &self,
        inputs: &[(&ProgramBundle, &str)],
        form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        let mut modules = Vec::with_capacity(inputs.len());
        for (bundle, compile_options) in inputs {
            match bundle.source_of(form) {
                Some(cmdbuf_core::ProgramSource::Il(il)) => modules.push((&il[..], *compile_options)),
                _ => return Err(err!(UnsupportedFeature, "the OpenCL adapter links SPIR-V modules only")),
            }
        }
        Ok(Box::new(ClProgram::link_il(self.shared.clone(), &modules, options)?))
    }

    unsafe fn queue_create(&self, properties: QueueProperties) -> Result<Box<dyn QueueImpl>> {
        Ok(Box::new(ClQueue::new(self.shared.clone(), properties)?))
    }

    unsafe fn sub_device_queue_create(
        &self,
        device: &dyn DeviceImpl,
        properties: QueueProperties,
    ) -> Result<Box<dyn QueueImpl>> {
        let device = downcast::<ClDevice>(device as &dyn Any, "the sub-device")?;
        Ok(Box::new(ClQueue::on_sub_device(self.shared.clone(), device.shared().clone(), properties)?))
    }

    unsafe fn command_buffer_create(&self, desc: &CommandBufferDesc) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        match self.shared.device.replay {
            ReplayPath::Planned => Ok(Box::new(PlannedCommandBuffer::new(self.shared.clone(), *desc))),
            _ => Ok(Box::new(ClCommandBuffer::new(self.shared.clone(), *desc)?)),
        }
    }

    /// Native command buffers record for the context's own device, so
    /// another device gets one where it is that device: the first listed of
    /// a context over several that does not list their root
    /// ([`ClContext::over`]).
    unsafe fn sub_device_command_buffer_create(
        &self,
        device: &dyn DeviceImpl,
        desc: &CommandBufferDesc,
    ) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        let device = downcast::<ClDevice>(device as &dyn Any, "the sub-device")?;
        if device.shared().id != self.shared.device.id {
            return Err(err!(
                UnsupportedFeature,
                "OpenCL's native command buffers record for the context's first device, not another device of it"
            ));
        }
        // SAFETY: the device is the context's own, and reports native
        // command buffers with the capabilities asked for (the contract).
        unsafe { self.command_buffer_create(desc) }
    }

    fn user_event_create(&self) -> Result<Arc<dyn UserEventImpl>> {
        Ok(ClEvent::user(self.shared.context.get())?)
    }

    unsafe fn queue_from_native(
        &self,
        handle: NativeHandle,
        ownership: Ownership,
    ) -> Result<(Box<dyn QueueImpl>, QueueProperties)> {
        // SAFETY: the trait asks for a live native queue of the backend's type, a `cl_command_queue`
        // here, which is what `adopt::queue` requires.
        unsafe { crate::adopt::queue(&self.shared, handle, ownership) }
    }

    unsafe fn buffer_from_native(&self, handle: NativeHandle, ownership: Ownership) -> Result<AdoptedBuffer> {
        // SAFETY: the trait asks for a live native buffer of the backend's type, a `cl_mem` here,
        // which is what `adopt::buffer` requires.
        unsafe { crate::adopt::buffer(&self.shared, handle, ownership) }
    }

    unsafe fn event_from_native(&self, handle: NativeHandle, ownership: Ownership) -> Result<Arc<dyn EventImpl>> {
        // SAFETY: the trait asks for a live native event of the backend's type, a `cl_event` here,
        // which is what `adopt::event` requires.
        unsafe { crate::adopt::event(&self.shared, handle, ownership) }
    }

    unsafe fn program_from_native(&self, handle: NativeHandle, ownership: Ownership) -> Result<AdoptedProgram> {
        // SAFETY: the trait asks for a live native program of the backend's type, a `cl_program` here,
        // which is what `adopt::program` requires.
        unsafe { crate::adopt::program(&self.shared, handle, ownership) }
    }

    unsafe fn kernel_from_native(&self, handle: NativeHandle, ownership: Ownership) -> Result<AdoptedKernel> {
        // SAFETY: the trait asks for a live native kernel of the backend's type, a `cl_kernel` here,
        // which is what `adopt::kernel` requires.
        unsafe { crate::adopt::kernel(&self.shared, handle, ownership) }
    }
}
