//! The platform and the device's behaviour (`DeviceImpl`): what makes
//! contexts, sub-devices and adopted contexts, above everything those
//! contexts make. The device's definition and the decisions made once per
//! device are in `device.rs`, below every object.

use std::any::Any;
use std::sync::Arc;

use cl3::types::{cl_bitfield, cl_platform_id};
use cmdbuf_core::adapter::SubDeviceImpl;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{DeviceInfo, Partition, PartitionSupport};

use crate::context::ClContext;
use crate::device::ClDevice;
use crate::{info, partition};

const CL_DEVICE_TYPE_ALL: cl_bitfield = 0xFFFF_FFFF;

/// An OpenCL platform.
pub(crate) struct ClPlatform {
    /// The platform id, as an integer: ids are process-wide and never released.
    id: usize,
    name: String,
    version: String,
    devices: Vec<Arc<ClDevice>>,
}

impl ClPlatform {
    /// Queries `id` and its devices; `None` when it has no usable device.
    pub(crate) fn open(id: cl_platform_id) -> Option<ClPlatform> {
        let platform = opencl3::platform::Platform::new(id);
        let name = platform.name().unwrap_or_else(|_| "OpenCL platform".into());
        let version = platform.version().unwrap_or_default();
        let ids = match platform.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            Err(e) => {
                tracing::info!(platform = %name, code = e.0, "platform without devices skipped");
                return None;
            }
        };
        let devices: Vec<Arc<ClDevice>> = ids
            .into_iter()
            .filter_map(|d| match ClDevice::open(id, d, &name, &version, None) {
                Ok(device) => Some(Arc::new(device)),
                Err(reason) => {
                    tracing::warn!(platform = %name, %reason, "device skipped");
                    None
                }
            })
            .collect();
        (!devices.is_empty()).then_some(ClPlatform { id: id as usize, name, version, devices })
    }
}

impl PlatformImpl for ClPlatform {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn devices(&self) -> Vec<Arc<dyn DeviceImpl>> {
        self.devices.iter().map(|d| d.clone() as Arc<dyn DeviceImpl>).collect()
    }

    /// The `cl_platform_id`.
    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.id as u64))
    }
}

impl DeviceImpl for ClDevice {
    fn info(&self) -> DeviceInfo {
        self.shared.info.clone()
    }

    /// The `cl_device_id`.
    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.shared.id as u64))
    }

    fn free_memory(&self) -> Result<Option<u64>> {
        Ok(info::free_memory(self.shared.id, &self.shared.info.extensions))
    }

    fn timestamps(&self) -> Result<Timestamps> {
        self.clock.timestamps()
    }

    /// No peer path: USM and SVM pointers are valid only in the `cl_context`
    /// they were allocated in, and every context of this adapter is its own
    /// `cl_context` of one device (two devices of a platform could share one
    /// only if a cmdbuf-core context held both).
    fn peer_access(&self, _peer: &dyn DeviceImpl) -> Result<cmdbuf_core::PeerAccess> {
        Err(cmdbuf_core::err!(
            UnsupportedFeature,
            "OpenCL: USM of one cl_context is not usable in another, and each context holds one device"
        ))
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        Ok(Arc::new(ClContext::new(self.shared.clone())?))
    }

    /// A `cl_context` of exactly the listed devices ([`ClContext::over`]),
    /// its own queues on this root device where listed, else on the first.
    unsafe fn create_context_over(self: Arc<Self>, devices: &[Arc<dyn DeviceImpl>]) -> Result<Arc<dyn ContextImpl>> {
        let members = devices
            .iter()
            .map(|d| Ok(downcast::<ClDevice>(&**d as &dyn Any, "a device of the context")?.shared.clone()))
            .collect::<Result<Vec<_>>>()?;
        let primary = match members.iter().find(|d| d.id == self.shared.id) {
            Some(root) => root.clone(),
            None => members.first().ok_or_else(|| err!(InvalidSize, "a context of no device"))?.clone(),
        };
        Ok(Arc::new(ClContext::over(primary, members)?))
    }

    /// A `cl_context` of exactly the listed devices where they are of this
    /// device's platform (OpenCL contexts hold devices of one platform),
    /// its own queues on this device.
    unsafe fn create_context_across(self: Arc<Self>, devices: &[Arc<dyn DeviceImpl>]) -> Result<Arc<dyn ContextImpl>> {
        let mut members = Vec::with_capacity(devices.len());
        for device in devices {
            let device = downcast::<ClDevice>(&**device as &dyn Any, "a device of the context")?;
            if device.platform != self.platform {
                return Err(err!(
                    UnsupportedFeature,
                    "a context over devices of two OpenCL platforms ({} and {}): a cl_context holds devices of one",
                    self.platform_name,
                    device.platform_name
                ));
            }
            members.push(device.shared.clone());
        }
        Ok(Arc::new(ClContext::over(self.shared.clone(), members)?))
    }

    fn partition_support(&self) -> PartitionSupport {
        partition::support(self.shared.id)
    }

    /// `clCreateSubDevices`; each sub-device is then set up as a device of
    /// its own.
    unsafe fn partition(&self, how: &Partition) -> Result<Vec<SubDeviceImpl>> {
        partition::create(self.shared.id, how)?
            .into_iter()
            .map(|owned| {
                let id = owned.0;
                let device = ClDevice::open(
                    self.platform as cl_platform_id,
                    id,
                    &self.platform_name,
                    &self.platform_version,
                    Some(owned),
                )
                .map_err(|reason| err!(DevicePartitionFailed, "a sub-device cannot be used: {reason}"))?;
                Ok(SubDeviceImpl { imp: Arc::new(device), partition: partition::made(id, how) })
            })
            .collect()
    }

    unsafe fn context_from_native(
        self: Arc<Self>,
        handle: NativeHandle,
        ownership: cmdbuf_core::Ownership,
    ) -> Result<Arc<dyn ContextImpl>> {
        // SAFETY: the trait asks for a live native context of the backend's type, a `cl_context` here
        // (OpenCL's checks dereference it), which is what `ClContext::from_native` requires.
        Ok(Arc::new(unsafe { ClContext::from_native(self.shared.clone(), handle, ownership)? }))
    }
}
