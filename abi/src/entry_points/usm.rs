//! `urUSM*`: unified shared memory allocations of a context.
//!
//! The context keeps each allocation by its base address (`urUSMFree` and
//! `urUSMGetMemAllocInfo` name allocations by pointer); cmdbuf-core tracks them
//! too, so every command touching USM is checked against its allocation.
//! USM pools are not supported: `UR_DEVICE_INFO_USM_POOL_SUPPORT` is false
//! and an allocation that names a pool is `UR_RESULT_ERROR_UNSUPPORTED_FEATURE`.

#![allow(non_snake_case)]

use std::ffi::c_void;

use cmdbuf_core::{UsmAllocation, UsmKind, UsmKinds, ensure, err};

use crate::entry::{AbiResult, guard};
use crate::handle::Handle;
use crate::info::{InfoOut, write_out};
use crate::objects::context::Context;
use crate::objects::device::Device;
use crate::sys::*;

/// The checks every allocation shares, then the allocation.
///
/// # Safety
/// As UR's contracts for the three allocation calls give them: `context`
/// and `device` are each null or one of this adapter's handles; `desc` is
/// null or one readable descriptor; `out` is writable (not null: the three
/// calls' generated checks reject `NULL == ppMem`).
unsafe fn allocate(
    context: ur_context_handle_t,
    device: Option<ur_device_handle_t>,
    desc: *const ur_usm_desc_t,
    pool: ur_usm_pool_handle_t,
    size: usize,
    out: *mut *mut c_void,
    kind: UsmKind,
) -> AbiResult {
    // SAFETY: `context` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
    let context = unsafe { Handle::<Context>::get(context)? };
    let device = match device {
        Some(device) => {
            // SAFETY: `device` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
            let device = unsafe { Handle::<Device>::get(device)? };
            ensure!(context.value.holds(device), InvalidContext, "the device is not the context's");
            Some(device.to_arc())
        }
        None => None,
    };
    // SAFETY: null or a readable descriptor per the contract. Its hints and
    // alignment passed the generated checks (checks.rs: the flag mask, a
    // power of two).
    let align = unsafe { desc.as_ref() }.map_or(0, |d| d.align) as usize;
    ensure!(pool.is_null(), UnsupportedFeature, "USM pools are not supported");
    let wanted = match kind {
        UsmKind::Host => UsmKinds::HOST,
        UsmKind::Device => UsmKinds::DEVICE,
        UsmKind::Shared => UsmKinds::SHARED,
    };
    let core = context.value.core();
    ensure!(
        crate::boundary::conv::ur_usm_kinds(core.device().info()).contains(wanted),
        InvalidOperation,
        "the device has no {kind:?} USM that the host reaches at the device's address"
    );
    let allocation = UsmAllocation::with_alignment(core, kind, size, align)?;
    // SAFETY: `out` is writable (this function's `# Safety`).
    unsafe { write_out(out, context.value.add_usm(allocation, device)) };
    Ok(())
}

/// # Safety
/// UR's contract for `urUSMHostAlloc`.
pub(crate) unsafe extern "C" fn urUSMHostAlloc(
    context: ur_context_handle_t,
    desc: *const ur_usm_desc_t,
    pool: ur_usm_pool_handle_t,
    size: usize,
    out: *mut *mut c_void,
) -> ur_result_t {
    // SAFETY: `context`, `desc` and `out` are as `allocate` requires (entry_points doc, "Handles", "Arrays and
    // strings", "Out-pointers").
    guard("urUSMHostAlloc", || unsafe { allocate(context, None, desc, pool, size, out, UsmKind::Host) })
}

/// # Safety
/// UR's contract for `urUSMDeviceAlloc`.
pub(crate) unsafe extern "C" fn urUSMDeviceAlloc(
    context: ur_context_handle_t,
    device: ur_device_handle_t,
    desc: *const ur_usm_desc_t,
    pool: ur_usm_pool_handle_t,
    size: usize,
    out: *mut *mut c_void,
) -> ur_result_t {
    // SAFETY: `context`, `device`, `desc` and `out` are as `allocate` requires (entry_points doc, "Handles", "Arrays
    // and strings", "Out-pointers").
    guard("urUSMDeviceAlloc", || unsafe { allocate(context, Some(device), desc, pool, size, out, UsmKind::Device) })
}

/// # Safety
/// UR's contract for `urUSMSharedAlloc`.
pub(crate) unsafe extern "C" fn urUSMSharedAlloc(
    context: ur_context_handle_t,
    device: ur_device_handle_t,
    desc: *const ur_usm_desc_t,
    pool: ur_usm_pool_handle_t,
    size: usize,
    out: *mut *mut c_void,
) -> ur_result_t {
    // SAFETY: `context`, `device`, `desc` and `out` are as `allocate` requires (entry_points doc, "Handles", "Arrays
    // and strings", "Out-pointers").
    guard("urUSMSharedAlloc", || unsafe { allocate(context, Some(device), desc, pool, size, out, UsmKind::Shared) })
}

/// # Safety
/// UR's contract for `urUSMFree`.
pub(crate) unsafe extern "C" fn urUSMFree(context: ur_context_handle_t, mem: *mut c_void) -> ur_result_t {
    guard("urUSMFree", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let context = unsafe { Handle::<Context>::get(context)? };
        context.value.free_usm(mem)
    })
}

/// # Safety
/// UR's contract for `urUSMGetMemAllocInfo`.
pub(crate) unsafe extern "C" fn urUSMGetMemAllocInfo(
    context: ur_context_handle_t,
    mem: *const c_void,
    name: ur_usm_alloc_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    guard("urUSMGetMemAllocInfo", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let context = unsafe { Handle::<Context>::get(context)? };
        // SAFETY: `value` is null or writable for `size` bytes, `size_ret` null or writable (entry_points doc, "Info
        // queries"), all `InfoOut::new` needs.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        let found = context.value.usm_holding(mem as u64);
        use ur_usm_alloc_info_t as I;
        match (name, found) {
            // A pointer in no allocation of the context is UR's "unknown" type.
            (I::UR_USM_ALLOC_INFO_TYPE, None) => out.value(ur_usm_type_t::UR_USM_TYPE_UNKNOWN),
            (I::UR_USM_ALLOC_INFO_TYPE, Some((_, _, kind))) => out.value(match kind {
                UsmKind::Host => ur_usm_type_t::UR_USM_TYPE_HOST,
                UsmKind::Device => ur_usm_type_t::UR_USM_TYPE_DEVICE,
                UsmKind::Shared => ur_usm_type_t::UR_USM_TYPE_SHARED,
            }),
            (I::UR_USM_ALLOC_INFO_BASE_PTR, Some((base, _, _))) => out.value(base as *mut c_void),
            (I::UR_USM_ALLOC_INFO_SIZE, Some((_, len, _))) => out.value(len),
            (I::UR_USM_ALLOC_INFO_DEVICE, Some((base, _, _))) => out.value(context.value.usm_device(base).raw()),
            (I::UR_USM_ALLOC_INFO_POOL, Some(_)) => out.value::<ur_usm_pool_handle_t>(std::ptr::null_mut()),
            (I::UR_USM_ALLOC_INFO_BASE_PTR | I::UR_USM_ALLOC_INFO_SIZE | I::UR_USM_ALLOC_INFO_DEVICE, None)
            | (I::UR_USM_ALLOC_INFO_POOL, None) => {
                Err(err!(InvalidValue, "{mem:p} is in no USM allocation of this context"))
            }
            (other, _) => Err(err!(InvalidEnumeration, "USM allocation info {}", other.0)),
        }
    })
}
