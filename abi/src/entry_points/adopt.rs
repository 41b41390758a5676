//! `ur*CreateWithNativeHandle`: objects adopted from native handles, over
//! cmdbuf-core's `from_native` (see `cmdbuf_core::adopt` for what each backend
//! adopts and why the others are `UNSUPPORTED_FEATURE`).
//!
//! Platforms and devices are the library's own handles, found by their
//! native handle. Other objects are new handles; `isNativeHandleOwned`
//! hands the caller's reference over (`Ownership::Transferred`).
//!
//! Programs are adopted built (`BINARY_TYPE_EXECUTABLE`; building,
//! compiling or linking one again is `INVALID_OPERATION`), their kernels'
//! signatures derived from the driver's answers; a kernel adopted without
//! its program handle gets a new program handle over its native program.

#![allow(non_snake_case)]

use std::sync::Arc;

use cmdbuf_core::{NativeHandle, Ownership, ensure, err};

use crate::entry::guard;
use crate::handle::Handle;
use crate::info::write_out;
use crate::objects::adapter::Adapter;
use crate::objects::context::{Context, the_one_device};
use crate::objects::device::Device;
use crate::objects::event::{emit, emit_unqueued};
use crate::objects::kernel::Kernel;
use crate::objects::mem::Mem;
use crate::objects::program::Program;
use crate::objects::queue::Queue;
use crate::sys::*;

/// What every `*_native_properties_t` starts with, and its ownership flag.
trait NativeProperties {
    const STYPE: ur_structure_type_t;
    fn stype(&self) -> ur_structure_type_t;
    fn owned(&self) -> bool;
}

macro_rules! native_properties {
    ($($t:ty => $stype:ident, $owned:expr;)*) => {$(
        impl NativeProperties for $t {
            const STYPE: ur_structure_type_t = ur_structure_type_t::$stype;
            fn stype(&self) -> ur_structure_type_t {
                self.stype
            }
            fn owned(&self) -> bool {
                #[allow(clippy::redundant_closure_call)]
                ($owned)(self)
            }
        }
    )*};
}

native_properties! {
    ur_platform_native_properties_t => UR_STRUCTURE_TYPE_PLATFORM_NATIVE_PROPERTIES, |p: &Self| p.isNativeHandleOwned;
    ur_device_native_properties_t => UR_STRUCTURE_TYPE_DEVICE_NATIVE_PROPERTIES, |p: &Self| p.isNativeHandleOwned;
    ur_context_native_properties_t => UR_STRUCTURE_TYPE_CONTEXT_NATIVE_PROPERTIES, |p: &Self| p.isNativeHandleOwned;
    ur_queue_native_properties_t => UR_STRUCTURE_TYPE_QUEUE_NATIVE_PROPERTIES, |p: &Self| p.isNativeHandleOwned;
    ur_mem_native_properties_t => UR_STRUCTURE_TYPE_MEM_NATIVE_PROPERTIES, |p: &Self| p.isNativeHandleOwned;
    ur_event_native_properties_t => UR_STRUCTURE_TYPE_EVENT_NATIVE_PROPERTIES, |p: &Self| p.isNativeHandleOwned;
    ur_program_native_properties_t => UR_STRUCTURE_TYPE_PROGRAM_NATIVE_PROPERTIES, |p: &Self| p.isNativeHandleOwned;
    ur_kernel_native_properties_t => UR_STRUCTURE_TYPE_KERNEL_NATIVE_PROPERTIES, |p: &Self| p.isNativeHandleOwned;
}

/// The ownership `properties` asks for (`Shared` without them), after
/// checking their structure type.
///
/// # Safety
/// `properties` is null or readable.
unsafe fn ownership<P: NativeProperties>(properties: *const P) -> cmdbuf_core::Result<Ownership> {
    // SAFETY: null or readable per the contract.
    let Some(p) = (unsafe { properties.as_ref() }) else { return Ok(Ownership::Shared) };
    ensure!(p.stype() == P::STYPE, InvalidValue, "pProperties->stype is {:?}, not {:?}", p.stype(), P::STYPE);
    Ok(Ownership::from_owned(p.owned()))
}

