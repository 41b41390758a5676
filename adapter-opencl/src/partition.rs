//! Sub-devices: `clCreateSubDevices` with the partitions the driver lists
//! (`CL_DEVICE_PARTITION_PROPERTIES`, `CL_DEVICE_PARTITION_AFFINITY_DOMAIN`,
//! `CL_DEVICE_PARTITION_MAX_SUB_DEVICES`). A sub-device is opened like a
//! root device (its own info, USM and command-buffer setup) and holds its
//! `cl_device_id`, released with `clReleaseDevice` when the last object
//! using it is gone.

use cl3::device::{
    CL_DEVICE_PARTITION_AFFINITY_DOMAIN, CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN, CL_DEVICE_PARTITION_BY_COUNTS,
    CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, CL_DEVICE_PARTITION_EQUALLY, CL_DEVICE_PARTITION_MAX_SUB_DEVICES,
    CL_DEVICE_PARTITION_PROPERTIES, CL_DEVICE_PARTITION_TYPE,
};
use cl3::types::{cl_device_id, cl_device_partition_property, cl_uint};
use cmdbuf_core::{AffinityDomain, AffinityDomains, Partition, PartitionKind, PartitionSupport};

use crate::conv::ClResultExt;

/// A sub-device's id, owned: released when dropped.
pub(crate) struct OwnedSubDevice(pub(crate) cl_device_id);

// SAFETY: a device id is an opaque handle usable from any thread.
unsafe impl Send for OwnedSubDevice {}
// SAFETY: as for Send; nothing is mutated through it.
unsafe impl Sync for OwnedSubDevice {}

impl Drop for OwnedSubDevice {
    fn drop(&mut self) {
        // SAFETY: the id came from clCreateSubDevices and this is its only
        // release.
        if let Err(code) = unsafe { cl3::device::release_device(self.0) } {
            tracing::warn!(code, "clReleaseDevice of a sub-device failed");
        }
    }
}

/// The `cl_device_partition_property` values a query returns.
fn properties(id: cl_device_id, name: cl_uint) -> Vec<cl_device_partition_property> {
    let bytes = cl3::device::get_device_data(id, name).unwrap_or_default();
    bytes
        .chunks_exact(size_of::<cl_device_partition_property>())
        .map(|c| cl_device_partition_property::from_ne_bytes(c.try_into().expect("chunk of the property's size")))
        .collect()
}

fn number(id: cl_device_id, name: cl_uint) -> u64 {
    let bytes = cl3::device::get_device_data(id, name).unwrap_or_default();
    match bytes.len() {
        4 => u64::from(u32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes"))),
        8 => u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes")),
        _ => 0,
    }
}

/// What the driver offers for device `id`; partition types other than
/// OpenCL's three (Intel's by-names) are left out.
pub(crate) fn support(id: cl_device_id) -> PartitionSupport {
    let kinds: Vec<PartitionKind> = properties(id, CL_DEVICE_PARTITION_PROPERTIES)
        .into_iter()
        .filter_map(|p| match p {
            CL_DEVICE_PARTITION_EQUALLY => Some(PartitionKind::Equally),
            CL_DEVICE_PARTITION_BY_COUNTS => Some(PartitionKind::ByCounts),
            CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN => Some(PartitionKind::ByAffinityDomain),
            _ => None,
        })
        .collect();
    // OpenCL's affinity-domain bits are UR's.
    let domains = if kinds.contains(&PartitionKind::ByAffinityDomain) {
        AffinityDomains::from_bits_truncate(number(id, CL_DEVICE_PARTITION_AFFINITY_DOMAIN) as u32)
    } else {
        AffinityDomains::empty()
    };
    let max_sub_devices = if kinds.is_empty() { 0 } else { number(id, CL_DEVICE_PARTITION_MAX_SUB_DEVICES) as u32 };
    PartitionSupport { kinds, affinity_domains: domains, max_sub_devices }
}

/// The property list of `clCreateSubDevices` for `partition`.
pub(crate) fn cl_properties(partition: &Partition) -> Vec<cl_device_partition_property> {
    match partition {
        Partition::Equally(n) => vec![CL_DEVICE_PARTITION_EQUALLY, *n as cl_device_partition_property, 0],
        Partition::ByCounts(counts) => std::iter::once(CL_DEVICE_PARTITION_BY_COUNTS)
            .chain(counts.iter().map(|c| *c as cl_device_partition_property))
            .chain([CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0])
            .collect(),
        Partition::ByAffinityDomain(domain) => {
            vec![CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN, domain.flag().bits() as cl_device_partition_property, 0]
        }
    }
}

/// Partitions device `id`: the new sub-devices' ids, each owned.
pub(crate) fn create(id: cl_device_id, partition: &Partition) -> cmdbuf_core::Result<Vec<OwnedSubDevice>> {
    let ids = cl3::device::create_sub_devices(id, &cl_properties(partition)).cl("clCreateSubDevices")?;
    Ok(ids.into_iter().map(OwnedSubDevice).collect())
}

/// The partition that made sub-device `id`: `requested`, with the level
/// the driver split along for a next-partitionable affinity domain where
/// `CL_DEVICE_PARTITION_TYPE` names it.
pub(crate) fn made(id: cl_device_id, requested: &Partition) -> Partition {
    if *requested != Partition::ByAffinityDomain(AffinityDomain::NextPartitionable) {
        return requested.clone();
    }
    match properties(id, CL_DEVICE_PARTITION_TYPE)[..] {
        [CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN, bits, ..] => AffinityDomains::from_bits(bits as u32)
            .and_then(AffinityDomain::from_flag)
            .map_or_else(|| requested.clone(), Partition::ByAffinityDomain),
        _ => requested.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_lists_end_as_opencl_requires() {
        assert_eq!(cl_properties(&Partition::Equally(2)), [0x1086, 2, 0]);
        assert_eq!(cl_properties(&Partition::ByCounts(vec![1, 3])), [0x1087, 1, 3, 0, 0]);
        assert_eq!(cl_properties(&Partition::ByAffinityDomain(AffinityDomain::L2Cache)), [0x1088, 1 << 3, 0]);
        assert_eq!(cl_properties(&Partition::ByAffinityDomain(AffinityDomain::NextPartitionable)), [0x1088, 1 << 5, 0]);
    }
}
