//! The CUDA platform and its devices as the loader sees them: discovery
//! (the driver's devices, each opened into the state its contexts share,
//! one that fails to open left out) and `DeviceImpl`, which makes contexts
//! and collective groups. The device's definition is in `device/`, below
//! the objects that name it.

use std::sync::Arc;

use cmdbuf_core::DeviceInfo;
use cmdbuf_core::adapter::prelude::*;

use crate::device::{CudaContext, DeviceShared, peer};
use crate::driver::cu;

/// The one platform: the CUDA driver with every device it reports.
pub(crate) struct CudaPlatform {
    version: String,
    devices: Vec<Arc<CudaDevice>>,
}

impl CudaPlatform {
    pub(crate) fn open() -> std::result::Result<CudaPlatform, String> {
        crate::driver::open()?;
        let (version, devices) = discover().map_err(|e| format!("the CUDA driver failed to list its devices: {e}"))?;
        if devices.is_empty() {
            return Err("the CUDA driver reports no usable device".into());
        }
        Ok(CudaPlatform { version, devices })
    }
}

fn discover() -> Result<(String, Vec<Arc<CudaDevice>>)> {
    let mut version = 0;
    // SAFETY: writes the driver's version number.
    unsafe { cu!(cuDriverGetVersion(&mut version))? };
    let version = format!("CUDA {}.{} driver", version / 1000, (version % 1000) / 10);
    let mut count = 0;
    // SAFETY: writes the number of devices.
    unsafe { cu!(cuDeviceGetCount(&mut count))? };
    let mut devices = Vec::new();
    for ordinal in 0..count {
        match DeviceShared::open(ordinal, &version) {
            Ok(shared) => devices.push(Arc::new(CudaDevice { shared })),
            // One broken device does not hide the others; the log says why.
            Err(e) => tracing::warn!(ordinal, error = %e, "CUDA device left out"),
        }
    }
    Ok((version, devices))
}

impl PlatformImpl for CudaPlatform {
    fn name(&self) -> String {
        "NVIDIA CUDA".into()
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn devices(&self) -> Vec<Arc<dyn DeviceImpl>> {
        self.devices.iter().map(|d| d.clone() as Arc<dyn DeviceImpl>).collect()
    }
}

/// A CUDA device as the loader sees it.
pub(crate) struct CudaDevice {
    shared: Arc<DeviceShared>,
}

impl DeviceImpl for CudaDevice {
    fn info(&self) -> DeviceInfo {
        self.shared.info.clone()
    }

    /// The `CUdevice` (the device ordinal).
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(self.shared.device as u64))
    }

    fn free_memory(&self) -> Result<Option<u64>> {
        self.shared.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two sizes; the device's context is bound.
        unsafe { cu!(cuMemGetInfo_v2(&mut free, &mut total))? };
        Ok(Some(free as u64))
    }

    fn timestamps(&self) -> Result<Timestamps> {
        self.shared.timestamps()
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        Ok(Arc::new(CudaContext::new(self.shared.clone())))
    }

    /// See [`peer::access`].
    fn peer_access(&self, peer: &dyn DeviceImpl) -> Result<cmdbuf_core::PeerAccess> {
        peer::access(&self.shared, &cuda_device(peer)?.shared)
    }

    /// See [`peer::enable`].
    fn enable_peer_access(&self, peer: &dyn DeviceImpl) -> Result<()> {
        peer::enable(&self.shared, &cuda_device(peer)?.shared)
    }

    /// NCCL communicators over the devices (`ncclCommInitAll`), where
    /// `libnccl.so.2` loads: see `nccl.rs`.
    fn collective_group(&self, devices: &[&dyn DeviceImpl]) -> Result<Box<dyn cmdbuf_core::adapter::CollectiveImpl>> {
        let shared = devices.iter().map(|d| Ok(cuda_device(*d)?.shared.clone())).collect::<Result<Vec<_>>>()?;
        Ok(Box::new(crate::nccl::NcclGroup::new(shared)?))
    }

    /// See [`peer::disable`].
    fn disable_peer_access(&self, peer: &dyn DeviceImpl) -> Result<()> {
        peer::disable(&self.shared, &cuda_device(peer)?.shared)
    }

    /// Every context of the device is over its primary context, so that is
    /// the only `CUcontext` adopted; the adapter holds its own reference to
    /// it and takes over none (`Ownership::Transferred` is refused).
    unsafe fn context_from_native(
        self: Arc<Self>,
        handle: cmdbuf_core::NativeHandle,
        ownership: cmdbuf_core::Ownership,
    ) -> Result<Arc<dyn ContextImpl>> {
        if handle.0 != self.shared.ctx.0 as u64 {
            return Err(cmdbuf_core::err!(InvalidContext, "{handle:?} is not the device's primary CUDA context"));
        }
        if ownership == cmdbuf_core::Ownership::Transferred {
            return Err(cmdbuf_core::err!(
                UnsupportedFeature,
                "the primary context is held by the device: its ownership cannot be handed over"
            ));
        }
        Ok(Arc::new(CudaContext::new(self.shared.clone())))
    }
}

/// The CUDA device behind a device object of this adapter.
fn cuda_device(device: &dyn DeviceImpl) -> Result<&CudaDevice> {
    cmdbuf_core::adapter::downcast::<CudaDevice>(device as &dyn std::any::Any, "the peer device")
}
