//! The context handle, its extended deleter, and the devices a context of
//! this library is made over (one device; one family: a root device and/or
//! sub-devices of it; or unrelated devices the adapter spans).

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;

use cmdbuf_core::{UsmAllocation, ensure, err};
use parking_lot::Mutex;

use crate::entry::AbiResult;
use crate::handle::{Handle, get_list};
use crate::objects::device::{Device, DeviceRef};
use crate::sys::*;

/// A context, its devices and the USM allocations made in it.
pub struct Context {
    pub(crate) context: cmdbuf_core::Context,
    /// The handle of the device the cmdbuf-core context was made on: the one
    /// device given, the root device of a family, or the first of unrelated
    /// devices.
    pub(crate) device: DeviceRef,
    /// The devices given to `urContextCreate`, without duplicates
    /// (`UR_CONTEXT_INFO_DEVICES`).
    pub(crate) devices: Vec<DeviceRef>,
    /// USM allocations by base address (`urUSMFree` names them by pointer),
    /// each with the device it was asked for (none for host allocations).
    pub(crate) usm: Mutex<BTreeMap<u64, (UsmAllocation, Option<DeviceRef>)>>,
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
    /// A context handle's value for a cmdbuf-core context of `device`.
    pub(crate) fn from_core(context: cmdbuf_core::Context, device: DeviceRef) -> Context {
        Context::over(context, device.clone(), vec![device])
    }

    /// A context handle's value for a cmdbuf-core context made on `device` over
    /// `devices` (`cmdbuf_core::Context::with_devices`).
    pub(crate) fn over(context: cmdbuf_core::Context, device: DeviceRef, devices: Vec<DeviceRef>) -> Context {
        Context { context, device, devices, usm: Mutex::default(), deleter: Mutex::new(None) }
    }

    /// The cmdbuf-core context.
    pub(crate) fn core(&self) -> &cmdbuf_core::Context {
        &self.context
    }

    /// The handle of the device the context was made on (its one device, or
    /// the root device of its family).
    pub(crate) fn device(&self) -> &DeviceRef {
        &self.device
    }

    /// The devices the context was made over.
    pub(crate) fn devices(&self) -> &[DeviceRef] {
        &self.devices
    }

    /// Whether `device` may use the context: one of its devices or a
    /// sub-device of one at any depth (cmdbuf-core's `Context::holds_device`).
    pub(crate) fn holds(&self, device: &Handle<Device>) -> bool {
        self.devices.iter().any(|d| std::ptr::eq(device, &**d)) || self.context.holds_device(device.value.core())
    }

    /// Registers a USM allocation made in this context for `device`.
    pub(crate) fn add_usm(&self, allocation: UsmAllocation, device: Option<DeviceRef>) -> *mut c_void {
        let ptr = allocation.ptr().addr();
        self.usm.lock().insert(ptr, (allocation, device));
        ptr as *mut c_void
    }

    /// The device USM allocation `base` was asked for
    /// (`UR_USM_ALLOC_INFO_DEVICE`); for a host allocation the context's
    /// first device.
    pub(crate) fn usm_device(&self, base: u64) -> DeviceRef {
        let asked = self.usm.lock().get(&base).and_then(|(_, device)| device.clone());
        asked.unwrap_or_else(|| self.devices[0].clone())
    }

    /// Forgets the allocation starting at `ptr`, which frees it once no
    /// command uses it any more.
    pub(crate) fn free_usm(&self, ptr: *mut c_void) -> AbiResult {
        let removed = self.usm.lock().remove(&(ptr as u64));
        ensure!(removed.is_some(), InvalidMemObject, "{ptr:p} is not the start of a USM allocation of this context");
        Ok(())
    }

    /// The allocation holding `ptr`, with its base address.
    pub(crate) fn usm_holding(&self, ptr: u64) -> Option<(u64, usize, cmdbuf_core::UsmKind)> {
        let map = self.usm.lock();
        let (base, alloc) = map.range(..=ptr).next_back()?;
        (ptr < base + alloc.0.size() as u64).then(|| (*base, alloc.0.size(), alloc.0.kind()))
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

/// The one device of a context's devices list, for adopted native contexts
/// (which are made on one device: several are `UNSUPPORTED_FEATURE`).
///
/// # Safety
/// `devices` is null or holds `num_devices` handles, each null or one of
/// this adapter's.
pub(crate) unsafe fn the_one_device(num_devices: u32, devices: *const ur_device_handle_t) -> AbiResult<DeviceRef> {
    // SAFETY: `devices` is null or holds `num_devices` handles, each null or one of this adapter's (this function's
    // `# Safety`), all `get_list` needs.
    let list = unsafe { get_list::<Device>(devices, num_devices, || err!(InvalidSize, "no device given"))? };
    let [device] = list.as_slice() else {
        return Err(err!(UnsupportedFeature, "an adopted context of {} devices: it is made on one device", list.len()));
    };
    Ok(device.to_arc())
}

/// A context over a devices list (`urContextCreate`): one device, one
/// family of a root device and its sub-devices, or unrelated devices where
/// the adapter spans them (cmdbuf-core's `Context::with_devices` decides;
/// `UNSUPPORTED_FEATURE` elsewhere). A device listed twice counts once.
///
/// # Safety
/// `devices` is null or holds `num_devices` handles, each null or one of
/// this adapter's.
pub(crate) unsafe fn context_over(num_devices: u32, devices: *const ur_device_handle_t) -> AbiResult<Context> {
    // SAFETY: `devices` is null or holds `num_devices` handles, each null or one of this adapter's (this function's
    // `# Safety`), all `get_list` needs.
    let list = unsafe { get_list::<Device>(devices, num_devices, || err!(InvalidSize, "no device given"))? };
    let mut given: Vec<DeviceRef> = Vec::with_capacity(list.len());
    for device in list {
        if !given.iter().any(|d| d.value.core() == device.value.core()) {
            given.push(device.to_arc());
        }
    }
    let cores: Vec<cmdbuf_core::Device> = given.iter().map(|d| d.value.core().clone()).collect();
    let core = cmdbuf_core::Context::with_devices(&cores)?;
    // The handle of the device the context was made on: the first given
    // (one device, or unrelated devices), or for a family the root that a
    // sub-device's handle leads to.
    let mut made_on = given[0].clone();
    while made_on.value.core() != core.device()
        && let Some(parent) = made_on.value.parent().cloned()
    {
        made_on = parent;
    }
    Ok(Context::over(core, made_on, given))
}

/// Keeps a context handle alive for objects that refer to it.
pub(crate) type ContextRef = Arc<Handle<Context>>;
