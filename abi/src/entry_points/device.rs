//! `urDevice*`: the devices of a platform and what they can do.

#![allow(non_snake_case)]

use std::sync::Arc;

use cmdbuf_core::{AffinityDomain, AffinityDomains, DeviceType, Partition, ensure, err};

use crate::boundary::conv::ur_device_type;
use crate::entry::{AbiResult, guard};
use crate::handle::Handle;
use crate::info::{c_str, enumerate, write_opt, write_out};
use crate::objects::device::{Device, SUB_DEVICES};
use crate::objects::platform::Platform;
use crate::sys::*;

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
        // SAFETY: `platform` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let platform = unsafe { Handle::<Platform>::get(platform)? };
        // Values above CUSTOM failed the generated check (checks.rs); 0,
        // below DEFAULT, names no type either.
        ensure!(
            device_type.0 >= ur_device_type_t::UR_DEVICE_TYPE_DEFAULT.0,
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
        // SAFETY: `devices` is null or writable for `num_entries` handles, `num_devices` null or writable (entry_points
        // doc, "Out-pointers"), all `enumerate` needs.
        unsafe { enumerate(&matching, num_entries, devices, num_devices) }
    })
}

/// # Safety
/// UR's contract for `urDeviceRetain`.
pub(crate) unsafe extern "C" fn urDeviceRetain(device: ur_device_handle_t) -> ur_result_t {
    // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urDeviceRetain", || unsafe { Handle::<Device>::retain(device) })
}

/// # Safety
/// UR's contract for `urDeviceRelease`.
pub(crate) unsafe extern "C" fn urDeviceRelease(device: ur_device_handle_t) -> ur_result_t {
    // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
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
        // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<Device>::get(device)? };
        if device_timestamp.is_null() {
            // The host clock alone: no need to ask the device.
            // SAFETY: null or writable per UR's contract.
            unsafe { write_opt(host_timestamp, cmdbuf_core::host_clock_ns()) };
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
        // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<Device>::get(device)? };
        // SAFETY: non-null because checks.rs rejected `NULL == pBinaries`, and `num_binaries` elements long per UR's
        // contract.
        let binaries = unsafe { std::slice::from_raw_parts(binaries, num_binaries as usize) };
        let targets = binaries
            .iter()
            // SAFETY: each target is a NUL-terminated string per UR's contract.
            .map(|b| unsafe { c_str(b.pDeviceTargetSpec, "pDeviceTargetSpec") })
            .collect::<Result<Vec<&str>, _>>()?;
        let index = handle.value.core().select_binary(&targets)?;
        // SAFETY: non-null because checks.rs rejected `NULL == pSelectedBinary`; writable per the contract
        // ("Out-pointers").
        unsafe { write_out(selected, index as u32) };
        Ok(())
    })
}

