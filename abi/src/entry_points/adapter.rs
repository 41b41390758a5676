//! `urAdapter*`: the one adapter of this library, its platforms, its last
//! error and its logger.
//!
//! The library's backend is fixed by the factory its crate registers
//! ([`register_factory`]). The driver is opened at the first `urAdapterGet`,
//! with the devices that `UR_DEVICE_SELECTOR` selects (the project's own
//! variable: libsycl applies `ONEAPI_DEVICE_SELECTOR` itself, to the backend
//! this adapter reports). `UR_RS_COMMAND_BUFFERS=emulated` gives every
//! device cmdbuf-core's software command buffer instead of the native one.

#![allow(non_snake_case)]

use std::ffi::{c_char, c_void};

use cmdbuf_core::err;

use crate::boundary::conv::ur_backend;
use crate::entry::{guard, last_error};
use crate::handle::Handle;
use crate::info::{InfoOut, enumerate, query};
use crate::objects::adapter::{Adapter, LoggerCallback};
use crate::objects::open::adapter;
use crate::sys::*;

/// # Safety
/// UR's contract for `urAdapterGet`.
pub(crate) unsafe extern "C" fn urAdapterGet(
    num_entries: u32,
    adapters: *mut ur_adapter_handle_t,
    num_adapters: *mut u32,
) -> ur_result_t {
    guard("urAdapterGet", || {
        let adapter = adapter()?;
        // SAFETY: `adapters` is null or writable for `num_entries` handles, `num_adapters` null or writable
        // (entry_points doc, "Out-pointers"), all `enumerate` needs.
        unsafe { enumerate(&[adapter.raw()], num_entries, adapters, num_adapters)? };
        // Every handle given out is one more application reference.
        if !adapters.is_null() {
            adapter.retain_ref();
        }
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urAdapterRetain`.
pub(crate) unsafe extern "C" fn urAdapterRetain(adapter: ur_adapter_handle_t) -> ur_result_t {
    // SAFETY: `adapter` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urAdapterRetain", || unsafe { Handle::<Adapter>::retain(adapter) })
}

/// # Safety
/// UR's contract for `urAdapterRelease`.
pub(crate) unsafe extern "C" fn urAdapterRelease(adapter: ur_adapter_handle_t) -> ur_result_t {
    // SAFETY: `adapter` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urAdapterRelease", || unsafe { Handle::<Adapter>::release(adapter) })
}

/// # Safety
/// UR's contract for `urAdapterGetLastError`.
pub(crate) unsafe extern "C" fn urAdapterGetLastError(
    adapter: ur_adapter_handle_t,
    message: *mut *const c_char,
    error: *mut i32,
) -> ur_result_t {
    // Not through `guard`: that would replace the error being asked for.
    // SAFETY: null or a handle of this adapter per the contract.
    if unsafe { Handle::<Adapter>::get(adapter) }.is_err() {
        return ur_result_t::UR_RESULT_ERROR_INVALID_NULL_HANDLE;
    }
    let (text, code) = last_error().unwrap_or((c"no error".as_ptr(), 0));
    // SAFETY: both non-null because checks.rs rejected `NULL == ppMessage` and
    // `NULL == pError`, and writable per the contract; the message stays
    // valid until this thread's next failing call.
    unsafe {
        message.write(text);
        error.write(code);
    }
    ur_result_t::UR_RESULT_SUCCESS
}

/// # Safety
/// UR's contract for `urAdapterGetInfo`.
pub(crate) unsafe extern "C" fn urAdapterGetInfo(
    adapter: ur_adapter_handle_t,
    name: ur_adapter_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |adapter: &Handle<Adapter>, out: InfoOut| match name {
        ur_adapter_info_t::UR_ADAPTER_INFO_BACKEND => out.value(ur_backend(adapter.value.backend)),
        ur_adapter_info_t::UR_ADAPTER_INFO_REFERENCE_COUNT => out.value(adapter.reference_count()),
        ur_adapter_info_t::UR_ADAPTER_INFO_VERSION => out.value(1u32),
        other => Err(err!(InvalidEnumeration, "adapter info {}", other.0)),
    };
    // SAFETY: `adapter` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urAdapterGetInfo", adapter, (size, value, size_ret), answer) }
}

/// # Safety
/// UR's contract for `urAdapterSetLoggerCallback`.
pub(crate) unsafe extern "C" fn urAdapterSetLoggerCallback(
    adapter: ur_adapter_handle_t,
    callback: ur_logger_callback_t,
    user_data: *mut c_void,
    level: ur_logger_level_t,
) -> ur_result_t {
    guard("urAdapterSetLoggerCallback", || {
        // SAFETY: `adapter` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let adapter = unsafe { Handle::<Adapter>::get(adapter)? };
        let callback = callback.ok_or_else(|| err!(InvalidNullPointer, "null logger callback"))?;
        *adapter.value.logger.lock() = Some(LoggerCallback { callback, user_data, level });
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urAdapterSetLoggerCallbackLevel`.
pub(crate) unsafe extern "C" fn urAdapterSetLoggerCallbackLevel(
    adapter: ur_adapter_handle_t,
    level: ur_logger_level_t,
) -> ur_result_t {
    guard("urAdapterSetLoggerCallbackLevel", || {
        // SAFETY: `adapter` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let adapter = unsafe { Handle::<Adapter>::get(adapter)? };
        let mut logger = adapter.value.logger.lock();
        let logger = logger.as_mut().ok_or_else(|| err!(InvalidOperation, "no logger callback is set"))?;
        logger.level = level;
        Ok(())
    })
}