fn native(handle: ur_native_handle_t) -> NativeHandle {
    NativeHandle(handle as u64)
}

/// # Safety
/// UR's contract for `urPlatformCreateWithNativeHandle`.
pub(crate) unsafe extern "C" fn urPlatformCreateWithNativeHandle(
    handle: ur_native_handle_t,
    adapter: ur_adapter_handle_t,
    properties: *const ur_platform_native_properties_t,
    out: *mut ur_platform_handle_t,
) -> ur_result_t {
    guard("urPlatformCreateWithNativeHandle", || {
        // SAFETY: `adapter` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let adapter = unsafe { Handle::<Adapter>::get(adapter)? };
        // SAFETY: `properties` is null or one readable struct (entry_points doc, "Arrays and strings"), all `ownership`
        // needs.
        unsafe { ownership(properties)? };
        let platforms = adapter.value.platforms();
        let cores: Vec<cmdbuf_core::Platform> = platforms.iter().map(|p| p.value.core().clone()).collect();
        let found = cmdbuf_core::Platform::from_native(&cores, native(handle))?;
        let index = cores.iter().position(|p| p.native_handle().ok() == found.native_handle().ok());
        let platform = index.map(|i| platforms[i].raw()).expect("found among these platforms");
        // SAFETY: non-null because checks.rs rejected `NULL == phPlatform`; writable per the contract ("Out-pointers").
        unsafe { write_out(out, platform) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urDeviceCreateWithNativeHandle`.
pub(crate) unsafe extern "C" fn urDeviceCreateWithNativeHandle(
    handle: ur_native_handle_t,
    adapter: ur_adapter_handle_t,
    properties: *const ur_device_native_properties_t,
    out: *mut ur_device_handle_t,
) -> ur_result_t {
    guard("urDeviceCreateWithNativeHandle", || {
        // SAFETY: `adapter` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let adapter = unsafe { Handle::<Adapter>::get(adapter)? };
        // SAFETY: `properties` is null or one readable struct (entry_points doc, "Arrays and strings"), all `ownership`
        // needs.
        unsafe { ownership(properties)? };
        let mut last = None;
        for platform in adapter.value.platforms() {
            match platform.value.core().device_from_native(native(handle)) {
                Ok(found) => {
                    let device = platform.value.devices().iter().find(|d| d.value.core().id() == found.id());
                    let device = device.ok_or_else(|| {
                        err!(InvalidDevice, "{found} is not among the devices UR_DEVICE_SELECTOR kept")
                    })?;
                    // SAFETY: non-null because checks.rs rejected `NULL == phDevice`; writable per the contract
                    // ("Out-pointers").
                    unsafe { write_out(out, device.raw()) };
                    return Ok(());
                }
                // The kind of failure of the last platform, unless another
                // platform's devices have native handles at all.
                Err(e @ cmdbuf_core::UrError::UnsupportedFeature(_)) => {
                    last.get_or_insert(e);
                }
                Err(e) => last = Some(e),
            }
        }
        // A sub-device's native handle gives back the sub-device's handle.
        if let Some(sub) = crate::objects::device::live_sub_device(native(handle)) {
            // SAFETY: non-null because checks.rs rejected `NULL == phDevice`; writable per the contract
            // ("Out-pointers").
            unsafe { write_out(out, sub) };
            return Ok(());
        }
        Err(last.unwrap_or_else(|| err!(InvalidDevice, "the adapter has no devices")))
    })
}

/// # Safety
/// UR's contract for `urContextCreateWithNativeHandle`.
pub(crate) unsafe extern "C" fn urContextCreateWithNativeHandle(
    handle: ur_native_handle_t,
    adapter: ur_adapter_handle_t,
    num_devices: u32,
    devices: *const ur_device_handle_t,
    properties: *const ur_context_native_properties_t,
    out: *mut ur_context_handle_t,
) -> ur_result_t {
    guard("urContextCreateWithNativeHandle", || {
        // SAFETY: `adapter` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        unsafe { Handle::<Adapter>::get(adapter)? };
        // SAFETY: `properties` is null or one readable struct (entry_points doc, "Arrays and strings"), all `ownership`
        // needs.
        let ownership = unsafe { ownership(properties)? };
        ensure!(
            num_devices != 0 && !devices.is_null(),
            UnsupportedFeature,
            "an adopted context needs its device: cmdbuf contexts hold one device, which is not read from the native context"
        );
        // SAFETY: `devices` holds `num_devices` handles per the contract.
        let device = unsafe { the_one_device(num_devices, devices)? };
        // SAFETY: UR's contract: a native context of the adapter's backend.
        let core = unsafe { cmdbuf_core::Context::from_native(device.value.core(), native(handle), ownership)? };
        // SAFETY: non-null because checks.rs rejected `NULL == phContext`; writable per the contract ("Out-pointers").
        unsafe { write_out(out, Handle::create(Context::from_core(core, device))) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urQueueCreateWithNativeHandle`.
pub(crate) unsafe extern "C" fn urQueueCreateWithNativeHandle(
    handle: ur_native_handle_t,
    context: ur_context_handle_t,
    device: ur_device_handle_t,
    properties: *const ur_queue_native_properties_t,
    out: *mut ur_queue_handle_t,
) -> ur_result_t {
    guard("urQueueCreateWithNativeHandle", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `arc` needs.
        let context = unsafe { Handle::<Context>::arc(context)? };
        let device = if device.is_null() {
            None
        } else {
            // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
            Some(unsafe { Handle::<Device>::get(device)? })
        };
        // SAFETY: `properties` is null or one readable struct (entry_points doc, "Arrays and strings"), all `ownership`
        // needs.
        let ownership = unsafe { ownership(properties)? };
        let device = device.map(|d| d.value.core());
        // SAFETY: UR's contract: a native queue of the context's backend.
        let core = unsafe { cmdbuf_core::Queue::from_native(context.value.core(), device, native(handle), ownership)? };
        // SAFETY: non-null because checks.rs rejected `NULL == phQueue`; writable per the contract ("Out-pointers").
        unsafe { write_out(out, Handle::create(Queue::from_core(core, context))) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urMemBufferCreateWithNativeHandle`.
pub(crate) unsafe extern "C" fn urMemBufferCreateWithNativeHandle(
    handle: ur_native_handle_t,
    context: ur_context_handle_t,
    properties: *const ur_mem_native_properties_t,
    out: *mut ur_mem_handle_t,
) -> ur_result_t {
    guard("urMemBufferCreateWithNativeHandle", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `arc` needs.
        let context = unsafe { Handle::<Context>::arc(context)? };
        // SAFETY: `properties` is null or one readable struct (entry_points doc, "Arrays and strings"), all `ownership`
        // needs.
        let ownership = unsafe { ownership(properties)? };
        // SAFETY: UR's contract: a native buffer of the context's backend.
        let core = unsafe { cmdbuf_core::MemBuffer::from_native(context.value.core(), native(handle), ownership)? };
        // SAFETY: non-null because checks.rs rejected `NULL == phMem`; writable per the contract ("Out-pointers").
        unsafe { write_out(out, Handle::create(Mem::from_core(core, context))) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urEventCreateWithNativeHandle`.
pub(crate) unsafe extern "C" fn urEventCreateWithNativeHandle(
    handle: ur_native_handle_t,
    context: ur_context_handle_t,
    properties: *const ur_event_native_properties_t,
    out: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEventCreateWithNativeHandle", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `arc` needs.
        let context: Arc<Handle<Context>> = unsafe { Handle::<Context>::arc(context)? };
        // SAFETY: `properties` is null or one readable struct (entry_points doc, "Arrays and strings"), all `ownership`
        // needs.
        let ownership = unsafe { ownership(properties)? };
        // SAFETY: UR's contract: a native event of the context's backend.
        let core = unsafe { cmdbuf_core::Event::from_native(context.value.core(), native(handle), ownership)? };
        // An adopted event stands for no command of UR's. Its queue, where
        // the backend names one, is adopted too, for UR_EVENT_INFO_COMMAND_QUEUE.
        let command = ur_command_t::UR_COMMAND_EVENTS_WAIT;
        let queue = core.adopted_native_queue().and_then(|q| {
            // SAFETY: the driver's answer for the event: a live native queue of its context.
            let adopted = unsafe { cmdbuf_core::Queue::from_native(context.value.core(), None, q, Ownership::Shared) };
            adopted.map_err(|e| tracing::debug!(error = %e, "the adopted event's queue is not adopted")).ok()
        });
        match queue {
            Some(queue) => {
                let queue = Handle::internal(Queue::from_core(queue, context.clone()));
                // SAFETY: non-null because checks.rs rejected `NULL == phEvent`; writable per the contract
                // ("Out-pointers").
                unsafe { emit(out, core, queue, command) };
            }
            // SAFETY: non-null because checks.rs rejected `NULL == phEvent`; writable per the contract
            // ("Out-pointers").
            None => unsafe { emit_unqueued(out, core, &context, command) },
        }
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urProgramCreateWithNativeHandle`.
pub(crate) unsafe extern "C" fn urProgramCreateWithNativeHandle(
    handle: ur_native_handle_t,
    context: ur_context_handle_t,
    properties: *const ur_program_native_properties_t,
    out: *mut ur_program_handle_t,
) -> ur_result_t {
    guard("urProgramCreateWithNativeHandle", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `arc` needs.
        let context = unsafe { Handle::<Context>::arc(context)? };
        // SAFETY: `properties` is null or one readable struct (entry_points doc, "Arrays and strings"), all `ownership`
        // needs.
        let ownership = unsafe { ownership(properties)? };
        // SAFETY: UR's contract: a native program of the context's backend.
        let core = unsafe { cmdbuf_core::Program::from_native(context.value.core(), native(handle), ownership)? };
        // SAFETY: non-null because checks.rs rejected `NULL == phProgram`; writable per the contract ("Out-pointers").
        unsafe { write_out(out, Handle::create(Program::adopted(context, core))) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urKernelCreateWithNativeHandle`.
pub(crate) unsafe extern "C" fn urKernelCreateWithNativeHandle(
    handle: ur_native_handle_t,
    context: ur_context_handle_t,
    program: ur_program_handle_t,
    properties: *const ur_kernel_native_properties_t,
    out: *mut ur_kernel_handle_t,
) -> ur_result_t {
    guard("urKernelCreateWithNativeHandle", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `arc` needs.
        let context = unsafe { Handle::<Context>::arc(context)? };
        let program = if program.is_null() {
            None
        } else {
            // SAFETY: `program` is null or one of this adapter's handles (entry_points doc, "Handles"), all `arc`
            // needs.
            Some(unsafe { Handle::<Program>::arc(program)? })
        };
        // SAFETY: `properties` is null or one readable struct (entry_points doc, "Arrays and strings"), all `ownership`
        // needs.
        let ownership = unsafe { ownership(properties)? };
        if let Some(program) = &program {
            ensure!(
                Arc::ptr_eq(program.value.context(), &context),
                InvalidContext,
                "the program belongs to another context"
            );
        }
        let built = program.as_ref().map(|p| p.value.built()).transpose()?;
        // SAFETY: UR's contract: a native kernel of the context's backend.
        let core = unsafe {
            cmdbuf_core::Kernel::from_native(context.value.core(), built.as_ref(), native(handle), ownership)?
        };
        let program = match program {
            Some(program) => program,
            None => Handle::internal(Program::adopted(context, core.program().clone())),
        };
        // SAFETY: non-null because checks.rs rejected `NULL == phKernel`; writable per the contract ("Out-pointers").
        unsafe { write_out(out, Handle::create(Kernel::adopted(core, program))) };
        Ok(())
    })
}