/// The partition a `ur_device_partition_properties_t` describes.
///
/// # Safety
/// `properties` points to a readable properties struct whose `pProperties`
/// points to `PropCount` properties (neither null: `urDevicePartition`'s
/// generated checks reject both).
unsafe fn partition_of(properties: *const ur_device_partition_properties_t) -> AbiResult<Partition> {
    // SAFETY: readable per this function's `# Safety`.
    let properties = unsafe { &*properties };
    ensure!(properties.PropCount > 0, InvalidValue, "pProperties->PropCount is 0: no partition property");
    // SAFETY: `PropCount` properties long per this function's `# Safety`.
    let list = unsafe { std::slice::from_raw_parts(properties.pProperties, properties.PropCount) };
    use ur_device_partition_t as P;
    let kind = list[0].type_;
    ensure!(
        list.iter().all(|p| p.type_ == kind),
        InvalidValue,
        "partition properties of different types: a partition has one type"
    );
    let single = || {
        ensure!(list.len() == 1, InvalidValue, "{} properties: this partition type takes one", list.len());
        Ok(list[0].value)
    };
    match kind {
        P::UR_DEVICE_PARTITION_EQUALLY => {
            let value = single()?;
            // SAFETY: `type` EQUALLY tags `equally`; every member is a u32.
            Ok(Partition::Equally(unsafe { value.equally }))
        }
        P::UR_DEVICE_PARTITION_BY_COUNTS => Ok(Partition::ByCounts(
            list.iter()
                // SAFETY: `type` BY_COUNTS tags `count`; every member is a u32.
                .map(|p| unsafe { p.value.count })
                .collect(),
        )),
        P::UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN => {
            let value = single()?;
            // SAFETY: `type` BY_AFFINITY_DOMAIN tags `affinity_domain`;
            // every member is a u32.
            let flags = unsafe { value.affinity_domain };
            ensure!(
                flags & ur_device_affinity_domain_flags_t::from(UR_DEVICE_AFFINITY_DOMAIN_FLAGS_MASK) == 0,
                InvalidEnumeration,
                "affinity domain {flags:#x} has bits outside ur_device_affinity_domain_flags_t"
            );
            AffinityDomains::from_bits(flags)
                .and_then(AffinityDomain::from_flag)
                .map(Partition::ByAffinityDomain)
                .ok_or_else(|| err!(InvalidValue, "affinity domain {flags:#x}: a partition names exactly one domain"))
        }
        P::UR_DEVICE_PARTITION_BY_CSLICE => {
            Err(err!(DevicePartitionFailed, "no cmdbuf device partitions by c-slice (a Level Zero partition)"))
        }
        other => Err(err!(InvalidEnumeration, "{:#x} is not a ur_device_partition_t", other.0)),
    }
}

