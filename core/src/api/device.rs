//! Devices and what they can do.

use std::fmt;
use std::sync::Arc;

use crate::adapter::{DeviceImpl, SubDeviceImpl};
use crate::clock::Timestamps;
use crate::error::Result;
pub use crate::objects::Device;
pub(crate) use crate::objects::DeviceInner;
use crate::objects::SubDeviceOf;
use crate::platform::Backend;
pub use crate::types::device::*;
use crate::{ensure, err};

/// The index of the first binary of the most preferred target in
/// `preference` that any of `targets` is for.
fn select_binary<S: AsRef<str>>(preference: &[BinaryTarget], targets: &[S]) -> Option<usize> {
    preference.iter().find_map(|wanted| targets.iter().position(|t| t.as_ref() == wanted.name()))
}

/// What the adapter reports, with the answers made once for every backend:
/// a device without sub-groups runs sub-groups of one work-item.
fn reported_info(imp: &dyn DeviceImpl) -> DeviceInfo {
    let mut info = imp.info();
    info.sub_groups = std::mem::take(&mut info.sub_groups).or_single_items(info.max_work_group_size);
    info
}

impl Device {
    pub(crate) fn new(imp: Arc<dyn DeviceImpl>, id: DeviceId) -> Device {
        let info = reported_info(&*imp);
        let partitions = imp.partition_support();
        Device { inner: Arc::new(DeviceInner { imp, info, id, native: None, partitions, sub: None }) }
    }

    /// The partitions the device offers (`UR_DEVICE_INFO_SUPPORTED_PARTITIONS`,
    /// `PARTITION_AFFINITY_DOMAIN`, `PARTITION_MAX_SUB_DEVICES`): none on
    /// backends that do not partition devices.
    pub fn partition_support(&self) -> &PartitionSupport {
        &self.inner.partitions
    }

    /// Partitions the device into sub-devices (`urDevicePartition`): devices
    /// with a [`parent`](Device::parent), of the same backend, on which
    /// contexts, queues, programs and command buffers work as on the device
    /// itself, each running its work on its own share of the device. Each
    /// call makes new sub-devices; they live as long as the returned values
    /// (and the contexts made on them). Sub-devices of an emulated view are
    /// emulated views.
    ///
    /// `DevicePartitionFailed` for a kind or affinity domain the device does
    /// not offer (see [`partition_support`](Device::partition_support));
    /// `InvalidValue` for `Equally(0)` or an empty count list;
    /// `InvalidDevicePartitionCount` for more compute units than the device
    /// has (in one sub-device, or counted together), a zero count, or more
    /// counts than `max_sub_devices`.
    pub fn partition(&self, partition: &Partition) -> Result<Vec<Device>> {
        self.check_partition(partition)?;
        // SAFETY: checked above against what the adapter offers and the
        // device's compute units.
        let made = unsafe { self.inner.imp.partition(partition)? };
        ensure!(!made.is_empty(), DevicePartitionFailed, "{self} made no sub-device ({partition})");
        let emulated = self.is_emulated();
        let parent = self.clone();
        Ok(made
            .into_iter()
            .enumerate()
            .map(|(index, SubDeviceImpl { imp, partition })| {
                let info = reported_info(&*imp);
                let partitions = imp.partition_support();
                let sub = SubDeviceOf { parent: parent.native(), partition, index };
                let device = Device {
                    inner: Arc::new(DeviceInner {
                        imp,
                        info,
                        id: self.inner.id,
                        native: None,
                        partitions,
                        sub: Some(sub),
                    }),
                };
                if emulated { device.emulated_view() } else { device }
            })
            .collect())
    }

