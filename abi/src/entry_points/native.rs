//! Native handles (`ur*GetNativeHandle`) and native enqueues
//! (`urEnqueueNativeCommandExp`), over cmdbuf-core's `native_handle()` methods
//! and `Queue::enqueue_native_command` (see `cmdbuf_core::interop` for what each
//! backend's handles and native targets are).
//!
//! Inside a native command's callback, `urQueueGetNativeHandle` of its queue
//! answers the command's target (the `cl_command_queue`, `CUstream` or
//! recording `VkCommandBuffer` to put the work on) without taking a lock, so
//! the callback can reach it as UR's adapters let it.

#![allow(non_snake_case)]

use std::ffi::c_void;

use cmdbuf_core::{AppendOptions, Appended, NativeHandle, ensure, err};

use crate::entry::guard;
use crate::handle::{Handle, Object, get_list};
use crate::info::write_out;
use crate::objects::command_buffer::{AppendOut, CommandBuffer, append};
use crate::objects::context::Context;
use crate::objects::device::Device;
use crate::objects::event::{EagerCall, Event};
use crate::objects::kernel::Kernel;
use crate::objects::mem::Mem;
use crate::objects::platform::Platform;
use crate::objects::program::Program;
use crate::objects::queue::Queue;
use crate::sys::*;

