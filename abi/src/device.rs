//! `urDevice*`: the devices of a platform and what they can do.

#![allow(non_snake_case)]

use std::ffi::c_void;
use std::sync::{Arc, Weak};

use ur_core::{CommandBufferSupport, DeviceType, UpdateCapabilities, UsmKinds, ensure, err};

use crate::entry::guard;
use crate::handle::Handle;
use crate::info::{InfoOut, enumerate};
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

    fn platform_raw(&self) -> ur_platform_handle_t {
        // Platforms are root handles, alive for the process.
        self.platform.upgrade().map_or(std::ptr::null_mut(), |p| p.raw())
    }
}

fn ur_device_type(t: DeviceType) -> ur_device_type_t {
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
            (ur_device_type_t::UR_DEVICE_TYPE_DEFAULT.0..=ur_device_type_t::UR_DEVICE_TYPE_VPU.0)
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

/// The USM kinds UR callers get: host and shared allocations only where the
/// host reaches them at the pointer the device uses, as UR's USM requires.
pub(crate) fn ur_usm_kinds(info: &ur_core::DeviceInfo) -> UsmKinds {
    if info.usm_host_addressable { info.usm } else { info.usm & UsmKinds::DEVICE }
}

fn usm_access(supported: bool) -> ur_device_usm_access_capability_flags_t {
    if supported {
        ur_device_usm_access_capability_flag_t::UR_DEVICE_USM_ACCESS_CAPABILITY_FLAG_ACCESS.0
            | ur_device_usm_access_capability_flag_t::UR_DEVICE_USM_ACCESS_CAPABILITY_FLAG_CONCURRENT_ACCESS.0
    } else {
        0
    }
}

fn update_capabilities(caps: UpdateCapabilities) -> ur_device_command_buffer_update_capability_flags_t {
    use ur_device_command_buffer_update_capability_flag_t as F;
    [
        (UpdateCapabilities::KERNEL_ARGUMENTS, F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_KERNEL_ARGUMENTS),
        (UpdateCapabilities::LOCAL_WORK_SIZE, F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_LOCAL_WORK_SIZE),
        (UpdateCapabilities::GLOBAL_WORK_SIZE, F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_GLOBAL_WORK_SIZE),
        (UpdateCapabilities::GLOBAL_WORK_OFFSET, F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_GLOBAL_WORK_OFFSET),
        (UpdateCapabilities::KERNEL_HANDLE, F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_KERNEL_HANDLE),
        (UpdateCapabilities::EVENTS, F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_EVENTS),
    ]
    .into_iter()
    .filter(|(ours, _)| caps.contains(*ours))
    .fold(0, |flags, (_, theirs)| flags | theirs.0)
}

/// # Safety
/// UR's contract for `urDeviceGetInfo`.
pub(crate) unsafe extern "C" fn urDeviceGetInfo(
    device: ur_device_handle_t,
    name: ur_device_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    guard("urDeviceGetInfo", || {
        // SAFETY: forwarded.
        let handle = unsafe { Handle::<Device>::get(device)? };
        // SAFETY: forwarded.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        let d = &handle.value;
        let info = d.device.info();
        use ur_device_info_t as I;
        match name {
            I::UR_DEVICE_INFO_TYPE => out.value(ur_device_type(info.device_type)),
            I::UR_DEVICE_INFO_PLATFORM => out.value(d.platform_raw()),
            I::UR_DEVICE_INFO_PARENT_DEVICE => out.value::<ur_device_handle_t>(std::ptr::null_mut()),
            I::UR_DEVICE_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
            I::UR_DEVICE_INFO_NAME => out.string(&info.name),
            I::UR_DEVICE_INFO_VENDOR => out.string(&info.vendor),
            I::UR_DEVICE_INFO_DRIVER_VERSION => out.string(&info.driver_version),
            I::UR_DEVICE_INFO_VERSION => out.string(&info.driver_version),
            I::UR_DEVICE_INFO_BACKEND_RUNTIME_VERSION => out.string(&info.driver_version),
            I::UR_DEVICE_INFO_PROFILE => out.string("FULL_PROFILE"),
            I::UR_DEVICE_INFO_EXTENSIONS => out.string(""),
            I::UR_DEVICE_INFO_AVAILABLE => out.bool(true),
            I::UR_DEVICE_INFO_USE_NATIVE_ASSERT => out.bool(false),
            I::UR_DEVICE_INFO_MAX_COMPUTE_UNITS => out.value(info.max_compute_units),
            I::UR_DEVICE_INFO_NUM_COMPUTE_UNITS => out.value(info.max_compute_units),
            I::UR_DEVICE_INFO_MAX_WORK_ITEM_DIMENSIONS => out.value(3u32),
            I::UR_DEVICE_INFO_MAX_WORK_ITEM_SIZES => out.array(&info.max_work_item_sizes),
            I::UR_DEVICE_INFO_MAX_WORK_GROUP_SIZE => out.value(info.max_work_group_size),
            I::UR_DEVICE_INFO_GLOBAL_MEM_SIZE => out.value(info.global_mem_size),
            I::UR_DEVICE_INFO_LOCAL_MEM_SIZE => out.value(info.local_mem_size),
            I::UR_DEVICE_INFO_MAX_MEM_ALLOC_SIZE => out.value(info.max_mem_alloc_size),
            I::UR_DEVICE_INFO_ADDRESS_BITS => out.value(64u32),
            I::UR_DEVICE_INFO_ENDIAN_LITTLE => out.bool(cfg!(target_endian = "little")),
            I::UR_DEVICE_INFO_IMAGE_SUPPORT => out.bool(false),
            I::UR_DEVICE_INFO_QUEUE_PROPERTIES | I::UR_DEVICE_INFO_QUEUE_ON_HOST_PROPERTIES => {
                let mut flags = 0;
                if info.out_of_order_queues {
                    flags |= ur_queue_flag_t::UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE.0;
                }
                if info.queue_profiling {
                    flags |= ur_queue_flag_t::UR_QUEUE_FLAG_PROFILING_ENABLE.0;
                }
                out.value::<ur_queue_flags_t>(flags)
            }
            I::UR_DEVICE_INFO_USM_HOST_SUPPORT => out.value(usm_access(ur_usm_kinds(info).contains(UsmKinds::HOST))),
            I::UR_DEVICE_INFO_USM_DEVICE_SUPPORT => {
                out.value(usm_access(ur_usm_kinds(info).contains(UsmKinds::DEVICE)))
            }
            I::UR_DEVICE_INFO_USM_SINGLE_SHARED_SUPPORT => {
                out.value(usm_access(ur_usm_kinds(info).contains(UsmKinds::SHARED)))
            }
            I::UR_DEVICE_INFO_USM_CROSS_SHARED_SUPPORT | I::UR_DEVICE_INFO_USM_SYSTEM_SHARED_SUPPORT => {
                out.value::<ur_device_usm_access_capability_flags_t>(0)
            }
            I::UR_DEVICE_INFO_COMMAND_BUFFER_SUPPORT_EXP => out.bool(true),
            I::UR_DEVICE_INFO_COMMAND_BUFFER_UPDATE_CAPABILITIES_EXP => {
                out.value(update_capabilities(info.command_buffer.update))
            }
            I::UR_DEVICE_INFO_COMMAND_BUFFER_EVENT_SUPPORT_EXP => out.bool(info.command_buffer.events),
            I::UR_DEVICE_INFO_COMMAND_BUFFER_SUBGRAPH_SUPPORT_EXP => out.bool(info.command_buffer.subgraphs),
            I::UR_DEVICE_INFO_COMPILER_AVAILABLE | I::UR_DEVICE_INFO_LINKER_AVAILABLE => out.bool(true),
            I::UR_DEVICE_INFO_HOST_UNIFIED_MEMORY => out.bool(info.device_type == DeviceType::Cpu),
            // ur-rs devices do not partition into sub-devices.
            I::UR_DEVICE_INFO_SUPPORTED_PARTITIONS | I::UR_DEVICE_INFO_PARTITION_TYPE => {
                out.array::<ur_device_partition_property_t>(&[])
            }
            I::UR_DEVICE_INFO_PARTITION_MAX_SUB_DEVICES => out.value(0u32),
            I::UR_DEVICE_INFO_PARTITION_AFFINITY_DOMAIN => out.value::<ur_device_affinity_domain_flags_t>(0),
            other => {
                let native = info.command_buffer.support == CommandBufferSupport::Native;
                tracing::debug!(query = other.0, native, "device info not answered");
                Err(err!(UnsupportedEnumeration, "device info {} has no answer on this adapter", other.0))
            }
        }
    })
}

/// Keeps a device handle alive for objects that refer to it.
pub(crate) type DeviceRef = Arc<Handle<Device>>;