    /// The front end's checks of a partition, written once for every adapter.
    fn check_partition(&self, partition: &Partition) -> Result<()> {
        let support = &self.inner.partitions;
        let units = self.info().max_compute_units;
        if !support.offers(partition.kind()) {
            let offered: Vec<&str> = support.kinds.iter().map(|k| k.name()).collect();
            return Err(err!(
                DevicePartitionFailed,
                "{self} does not partition {}; it partitions {}",
                partition.kind().name(),
                if offered.is_empty() { "in no way".to_string() } else { offered.join(", ") }
            ));
        }
        match partition {
            Partition::Equally(n) => {
                ensure!(*n > 0, InvalidValue, "a partition into sub-devices of 0 compute units");
                ensure!(
                    *n <= units,
                    InvalidDevicePartitionCount,
                    "sub-devices of {n} compute units: {self} has {units}"
                );
            }
            Partition::ByCounts(counts) => {
                ensure!(!counts.is_empty(), InvalidValue, "a partition by counts without counts");
                ensure!(
                    counts.iter().all(|c| *c > 0),
                    InvalidDevicePartitionCount,
                    "a sub-device of 0 compute units in {counts:?}"
                );
                ensure!(
                    counts.len() <= support.max_sub_devices as usize,
                    InvalidDevicePartitionCount,
                    "{} sub-devices: {self} makes at most {}",
                    counts.len(),
                    support.max_sub_devices
                );
                let total: u64 = counts.iter().map(|c| u64::from(*c)).sum();
                ensure!(
                    total <= u64::from(units),
                    InvalidDevicePartitionCount,
                    "counts {counts:?} total {total} compute units: {self} has {units}"
                );
            }
            Partition::ByAffinityDomain(domain) => {
                ensure!(
                    support.affinity_domains.contains(domain.flag()),
                    DevicePartitionFailed,
                    "{self} does not partition by {domain:?}; its affinity domains are {:?}",
                    support.affinity_domains
                );
            }
        }
        Ok(())
    }

    /// The device this one was partitioned from (`UR_DEVICE_INFO_PARENT_DEVICE`);
    /// `None` for a root device. The parent of an emulated sub-device is the
    /// native view of its parent.
    pub fn parent(&self) -> Option<&Device> {
        self.inner.sub.as_ref().map(|s| &s.parent)
    }

    /// The partition that made this sub-device (`UR_DEVICE_INFO_PARTITION_TYPE`),
    /// with the level an affinity domain of `NextPartitionable` split along;
    /// `None` for a root device.
    pub fn partition_type(&self) -> Option<&Partition> {
        self.inner.sub.as_ref().map(|s| &s.partition)
    }

    /// The root device this one was partitioned from, itself for a root device.
    pub fn root(&self) -> Device {
        match self.parent() {
            Some(parent) => parent.root(),
            None => self.clone(),
        }
    }

    /// The device's information.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The selector identity, such as `cuda:1`.
    pub fn id(&self) -> DeviceId {
        self.inner.id
    }

    /// The device's backend.
    pub fn backend(&self) -> Backend {
        self.inner.id.backend
    }

    /// Global memory free now, in bytes (`UR_DEVICE_INFO_GLOBAL_MEM_FREE`);
    /// `None` where the driver does not tell.
    pub fn free_memory(&self) -> Result<Option<u64>> {
        self.inner.imp.free_memory()
    }

    /// A device timestamp on the clock of the device's profiling timestamps,
    /// with the host timestamp ([`host_clock_ns`](crate::clock::host_clock_ns))
    /// of the same moment (`urDeviceGetGlobalTimestamps`).
    pub fn global_timestamps(&self) -> Result<Timestamps> {
        self.inner.imp.timestamps()
    }

    /// Of binaries given by their UR target strings (`spir64`, `nvptx64`,
    /// ...), the index of the one the device should run: the first binary of
    /// the device's most preferred [`binary_targets`](DeviceInfo::binary_targets)
    /// entry that any binary has (`urDeviceSelectBinary`).
    ///
    /// `InvalidSize` for an empty list; `InvalidBinary`, naming what the
    /// device runs, when no binary suits it.
    pub fn select_binary<S: AsRef<str>>(&self, targets: &[S]) -> Result<usize> {
        ensure!(!targets.is_empty(), InvalidSize, "no binaries to select from");
        let info = self.info();
        if let Some(index) = select_binary(&info.binary_targets, targets) {
            return Ok(index);
        }
        let given: Vec<&str> = targets.iter().map(|t| t.as_ref()).collect();
        let runs: Vec<&str> = info.binary_targets.iter().map(|t| t.name()).collect();
        Err(err!(
            InvalidBinary,
            "{} runs {}; the binaries are for {}",
            self,
            if runs.is_empty() { "none of UR's binary formats".to_string() } else { runs.join(", ") },
            given.join(", ")
        ))
    }

    /// Whether this view uses the software command buffer.
    pub fn is_emulated(&self) -> bool {
        self.inner.native.is_some()
    }

    /// A view of this device whose command buffers are cmdbuf-core's software
    /// command buffer, with its capabilities ([`CommandBufferCaps::EMULATED`]).
    pub fn emulated(&self) -> Device {
        if self.is_emulated() {
            return self.clone();
        }
        self.emulated_view()
    }

    /// The emulated view of this native view.
    fn emulated_view(&self) -> Device {
        let mut info = self.inner.info.clone();
        info.command_buffer = CommandBufferCaps::EMULATED;
        Device {
            inner: Arc::new(DeviceInner {
                imp: self.inner.imp.clone(),
                info,
                id: self.inner.id,
                native: Some(self.inner.clone()),
                partitions: self.inner.partitions.clone(),
                sub: self.inner.sub.clone(),
            }),
        }
    }

