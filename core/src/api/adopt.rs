//! Objects adopted from native handles (UR's `ur*CreateWithNativeHandle`):
//! the reverse of each object's `native_handle()` ([`crate::interop`]).
//!
//! | object | CPU | OpenCL | Vulkan | CUDA |
//! |---|---|---|---|---|
//! | [`Platform`] (looked up) | unsupported | `cl_platform_id` | `VkInstance` | unsupported |
//! | [`Device`] (looked up) | unsupported | `cl_device_id` | `VkPhysicalDevice` | `CUdevice` ordinal |
//! | [`Context`] | unsupported | `cl_context` holding the device | the device's `VkDevice` | the device's primary `CUcontext` |
//! | [`Queue`] | unsupported | `cl_command_queue` of the context and device | a `VkQueue` of the device's | a `CUstream` of the primary context |
//! | [`MemBuffer`] | a live buffer's host address | `cl_mem` of the context (not a sub-buffer) | unsupported | unsupported |
//! | [`Event`] | unsupported | `cl_event` of the context | unsupported | unsupported |
//! | [`Program`] (built) | unsupported | `cl_program` of the context, built for the device | unsupported | `CUmodule` of the primary context |
//! | [`Kernel`] | unsupported | `cl_kernel` of the context | unsupported | `CUfunction` |
//!
//! Platforms and devices are discovered once: adopting one finds the
//! discovered object whose native handle it is (`InvalidPlatform` /
//! `InvalidDevice` for any other value). Other objects are new cmdbuf-core
//! objects sharing the native one: a round trip `native_handle()` →
//! `from_native` gives a working object over the same driver object.
//!
//! Every context of a Vulkan or CUDA device is over the device's one
//! `VkDevice` or primary `CUcontext`, so that is the one adopted, and its
//! ownership cannot be handed over (`UnsupportedFeature`: the adapter
//! created it). An adopted `VkQueue` or `CUstream` becomes an in-order
//! queue without profiling (neither carries such properties); a `VkQueue`
//! is never destroyed, a `CUstream` is destroyed with the queue only when
//! its ownership was handed over. CUDA's default streams are not adopted.
//!
//! Unsupported cases are `UnsupportedFeature`, for these reasons: the CPU
//! adapter hands out no native platform, device, context, queue or event;
//! Vulkan has no native event, and a `VkBuffer` alone gives neither its
//! memory nor its device address; CUDA's events are the adapter's own
//! objects, with its timing and completion tracking, and its memory is USM
//! (a `CUdeviceptr` names no allocation size); the CPU's kernels are Rust
//! functions or C tables, and Vulkan's pipelines are built per kernel from
//! the argument layout of a signature that a `VkPipeline` does not give.
//!
//! # Adopted programs and kernels
//!
//! cmdbuf-core checks every launch against its kernel's signature, which it
//! reads from the code it is given. A native program gives no code, only
//! what its driver answers, so an adopted kernel's signature is *derived*:
//! its argument count from the driver (OpenCL `CL_KERNEL_NUM_ARGS`, CUDA
//! `cuFuncGetParamInfo`), and each argument's kind where the driver tells
//! it (OpenCL `clGetKernelArgInfo` when the program was built with
//! `-cl-kernel-arg-info` or the driver keeps it: global, constant and local
//! address spaces, and the size of builtin scalar and vector types; CUDA
//! each parameter's size). What the driver does not tell is
//! [`ArgKind::AnyValue`](crate::ArgKind::AnyValue) or
//! [`ArgKind::Unknown`](crate::ArgKind::Unknown): for those the launch's own
//! kinds stand (UR's launches carry them, `ur_exp_kernel_arg_type_t`), and
//! the driver checks them as it sets the argument. Every other check is
//! made as for any kernel: the number of arguments, kinds and sizes where
//! known, the context of buffers, local memory and work-group limits.
//!
//! Only built programs are adopted (`InvalidProgramExecutable` otherwise):
//! their kernels are listed and their signatures derived at adoption. An
//! adopted kernel belongs to an adopted program, the one given or else the
//! one its driver names, adopted with it. Adopted kernels are the driver's
//! plain kernels: none takes the status word of the OpenCL adapter's
//! kernel ABI nor the CUDA adapter's hidden launch parameter (so a CUDA
//! one takes no global offset).
//!
//! A native handle that is not an object of this context or device is an
//! error (`InvalidQueue`, `InvalidMemObject`, `InvalidEvent`,
//! `InvalidContext`): the CPU adapter checks the value against its live
//! buffers, OpenCL asks the driver (`clGet*Info` of the object's context
//! and device) and compares, Vulkan compares with its own handles, CUDA
//! asks `cuStreamGetCtx`. OpenCL and CUDA can only ask about a live object
//! of the right type, which is why adoption is `unsafe`.

use std::sync::Arc;

