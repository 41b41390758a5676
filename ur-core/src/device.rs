//! Devices and what they can do.

use std::fmt;
use std::sync::Arc;

use crate::adapter::DeviceImpl;
use crate::clock::Timestamps;
use crate::error::Result;
pub use crate::objects::Device;
pub(crate) use crate::objects::DeviceInner;
use crate::platform::Backend;
pub use crate::types::device::*;
use crate::{ensure, err};

/// The index of the first binary of the most preferred target in
/// `preference` that any of `targets` is for.
fn select_binary<S: AsRef<str>>(preference: &[BinaryTarget], targets: &[S]) -> Option<usize> {
    preference.iter().find_map(|wanted| targets.iter().position(|t| t.as_ref() == wanted.name()))
}

impl Device {
    pub(crate) fn new(imp: Arc<dyn DeviceImpl>, id: DeviceId) -> Device {
        let mut info = imp.info();
        info.sub_groups = std::mem::take(&mut info.sub_groups).or_single_items(info.max_work_group_size);
        Device { inner: Arc::new(DeviceInner { imp, info, id, native: None }) }
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

    /// A view of this device whose command buffers are ur-core's software
    /// command buffer, with its capabilities ([`CommandBufferCaps::EMULATED`]).
    pub fn emulated(&self) -> Device {
        if self.is_emulated() {
            return self.clone();
        }
        let mut info = self.inner.info.clone();
        info.command_buffer = CommandBufferCaps::EMULATED;
        Device {
            inner: Arc::new(DeviceInner {
                imp: self.inner.imp.clone(),
                info,
                id: self.inner.id,
                native: Some(self.inner.clone()),
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
/// then `emulated` when the view's command buffers are ur-core's software
/// command buffer, an emulated view's or those of a device with no native
/// ones (`cpu:0`, `cpu:0 emulated`).
impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner.id)?;
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
