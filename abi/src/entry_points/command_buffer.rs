//! `urCommandBuffer*Exp` and `urEnqueueCommandBufferExp`: command buffers,
//! one to one over cmdbuf-core's `CommandBuffer`.
//!
//! Every append shares a tail (sync points to wait for, events to wait for,
//! and the sync point, signal event and command handle it hands back),
//! handled once in [`append`]. Command handles belong to their buffer and
//! live as long as it does; UR has no retain or release for them.

#![allow(non_snake_case)]

use std::ffi::c_void;
use std::sync::Arc;

use cmdbuf_core::{
    CommandBufferDesc, CommandHandle, KernelArg, KernelLaunchUpdate, LocalSizeUpdate, UsmPtr, ensure, err,
};
use parking_lot::Mutex;

use crate::boundary::conv::{Direction, Extent, HostTransfer, rect};
use crate::boundary::conv::{migration, pattern, usm_advice};
use crate::boundary::conv::{value_bytes, work_sizes};
use crate::entry::{AbiResult, guard};
use crate::handle::Handle;
use crate::info::{InfoOut, optional_list, query, slice, write_out};
use crate::objects::command_buffer::{AppendOut, Command, CommandBuffer, append};
use crate::objects::context::Context;
use crate::objects::device::Device;
use crate::objects::event::{EagerCall, emit_unqueued, wait_list};
use crate::objects::kernel::{Kernel, NdRangeArgs, launch_args};
use crate::objects::mem::Mem;
use crate::sys::*;

