//! `urContext*`: contexts, and the USM allocations they own.
//!
//! A ur-core context has one device. UR lets a context span several devices
//! of a platform; ur-rs refuses that with `UR_RESULT_ERROR_UNSUPPORTED_FEATURE`
//! (each adapter platform of ur-rs today offers what one device can do).

#![allow(non_snake_case)]

use std::ffi::c_void;

use ur_core::{ensure, err};

use crate::entry::guard;
use crate::handle::Handle;
use crate::info::{InfoOut, write_out};
use crate::objects::context::{Context, ExtendedDeleter, the_one_device};
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
        ensure!(!devices.is_null(), InvalidNullPointer, "phDevices is null");
        ensure!(!context.is_null(), InvalidNullPointer, "phContext is null");
        // SAFETY: `devices` holds `num_devices` handles per the contract.
        let device = unsafe { the_one_device(num_devices, devices)? };
        let core = ur_core::Context::new(device.value.core())?;
        // SAFETY: checked non-null, writable per the contract.
        unsafe { write_out(context, Handle::create(Context::from_core(core, device)), "phContext") }
    })
}

/// # Safety
/// UR's contract for `urContextRetain`.
pub(crate) unsafe extern "C" fn urContextRetain(context: ur_context_handle_t) -> ur_result_t {
    // SAFETY: forwarded.
    guard("urContextRetain", || unsafe { Handle::<Context>::retain(context) })
}

/// # Safety
/// UR's contract for `urContextRelease`.
pub(crate) unsafe extern "C" fn urContextRelease(context: ur_context_handle_t) -> ur_result_t {
    // SAFETY: forwarded.
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
    guard("urContextGetInfo", || {
        // SAFETY: forwarded.
        let handle = unsafe { Handle::<Context>::get(context)? };
        // SAFETY: forwarded.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        match name {
            ur_context_info_t::UR_CONTEXT_INFO_NUM_DEVICES => out.value(1u32),
            ur_context_info_t::UR_CONTEXT_INFO_DEVICES => out.array(&[handle.value.device.raw()]),
            ur_context_info_t::UR_CONTEXT_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
            // urEnqueueUSMMemcpy2D and urEnqueueUSMFill2D: ur-core's pitched
            // copies and fills, on every backend.
            ur_context_info_t::UR_CONTEXT_INFO_USM_MEMCPY2D_SUPPORT
            | ur_context_info_t::UR_CONTEXT_INFO_USM_FILL2D_SUPPORT => out.bool(true),
            other => Err(err!(InvalidEnumeration, "context info {}", other.0)),
        }
    })
}

/// # Safety
/// UR's contract for `urContextSetExtendedDeleter`.
pub(crate) unsafe extern "C" fn urContextSetExtendedDeleter(
    context: ur_context_handle_t,
    deleter: ur_context_extended_deleter_t,
    user_data: *mut c_void,
) -> ur_result_t {
    guard("urContextSetExtendedDeleter", || {
        // SAFETY: forwarded.
        let handle = unsafe { Handle::<Context>::get(context)? };
        let callback = deleter.ok_or_else(|| err!(InvalidNullPointer, "pfnDeleter is null"))?;
        *handle.value.deleter.lock() = Some(ExtendedDeleter { callback, user_data });
        Ok(())
    })
}