    /// The adapter's own view of this device (itself unless emulated).
    pub fn native(&self) -> Device {
        match &self.inner.native {
            Some(native) => Device { inner: native.clone() },
            None => self.clone(),
        }
    }

    /// The adapter's object, for adapters and tests of adapters.
    pub(crate) fn imp(&self) -> &Arc<dyn DeviceImpl> {
        &self.inner.imp
    }

    /// The native object behind the device (see [`crate::interop`] for each
    /// backend's); `UnsupportedFeature` where the backend has none.
    pub fn native_handle(&self) -> crate::Result<crate::NativeHandle> {
        self.inner.imp.native_handle()
    }

    /// Same physical device and same view.
    pub(crate) fn same_as(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
            || (Arc::ptr_eq(&self.inner.imp, &other.inner.imp) && self.is_emulated() == other.is_emulated())
    }
}

impl Device {
    /// The selector identity, then each sub-device's index in its parent
    /// (`cpu:0.1`, as `ONEAPI_DEVICE_SELECTOR` writes sub-devices).
    fn write_path(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.sub {
            Some(sub) => {
                sub.parent.write_path(f)?;
                write!(f, ".{}", sub.index)
            }
            None => write!(f, "{}", self.inner.id),
        }
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        self.same_as(other)
    }
}

impl Eq for Device {}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("id", &self.inner.id)
            .field("name", &self.inner.info.name)
            .field("emulated", &self.is_emulated())
            .finish()
    }
}

/// The label every listing names a device view by (the conformance matrix,
/// bench tables, selector listings, error messages): the selector identity,
/// then `emulated` when the view's command buffers are cmdbuf-core's software
/// command buffer, an emulated view's or those of a device with no native
/// ones (`cpu:0`, `cpu:0 emulated`).
impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_path(f)?;
        if self.inner.info.command_buffer.support == CommandBufferSupport::Emulated {
            f.write_str(" emulated")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_are_chosen_by_the_device_preference() {
        let given = ["<unknown>", "spir64", "nvptx64", "spir64", "native_cpu"];
        assert_eq!(select_binary(&[BinaryTarget::Nvptx64], &given), Some(2));
        assert_eq!(select_binary(&[BinaryTarget::Spirv64, BinaryTarget::Nvptx64], &given), Some(1));
        assert_eq!(select_binary(&[BinaryTarget::Amdgcn, BinaryTarget::NativeCpu], &given), Some(4));
        assert_eq!(select_binary(&[BinaryTarget::Amdgcn], &given), None);
        assert_eq!(select_binary::<&str>(&[], &given), None);
    }

    #[test]
    fn devices_without_sub_groups_run_single_items() {
        let none = SubGroups::default().or_single_items(256);
        assert_eq!((none.sizes, none.max_per_work_group), (vec![1], 256));
        let sized = SubGroups { sizes: vec![16, 8], ..SubGroups::default() }.or_single_items(100);
        assert_eq!(sized.max_per_work_group, 13);
        let told = SubGroups { sizes: vec![32], max_per_work_group: 2, independent_forward_progress: true };
        assert_eq!(told.clone().or_single_items(1024), told);
    }

    #[test]
    fn binary_target_names_are_urs() {
        for target in BinaryTarget::ALL {
            assert_eq!(BinaryTarget::from_name(target.name()), Some(target));
        }
        assert_eq!(BinaryTarget::Spirv64X86_64.name(), "spir64_x86_64");
        assert_eq!(BinaryTarget::from_name("spirv64"), None);
    }

    #[test]
    fn capability_extensions_follow_the_capabilities() {
        let mut fp = FpConfigs { single: FpCapabilities::ROUND_TO_NEAREST, ..FpConfigs::default() };
        let mut atomics = AtomicCaps::default();
        assert!(capability_extensions(&fp, &atomics).is_empty());
        fp.double = FpCapabilities::ROUND_TO_NEAREST;
        fp.half = FpCapabilities::ROUND_TO_NEAREST;
        atomics.int64 = true;
        assert_eq!(
            capability_extensions(&fp, &atomics),
            ["cl_khr_fp16", "cl_khr_fp64", "cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"]
        );
        assert_eq!(VectorWidths::of_register(32, false, true).double, 4);
        assert_eq!(VectorWidths::of_register(32, false, true).half, 0);
        assert_eq!(VectorWidths::scalar(true, false), VectorWidths { double: 0, ..VectorWidths::scalar(true, true) });
    }
}