/// A `ur*GetNativeHandle` entry point: resolves the handle of kind `T` and
/// writes what `native` answers for it to `out`.
///
/// # Safety
/// `raw` is a handle as for [`Handle::get`]; `out` is writable.
unsafe fn get_native<T: Object>(
    entry_point: &'static str,
    raw: T::Raw,
    out: *mut ur_native_handle_t,
    native: impl FnOnce(&T) -> cmdbuf_core::Result<NativeHandle>,
) -> ur_result_t {
    guard(entry_point, || {
        // SAFETY: `raw` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
        let handle = unsafe { Handle::<T>::get(raw)? };
        let value = native(&handle.value)?;
        // SAFETY: `out` is writable (this function's `# Safety`).
        unsafe { write_out(out, value.0 as ur_native_handle_t) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urPlatformGetNativeHandle`.
pub(crate) unsafe extern "C" fn urPlatformGetNativeHandle(
    platform: ur_platform_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: `platform` is null or one of this adapter's handles and `out` writable (entry_points doc, "Handles",
    // "Out-pointers"; not null: checks.rs rejected `NULL == phNativePlatform`), all `get_native` needs.
    unsafe { get_native("urPlatformGetNativeHandle", platform, out, |p: &Platform| p.core().native_handle()) }
}

/// # Safety
/// UR's contract for `urDeviceGetNativeHandle`.
pub(crate) unsafe extern "C" fn urDeviceGetNativeHandle(
    device: ur_device_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: `device` is null or one of this adapter's handles and `out` writable (entry_points doc, "Handles",
    // "Out-pointers"; not null: checks.rs rejected `NULL == phNativeDevice`), all `get_native` needs.
    unsafe { get_native("urDeviceGetNativeHandle", device, out, |d: &Device| d.core().native_handle()) }
}

/// # Safety
/// UR's contract for `urContextGetNativeHandle`.
pub(crate) unsafe extern "C" fn urContextGetNativeHandle(
    context: ur_context_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: `context` is null or one of this adapter's handles and `out` writable (entry_points doc, "Handles",
    // "Out-pointers"; not null: checks.rs rejected `NULL == phNativeContext`), all `get_native` needs.
    unsafe { get_native("urContextGetNativeHandle", context, out, |c: &Context| c.core().native_handle()) }
}

/// # Safety
/// UR's contract for `urEventGetNativeHandle`.
pub(crate) unsafe extern "C" fn urEventGetNativeHandle(
    event: ur_event_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: `event` is null or one of this adapter's handles and `out` writable (entry_points doc, "Handles",
    // "Out-pointers"; not null: checks.rs rejected `NULL == phNativeEvent`), all `get_native` needs.
    unsafe { get_native("urEventGetNativeHandle", event, out, |e: &Event| e.core().native_handle()) }
}

/// # Safety
/// UR's contract for `urQueueGetNativeHandle`. The descriptor (`pDesc`)
/// only carries a hint for adapters with several native queues per queue;
/// it is accepted and checked for its structure type.
pub(crate) unsafe extern "C" fn urQueueGetNativeHandle(
    queue: ur_queue_handle_t,
    desc: *mut ur_queue_native_desc_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: null or readable per the contract.
    let desc = unsafe { desc.as_ref() };
    let native = |q: &Queue| {
        if let Some(desc) = desc {
            ensure!(
                desc.stype == ur_structure_type_t::UR_STRUCTURE_TYPE_QUEUE_NATIVE_DESC,
                InvalidValue,
                "pDesc->stype is {:?}",
                desc.stype
            );
        }
        q.core().native_handle()
    };
    // SAFETY: `queue` is null or one of this adapter's handles and `out` writable (entry_points doc, "Handles",
    // "Out-pointers"; not null: checks.rs rejected `NULL == phNativeQueue`), all `get_native` needs.
    unsafe { get_native("urQueueGetNativeHandle", queue, out, native) }
}

/// # Safety
/// UR's contract for `urMemGetNativeHandle`; `hDevice`, when given, must be
/// a device handle (a buffer has one native object for all its context's devices).
pub(crate) unsafe extern "C" fn urMemGetNativeHandle(
    mem: ur_mem_handle_t,
    device: ur_device_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    let native = |m: &Mem| {
        if !device.is_null() {
            // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
            let device = unsafe { Handle::<Device>::get(device)? };
            // One native object serves every device of the context: its
            // device, or the devices of a family and their sub-devices.
            let context = &m.context().value;
            ensure!(
                std::ptr::eq(&**context.device(), device) || context.holds(device),
                InvalidDevice,
                "hDevice is not a device of the buffer's context"
            );
        }
        m.core().native_handle()
    };
    // SAFETY: `mem` is null or one of this adapter's handles and `out` writable (entry_points doc, "Handles",
    // "Out-pointers"; not null: checks.rs rejected `NULL == phNativeMem`), all `get_native` needs.
    unsafe { get_native("urMemGetNativeHandle", mem, out, native) }
}

/// A C native-enqueue function, its data and the queue handle it is given.
struct NativeEnqueue {
    function: unsafe extern "C" fn(ur_queue_handle_t, *mut c_void),
    data: *mut c_void,
    queue: ur_queue_handle_t,
}

// SAFETY: UR lets the function run on any thread with its data; the queue
// handle is only passed back to the application, and the queue outlives
// the command (queues finish their commands before they go).
unsafe impl Send for NativeEnqueue {}
// SAFETY: as for Send; the callback is called once.
unsafe impl Sync for NativeEnqueue {}

/// # Safety
/// UR's contract for `urEnqueueNativeCommandExp`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn urEnqueueNativeCommandExp(
    queue: ur_queue_handle_t,
    function: ur_exp_enqueue_native_command_function_t,
    data: *mut c_void,
    num_mems: u32,
    mems: *const ur_mem_handle_t,
    properties: *const ur_exp_enqueue_native_command_properties_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueNativeCommandExp", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        let function = function.ok_or_else(|| err!(InvalidNullPointer, "pfnNativeEnqueue is null"))?;
        // SAFETY: null or readable per the contract.
        if let Some(p) = unsafe { properties.as_ref() } {
            // Bits outside the enumeration are UR's INVALID_ENUMERATION; the
            // one flag it defines (TBD) is reserved, with no behaviour to
            // honour: refused with the same code rather than ignored.
            ensure!(p.flags == 0, InvalidEnumeration, "native-enqueue flags {:#x}", p.flags);
        }
        // SAFETY: `mems` is null or holds `num_mems` handles, each null or one of this adapter's (entry_points doc,
        // "Handles", "Arrays and strings"), all `get_list` needs.
        let mems = unsafe {
            get_list::<Mem>(mems, num_mems, || err!(InvalidValue, "the memory list and its count disagree"))?
        };
        let mems: Vec<&cmdbuf_core::MemBuffer> = mems.iter().map(|m| m.value.core()).collect();
        let native = NativeEnqueue { function, data, queue };
        let callback = move |_: &cmdbuf_core::NativeScope<'_>| {
            let native = &native;
            // SAFETY: the application enqueued this function with this data.
            unsafe { (native.function)(native.queue, native.data) }
        };
        // SAFETY: the application's native work is its business (UR's
        // contract); cmdbuf-core orders it, keeps the buffers alive, and calls
        // the function before returning, as UR's contract has it (`pData`
        // need only live for the call).
        let done = unsafe { call.core().enqueue_native_command_now(&mems, &call.wait, callback)? };
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_ENQUEUE_NATIVE_EXP) }
    })
}

/// A C native-command function and its data.
struct NativeAppend {
    function: unsafe extern "C" fn(*mut c_void),
    data: *mut c_void,
}

// SAFETY: as for [`NativeEnqueue`]; the data must stay valid for as long as
// the buffer may run the callback (see docs/abi.md).
unsafe impl Send for NativeAppend {}
// SAFETY: as for Send; calls are serialised by the command buffer's runs.
unsafe impl Sync for NativeAppend {}

/// # Safety
/// UR's contract for `urCommandBufferAppendNativeCommandExp`, and `pData`
/// valid wherever cmdbuf runs the callback: at the append (Vulkan, CUDA) or
/// at each execution (CPU, OpenCL, software command buffers), see
/// docs/abi.md.
pub(crate) unsafe extern "C" fn urCommandBufferAppendNativeCommandExp(
    buffer: ur_exp_command_buffer_handle_t,
    function: ur_exp_command_buffer_native_command_function_t,
    data: *mut c_void,
    child: ur_exp_command_buffer_handle_t,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
) -> ur_result_t {
    guard("urCommandBufferAppendNativeCommandExp", || {
        let function = function.ok_or_else(|| err!(InvalidNullPointer, "pfnNativeCommand is null"))?;
        let child = if child.is_null() {
            None
        } else {
            // SAFETY: `child` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
            Some(unsafe { Handle::<CommandBuffer>::get(child)? })
        };
        let call = NativeAppend { function, data };
        let callback = move |_: &cmdbuf_core::NativeScope<'_>| {
            let call = &call;
            // SAFETY: the application appended this function with this data.
            unsafe { (call.function)(call.data) }
        };
        let append_native = |cb: &cmdbuf_core::CommandBuffer, opts: AppendOptions<'_>| {
            let child = child.map(|c| c.value.core());
            // SAFETY: the application's native work is its business (UR's contract).
            let point = unsafe { cb.append_native_command(child, opts.sync_points, callback)? };
            Ok(Appended { sync_point: point, event: None, command: None })
        };
        let out = AppendOut { sync_point, event: std::ptr::null_mut(), command: std::ptr::null_mut() };
        let none = std::ptr::null();
        // SAFETY: `buffer`, the sync points and `sync_point` are as `append` requires (entry_points doc, "Handles",
        // "Wait lists", "Out-pointers"); the wait list passed is empty (0, null) and the other outputs null.
        unsafe {
            append(
                buffer,
                num_sync_points,
                sync_points,
                0,
                none,
                out,
                ur_command_t::UR_COMMAND_ENQUEUE_NATIVE_EXP,
                append_native,
            )
        }
    })
}

/// # Safety
/// UR's contract for `urProgramGetNativeHandle`.
pub(crate) unsafe extern "C" fn urProgramGetNativeHandle(
    program: ur_program_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: `program` is null or one of this adapter's handles and `out` writable (entry_points doc, "Handles",
    // "Out-pointers"; not null: checks.rs rejected `NULL == phNativeProgram`), all `get_native` needs.
    unsafe {
        get_native("urProgramGetNativeHandle", program, out, |p: &Program| {
            // The backend's program object is made when the program is built:
            // before, there is no equivalent handle (the header's code for it).
            let built = p.built().map_err(|_| {
                err!(UnsupportedFeature, "the program has no native object before urProgramBuild or urProgramLink")
            })?;
            built.native_handle()
        })
    }
}

/// # Safety
/// UR's contract for `urKernelGetNativeHandle`.
pub(crate) unsafe extern "C" fn urKernelGetNativeHandle(
    kernel: ur_kernel_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: `kernel` is null or one of this adapter's handles and `out` writable (entry_points doc, "Handles",
    // "Out-pointers"; not null: checks.rs rejected `NULL == phNativeKernel`), all `get_native` needs.
    unsafe { get_native("urKernelGetNativeHandle", kernel, out, |k: &Kernel| k.core().native_handle()) }
}
