//! `urContext*`: contexts, and the USM allocations they own.
//!
//! A context is made over one device or one family of devices: a root device
//! and/or sub-devices of it (cmdbuf-core's `Context::with_devices`). UR lets a
//! context span unrelated devices of a platform; cmdbuf makes one where the
//! adapter spans them (OpenCL, devices of one platform) and refuses it
//! elsewhere with `UR_RESULT_ERROR_UNSUPPORTED_FEATURE` (issue #29).

#![allow(non_snake_case)]

use std::ffi::c_void;

use cmdbuf_core::err;

use crate::entry::guard;
use crate::handle::Handle;
use crate::info::{InfoOut, query, write_out};
use crate::objects::context::{Context, ExtendedDeleter, context_over};
use crate::sys::*;

/// # Safety
/// UR's contract for `urContextCreate`.
pub(crate) unsafe extern "C" fn urContextCreate(
    num_devices: u32,
    devices: *const ur_device_handle_t,
    _properties: *const ur_context_properties_t,
    context: *mut ur_context_handle_t,
) -> ur_result_t {
    guard("urContextCreate", || {
        // SAFETY: `devices` holds `num_devices` handles per the contract.
        let made = unsafe { context_over(num_devices, devices)? };
        // SAFETY: non-null because checks.rs rejected `NULL == phContext`; writable per the contract ("Out-pointers").
        unsafe { write_out(context, Handle::create(made)) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urContextRetain`.
pub(crate) unsafe extern "C" fn urContextRetain(context: ur_context_handle_t) -> ur_result_t {
    // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urContextRetain", || unsafe { Handle::<Context>::retain(context) })
}

/// # Safety
/// UR's contract for `urContextRelease`.
pub(crate) unsafe extern "C" fn urContextRelease(context: ur_context_handle_t) -> ur_result_t {
    // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urContextRelease", || unsafe { Handle::<Context>::release(context) })
}

/// # Safety
/// UR's contract for `urContextGetInfo`.
pub(crate) unsafe extern "C" fn urContextGetInfo(
    context: ur_context_handle_t,
    name: ur_context_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |handle: &Handle<Context>, out: InfoOut| {
        match name {
            ur_context_info_t::UR_CONTEXT_INFO_NUM_DEVICES => out.value(handle.value.devices().len() as u32),
            ur_context_info_t::UR_CONTEXT_INFO_DEVICES => {
                out.array(&handle.value.devices().iter().map(|d| d.raw()).collect::<Vec<_>>())
            }
            ur_context_info_t::UR_CONTEXT_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
            // urEnqueueUSMMemcpy2D and urEnqueueUSMFill2D: cmdbuf-core's pitched
            // copies and fills, on every backend.
            ur_context_info_t::UR_CONTEXT_INFO_USM_MEMCPY2D_SUPPORT
            | ur_context_info_t::UR_CONTEXT_INFO_USM_FILL2D_SUPPORT => out.bool(true),
            other => Err(err!(InvalidEnumeration, "context info {}", other.0)),
        }
    };
    // SAFETY: `context` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urContextGetInfo", context, (size, value, size_ret), answer) }
}

/// # Safety
/// UR's contract for `urContextSetExtendedDeleter`.
pub(crate) unsafe extern "C" fn urContextSetExtendedDeleter(
    context: ur_context_handle_t,
    deleter: ur_context_extended_deleter_t,
    user_data: *mut c_void,
) -> ur_result_t {
    guard("urContextSetExtendedDeleter", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<Context>::get(context)? };
        let callback = deleter.ok_or_else(|| err!(InvalidNullPointer, "pfnDeleter is null"))?;
        *handle.value.deleter.lock() = Some(ExtendedDeleter { callback, user_data });
        Ok(())
    })
}