/// # Safety
/// UR's contract for `urCommandBufferCreateExp`.
pub(crate) unsafe extern "C" fn urCommandBufferCreateExp(
    context: ur_context_handle_t,
    device: ur_device_handle_t,
    desc: *const ur_exp_command_buffer_desc_t,
    out: *mut ur_exp_command_buffer_handle_t,
) -> ur_result_t {
    guard("urCommandBufferCreateExp", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let context = unsafe { Handle::<Context>::get(context)? };
        // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let device = unsafe { Handle::<Device>::get(device)? };
        // SAFETY: non-null because checks.rs rejected `NULL == pCommandBufferDesc`; one readable descriptor per the
        // contract ("Arrays and strings").
        let d = unsafe { &*desc };
        let desc = CommandBufferDesc {
            updatable: d.isUpdatable != 0,
            in_order: d.isInOrder != 0,
            profiling: d.enableProfiling != 0,
            ..CommandBufferDesc::default()
        };
        let buffer = cmdbuf_core::CommandBuffer::new(context.value.core(), device.value.core(), desc)?;
        let value = CommandBuffer { buffer, context: context.to_arc(), commands: Mutex::default() };
        // SAFETY: non-null because checks.rs rejected `NULL == phCommandBuffer`; writable per the contract
        // ("Out-pointers").
        unsafe { write_out(out, Handle::create(value)) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urCommandBufferRetainExp`.
pub(crate) unsafe extern "C" fn urCommandBufferRetainExp(buffer: ur_exp_command_buffer_handle_t) -> ur_result_t {
    // SAFETY: `buffer` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urCommandBufferRetainExp", || unsafe { Handle::<CommandBuffer>::retain(buffer) })
}

/// # Safety
/// UR's contract for `urCommandBufferReleaseExp`.
pub(crate) unsafe extern "C" fn urCommandBufferReleaseExp(buffer: ur_exp_command_buffer_handle_t) -> ur_result_t {
    // A buffer released while it executes stays alive: cmdbuf-core's submissions
    // hold it.
    // SAFETY: `buffer` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urCommandBufferReleaseExp", || unsafe { Handle::<CommandBuffer>::release(buffer) })
}

/// # Safety
/// UR's contract for `urCommandBufferFinalizeExp`.
pub(crate) unsafe extern "C" fn urCommandBufferFinalizeExp(buffer: ur_exp_command_buffer_handle_t) -> ur_result_t {
    guard("urCommandBufferFinalizeExp", || {
        // SAFETY: `buffer` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let buffer = unsafe { Handle::<CommandBuffer>::get(buffer)? };
        buffer.value.buffer.finalize()
    })
}

/// # Safety
/// UR's contract for `urCommandBufferGetInfoExp`.
pub(crate) unsafe extern "C" fn urCommandBufferGetInfoExp(
    buffer: ur_exp_command_buffer_handle_t,
    name: ur_exp_command_buffer_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |handle: &Handle<CommandBuffer>, out: InfoOut| match name {
        ur_exp_command_buffer_info_t::UR_EXP_COMMAND_BUFFER_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
        ur_exp_command_buffer_info_t::UR_EXP_COMMAND_BUFFER_INFO_DESCRIPTOR => {
            let d = handle.value.buffer.descriptor();
            out.value(ur_exp_command_buffer_desc_t {
                stype: ur_structure_type_t::UR_STRUCTURE_TYPE_EXP_COMMAND_BUFFER_DESC,
                pNext: std::ptr::null(),
                isUpdatable: d.updatable.into(),
                isInOrder: d.in_order.into(),
                enableProfiling: d.profiling.into(),
            })
        }
        other => Err(err!(InvalidEnumeration, "command-buffer info {}", other.0)),
    };
    // SAFETY: `buffer` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urCommandBufferGetInfoExp", buffer, (size, value, size_ret), answer) }
}

/// # Safety
/// UR's contract for `urCommandBufferGetNativeHandleExp`.
pub(crate) unsafe extern "C" fn urCommandBufferGetNativeHandleExp(
    buffer: ur_exp_command_buffer_handle_t,
    native: *mut ur_native_handle_t,
) -> ur_result_t {
    guard("urCommandBufferGetNativeHandleExp", || {
        // SAFETY: `buffer` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<CommandBuffer>::get(buffer)? };
        let value = handle.value.buffer.native_handle()?;
        // SAFETY: non-null because checks.rs rejected `NULL == phNativeCommandBuffer`; writable per the contract
        // ("Out-pointers").
        unsafe { write_out(native, value.0 as ur_native_handle_t) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendUSMMemcpyExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendUSMMemcpyExp(
    buffer: ur_exp_command_buffer_handle_t,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendUSMMemcpyExp", || {
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers"); `dst` and `src` stay valid at every execution of the buffer ("Host
        // memory"), as `append_usm_memcpy_host` requires.
        unsafe {
            append(
                buffer,
                num_sync_points,
                sync_points,
                num_events,
                events,
                out,
                ur_command_t::UR_COMMAND_USM_MEMCPY,
                |cb, o| cb.append_usm_memcpy_host(dst.cast(), src.cast(), size, o),
            )
        }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendUSMFillExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendUSMFillExp(
    buffer: ur_exp_command_buffer_handle_t,
    mem: *mut c_void,
    pattern_ptr: *const c_void,
    pattern_size: usize,
    size: usize,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendUSMFillExp", || {
        let dst = UsmPtr::from_addr(mem as u64);
        // SAFETY: `pattern_ptr` is readable for `pattern_size` bytes (entry_points doc, "Arrays and strings"; not null:
        // checks.rs rejected `NULL == pPattern`), all `pattern` needs.
        let pattern = unsafe { pattern(pattern_ptr, pattern_size)? };
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers").
        unsafe {
            append(
                buffer,
                num_sync_points,
                sync_points,
                num_events,
                events,
                out,
                ur_command_t::UR_COMMAND_USM_FILL,
                |cb, o| cb.append_usm_fill(dst, pattern, size, o),
            )
        }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendUSMPrefetchExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendUSMPrefetchExp(
    buffer: ur_exp_command_buffer_handle_t,
    mem: *const c_void,
    size: usize,
    flags: ur_usm_migration_flags_t,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendUSMPrefetchExp", || {
        let ptr = UsmPtr::from_addr(mem as u64);
        let flags = migration(flags);
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers").
        unsafe {
            append(
                buffer,
                num_sync_points,
                sync_points,
                num_events,
                events,
                out,
                ur_command_t::UR_COMMAND_USM_PREFETCH,
                |cb, o| cb.append_usm_prefetch(ptr, size, flags, o),
            )
        }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendUSMAdviseExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendUSMAdviseExp(
    buffer: ur_exp_command_buffer_handle_t,
    mem: *const c_void,
    size: usize,
    advice: ur_usm_advice_flags_t,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendUSMAdviseExp", || {
        let ptr = UsmPtr::from_addr(mem as u64);
        let advice = usm_advice(advice);
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers").
        unsafe {
            append(
                buffer,
                num_sync_points,
                sync_points,
                num_events,
                events,
                out,
                ur_command_t::UR_COMMAND_USM_ADVISE,
                |cb, o| cb.append_usm_advise(ptr, size, advice, o),
            )
        }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendMemBufferCopyExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendMemBufferCopyExp(
    buffer: ur_exp_command_buffer_handle_t,
    src: ur_mem_handle_t,
    dst: ur_mem_handle_t,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendMemBufferCopyExp", || {
        // SAFETY: `src` and `dst` are each null or one of this adapter's handles (entry_points doc, "Handles"), all
        // `get` needs.
        let (src, dst) = unsafe { (Handle::<Mem>::get(src)?, Handle::<Mem>::get(dst)?) };
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers").
        unsafe {
            append(
                buffer,
                num_sync_points,
                sync_points,
                num_events,
                events,
                out,
                ur_command_t::UR_COMMAND_MEM_BUFFER_COPY,
                |cb, o| cb.append_buffer_copy(src.value.core(), dst.value.core(), src_offset, dst_offset, size, o),
            )
        }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendMemBufferCopyRectExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendMemBufferCopyRectExp(
    buffer: ur_exp_command_buffer_handle_t,
    src: ur_mem_handle_t,
    dst: ur_mem_handle_t,
    src_origin: ur_rect_offset_t,
    dst_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    src_row_pitch: usize,
    src_slice_pitch: usize,
    dst_row_pitch: usize,
    dst_slice_pitch: usize,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendMemBufferCopyRectExp", || {
        // SAFETY: `src` and `dst` are each null or one of this adapter's handles (entry_points doc, "Handles"), all
        // `get` needs.
        let (src, dst) = unsafe { (Handle::<Mem>::get(src)?, Handle::<Mem>::get(dst)?) };
        let rect =
            rect(src_origin, dst_origin, region, (src_row_pitch, src_slice_pitch), (dst_row_pitch, dst_slice_pitch))?;
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers").
        unsafe {
            append(
                buffer,
                num_sync_points,
                sync_points,
                num_events,
                events,
                out,
                ur_command_t::UR_COMMAND_MEM_BUFFER_COPY_RECT,
                |cb, o| {
                    let (src, dst) = (src.value.core(), dst.value.core());
                    cb.append_buffer_copy_rect(src, dst, rect.first, rect.second, rect.region, o)
                },
            )
        }
    })
}

/// An appended transfer between a buffer and host memory: what the four
/// read and write entry points share once their arguments are converted.
///
/// # Safety
/// As UR's contracts for those calls give them: `mem` is null or one of this
/// adapter's handles; `buffer`, the sync points and the wait list (each a
/// count and its list) and `out` are as [`append`] requires; the host memory
/// stays valid at every execution of the buffer.
unsafe fn append_transfer(
    buffer: ur_exp_command_buffer_handle_t,
    mem: ur_mem_handle_t,
    transfer: HostTransfer,
    (num_sync_points, sync_points): (u32, *const ur_exp_command_buffer_sync_point_t),
    (num_events, events): (u32, *const ur_event_handle_t),
    out: AppendOut,
) -> AbiResult {
    // SAFETY: `mem` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
    let mem = unsafe { Handle::<Mem>::get(mem)? };
    let command_type = transfer.command_type();
    let append_it = |cb: &cmdbuf_core::CommandBuffer, o: cmdbuf_core::AppendOptions<'_>| {
        // SAFETY: the host memory stays valid at every execution of the buffer (this function's `# Safety`), all
        // `command` needs.
        let command = unsafe { transfer.command(cb.context(), mem.value.core())? };
        cb.append_command(command, o)
    };
    // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires (this function's
    // `# Safety`).
    unsafe { append(buffer, num_sync_points, sync_points, num_events, events, out, command_type, append_it) }
}

/// # Safety
/// UR's contract for `urCommandBufferAppendMemBufferReadExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendMemBufferReadExp(
    buffer: ur_exp_command_buffer_handle_t,
    mem: ur_mem_handle_t,
    offset: usize,
    size: usize,
    dst: *mut c_void,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    let transfer = HostTransfer { extent: Extent::Linear { offset, size }, direction: Direction::Read(dst.cast()) };
    let out = AppendOut { sync_point, event, command };
    // SAFETY: `buffer`, `mem`, the sync points, the wait list and `out` are as `append_transfer` requires
    // (entry_points doc, "Handles", "Wait lists", "Out-pointers"); `dst` stays valid at every execution of the buffer
    // ("Host memory"; not null: checks.rs rejected `NULL == pDst`).
    guard("urCommandBufferAppendMemBufferReadExp", || unsafe {
        append_transfer(buffer, mem, transfer, (num_sync_points, sync_points), (num_events, events), out)
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendMemBufferWriteExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendMemBufferWriteExp(
    buffer: ur_exp_command_buffer_handle_t,
    mem: ur_mem_handle_t,
    offset: usize,
    size: usize,
    src: *const c_void,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    let transfer = HostTransfer { extent: Extent::Linear { offset, size }, direction: Direction::Write(src.cast()) };
    let out = AppendOut { sync_point, event, command };
    // SAFETY: `buffer`, `mem`, the sync points, the wait list and `out` are as `append_transfer` requires
    // (entry_points doc, "Handles", "Wait lists", "Out-pointers"); `src` stays valid at every execution of the buffer
    // ("Host memory"; not null: checks.rs rejected `NULL == pSrc`).
    guard("urCommandBufferAppendMemBufferWriteExp", || unsafe {
        append_transfer(buffer, mem, transfer, (num_sync_points, sync_points), (num_events, events), out)
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendMemBufferReadRectExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendMemBufferReadRectExp(
    buffer: ur_exp_command_buffer_handle_t,
    mem: ur_mem_handle_t,
    buffer_origin: ur_rect_offset_t,
    host_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    dst: *mut c_void,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendMemBufferReadRectExp", || {
        let buffer_pitches = (buffer_row_pitch, buffer_slice_pitch);
        let rect = rect(buffer_origin, host_origin, region, buffer_pitches, (host_row_pitch, host_slice_pitch))?;
        let transfer = HostTransfer { extent: Extent::Rect(rect), direction: Direction::Read(dst.cast()) };
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, `mem`, the sync points, the wait list and `out` are as `append_transfer` requires
        // (entry_points doc, "Handles", "Wait lists", "Out-pointers"); `dst` stays valid at every execution of the
        // buffer ("Host memory"; not null: checks.rs rejected `NULL == pDst`).
        unsafe { append_transfer(buffer, mem, transfer, (num_sync_points, sync_points), (num_events, events), out) }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendMemBufferWriteRectExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendMemBufferWriteRectExp(
    buffer: ur_exp_command_buffer_handle_t,
    mem: ur_mem_handle_t,
    buffer_origin: ur_rect_offset_t,
    host_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    src: *mut c_void,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendMemBufferWriteRectExp", || {
        let buffer_pitches = (buffer_row_pitch, buffer_slice_pitch);
        let rect = rect(buffer_origin, host_origin, region, buffer_pitches, (host_row_pitch, host_slice_pitch))?;
        let transfer =
            HostTransfer { extent: Extent::Rect(rect), direction: Direction::Write(src.cast_const().cast()) };
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, `mem`, the sync points, the wait list and `out` are as `append_transfer` requires
        // (entry_points doc, "Handles", "Wait lists", "Out-pointers"); `src` stays valid at every execution of the
        // buffer ("Host memory"; not null: checks.rs rejected `NULL == pSrc`).
        unsafe { append_transfer(buffer, mem, transfer, (num_sync_points, sync_points), (num_events, events), out) }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendMemBufferFillExp`.
pub(crate) unsafe extern "C" fn urCommandBufferAppendMemBufferFillExp(
    buffer: ur_exp_command_buffer_handle_t,
    mem: ur_mem_handle_t,
    pattern_ptr: *const c_void,
    pattern_size: usize,
    offset: usize,
    size: usize,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendMemBufferFillExp", || {
        // SAFETY: `mem` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let mem = unsafe { Handle::<Mem>::get(mem)? };
        // SAFETY: `pattern_ptr` is readable for `pattern_size` bytes (entry_points doc, "Arrays and strings"; not null:
        // checks.rs rejected `NULL == pPattern`), all `pattern` needs.
        let pattern = unsafe { pattern(pattern_ptr, pattern_size)? };
        let out = AppendOut { sync_point, event, command };
        // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers").
        unsafe {
            append(
                buffer,
                num_sync_points,
                sync_points,
                num_events,
                events,
                out,
                ur_command_t::UR_COMMAND_MEM_BUFFER_FILL,
                |cb, o| cb.append_buffer_fill(mem.value.core(), pattern, offset, size, o),
            )
        }
    })
}

/// # Safety
/// UR's contract for `urEnqueueCommandBufferExp`.
pub(crate) unsafe extern "C" fn urEnqueueCommandBufferExp(
    queue: ur_queue_handle_t,
    buffer: ur_exp_command_buffer_handle_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueCommandBufferExp", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: `buffer` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let buffer = unsafe { Handle::<CommandBuffer>::get(buffer)? };
        let done = call.core().enqueue_command_buffer(&buffer.value.buffer, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_ENQUEUE_COMMAND_BUFFER_EXP) }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferUpdateSignalEventExp`.
pub(crate) unsafe extern "C" fn urCommandBufferUpdateSignalEventExp(
    command: ur_exp_command_buffer_command_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urCommandBufferUpdateSignalEventExp", || {
        // SAFETY: `command` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let command = unsafe { Handle::<Command>::get(command)? };
        let buffer = command.value.buffer()?;
        let signal = buffer.value.buffer.update_signal_event(&command.value.handle)?;
        // SAFETY: non-null because checks.rs rejected `NULL == phSignalEvent`; writable per the contract
        // ("Out-pointers").
        unsafe {
            emit_unqueued(event, signal, &buffer.value.context, ur_command_t::UR_COMMAND_ENQUEUE_COMMAND_BUFFER_EXP)
        };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urCommandBufferUpdateWaitEventsExp`.
pub(crate) unsafe extern "C" fn urCommandBufferUpdateWaitEventsExp(
    command: ur_exp_command_buffer_command_handle_t,
    num_events: u32,
    events: *const ur_event_handle_t,
) -> ur_result_t {
    guard("urCommandBufferUpdateWaitEventsExp", || {
        // SAFETY: `command` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let command = unsafe { Handle::<Command>::get(command)? };
        // SAFETY: `events` is null or points to `num_events` event handles (entry_points doc, "Wait lists"), all
        // `wait_list` needs.
        let wait = unsafe { wait_list(events, num_events)? };
        command.value.buffer()?.value.buffer.update_wait_events(&command.value.handle, &wait)
    })
}

/// Appends a kernel launch; shared by both append entry points.
///
/// # Safety
/// As UR's contract for `urCommandBufferAppendKernelLaunchWithArgsExp` gives
/// them: `buffer`, `kernel` and each of `alternatives.1`'s `alternatives.0`
/// handles are null or handles of this adapter; `range`'s pointers are null
/// or hold `range.0` sizes; `args.1` is null or holds `args.0` properties
/// whose values are valid for their type; the sync points, `events` and
/// `out` are as for [`append`]; and the memory the arguments reach stays
/// valid whenever the buffer runs.
#[allow(clippy::too_many_arguments)]
unsafe fn append_launch(
    buffer: ur_exp_command_buffer_handle_t,
    kernel: ur_kernel_handle_t,
    range: (u32, *const usize, *const usize, *const usize),
    args: (u32, *const ur_exp_kernel_arg_properties_t),
    alternatives: (u32, *mut ur_kernel_handle_t),
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    out: AppendOut,
) -> AbiResult {
    // SAFETY: `kernel` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
    let kernel = unsafe { Handle::<Kernel>::get(kernel)? };
    let (work_dim, offset, global, local) = range;
    // SAFETY: `range`'s pointers are null or hold `work_dim` sizes (this function's `# Safety`), all `NdRangeArgs::new`
    // needs.
    let range = unsafe { NdRangeArgs::new(work_dim, offset, global, local)? };
    // SAFETY: `args.1` is null or holds `args.0` properties valid for their type (this function's `# Safety`), all
    // `launch_args` needs.
    let args = unsafe { launch_args(kernel.value.core(), args.0, args.1)? };
    // SAFETY: `alternatives.1` is null or holds `alternatives.0` handles (this function's `# Safety`), all `slice`
    // needs.
    let alternatives = unsafe {
        slice(alternatives.1.cast_const(), alternatives.0 as usize, || {
            err!(InvalidNullPointer, "phKernelAlternatives is null")
        })?
    };
    let alternatives = alternatives
        .iter()
        // SAFETY: each alternative is null or one of this adapter's handles (this function's `# Safety`), all `get`
        // needs.
        .map(|&k| unsafe { Handle::<Kernel>::get(k) }.map(|k| k.value.core()))
        .collect::<AbiResult<Vec<_>>>()?;
    let launch = range.launch(kernel.value.core(), &args);
    // SAFETY: `buffer`, the sync points, the wait list and `out` are as `append` requires, and the memory the arguments
    // reach stays valid whenever the buffer runs, as `append_kernel_launch` requires (this function's `# Safety`).
    unsafe {
        append(
            buffer,
            num_sync_points,
            sync_points,
            num_events,
            events,
            out,
            ur_command_t::UR_COMMAND_KERNEL_LAUNCH,
            // UR's contract makes the caller responsible for the memory the
            // arguments reach whenever the buffer runs.
            |cb, o| cb.append_kernel_launch(&launch, &alternatives, o),
        )
    }
}

/// # Safety
/// UR's contract for `urCommandBufferAppendKernelLaunchWithArgsExp`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn urCommandBufferAppendKernelLaunchWithArgsExp(
    buffer: ur_exp_command_buffer_handle_t,
    kernel: ur_kernel_handle_t,
    work_dim: u32,
    global_offset: *const usize,
    global_size: *const usize,
    local_size: *const usize,
    num_args: u32,
    args: *const ur_exp_kernel_arg_properties_t,
    num_alternatives: u32,
    alternatives: *mut ur_kernel_handle_t,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendKernelLaunchWithArgsExp", || {
        // SAFETY: UR's contract for this call gives each parameter what `append_launch`'s `# Safety` lists
        // (entry_points doc, "Handles", "Wait lists", "Arrays and strings", "Out-pointers", "Host memory").
        unsafe {
            append_launch(
                buffer,
                kernel,
                (work_dim, global_offset, global_size, local_size),
                (num_args, args),
                (num_alternatives, alternatives),
                num_sync_points,
                sync_points,
                num_events,
                events,
                AppendOut { sync_point, event, command },
            )
        }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferAppendKernelLaunchExp`: the form
/// without arguments, which UR 0.12 keeps for kernels set up elsewhere.
/// Kernels of cmdbuf hold no arguments, so it launches kernels that take
/// none; for others the missing argument is reported.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn urCommandBufferAppendKernelLaunchExp(
    buffer: ur_exp_command_buffer_handle_t,
    kernel: ur_kernel_handle_t,
    work_dim: u32,
    global_offset: *const usize,
    global_size: *const usize,
    local_size: *const usize,
    num_alternatives: u32,
    alternatives: *mut ur_kernel_handle_t,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    sync_point: *mut ur_exp_command_buffer_sync_point_t,
    event: *mut ur_event_handle_t,
    command: *mut ur_exp_command_buffer_command_handle_t,
) -> ur_result_t {
    guard("urCommandBufferAppendKernelLaunchExp", || {
        // SAFETY: UR's contract for this call gives each parameter what `append_launch`'s `# Safety` lists
        // (entry_points doc, "Handles", "Wait lists", "Arrays and strings", "Out-pointers", "Host memory"); the
        // argument list passed is empty (0, null).
        unsafe {
            append_launch(
                buffer,
                kernel,
                (work_dim, global_offset, global_size, local_size),
                (0, std::ptr::null()),
                (num_alternatives, alternatives),
                num_sync_points,
                sync_points,
                num_events,
                events,
                AppendOut { sync_point, event, command },
            )
        }
    })
}

/// # Safety
/// UR's contract for `urCommandBufferUpdateKernelLaunchExp`.
pub(crate) unsafe extern "C" fn urCommandBufferUpdateKernelLaunchExp(
    buffer: ur_exp_command_buffer_handle_t,
    count: u32,
    descs: *const ur_exp_command_buffer_update_kernel_launch_desc_t,
) -> ur_result_t {
    guard("urCommandBufferUpdateKernelLaunchExp", || {
        // SAFETY: `buffer` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<CommandBuffer>::get(buffer)? };
        // SAFETY: `descs` holds `count` descriptors (entry_points doc, "Arrays and strings"); it is non-null and
        // `count` is not 0 because checks.rs rejected `NULL == pUpdateKernelLaunch` and `numKernelUpdates == 0`.
        let descs = unsafe { std::slice::from_raw_parts(descs, count as usize) };
        let mut commands = Vec::with_capacity(descs.len());
        for desc in descs {
            ensure!(
                desc.stype == ur_structure_type_t::UR_STRUCTURE_TYPE_EXP_COMMAND_BUFFER_UPDATE_KERNEL_LAUNCH_DESC,
                InvalidValue,
                "update descriptor with stype {}",
                desc.stype.0
            );
            // SAFETY: `desc.hCommand` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get`
            // needs.
            let command = unsafe { Handle::<Command>::get(desc.hCommand)? };
            ensure!(
                std::ptr::eq(Arc::as_ptr(&command.value.buffer()?), handle),
                InvalidCommandHandle,
                "the command belongs to another command buffer"
            );
            commands.push(command);
        }
        let mut updates = Vec::with_capacity(descs.len());
        for (desc, command) in descs.iter().zip(&commands) {
            // SAFETY: `desc` is one of the `count` descriptors, whose handles, lists and sizes UR's contract makes what
            // `kernel_update` requires (entry_points doc, "Handles", "Arrays and strings").
            updates.push(unsafe { kernel_update(desc, &command.value.handle)? });
        }
        // SAFETY: UR's contract makes the caller responsible for the memory
        // the new arguments reach whenever the buffer runs.
        unsafe { handle.value.buffer.update_kernel_launches(&updates) }
    })
}

/// One update descriptor in cmdbuf-core's terms.
///
/// # Safety
/// As UR's contract for `urCommandBufferUpdateKernelLaunchExp` gives them:
/// `desc`'s `hNewKernel` and each `hNewMemObjArg` are null or handles of
/// this adapter; its lists are null or hold their counts' entries, each
/// `pNewValueArg` null or readable for `argSize` bytes and each
/// `pNewPointerArg` null or pointing to a pointer; its work-size pointers are
/// null or hold `newWorkDim` values.
unsafe fn kernel_update<'a>(
    desc: &'a ur_exp_command_buffer_update_kernel_launch_desc_t,
    command: &'a CommandHandle,
) -> AbiResult<KernelLaunchUpdate<'a>> {
    // The header asks for a valid `newWorkDim` in every descriptor, not
    // only in those that give new sizes.
    ensure!(
        (1..=3).contains(&desc.newWorkDim),
        InvalidWorkDimension,
        "newWorkDim {} is not 1, 2 or 3",
        desc.newWorkDim
    );
    let mut update = KernelLaunchUpdate::new(command);
    if !desc.hNewKernel.is_null() {
        // SAFETY: `hNewKernel` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
        update = update.kernel(unsafe { Handle::<Kernel>::get(desc.hNewKernel)? }.value.core());
    }
    // SAFETY: each list is null or holds its count's entries (this function's `# Safety`), all `optional_list` needs.
    let (mems, pointers, values) = unsafe {
        (
            optional_list(desc.pNewMemObjArgList, desc.numNewMemObjArgs, "pNewMemObjArgList")?,
            optional_list(desc.pNewPointerArgList, desc.numNewPointerArgs, "pNewPointerArgList")?,
            optional_list(desc.pNewValueArgList, desc.numNewValueArgs, "pNewValueArgList")?,
        )
    };
    for m in mems {
        let arg = if m.hNewMemObjArg.is_null() {
            KernelArg::Pointer(UsmPtr::from_addr(0))
        } else {
            // SAFETY: `hNewMemObjArg` is null or a handle of ours (this function's `# Safety`), all `get` needs.
            KernelArg::MemObj(unsafe { Handle::<Mem>::get(m.hNewMemObjArg)? }.value.core())
        };
        update = update.arg(m.argIndex as usize, arg);
    }
    for p in pointers {
        // UR passes the address of the new pointer value.
        ensure!(!p.pNewPointerArg.is_null(), InvalidNullPointer, "pNewPointerArg is null");
        // SAFETY: non-null, pointing to a pointer per the contract.
        let ptr = unsafe { p.pNewPointerArg.cast::<*const c_void>().read_unaligned() };
        update = update.arg(p.argIndex as usize, KernelArg::Pointer(UsmPtr::from_addr(ptr as u64)));
    }
    for v in values {
        // `pNewValueArg` is optional: without one the argument is local memory
        // of `argSize` bytes, as `urKernelSetArgLocal` gives it (UR's own
        // adapters read it so); cmdbuf-core checks that the argument is local.
        let arg = if v.pNewValueArg.is_null() {
            KernelArg::Local(v.argSize)
        } else {
            // SAFETY: `pNewValueArg` is readable for `argSize` bytes (this function's `# Safety`): `value_bytes`.
            KernelArg::Value(unsafe { value_bytes(v.pNewValueArg, v.argSize)? })
        };
        update = update.arg(v.argIndex as usize, arg);
    }
    let resizes =
        !(desc.pNewGlobalWorkOffset.is_null() && desc.pNewGlobalWorkSize.is_null() && desc.pNewLocalWorkSize.is_null());
    if resizes {
        // SAFETY: the work sizes are null or hold `newWorkDim` values (this function's `# Safety`): `work_sizes`.
        let (offset, global, local) = unsafe {
            (
                work_sizes(desc.newWorkDim, desc.pNewGlobalWorkOffset, "pNewGlobalWorkOffset")?,
                work_sizes(desc.newWorkDim, desc.pNewGlobalWorkSize, "pNewGlobalWorkSize")?,
                work_sizes(desc.newWorkDim, desc.pNewLocalWorkSize, "pNewLocalWorkSize")?,
            )
        };
        if let Some(offset) = offset {
            update = update.global_offset(offset);
        }
        if let Some(global) = global {
            update = update.global_size(global);
        }
        update = update.local_size(match (local, global) {
            (Some(local), _) => LocalSizeUpdate::Set(local),
            (None, Some(_)) => LocalSizeUpdate::ImplementationChosen,
            (None, None) => LocalSizeUpdate::Keep,
        });
    }
    Ok(update)
}
