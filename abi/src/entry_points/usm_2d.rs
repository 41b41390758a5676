//! `urEnqueueUSMFill2D` and `urEnqueueUSMMemcpy2D`: cmdbuf-core's pitched USM
//! fills and copies (`Queue::usm_fill_2d`, `Queue::usm_memcpy_2d`).

#![allow(non_snake_case)]

use std::ffi::c_void;

use cmdbuf_core::UsmPtr;

use crate::boundary::conv::pattern;
use crate::entry::guard;
use crate::objects::event::EagerCall;
use crate::sys::*;

/// # Safety
/// UR's contract for `urEnqueueUSMFill2D`.
pub(crate) unsafe extern "C" fn urEnqueueUSMFill2D(
    queue: ur_queue_handle_t,
    mem: *mut c_void,
    pitch: usize,
    pattern_size: usize,
    pattern_ptr: *const c_void,
    width: usize,
    height: usize,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueUSMFill2D", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        let dst = UsmPtr::from_addr(mem as u64);
        // SAFETY: `pattern_ptr` is readable for `pattern_size` bytes (entry_points doc, "Arrays and strings"; not null:
        // checks.rs rejected `NULL == pPattern`), all `pattern` needs.
        let pattern = unsafe { pattern(pattern_ptr, pattern_size)? };
        let done = call.core().usm_fill_2d(dst, pitch, pattern, width, height, &call.wait)?;
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, false, event, ur_command_t::UR_COMMAND_USM_FILL_2D) }
    })
}

/// # Safety
/// UR's contract for `urEnqueueUSMMemcpy2D`.
pub(crate) unsafe extern "C" fn urEnqueueUSMMemcpy2D(
    queue: ur_queue_handle_t,
    blocking: bool,
    dst: *mut c_void,
    dst_pitch: usize,
    src: *const c_void,
    src_pitch: usize,
    width: usize,
    height: usize,
    num_events: u32,
    events: *const ur_event_handle_t,
    event: *mut ur_event_handle_t,
) -> ur_result_t {
    guard("urEnqueueUSMMemcpy2D", || {
        // SAFETY: `queue` and `events` are as `start` requires (entry_points doc, "Handles", "Wait lists").
        let call = unsafe { EagerCall::start(queue, events, num_events)? };
        // SAFETY: UR's contract: host memory given here stays valid for its
        // pitched range until the copy completes (for a blocking copy, until
        // this call returns).
        let done = unsafe {
            call.core().usm_memcpy_2d(dst.cast(), dst_pitch, src.cast(), src_pitch, width, height, &call.wait)?
        };
        // SAFETY: `event` is null or writable (entry_points doc, "Out-pointers"), all `finish` needs.
        unsafe { call.finish(done, blocking, event, ur_command_t::UR_COMMAND_USM_MEMCPY_2D) }
    })
}
