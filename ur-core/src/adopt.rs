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
//! | programs, kernels | unsupported | unsupported | unsupported | unsupported |
//!
//! Platforms and devices are discovered once: adopting one finds the
//! discovered object whose native handle it is (`InvalidPlatform` /
//! `InvalidDevice` for any other value). Other objects are new ur-core
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
//! (a `CUdeviceptr` names no allocation size); programs and kernels carry
//! kernel signatures that ur-core reads from the code it is given
//! ([`crate::ProgramBundle::from_il`]), which a built native program does
//! not return on every driver.
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
