//! `urContext*`: contexts, and the USM allocations they own.
//!
//! A ur-core context has one device. UR lets a context span several devices
//! of a platform; ur-rs refuses that with `UR_RESULT_ERROR_UNSUPPORTED_FEATURE`
//! (each adapter platform of ur-rs today offers what one device can do).

#![allow(non_snake_case)]

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;

use parking_lot::Mutex;
use ur_core::{UsmAllocation, ensure, err};

use crate::device::{Device, DeviceRef};
use crate::entry::{AbiResult, guard};
use crate::handle::{Handle, get_list};
use crate::info::{InfoOut, write_out};
use crate::sys::*;

/// A context, its device and the USM allocations made in it.
pub struct Context {
    context: ur_core::Context,
    device: DeviceRef,
    /// USM allocations by base address: `urUSMFree` names them by pointer.
    usm: Mutex<BTreeMap<u64, UsmAllocation>>,
    deleter: Mutex<Option<ExtendedDeleter>>,
}

struct ExtendedDeleter {
    callback: unsafe extern "C" fn(*mut c_void),
    user_data: *mut c_void,
}

// SAFETY: the user data is handed back to the application's own callback,
// which UR allows to run on any thread.
unsafe impl Send for ExtendedDeleter {}

impl Context {
    /// A context handle's value for a ur-core context of `device`.
    pub(crate) fn from_core(context: ur_core::Context, device: DeviceRef) -> Context {
        Context { context, device, usm: Mutex::default(), deleter: Mutex::new(None) }
    }

    /// The ur-core context.
    pub(crate) fn core(&self) -> &ur_core::Context {
        &self.context
    }

    /// The context's device handle.
    pub(crate) fn device(&self) -> &DeviceRef {
        &self.device
    }

    /// Whether `device` may use the context: its device (a context holds
    /// one) or a sub-device of it at any depth (ur-core's
    /// `Context::holds_device`).
    pub(crate) fn holds(&self, device: &Handle<Device>) -> bool {
        std::ptr::eq(device, &*self.device) || self.context.holds_device(device.value.core())
    }

    /// Registers a USM allocation made in this context.
    pub(crate) fn add_usm(&self, allocation: UsmAllocation) -> *mut c_void {
        let ptr = allocation.ptr().addr();
        self.usm.lock().insert(ptr, allocation);
        ptr as *mut c_void
    }

    /// Forgets the allocation starting at `ptr`, which frees it once no
    /// command uses it any more.
    pub(crate) fn free_usm(&self, ptr: *mut c_void) -> AbiResult {
        let removed = self.usm.lock().remove(&(ptr as u64));
        ensure!(removed.is_some(), InvalidMemObject, "{ptr:p} is not the start of a USM allocation of this context");
        Ok(())
    }

    /// The allocation holding `ptr`, with its base address.
    pub(crate) fn usm_holding(&self, ptr: u64) -> Option<(u64, usize, ur_core::UsmKind)> {
        let map = self.usm.lock();
        let (base, alloc) = map.range(..=ptr).next_back()?;
        (ptr < base + alloc.size() as u64).then(|| (*base, alloc.size(), alloc.kind()))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Some(deleter) = self.deleter.get_mut().take() {
            // SAFETY: the application registered this callback for exactly this.
            unsafe { (deleter.callback)(deleter.user_data) };
        }
    }
}

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

/// The one device of a context's devices list (ur-rs contexts hold one:
/// several are `UNSUPPORTED_FEATURE`).
///
/// # Safety
/// `devices` holds `num_devices` device handles.
pub(crate) unsafe fn the_one_device(num_devices: u32, devices: *const ur_device_handle_t) -> AbiResult<DeviceRef> {
    // SAFETY: forwarded.
    let list = unsafe { get_list::<Device>(devices, num_devices, || err!(InvalidSize, "no device given"))? };
    let [device] = list.as_slice() else {
        return Err(err!(UnsupportedFeature, "a context of {} devices: ur-rs contexts hold one device", list.len()));
    };
    // SAFETY: checked above to be a live device handle.
    unsafe { Handle::<Device>::arc(device.raw_of()) }
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

/// Keeps a context handle alive for objects that refer to it.
pub(crate) type ContextRef = Arc<Handle<Context>>;
