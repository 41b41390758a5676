//! `urUsmP2P*Exp` (UR_EXP_USM_P2P): peer access between two devices, as
//! cmdbuf-core's `Device::peer_access`, `enable_peer_access` and
//! `disable_peer_access` answer it. Devices of two backends are never
//! peers; within a backend the adapter decides (see docs/multi-device.md).

#![allow(non_snake_case)]

use cmdbuf_core::err;

use crate::entry::{AbiResult, guard};
use crate::handle::Handle;
use crate::info::InfoOut;
use crate::objects::device::Device;
use crate::sys::*;

/// The cmdbuf-core devices behind two device handles.
///
/// # Safety
/// `command` and `peer` are each null or one of this adapter's handles (UR's
/// contract for the `urUsmP2P*Exp` calls).
unsafe fn pair(
    command: ur_device_handle_t,
    peer: ur_device_handle_t,
) -> AbiResult<(cmdbuf_core::Device, cmdbuf_core::Device)> {
    // SAFETY: `command` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
    let command = unsafe { Handle::<Device>::get(command)? };
    // SAFETY: `peer` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
    let peer = unsafe { Handle::<Device>::get(peer)? };
    Ok((command.value.core().clone(), peer.value.core().clone()))
}

/// # Safety
/// UR's contract for `urUsmP2PEnablePeerAccessExp`.
pub(crate) unsafe extern "C" fn urUsmP2PEnablePeerAccessExp(
    command_device: ur_device_handle_t,
    peer_device: ur_device_handle_t,
) -> ur_result_t {
    guard("urUsmP2PEnablePeerAccessExp", || {
        // SAFETY: `command_device` and `peer_device` are each null or one of this adapter's handles (entry_points doc,
        // "Handles"), all `pair` needs.
        let (command, peer) = unsafe { pair(command_device, peer_device)? };
        command.enable_peer_access(&peer)
    })
}

/// # Safety
/// UR's contract for `urUsmP2PDisablePeerAccessExp`.
pub(crate) unsafe extern "C" fn urUsmP2PDisablePeerAccessExp(
    command_device: ur_device_handle_t,
    peer_device: ur_device_handle_t,
) -> ur_result_t {
    guard("urUsmP2PDisablePeerAccessExp", || {
        // SAFETY: `command_device` and `peer_device` are each null or one of this adapter's handles (entry_points doc,
        // "Handles"), all `pair` needs.
        let (command, peer) = unsafe { pair(command_device, peer_device)? };
        command.disable_peer_access(&peer)
    })
}

/// # Safety
/// UR's contract for `urUsmP2PPeerAccessGetInfoExp`.
pub(crate) unsafe extern "C" fn urUsmP2PPeerAccessGetInfoExp(
    command_device: ur_device_handle_t,
    peer_device: ur_device_handle_t,
    prop_name: ur_exp_peer_info_t,
    prop_size: usize,
    prop_value: *mut std::ffi::c_void,
    prop_size_ret: *mut usize,
) -> ur_result_t {
    guard("urUsmP2PPeerAccessGetInfoExp", || {
        // SAFETY: `command_device` and `peer_device` are each null or one of this adapter's handles (entry_points doc,
        // "Handles"), all `pair` needs.
        let (command, peer) = unsafe { pair(command_device, peer_device)? };
        // SAFETY: `prop_value` is null or writable for `prop_size` bytes, `prop_size_ret` null or writable
        // (entry_points doc, "Info queries"), all `InfoOut::new` needs.
        let out = unsafe { InfoOut::new(prop_size, prop_value, prop_size_ret)? };
        let access = command.peer_access(&peer)?;
        // UR answers both queries with an `int`: 1 supported, 0 not.
        match prop_name {
            ur_exp_peer_info_t::UR_EXP_PEER_INFO_UR_PEER_ACCESS_SUPPORT => out.value(i32::from(access.supported)),
            ur_exp_peer_info_t::UR_EXP_PEER_INFO_UR_PEER_ATOMICS_SUPPORT => out.value(i32::from(access.atomics)),
            other => Err(err!(InvalidEnumeration, "peer info {}", other.0)),
        }
    })
}
