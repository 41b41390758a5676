//! The context handle, its extended deleter, and the one device a context of
//! this library has.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;

use parking_lot::Mutex;
use ur_core::{UsmAllocation, ensure, err};

use crate::entry::AbiResult;
use crate::handle::{Handle, get_list};
use crate::objects::device::{Device, DeviceRef};
use crate::sys::*;

/// A context, its device and the USM allocations made in it.
pub struct Context {
    pub(crate) context: ur_core::Context,
    pub(crate) device: DeviceRef,
    /// USM allocations by base address: `urUSMFree` names them by pointer.
    pub(crate) usm: Mutex<BTreeMap<u64, UsmAllocation>>,
    pub(crate) deleter: Mutex<Option<ExtendedDeleter>>,
}

pub(crate) struct ExtendedDeleter {
    pub(crate) callback: unsafe extern "C" fn(*mut c_void),
    pub(crate) user_data: *mut c_void,
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

/// Keeps a context handle alive for objects that refer to it.
pub(crate) type ContextRef = Arc<Handle<Context>>;
