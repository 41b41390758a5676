//! `urMem*`: memory buffers, and the eager buffer commands of the
//! `urEnqueueMemBuffer*` family (each builds a cmdbuf-core `Command` and
//! enqueues it with the queue's generic `enqueue`; maps stay methods).
//!
//! Buffers are cmdbuf-core `MemBuffer`s; a sub-buffer (`urMemBufferPartition`)
//! is a `MemBuffer::partition` view, usable by every buffer entry point.
//! `UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER` initialises the buffer from the host
//! memory given. `UR_MEM_FLAG_USE_HOST_POINTER` makes that memory the
//! buffer's storage where the device reaches it (`MemBuffer::over_host_memory`:
//! the CPU library, Vulkan importing host memory, CUDA registering it,
//! OpenCL's `CL_MEM_USE_HOST_PTR`); elsewhere the device holds its own copy
//! between synchronisation points, as OpenCL allows, and maps land on the
//! host memory. Images are not supported (`UR_DEVICE_INFO_IMAGE_SUPPORT` is
//! false).

#![allow(non_snake_case)]

use std::ffi::c_void;

use cmdbuf_core::{Command, MapFlags, MemBuffer, MemFlags, ensure, err};
use parking_lot::Mutex;

use crate::boundary::conv::pattern;
use crate::boundary::conv::{Direction, Extent, HostTransfer, rect};
use crate::entry::{AbiResult, guard};
use crate::handle::Handle;
use crate::info::{InfoOut, query, write_out};
use crate::objects::context::Context;
use crate::objects::event::EagerCall;
use crate::objects::mem::{HostMemory, Mem};
use crate::sys::*;

/// # Safety
/// UR's contract for `urMemBufferCreate`.
pub(crate) unsafe extern "C" fn urMemBufferCreate(
    context: ur_context_handle_t,
    flags: ur_mem_flags_t,
    size: usize,
    properties: *const ur_buffer_properties_t,
    buffer: *mut ur_mem_handle_t,
) -> ur_result_t {
    guard("urMemBufferCreate", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let context = unsafe { Handle::<Context>::get(context)? };
        use ur_mem_flag_t as F;
        // SAFETY: null or readable per the contract. The flags, the size and
        // whether host memory is given passed the generated checks (checks.rs:
        // the flag mask, `size == 0`, and host memory given exactly with
        // USE_HOST_POINTER or ALLOC_COPY_HOST_POINTER).
        let host = unsafe { properties.as_ref() }.map_or(std::ptr::null_mut(), |p| p.pHost);
        let core_flags = core_flags(flags);
        let lent = flags & F::UR_MEM_FLAG_USE_HOST_POINTER.0 != 0;
        let core = if host.is_null() {
            MemBuffer::new(context.value.core(), core_flags, size)?
        } else if lent {
            // SAFETY: UR requires a USE_HOST_POINTER buffer's `size` bytes of
            // host memory to stay valid, and be left to the buffer's commands,
            // for the buffer's life.
            unsafe { MemBuffer::over_host_memory(context.value.core(), core_flags, host.cast(), size)? }
        } else {
            // SAFETY: UR requires the host memory to hold `size` readable bytes.
            let data = unsafe { std::slice::from_raw_parts(host.cast::<u8>(), size) };
            MemBuffer::with_data(context.value.core(), core_flags, data)?
        };
        let value = Mem {
            buffer: core,
            context: context.to_arc(),
            host: lent.then_some(HostMemory(host.cast())),
            mappings: Mutex::default(),
        };
        // SAFETY: non-null because checks.rs rejected `NULL == phBuffer`; writable per the contract ("Out-pointers").
        unsafe { write_out(buffer, Handle::create(value)) };
        Ok(())
    })
}

/// cmdbuf-core's flags for UR's (the host-pointer flags are the ABI's business).
fn core_flags(flags: ur_mem_flags_t) -> MemFlags {
    use ur_mem_flag_t as F;
    [
        (F::UR_MEM_FLAG_READ_WRITE, MemFlags::READ_WRITE),
        (F::UR_MEM_FLAG_WRITE_ONLY, MemFlags::WRITE_ONLY),
        (F::UR_MEM_FLAG_READ_ONLY, MemFlags::READ_ONLY),
        (F::UR_MEM_FLAG_ALLOC_HOST_POINTER, MemFlags::ALLOC_HOST_POINTER),
    ]
    .into_iter()
    .filter(|(ur, _)| flags & ur.0 != 0)
    .fold(MemFlags::empty(), |all, (_, ours)| all | ours)
}

