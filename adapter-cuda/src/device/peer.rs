//! Peer access between two CUDA devices: whether one reaches the other's
//! memory, with which atomics, and switching it on and off.

use cmdbuf_core::{PeerAccess, Result};
use cudarc::driver::sys;

use super::DeviceShared;
use crate::driver::cu;

/// `cuDeviceCanAccessPeer` from `device` to `peer`, and the native atomics
/// `cuDeviceGetP2PAttribute` reports for that direction. The same device
/// always reaches its own memory.
pub(crate) fn access(device: &DeviceShared, peer: &DeviceShared) -> Result<PeerAccess> {
    if peer.device == device.device {
        return Ok(PeerAccess { supported: true, atomics: true });
    }
    let (mut can, mut atomics) = (0, 0);
    // SAFETY: writes one flag for two valid devices.
    unsafe { cu!(cuDeviceCanAccessPeer(&mut can, device.device, peer.device))? };
    if can != 0 {
        let attribute = sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED;
        // SAFETY: writes one attribute for two valid devices.
        unsafe { cu!(cuDeviceGetP2PAttribute(&mut atomics, attribute, device.device, peer.device))? };
    } else {
        tracing::debug!(device = device.device, peer = peer.device, "cuDeviceCanAccessPeer: no");
    }
    Ok(PeerAccess { supported: can != 0, atomics: can != 0 && atomics != 0 })
}

/// `cuCtxEnablePeerAccess` from `device`'s primary context to the peer's
/// (access is per context pair; every context here is the primary one).
/// Already enabled, by this adapter or another user of the primary
/// contexts, counts as done.
pub(crate) fn enable(device: &DeviceShared, peer: &DeviceShared) -> Result<()> {
    device.bind()?;
    // SAFETY: the peer's primary context is retained by the peer device;
    // this device's is current.
    let result = unsafe { sys::cuCtxEnablePeerAccess(peer.ctx.0, 0) };
    if result == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
        return Ok(());
    }
    crate::driver::check(result, "cuCtxEnablePeerAccess")
}

/// `cuCtxDisablePeerAccess` from `device`'s primary context to the peer's.
pub(crate) fn disable(device: &DeviceShared, peer: &DeviceShared) -> Result<()> {
    device.bind()?;
    // SAFETY: as for `enable`.
    unsafe { cu!(cuCtxDisablePeerAccess(peer.ctx.0)) }
}