/// # Safety
/// UR's contract for `urDevicePartition`.
pub(crate) unsafe extern "C" fn urDevicePartition(
    device: ur_device_handle_t,
    properties: *const ur_device_partition_properties_t,
    num_devices: u32,
    sub_devices: *mut ur_device_handle_t,
    num_devices_ret: *mut u32,
) -> ur_result_t {
    guard("urDevicePartition", || {
        // SAFETY: `device` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let handle = unsafe { Handle::<Device>::get(device)? };
        // SAFETY: `properties` is one readable struct whose `pProperties` holds `PropCount` entries (entry_points doc,
        // "Arrays and strings"; neither is null: checks.rs rejected `NULL == pProperties` and `NULL ==
        // pProperties->pProperties`), all `partition_of` needs.
        let partition = unsafe { partition_of(properties)? };
        let made = handle.value.device.partition(&partition)?;
        let count = u32::try_from(made.len()).unwrap_or(u32::MAX);
        // SAFETY: null or writable per the contract.
        unsafe { write_opt(num_devices_ret, count) };
        if !sub_devices.is_null() {
            // Sub-devices past `num_devices` are dropped here, as UR allows
            // ("only retrieve that number").
            for (i, sub) in made.into_iter().take(num_devices as usize).enumerate() {
                let value =
                    Device { device: sub, platform: handle.value.platform.clone(), parent: Some(handle.to_arc()) };
                let sub = Handle::new_arc(value);
                let mut live = SUB_DEVICES.lock();
                live.retain(|d| d.strong_count() > 0);
                live.push(Arc::downgrade(&sub));
                drop(live);
                // The application's references own the strong count `new_arc` made.
                let raw = Handle::into_raw(sub);
                // SAFETY: `sub_devices` holds `num_devices` writable handles
                // per the contract, and `i < num_devices`.
                unsafe { sub_devices.add(i).write(raw) };
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device_info::tests::cpu_device;
    use crate::device_info::urDeviceGetInfo;

    fn properties(list: &[ur_device_partition_property_t]) -> ur_device_partition_properties_t {
        ur_device_partition_properties_t {
            stype: ur_structure_type_t::UR_STRUCTURE_TYPE_DEVICE_PARTITION_PROPERTIES,
            pNext: std::ptr::null_mut(),
            pProperties: list.as_ptr(),
            PropCount: list.len(),
        }
    }

    fn equally(n: u32) -> ur_device_partition_property_t {
        ur_device_partition_property_t {
            type_: ur_device_partition_t::UR_DEVICE_PARTITION_EQUALLY,
            value: ur_device_partition_value_t { equally: n },
        }
    }

    fn info_u32(device: ur_device_handle_t, name: ur_device_info_t) -> u32 {
        let mut value = 0u32;
        // SAFETY: a writable u32 of the size passed.
        let r = unsafe { urDeviceGetInfo(device, name, 4, (&raw mut value).cast(), std::ptr::null_mut()) };
        assert_eq!(r, ur_result_t::UR_RESULT_SUCCESS);
        value
    }

    #[test]
    fn sub_devices_of_the_cpu_device_are_counted_children() {
        let device = cpu_device();
        let units = info_u32(device, ur_device_info_t::UR_DEVICE_INFO_MAX_COMPUTE_UNITS);
        let list = [equally(1)];
        let props = properties(&list);
        let mut count = 0u32;
        // SAFETY: valid properties and out-parameters for each call.
        unsafe {
            assert_eq!(
                urDevicePartition(device, &props, 0, std::ptr::null_mut(), &mut count),
                ur_result_t::UR_RESULT_SUCCESS
            );
            assert_eq!(count, units);
            let mut subs = vec![std::ptr::null_mut(); 1];
            assert_eq!(
                urDevicePartition(device, &props, 1, subs.as_mut_ptr(), std::ptr::null_mut()),
                ur_result_t::UR_RESULT_SUCCESS
            );
            let sub = subs[0];
            assert_eq!(info_u32(sub, ur_device_info_t::UR_DEVICE_INFO_MAX_COMPUTE_UNITS), 1);
            let mut parent: ur_device_handle_t = std::ptr::null_mut();
            let size = std::mem::size_of::<ur_device_handle_t>();
            let r = urDeviceGetInfo(
                sub,
                ur_device_info_t::UR_DEVICE_INFO_PARENT_DEVICE,
                size,
                (&raw mut parent).cast(),
                std::ptr::null_mut(),
            );
            assert_eq!(r, ur_result_t::UR_RESULT_SUCCESS);
            assert_eq!(parent, device);
            let mut kind = [ur_device_partition_property_t {
                type_: ur_device_partition_t(0),
                value: ur_device_partition_value_t { count: 0 },
            }; 2];
            let mut size_ret = 0usize;
            let r = urDeviceGetInfo(
                sub,
                ur_device_info_t::UR_DEVICE_INFO_PARTITION_TYPE,
                std::mem::size_of_val(&kind),
                kind.as_mut_ptr().cast(),
                &mut size_ret,
            );
            assert_eq!(r, ur_result_t::UR_RESULT_SUCCESS);
            assert_eq!(size_ret, std::mem::size_of::<ur_device_partition_property_t>());
            assert_eq!(kind[0].type_, ur_device_partition_t::UR_DEVICE_PARTITION_EQUALLY);
            assert_eq!(kind[0].value.equally, 1);
            // Sub-devices are counted; root devices are not.
            assert_eq!(info_u32(sub, ur_device_info_t::UR_DEVICE_INFO_REFERENCE_COUNT), 1);
            assert_eq!(urDeviceRetain(sub), ur_result_t::UR_RESULT_SUCCESS);
            assert_eq!(info_u32(sub, ur_device_info_t::UR_DEVICE_INFO_REFERENCE_COUNT), 2);
            assert_eq!(urDeviceRelease(sub), ur_result_t::UR_RESULT_SUCCESS);
            assert_eq!(urDeviceRelease(sub), ur_result_t::UR_RESULT_SUCCESS);
            assert_eq!(urDeviceRelease(device), ur_result_t::UR_RESULT_SUCCESS);
            assert_eq!(info_u32(device, ur_device_info_t::UR_DEVICE_INFO_REFERENCE_COUNT), 1);
            // The root device's partition type is empty.
            let r = urDeviceGetInfo(
                device,
                ur_device_info_t::UR_DEVICE_INFO_PARTITION_TYPE,
                0,
                std::ptr::null_mut(),
                &mut size_ret,
            );
            assert_eq!(r, ur_result_t::UR_RESULT_SUCCESS);
            assert_eq!(size_ret, 0);
        }
    }

    #[test]
    fn malformed_partitions_are_refused() {
        let device = cpu_device();
        let mut count = 0u32;
        // Through the dispatch table, as C calls it: the null cases are the
        // generated checks' (checks.rs), which the implementation relies on.
        let partition = crate::tables::dispatch_table().Device.pfnPartition.expect("urDevicePartition");
        let call = |props: *const ur_device_partition_properties_t, count: &mut u32| {
            // SAFETY: `props` is null or valid; `count` is writable.
            unsafe { partition(device, props, 0, std::ptr::null_mut(), count) }
        };
        assert_eq!(call(std::ptr::null(), &mut count), ur_result_t::UR_RESULT_ERROR_INVALID_NULL_POINTER);
        let mut empty = properties(&[]);
        empty.pProperties = std::ptr::null();
        assert_eq!(call(&empty, &mut count), ur_result_t::UR_RESULT_ERROR_INVALID_NULL_POINTER);
        let list = [equally(1)];
        let mut none = properties(&list);
        none.PropCount = 0;
        assert_eq!(call(&none, &mut count), ur_result_t::UR_RESULT_ERROR_INVALID_VALUE);
        assert_eq!(call(&properties(&[equally(0)]), &mut count), ur_result_t::UR_RESULT_ERROR_INVALID_VALUE);
        assert_eq!(
            call(&properties(&[equally(1), equally(1)]), &mut count),
            ur_result_t::UR_RESULT_ERROR_INVALID_VALUE
        );
        let counts = |c: u32| ur_device_partition_property_t {
            type_: ur_device_partition_t::UR_DEVICE_PARTITION_BY_COUNTS,
            value: ur_device_partition_value_t { count: c },
        };
        assert_eq!(
            call(&properties(&[counts(1), counts(0)]), &mut count),
            ur_result_t::UR_RESULT_ERROR_INVALID_DEVICE_PARTITION_COUNT
        );
        assert_eq!(
            call(&properties(&[counts(u32::MAX)]), &mut count),
            ur_result_t::UR_RESULT_ERROR_INVALID_DEVICE_PARTITION_COUNT
        );
        assert_eq!(call(&properties(&[counts(1), equally(1)]), &mut count), ur_result_t::UR_RESULT_ERROR_INVALID_VALUE);
        let domain = |d: u32| ur_device_partition_property_t {
            type_: ur_device_partition_t::UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN,
            value: ur_device_partition_value_t { affinity_domain: d },
        };
        assert_eq!(call(&properties(&[domain(1 << 6)]), &mut count), ur_result_t::UR_RESULT_ERROR_INVALID_ENUMERATION);
        assert_eq!(call(&properties(&[domain(0b11)]), &mut count), ur_result_t::UR_RESULT_ERROR_INVALID_VALUE);
        let cslice = ur_device_partition_property_t {
            type_: ur_device_partition_t::UR_DEVICE_PARTITION_BY_CSLICE,
            value: ur_device_partition_value_t { count: 0 },
        };
        assert_eq!(call(&properties(&[cslice]), &mut count), ur_result_t::UR_RESULT_ERROR_DEVICE_PARTITION_FAILED);
        let bogus = ur_device_partition_property_t {
            type_: ur_device_partition_t(7),
            value: ur_device_partition_value_t { count: 0 },
        };
        assert_eq!(call(&properties(&[bogus]), &mut count), ur_result_t::UR_RESULT_ERROR_INVALID_ENUMERATION);
    }
}