/// # Safety
/// UR's contract for `urMemBufferPartition`.
pub(crate) unsafe extern "C" fn urMemBufferPartition(
    buffer: ur_mem_handle_t,
    flags: ur_mem_flags_t,
    _create_type: ur_buffer_create_type_t,
    region: *const ur_buffer_region_t,
    sub: *mut ur_mem_handle_t,
) -> ur_result_t {
    guard("urMemBufferPartition", || {
        // SAFETY: `buffer` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let parent = unsafe { Handle::<Mem>::get(buffer)? };
        // The flag mask and the create type (REGION, the only one) passed the
        // generated checks (checks.rs).
        // SAFETY: non-null because checks.rs rejected `NULL == pRegion`; readable per the contract ("Arrays and
        // strings").
        let region = unsafe { &*region };
        use ur_mem_flag_t as F;
        let host_flags = F::UR_MEM_FLAG_USE_HOST_POINTER.0 | F::UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER.0;
        // As OpenCL's: a sub-buffer's memory is its parent's, so how that was
        // made is inherited, never given.
        ensure!(
            flags & host_flags == 0,
            InvalidValue,
            "USE_HOST_POINTER and ALLOC_COPY_HOST_POINTER are inherited from the parent buffer"
        );
        let p = &parent.value;
        let core = p.buffer.partition(core_flags(flags), region.origin, region.size)?;
        let value = Mem {
            buffer: core,
            context: p.context.clone(),
            // SAFETY: the region lies inside the parent (checked by the
            // partition), whose host memory holds the parent's size.
            host: p.host.map(|h| HostMemory(unsafe { h.0.add(region.origin) })),
            mappings: Mutex::default(),
        };
        // SAFETY: non-null because checks.rs rejected `NULL == phMem`; writable per the contract ("Out-pointers").
        unsafe { write_out(sub, Handle::create(value)) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urMemRetain`.
pub(crate) unsafe extern "C" fn urMemRetain(mem: ur_mem_handle_t) -> ur_result_t {
    // SAFETY: `mem` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urMemRetain", || unsafe { Handle::<Mem>::retain(mem) })
}

/// # Safety
/// UR's contract for `urMemRelease`.
pub(crate) unsafe extern "C" fn urMemRelease(mem: ur_mem_handle_t) -> ur_result_t {
    // SAFETY: `mem` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urMemRelease", || unsafe { Handle::<Mem>::release(mem) })
}

/// # Safety
/// UR's contract for `urMemGetInfo`.
pub(crate) unsafe extern "C" fn urMemGetInfo(
    mem: ur_mem_handle_t,
    name: ur_mem_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |handle: &Handle<Mem>, out: InfoOut| match name {
        ur_mem_info_t::UR_MEM_INFO_SIZE => out.value(handle.value.buffer.size()),
        ur_mem_info_t::UR_MEM_INFO_CONTEXT => out.value(handle.value.context.raw()),
        ur_mem_info_t::UR_MEM_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
        other => Err(err!(InvalidEnumeration, "memory info {}", other.0)),
    };
    // SAFETY: `mem` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urMemGetInfo", mem, (size, value, size_ret), answer) }
}

/// An eager transfer between a buffer and host memory: what the four read
/// and write entry points share once their arguments are converted.
///
/// # Safety
/// As UR's contracts for those calls give them: `queue` and `mem` are each
/// null or one of this adapter's handles; `events` is null or holds
/// `num_events` handles, each null or one of this adapter's; `event` is null
/// or writable; the host memory stays valid until the transfer completes
/// (for a blocking one, until this call returns, as it waits).
unsafe fn enqueue_transfer(
    queue: ur_queue_handle_t,
    mem: ur_mem_handle_t,
    blocking: bool,
    transfer: HostTransfer,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> AbiResult {
    // SAFETY: `queue` and `events` are as `start` requires (this function's `# Safety`).
    let call = unsafe { EagerCall::start(queue, events, num_events)? };
    // SAFETY: `mem` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
    let mem = unsafe { Handle::<Mem>::get(mem)? };
    let core = call.core();
    // SAFETY: the host memory stays valid until the transfer completes (this function's `# Safety`), all `command`
    // needs.
    let command = unsafe { transfer.command(core.context(), mem.value.core())? };
    let done = core.enqueue(command, &call.wait)?;
    // SAFETY: `event` is null or writable (this function's `# Safety`), all `finish` needs.
    unsafe { call.finish(done, blocking, event, transfer.command_type()) }
}

/// # Safety
/// UR's contract for `urEnqueueMemBufferRead`.
pub(crate) unsafe extern "C" fn urEnqueueMemBufferRead(
    queue: ur_queue_handle_t,
    mem: ur_mem_handle_t,
    blocking: bool,
    offset: usize,
    size: usize,
    dst: *mut c_void,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    let transfer = HostTransfer { extent: Extent::Linear { offset, size }, direction: Direction::Read(dst.cast()) };
    // SAFETY: `queue`, `mem`, `events` and `event` are as `enqueue_transfer` requires (entry_points doc, "Handles",
    // "Wait lists", "Out-pointers"); `dst` stays valid until the read completes ("Host memory"; not null: checks.rs
    // rejected `NULL == pDst`).
    guard("urEnqueueMemBufferRead", || unsafe {
        enqueue_transfer(queue, mem, blocking, transfer, num_events, events, event)
    })
}

/// # Safety
/// UR's contract for `urEnqueueMemBufferWrite`.
pub(crate) unsafe extern "C" fn urEnqueueMemBufferWrite(
    queue: ur_queue_handle_t,
    mem: ur_mem_handle_t,
    blocking: bool,
    offset: usize,
    size: usize,
    src: *const c_void,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    let transfer = HostTransfer { extent: Extent::Linear { offset, size }, direction: Direction::Write(src.cast()) };
    // SAFETY: `queue`, `mem`, `events` and `event` are as `enqueue_transfer` requires (entry_points doc, "Handles",
    // "Wait lists", "Out-pointers"); `src` stays valid until the write completes ("Host memory"; not null: checks.rs
    // rejected `NULL == pSrc`).
    guard("urEnqueueMemBufferWrite", || unsafe {
        enqueue_transfer(queue, mem, blocking, transfer, num_events, events, event)
    })
}

/// # Safety
/// UR's contract for `urEnqueueMemBufferReadRect`.
pub(crate) unsafe extern "C" fn urEnqueueMemBufferReadRect(
    queue: ur_queue_handle_t,
    mem: ur_mem_handle_t,
    blocking: bool,
    buffer_origin: ur_rect_offset_t,
    host_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    dst: *mut c_void,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueMemBufferReadRect", || {
        let buffer_pitches = (buffer_row_pitch, buffer_slice_pitch);
        let rect = rect(buffer_origin, host_origin, region, buffer_pitches, (host_row_pitch, host_slice_pitch))?;
        let transfer = HostTransfer { extent: Extent::Rect(rect), direction: Direction::Read(dst.cast()) };
        // SAFETY: `queue`, `mem`, `events` and `event` are as `enqueue_transfer` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers"); `dst` stays valid until the read completes ("Host memory"; not
        // null: checks.rs rejected `NULL == pDst`).
        unsafe { enqueue_transfer(queue, mem, blocking, transfer, num_events, events, event) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueMemBufferWriteRect`.
pub(crate) unsafe extern "C" fn urEnqueueMemBufferWriteRect(
    queue: ur_queue_handle_t,
    mem: ur_mem_handle_t,
    blocking: bool,
    buffer_origin: ur_rect_offset_t,
    host_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    src: *mut c_void,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueMemBufferWriteRect", || {
        let buffer_pitches = (buffer_row_pitch, buffer_slice_pitch);
        let rect = rect(buffer_origin, host_origin, region, buffer_pitches, (host_row_pitch, host_slice_pitch))?;
        let transfer =
            HostTransfer { extent: Extent::Rect(rect), direction: Direction::Write(src.cast_const().cast()) };
        // SAFETY: `queue`, `mem`, `events` and `event` are as `enqueue_transfer` requires (entry_points doc,
        // "Handles", "Wait lists", "Out-pointers"); `src` stays valid until the write completes ("Host memory"; not
        // null: checks.rs rejected `NULL == pSrc`).
        unsafe { enqueue_transfer(queue, mem, blocking, transfer, num_events, events, event) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueMemBufferCopy`.
pub(crate) unsafe extern "C" fn urEnqueueMemBufferCopy(
    queue: ur_queue_handle_t,
    src: ur_mem_handle_t,
    dst: ur_mem_handle_t,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueMemBufferCopy", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: `src` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let src = unsafe { Handle::<Mem>::get(src)? };
        // SAFETY: `dst` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let dst = unsafe { Handle::<Mem>::get(dst)? };
        let core = call.core();
        let copy =
            Command::buffer_copy(core.context(), src.value.core(), dst.value.core(), src_offset, dst_offset, size)?;
        let done = core.enqueue(copy, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_MEM_BUFFER_COPY) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueMemBufferCopyRect`.
pub(crate) unsafe extern "C" fn urEnqueueMemBufferCopyRect(
    queue: ur_queue_handle_t,
    src: ur_mem_handle_t,
    dst: ur_mem_handle_t,
    src_origin: ur_rect_offset_t,
    dst_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    src_row_pitch: usize,
    src_slice_pitch: usize,
    dst_row_pitch: usize,
    dst_slice_pitch: usize,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueMemBufferCopyRect", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: `src` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let src = unsafe { Handle::<Mem>::get(src)? };
        // SAFETY: `dst` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let dst = unsafe { Handle::<Mem>::get(dst)? };
        let rect =
            rect(src_origin, dst_origin, region, (src_row_pitch, src_slice_pitch), (dst_row_pitch, dst_slice_pitch))?;
        let core = call.core();
        let (src, dst) = (src.value.core(), dst.value.core());
        let copy = Command::buffer_copy_rect(core.context(), src, dst, rect.first, rect.second, rect.region)?;
        let done = core.enqueue(copy, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_MEM_BUFFER_COPY_RECT) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueMemBufferFill`.
pub(crate) unsafe extern "C" fn urEnqueueMemBufferFill(
    queue: ur_queue_handle_t,
    mem: ur_mem_handle_t,
    pattern_ptr: *const c_void,
    pattern_size: usize,
    offset: usize,
    size: usize,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueMemBufferFill", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: `mem` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let mem = unsafe { Handle::<Mem>::get(mem)? };
        // SAFETY: `pattern_ptr` is readable for `pattern_size` bytes (entry_points doc, "Arrays and strings"; not null:
        // checks.rs rejected `NULL == pPattern`), all `pattern` needs.
        let pattern = unsafe { pattern(pattern_ptr, pattern_size)? };
        let (core, buffer) = (call.core(), mem.value.core());
        let done = core.enqueue(Command::buffer_fill(core.context(), buffer, pattern, offset, size)?, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_MEM_BUFFER_FILL) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueMemBufferMap`.
pub(crate) unsafe extern "C" fn urEnqueueMemBufferMap(
    queue: ur_queue_handle_t,
    mem: ur_mem_handle_t,
    blocking: bool,
    flags: ur_map_flags_t,
    offset: usize,
    size: usize,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
    mapped: *mut *mut c_void,
) -> ur_result_t {
    guard("urEnqueueMemBufferMap", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: `mem` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let mem = unsafe { Handle::<Mem>::get(mem)? };
        let map_flags = [
            (ur_map_flag_t::UR_MAP_FLAG_READ, MapFlags::READ),
            (ur_map_flag_t::UR_MAP_FLAG_WRITE, MapFlags::WRITE),
            (ur_map_flag_t::UR_MAP_FLAG_WRITE_INVALIDATE_REGION, MapFlags::WRITE_INVALIDATE_REGION),
        ]
        .into_iter()
        .filter(|(ur, _)| flags & ur.0 != 0)
        .fold(MapFlags::empty(), |all, (_, ours)| all | ours);
        let m = &mem.value;
        let (done, mapping) = match m.host {
            // SAFETY: the buffer was made over this memory, valid for its size
            // for the buffer's life (UR's contract); the offset is checked by
            // the map against the buffer's size before use.
            Some(host) if offset <= m.buffer.size() => unsafe {
                call.core().map_buffer_at(&m.buffer, offset, size, map_flags, host.0.add(offset), &call.wait)?
            },
            _ => call.core().map_buffer(&m.buffer, offset, size, map_flags, &call.wait)?,
        };
        if blocking {
            done.wait()?;
        }
        let ptr = mapping.ptr();
        m.mappings.lock().insert(ptr as usize, mapping);
        // SAFETY: non-null because checks.rs rejected `NULL == ppRetMap`; writable per the contract ("Out-pointers").
        unsafe { write_out(mapped, ptr.cast()) };
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_MEM_BUFFER_MAP) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueMemUnmap`.
pub(crate) unsafe extern "C" fn urEnqueueMemUnmap(
    queue: ur_queue_handle_t,
    mem: ur_mem_handle_t,
    mapped: *mut c_void,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueMemUnmap", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: `mem` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let mem = unsafe { Handle::<Mem>::get(mem)? };
        let mapping = mem
            .value
            .mappings
            .lock()
            .remove(&(mapped as usize))
            .ok_or_else(|| err!(InvalidValue, "{mapped:p} is no mapping of this buffer"))?;
        let done = call.core().unmap_buffer(mapping, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_MEM_UNMAP) }
    })
}
