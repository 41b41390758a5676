//! `urDevice*`: the devices of a platform and what they can do.

#![allow(non_snake_case)]

use std::sync::{Arc, Weak};

use ur_core::{DeviceType, ensure};

use crate::entry::guard;
use crate::handle::Handle;
use crate::info::{c_str, enumerate, write_opt, write_out};
use crate::platform::Platform;
use crate::sys::*;

/// A device of a platform.
pub struct Device {
    device: ur_core::Device,
    platform: Weak<Handle<Platform>>,
}

impl Device {
    pub(crate) fn new(device: ur_core::Device, platform: Weak<Handle<Platform>>) -> Device {
        Device { device, platform }
    }

    /// The ur-core device (the view the adapter was configured with).
    pub(crate) fn core(&self) -> &ur_core::Device {
        &self.device
    }

    pub(crate) fn platform_raw(&self) -> ur_platform_handle_t {
        // Platforms are root handles, alive for the process.
        self.platform.upgrade().map_or(std::ptr::null_mut(), |p| p.raw())
    }
}

pub(crate) fn ur_device_type(t: DeviceType) -> ur_device_type_t {
    match t {
        DeviceType::Cpu => ur_device_type_t::UR_DEVICE_TYPE_CPU,
        DeviceType::Gpu => ur_device_type_t::UR_DEVICE_TYPE_GPU,
        DeviceType::Accelerator => ur_device_type_t::UR_DEVICE_TYPE_FPGA,
    }
}

fn wanted(filter: ur_device_type_t, t: DeviceType) -> bool {
    match filter {
        ur_device_type_t::UR_DEVICE_TYPE_ALL | ur_device_type_t::UR_DEVICE_TYPE_DEFAULT => true,
        other => other == ur_device_type(t),
    }
}

/// # Safety
/// UR's contract for `urDeviceGet`.
pub(crate) unsafe extern "C" fn urDeviceGet(
    platform: ur_platform_handle_t,
    device_type: ur_device_type_t,
    num_entries: u32,
    devices: *mut ur_device_handle_t,
    num_devices: *mut u32,
) -> ur_result_t {
    guard("urDeviceGet", || {
        // SAFETY: forwarded.
        let platform = unsafe { Handle::<Platform>::get(platform)? };
        ensure!(
            (ur_device_type_t::UR_DEVICE_TYPE_DEFAULT.0..=ur_device_type_t::UR_DEVICE_TYPE_CUSTOM.0)
                .contains(&device_type.0),
            InvalidEnumeration,
            "device type {}",
            device_type.0
        );
        let matching: Vec<_> = platform
            .value
            .devices()
            .iter()
            .filter(|d| wanted(device_type, d.value.device.info().device_type))
            .map(|d| d.raw())
            .collect();
        // SAFETY: forwarded.
        unsafe { enumerate(&matching, num_entries, devices, num_devices) }
    })
}

/// # Safety
/// UR's contract for `urDeviceRetain`.
pub(crate) unsafe extern "C" fn urDeviceRetain(device: ur_device_handle_t) -> ur_result_t {
    // SAFETY: forwarded.
    guard("urDeviceRetain", || unsafe { Handle::<Device>::retain(device) })
}

/// # Safety
/// UR's contract for `urDeviceRelease`.
pub(crate) unsafe extern "C" fn urDeviceRelease(device: ur_device_handle_t) -> ur_result_t {
    // SAFETY: forwarded.
    guard("urDeviceRelease", || unsafe { Handle::<Device>::release(device) })
}

/// # Safety
/// UR's contract for `urDeviceGetGlobalTimestamps`.
pub(crate) unsafe extern "C" fn urDeviceGetGlobalTimestamps(
    device: ur_device_handle_t,
    device_timestamp: *mut u64,
    host_timestamp: *mut u64,
) -> ur_result_t {
    guard("urDeviceGetGlobalTimestamps", || {
        // SAFETY: forwarded.
        let handle = unsafe { Handle::<Device>::get(device)? };
        if device_timestamp.is_null() {
            // The host clock alone: no need to ask the device.
            // SAFETY: null or writable per UR's contract.
            unsafe { write_opt(host_timestamp, ur_core::host_clock_ns()) };
            return Ok(());
        }
        let pair = handle.value.core().global_timestamps()?;
        // SAFETY: non-null and writable per UR's contract.
        unsafe { write_opt(device_timestamp, pair.device) };
        // SAFETY: null or writable per UR's contract.
        unsafe { write_opt(host_timestamp, pair.host) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urDeviceSelectBinary`.
pub(crate) unsafe extern "C" fn urDeviceSelectBinary(
    device: ur_device_handle_t,
    binaries: *const ur_device_binary_t,
    num_binaries: u32,
    selected: *mut u32,
) -> ur_result_t {
    guard("urDeviceSelectBinary", || {
        // SAFETY: forwarded.
        let handle = unsafe { Handle::<Device>::get(device)? };
        ensure!(!binaries.is_null(), InvalidNullPointer, "pBinaries is null");
        ensure!(!selected.is_null(), InvalidNullPointer, "pSelectedBinary is null");
        // SAFETY: non-null, and `num_binaries` elements long per UR's contract.
        let binaries = unsafe { std::slice::from_raw_parts(binaries, num_binaries as usize) };
        let targets = binaries
            .iter()
            // SAFETY: each target is a NUL-terminated string per UR's contract.
            .map(|b| unsafe { c_str(b.pDeviceTargetSpec, "pDeviceTargetSpec") })
            .collect::<Result<Vec<&str>, _>>()?;
        let index = handle.value.core().select_binary(&targets)?;
        // SAFETY: non-null and writable per UR's contract.
        unsafe { write_out(selected, index as u32, "pSelectedBinary") }
    })
}

/// Keeps a device handle alive for objects that refer to it.
pub(crate) type DeviceRef = Arc<Handle<Device>>;
