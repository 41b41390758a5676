//! `urPlatform*`: the platforms of the adapter's driver.

#![allow(non_snake_case)]

use std::ffi::{c_char, c_void};

use cmdbuf_core::{Backend, err};

use crate::boundary::conv::ur_backend;
use crate::entry::guard;
use crate::handle::Handle;
use crate::info::{InfoOut, c_str, enumerate, query};
use crate::objects::open::adapter;
use crate::objects::platform::Platform;
use crate::sys::*;

/// # Safety
/// UR's contract for `urPlatformGet`.
pub(crate) unsafe extern "C" fn urPlatformGet(
    adapter_handle: ur_adapter_handle_t,
    num_entries: u32,
    platforms: *mut ur_platform_handle_t,
    num_platforms: *mut u32,
) -> ur_result_t {
    guard("urPlatformGet", || {
        // SAFETY: `adapter_handle` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get`
        // needs.
        unsafe { Handle::<crate::objects::adapter::Adapter>::get(adapter_handle)? };
        let all: Vec<_> = adapter()?.value.platforms().iter().map(|p| p.raw()).collect();
        // SAFETY: `platforms` is null or writable for `num_entries` handles, `num_platforms` null or writable
        // (entry_points doc, "Out-pointers"), all `enumerate` needs.
        unsafe { enumerate(&all, num_entries, platforms, num_platforms) }
    })
}

/// # Safety
/// UR's contract for `urPlatformGetInfo`.
pub(crate) unsafe extern "C" fn urPlatformGetInfo(
    platform: ur_platform_handle_t,
    name: ur_platform_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |platform: &Handle<Platform>, out: InfoOut| {
        let p = &platform.value;
        match name {
            ur_platform_info_t::UR_PLATFORM_INFO_NAME => out.string(&p.name()),
            ur_platform_info_t::UR_PLATFORM_INFO_VENDOR_NAME => out.string("cmdbuf"),
            ur_platform_info_t::UR_PLATFORM_INFO_VERSION => out.string(p.version()),
            // The platform extensions libsycl looks for are OpenCL's; cmdbuf
            // platforms offer none of them as such.
            ur_platform_info_t::UR_PLATFORM_INFO_EXTENSIONS => out.string(""),
            ur_platform_info_t::UR_PLATFORM_INFO_PROFILE => out.string("FULL_PROFILE"),
            ur_platform_info_t::UR_PLATFORM_INFO_BACKEND => out.value(ur_backend(p.backend())),
            ur_platform_info_t::UR_PLATFORM_INFO_ADAPTER => out.value(adapter()?.raw()),
            other => Err(err!(InvalidEnumeration, "platform info {}", other.0)),
        }
    };
    // SAFETY: `platform` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urPlatformGetInfo", platform, (size, value, size_ret), answer) }
}

/// # Safety
/// UR's contract for `urPlatformGetApiVersion`.
pub(crate) unsafe extern "C" fn urPlatformGetApiVersion(
    platform: ur_platform_handle_t,
    version: *mut ur_api_version_t,
) -> ur_result_t {
    guard("urPlatformGetApiVersion", || {
        // SAFETY: `platform` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        unsafe { Handle::<Platform>::get(platform)? };
        // SAFETY: non-null because checks.rs rejected `NULL == pVersion`; writable per the contract ("Out-pointers").
        unsafe { crate::info::write_out(version, ur_api_version_t::UR_API_VERSION_CURRENT) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urPlatformGetBackendOption`.
pub(crate) unsafe extern "C" fn urPlatformGetBackendOption(
    platform: ur_platform_handle_t,
    frontend_option: *const c_char,
    backend_option: *mut *const c_char,
) -> ur_result_t {
    guard("urPlatformGetBackendOption", || {
        // SAFETY: `platform` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let platform = unsafe { Handle::<Platform>::get(platform)? };
        // SAFETY: null or a C string per the contract.
        let option = unsafe { c_str(frontend_option, "pFrontendOption")? };
        let translated: &'static std::ffi::CStr = match (option, platform.value.backend()) {
            ("-O0", Backend::OpenCl) => c"-cl-opt-disable",
            ("-O0" | "-O1" | "-O2" | "-O3", _) => c"",
            ("-ftarget-compile-fast" | "-foffload-fp32-prec-div" | "-foffload-fp32-prec-sqrt", _) => c"",
            (other, _) => return Err(err!(InvalidValue, "front-end option `{other}` has no backend equivalent")),
        };
        // SAFETY: non-null because checks.rs rejected `NULL == ppPlatformOption`; writable per the contract
        // ("Out-pointers").
        unsafe { crate::info::write_out(backend_option, translated.as_ptr()) };
        Ok(())
    })
}
