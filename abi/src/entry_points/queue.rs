//! `urQueue*`: queues.

#![allow(non_snake_case)]

use std::ffi::c_void;
use std::sync::Arc;

use cmdbuf_core::{QueueProperties, ensure, err};

use crate::entry::guard;
use crate::handle::Handle;
use crate::info::{InfoOut, query, write_out};
use crate::objects::context::Context;
use crate::objects::device::Device;
use crate::objects::queue::Queue;
use crate::sys::*;

/// The flags cmdbuf honours, and the hints it accepts without acting on them
/// (documented in docs/abi.md): priorities, batching and discarded events
/// ask nothing a queue must do.
const HONOURED: u32 =
    ur_queue_flag_t::UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE.0 | ur_queue_flag_t::UR_QUEUE_FLAG_PROFILING_ENABLE.0;
const HINTS: u32 = ur_queue_flag_t::UR_QUEUE_FLAG_DISCARD_EVENTS.0
    | ur_queue_flag_t::UR_QUEUE_FLAG_PRIORITY_LOW.0
    | ur_queue_flag_t::UR_QUEUE_FLAG_PRIORITY_HIGH.0
    | ur_queue_flag_t::UR_QUEUE_FLAG_SUBMISSION_BATCHED.0
    | ur_queue_flag_t::UR_QUEUE_FLAG_SUBMISSION_IMMEDIATE.0
    | ur_queue_flag_t::UR_QUEUE_FLAG_LOW_POWER_EVENTS_SUPPORT_EXP.0;

/// # Safety
/// UR's contract for `urQueueCreate`.
pub(crate) unsafe extern "C" fn urQueueCreate(
    context: ur_context_handle_t,
    device: ur_device_handle_t,
    properties: *const ur_queue_properties_t,
    queue: *mut ur_queue_handle_t,
) -> ur_result_t {
    guard("urQueueCreate", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `arc` needs.
        let context = unsafe { Handle::<Context>::arc(context)? };
        // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let device = unsafe { Handle::<Device>::get(device)? };
        // SAFETY: null or a readable descriptor per the contract. Its flags
        // passed the generated checks (checks.rs: undefined bits, both
        // priorities, both submission modes).
        let flags = unsafe { properties.as_ref() }.map_or(0, |p| p.flags);
        ensure!(
            flags & !(HONOURED | HINTS) == 0,
            UnsupportedFeature,
            "queue flags {:#x} (device queues, CUDA default-stream modes) are not supported",
            flags & !(HONOURED | HINTS)
        );
        // SAFETY: checked above to be a live device handle.
        let device = unsafe { Handle::<Device>::arc(device.raw_of())? };
        ensure!(
            context.value.holds(&device),
            InvalidDevice,
            "the device is not one of the context's devices nor a sub-device of one"
        );
        let props = QueueProperties {
            out_of_order: flags & ur_queue_flag_t::UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE.0 != 0,
            profiling: flags & ur_queue_flag_t::UR_QUEUE_FLAG_PROFILING_ENABLE.0 != 0,
        };
        let core = cmdbuf_core::Queue::on_device(context.value.core(), device.value.core(), props)?;
        let sub_device = (!Arc::ptr_eq(&device, context.value.device())).then_some(device);
        let handle = Handle::create(Queue { queue: core, context, sub_device, flags, host_turn: Arc::default() });
        // SAFETY: non-null because checks.rs rejected `NULL == phQueue`; writable per the contract ("Out-pointers").
        unsafe { write_out(queue, handle) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urQueueRetain`.
pub(crate) unsafe extern "C" fn urQueueRetain(queue: ur_queue_handle_t) -> ur_result_t {
    // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urQueueRetain", || unsafe { Handle::<Queue>::retain(queue) })
}

/// # Safety
/// UR's contract for `urQueueRelease`.
pub(crate) unsafe extern "C" fn urQueueRelease(queue: ur_queue_handle_t) -> ur_result_t {
    guard("urQueueRelease", || {
        // UR: releasing the last reference waits for the queue's commands.
        // Dropping the cmdbuf-core queue would too, but events keep the queue
        // object alive (for UR_EVENT_INFO_COMMAND_QUEUE), so wait here.
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release_then`
        // needs.
        unsafe {
            Handle::<Queue>::release_then(queue, |q| {
                // A failed command is reported through its event; the
                // release itself succeeds, as the drop of the queue would.
                if let Err(e) = q.queue.finish() {
                    tracing::warn!(error = %e, "finishing the released queue failed");
                }
            })
        }
    })
}

/// # Safety
/// UR's contract for `urQueueGetInfo`.
pub(crate) unsafe extern "C" fn urQueueGetInfo(
    queue: ur_queue_handle_t,
    name: ur_queue_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |handle: &Handle<Queue>, out: InfoOut| {
        let q = &handle.value;
        match name {
            ur_queue_info_t::UR_QUEUE_INFO_CONTEXT => out.value(q.context.raw()),
            ur_queue_info_t::UR_QUEUE_INFO_DEVICE => {
                out.value(q.sub_device.as_ref().unwrap_or_else(|| q.context.value.device()).raw())
            }
            ur_queue_info_t::UR_QUEUE_INFO_FLAGS => out.value(q.flags),
            ur_queue_info_t::UR_QUEUE_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
            ur_queue_info_t::UR_QUEUE_INFO_DEVICE_DEFAULT | ur_queue_info_t::UR_QUEUE_INFO_SIZE => {
                Err(err!(UnsupportedEnumeration, "queue info {}: cmdbuf has no device-side queues", name.0))
            }
            ur_queue_info_t::UR_QUEUE_INFO_EMPTY => {
                Err(err!(UnsupportedEnumeration, "queue info EMPTY (optional) is not answered"))
            }
            other => Err(err!(InvalidEnumeration, "queue info {}", other.0)),
        }
    };
    // SAFETY: `queue` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urQueueGetInfo", queue, (size, value, size_ret), answer) }
}

/// # Safety
/// UR's contract for `urQueueFinish`.
pub(crate) unsafe extern "C" fn urQueueFinish(queue: ur_queue_handle_t) -> ur_result_t {
    guard("urQueueFinish", || {
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<Queue>::get(queue)? };
        handle.value.queue.finish()
    })
}

/// # Safety
/// UR's contract for `urQueueFlush`.
pub(crate) unsafe extern "C" fn urQueueFlush(queue: ur_queue_handle_t) -> ur_result_t {
    guard("urQueueFlush", || {
        // SAFETY: `queue` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<Queue>::get(queue)? };
        handle.value.queue.flush()
    })
}