pub use crate::adapter::AdoptedBuffer;
use crate::context::Context;
use crate::device::Device;
use crate::ensure;
use crate::error::{Result, UrError};
use crate::event::Event;
use crate::interop::NativeHandle;
use crate::memory::MemBuffer;
use crate::platform::Platform;
use crate::program::{Kernel, Program};
use crate::queue::Queue;
pub use crate::types::interop::Ownership;

/// `InvalidNullHandle` for 0, which no adopted object is.
fn non_null(handle: NativeHandle, what: &str) -> Result<()> {
    ensure!(handle.0 != 0, InvalidNullHandle, "the native {what} handle is null");
    Ok(())
}

/// Finds the object whose native handle is `handle` among `objects`:
/// `UnsupportedFeature` when none of them has a native handle, `unknown`
/// when none has this one.
fn find<'a, T>(
    objects: impl IntoIterator<Item = &'a T>,
    native: impl Fn(&T) -> Result<NativeHandle>,
    handle: NativeHandle,
    unknown: UrError,
) -> Result<&'a T> {
    let mut unsupported = None;
    for object in objects {
        match native(object) {
            Ok(h) if h == handle => return Ok(object),
            Ok(_) => {}
            Err(e @ UrError::UnsupportedFeature(_)) => unsupported = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(unsupported.unwrap_or(unknown))
}

impl Platform {
    /// The platform among `platforms` whose native handle is `handle`
    /// (`urPlatformCreateWithNativeHandle`): `InvalidPlatform` for any other
    /// value, `UnsupportedFeature` where platforms have no native handle.
    pub fn from_native(platforms: &[Platform], handle: NativeHandle) -> Result<Platform> {
        let unknown = crate::err!(InvalidPlatform, "{handle:?} is not the native handle of a discovered platform");
        find(platforms, Platform::native_handle, handle, unknown).cloned()
    }

    /// The device of this platform whose native handle is `handle`
    /// (`urDeviceCreateWithNativeHandle`): `InvalidDevice` for any other
    /// value, `UnsupportedFeature` where devices have no native handle.
    pub fn device_from_native(&self, handle: NativeHandle) -> Result<Device> {
        let unknown = crate::err!(InvalidDevice, "{handle:?} is not the native handle of a device of {self:?}");
        find(self.devices(), Device::native_handle, handle, unknown).cloned()
    }
}

impl Context {
    /// Adopts a native context holding `device` (`urContextCreateWithNativeHandle`):
    /// a new context (its own identity, allocations and objects) over the
    /// native one. `InvalidNullHandle` for 0, `InvalidContext` for a native
    /// context without the device.
    ///
    /// # Safety
    /// `handle` is 0 or a live native context of the device's backend (see
    /// the [module documentation](self)).
    #[tracing::instrument(level = "debug", fields(device = %device))]
    pub unsafe fn from_native(device: &Device, handle: NativeHandle, ownership: Ownership) -> Result<Context> {
        non_null(handle, "context")?;
        // SAFETY: non-null; the rest is the caller's contract.
        let imp = unsafe { device.imp().clone().context_from_native(handle, ownership)? };
        Ok(Context::from_imp(device, imp))
    }
}

impl Queue {
    /// Adopts a native queue of `context` (`urQueueCreateWithNativeHandle`);
    /// its properties are the native queue's. `device`, when given, must be
    /// the context's (`InvalidDevice`); `InvalidNullHandle` for 0,
    /// `InvalidQueue` for a native queue of another context or device.
    ///
    /// # Safety
    /// `handle` is 0 or a live native queue of the context's backend.
    #[tracing::instrument(level = "debug", skip(context), fields(device = %context.device()))]
    pub unsafe fn from_native(
        context: &Context,
        device: Option<&Device>,
        handle: NativeHandle,
        ownership: Ownership,
    ) -> Result<Queue> {
        if let Some(device) = device {
            ensure!(device.same_as(context.device()), InvalidDevice, "{device} is not the device of the context");
        }
        non_null(handle, "queue")?;
        // SAFETY: non-null; the rest is the caller's contract.
        let (imp, properties) = unsafe { context.imp().queue_from_native(handle, ownership)? };
        Ok(Queue::from_imp(context, properties, imp))
    }
}

impl MemBuffer {
    /// Adopts a native memory object of `context` as a root buffer
    /// (`urMemBufferCreateWithNativeHandle`), with the native object's size
    /// and access mode. `InvalidNullHandle` for 0, `InvalidMemObject` for
    /// memory of another context.
    ///
    /// # Safety
    /// `handle` is 0 or a live native buffer of the context's backend (on
    /// the CPU: any value, checked against the context's live buffers).
    #[tracing::instrument(level = "debug", skip(context), fields(device = %context.device()))]
    pub unsafe fn from_native(context: &Context, handle: NativeHandle, ownership: Ownership) -> Result<MemBuffer> {
        non_null(handle, "memory")?;
        // SAFETY: non-null; the rest is the caller's contract.
        let adopted = unsafe { context.imp().buffer_from_native(handle, ownership)? };
        Ok(MemBuffer::from_root(context, adopted.flags, adopted.size, adopted.imp))
    }
}

impl Event {
    /// Adopts a native event of `context` (`urEventCreateWithNativeHandle`):
    /// waiting on it, or listing it in a wait list, waits for the native
    /// event. `InvalidEvent` for an event of another context.
    ///
    /// Handle 0 names no native event, so nothing is left to wait for: it
    /// gives a new event of the context that is already complete (UR's Level
    /// Zero adapter does the same; UR's conformance suites adopt 0 to get a
    /// valid event for their wait-list checks).
    ///
    /// # Safety
    /// `handle` is 0 or a live native event of the context's backend.
    #[tracing::instrument(level = "debug", skip(context), fields(device = %context.device()))]
    pub unsafe fn from_native(context: &Context, handle: NativeHandle, ownership: Ownership) -> Result<Event> {
        if handle.0 == 0 {
            let done = crate::UserEvent::new(context)?;
            done.complete()?;
            return Ok(done.event().clone());
        }
        // SAFETY: non-null; the rest is the caller's contract.
        let imp: Arc<_> = unsafe { context.imp().event_from_native(handle, ownership)? };
        Ok(Event::from_imp(imp, context))
    }

    /// For an event adopted with [`Event::from_native`], the native queue
    /// its command was enqueued on, where the backend tells (OpenCL's
    /// `CL_EVENT_COMMAND_QUEUE`; `None` for a user event): a queue of the
    /// event's context, which [`Queue::from_native`] adopts.
    pub fn adopted_native_queue(&self) -> Option<NativeHandle> {
        self.imp().adopted_native_queue()
    }
}

impl Program {
    /// Adopts a built native program of `context`
    /// (`urProgramCreateWithNativeHandle`): its kernels, with signatures
    /// derived from the driver's answers (see the [module
    /// documentation](self)). `InvalidNullHandle` for 0, `InvalidProgram`
    /// for a program of another context or device,
    /// `InvalidProgramExecutable` for one not built for the device.
    ///
    /// # Safety
    /// `handle` is 0 or a live native program of the context's backend.
    #[tracing::instrument(level = "debug", skip(context), fields(device = %context.device()))]
    pub unsafe fn from_native(context: &Context, handle: NativeHandle, ownership: Ownership) -> Result<Program> {
        non_null(handle, "program")?;
        // SAFETY: non-null; the rest is the caller's contract.
        let adopted = unsafe { context.imp().program_from_native(handle, ownership)? };
        for (i, k) in adopted.kernels.iter().enumerate() {
            ensure!(
                !adopted.kernels[..i].iter().any(|o| o.name == k.name),
                InvalidProgram,
                "the native program lists kernel `{}` twice",
                k.name
            );
        }
        Ok(Program {
            inner: Arc::new(crate::objects::ProgramInner {
                context: context.clone(),
                signatures: adopted.kernels,
                form: adopted.form,
                options: String::new(),
                given: None,
                label: None,
                adopted: true,
                imp: adopted.imp,
                _live: crate::live::Live::new(),
            }),
        })
    }
}

impl Kernel {
    /// Adopts a native kernel of `context` (`urKernelCreateWithNativeHandle`),
    /// with a signature derived from the driver's answers (see the [module
    /// documentation](self)). It belongs to `program` when given, which must
    /// be the native kernel's program (`InvalidProgram` otherwise); without
    /// one, its native program is adopted too, as [`Program::from_native`]
    /// adopts a shared program. `InvalidNullHandle` for 0, `InvalidKernel`
    /// for a kernel of another context, `InvalidContext` for a program of
    /// another context.
    ///
    /// # Safety
    /// `handle` is 0 or a live native kernel of the context's backend.
    #[tracing::instrument(level = "debug", skip(context, program), fields(device = %context.device()))]
    pub unsafe fn from_native(
        context: &Context,
        program: Option<&Program>,
        handle: NativeHandle,
        ownership: Ownership,
    ) -> Result<Kernel> {
        if let Some(program) = program {
            ensure!(program.context() == context, InvalidContext, "the program belongs to another context");
        }
        non_null(handle, "kernel")?;
        // SAFETY: non-null; the rest is the caller's contract.
        let adopted = unsafe { context.imp().kernel_from_native(handle, ownership)? };
        let program = match program {
            Some(program) => {
                let native = program.native_handle()?;
                ensure!(
                    native == adopted.program,
                    InvalidProgram,
                    "the native kernel belongs to program {:?}, not to the given program's {native:?}",
                    adopted.program
                );
                program.clone()
            }
            // SAFETY: the driver's answer for a live kernel of this context:
            // a live program of the same context.
            None => unsafe { Program::from_native(context, adopted.program, Ownership::Shared)? },
        };
        Ok(Kernel::from_parts(&program, adopted.signature, adopted.imp))
    }
}
