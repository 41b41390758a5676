//! Peer access between devices (UR's `urUsmP2P*Exp`, `UR_EXP_USM_P2P`) and
//! copies between USM allocations of contexts on two devices.
//!
//! A context holds one device. Memory of a context on a *peer* device can be
//! reached from a queue of this device only where the backend lets one device
//! access another's memory (CUDA peer access) and the application enabled it
//! ([`Device::enable_peer_access`]), which UR makes explicit and directional:
//! enabling `a -> b` lets queues and kernels of `a` use memory allocated on `b`.
//!
//! The front end keeps the enabled pairs and checks every peer copy against
//! them; adapters only answer whether the pair can be enabled, do it, and copy.
//! The copy on a queue, [`Queue::usm_copy_peer`](crate::Queue::usm_copy_peer),
//! is the queue's (`queue/peer_copy.rs`): the command buffers' peer copies
//! use the same checks (`peer_copy_command`) below the queues.

use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::adapter::DeviceImpl;
use crate::command::Command;
use crate::context::{Context, ContextId};
use crate::device::Device;
use crate::error::{Result, UrError};
use crate::memory::{AllocationTracker, MemLoc, UsmPtr, UsmRef};
pub use crate::types::desc::PeerAccess;
use crate::{ensure, err};

type DeviceRef = Weak<dyn DeviceImpl>;

/// The enabled `(command device, peer device)` pairs, by the adapters'
/// device objects (shared by a device's native and emulated views).
static ENABLED: Mutex<Vec<(DeviceRef, DeviceRef)>> = Mutex::new(Vec::new());

fn same_imp(a: &DeviceRef, b: &Arc<dyn DeviceImpl>) -> bool {
    std::ptr::addr_eq(a.as_ptr(), Arc::as_ptr(b))
}

fn is_enabled(command: &Device, peer: &Device) -> bool {
    ENABLED.lock().iter().any(|(c, p)| same_imp(c, command.imp()) && same_imp(p, peer.imp()))
}

/// Same physical device (either view).
fn same_physical(a: &Device, b: &Device) -> bool {
    Arc::ptr_eq(a.imp(), b.imp())
}

impl Device {
    /// Whether a queue on this device can copy to and from (and its kernels
    /// use) USM memory allocated in a context of `peer`, once
    /// [`enable_peer_access`](Device::enable_peer_access) was called
    /// (`urUsmP2PPeerAccessGetInfoExp`). Devices of different backends never
    /// are peers; the adapter answers for two devices of its own, the same
    /// device included. Where the adapter has no peer path, the answer is
    /// `supported: false` and the reason is logged at debug level.
    pub fn peer_access(&self, peer: &Device) -> Result<PeerAccess> {
        if self.backend() != peer.backend() {
            tracing::debug!(device = %self, peer = %peer, "different backends share no memory");
            return Ok(PeerAccess::NONE);
        }
        match self.imp().peer_access(&**peer.imp()) {
            Ok(access) => Ok(access),
            Err(UrError::UnsupportedFeature(detail)) => {
                tracing::debug!(device = %self, peer = %peer, reason = %detail, "no peer access");
                Ok(PeerAccess::NONE)
            }
            Err(e) => Err(e),
        }
    }

    /// Lets queues and kernels of this device use memory allocated on `peer`
    /// (`urUsmP2PEnablePeerAccessExp`); enabling an enabled pair again
    /// succeeds. `UnsupportedFeature` where [`peer_access`](Device::peer_access)
    /// says the pair is not supported.
    #[tracing::instrument(level = "debug", fields(device = %self, peer = %peer))]
    pub fn enable_peer_access(&self, peer: &Device) -> Result<()> {
        let access = self.peer_access(peer)?;
        ensure!(access.supported, UnsupportedFeature, "{self} cannot access memory of {peer}");
        if same_physical(self, peer) || is_enabled(self, peer) {
            return Ok(());
        }
        self.imp().enable_peer_access(&**peer.imp())?;
        let mut enabled = ENABLED.lock();
        enabled.retain(|(c, p)| c.strong_count() > 0 && p.strong_count() > 0);
        enabled.push((Arc::downgrade(self.imp()), Arc::downgrade(peer.imp())));
        Ok(())
    }

    /// Withdraws what [`enable_peer_access`](Device::enable_peer_access)
    /// granted (`urUsmP2PDisablePeerAccessExp`). `UnsupportedFeature` for an
    /// unsupported pair; `InvalidOperation` when access was not enabled.
    /// Peer copies already submitted are not waited for: the caller orders
    /// them before the call, as with the driver's own call.
    #[tracing::instrument(level = "debug", fields(device = %self, peer = %peer))]
    pub fn disable_peer_access(&self, peer: &Device) -> Result<()> {
        let access = self.peer_access(peer)?;
        ensure!(access.supported, UnsupportedFeature, "{self} cannot access memory of {peer}");
        if same_physical(self, peer) {
            return Ok(());
        }
        ensure!(is_enabled(self, peer), InvalidOperation, "peer access from {self} to {peer} is not enabled");
        self.imp().disable_peer_access(&**peer.imp())?;
        ENABLED.lock().retain(|(c, p)| !(same_imp(c, self.imp()) && same_imp(p, peer.imp())));
        Ok(())
    }

    /// Whether [`enable_peer_access`](Device::enable_peer_access) made `peer`'s
    /// memory usable here (always for the same physical device).
    pub fn peer_access_enabled(&self, peer: &Device) -> bool {
        same_physical(self, peer) || is_enabled(self, peer)
    }
}

/// The allocation holding `[ptr, ptr + size)` in a context other than
/// `own`, of `backend`: `InvalidValue` when none or several hold it.
///
/// A context joined with `own` ([`Context::share_usm_with`]) shares its
/// address space, so an allocation found there is the answer. Other
/// contexts may be of other devices, whose address spaces are their own:
/// the same address can lie in allocations of two GPUs, so a range that
/// overruns one context's allocation (`InvalidSize`) is the answer only
/// when no other context holds the whole range.
fn find_foreign(own: &Context, ptr: UsmPtr, size: usize) -> Result<(UsmRef, ContextId, Device)> {
    let joined = own.tracker().joined();
    let mut candidates: Vec<(ContextId, Device, Arc<AllocationTracker>, bool)> = crate::registry::CONTEXTS
        .lock()
        .iter()
        .filter(|c| c.id != own.id() && c.device.backend() == own.device().backend())
        .filter_map(|c| c.tracker.upgrade().map(|t| (c.id, c.device.clone(), t)))
        .map(|(id, device, tracker)| {
            let is_joined = joined.iter().any(|j| Arc::ptr_eq(j, &tracker));
            (id, device, tracker, is_joined)
        })
        .collect();
    candidates.sort_by_key(|c| !c.3);
    let mut found = None;
    let mut overrun = None;
    for (id, device, tracker, is_joined) in candidates {
        match tracker.find(ptr, size) {
            Ok(usm) if is_joined => return Ok((usm, id, device)),
            Ok(usm) => {
                ensure!(
                    found.is_none(),
                    InvalidValue,
                    "{ptr:?} lies in USM allocations of several contexts of {}",
                    own.device().backend()
                );
                found = Some((usm, id, device));
            }
            // A range that starts inside an allocation and leaves it: final
            // in a joined context, which shares this one's address space.
            Err(e @ UrError::InvalidSize(_)) if is_joined => return Err(e),
            Err(e @ UrError::InvalidSize(_)) => {
                overrun.get_or_insert(e);
            }
            Err(_) => {}
        }
    }
    if let Some(found) = found {
        return Ok(found);
    }
    Err(overrun.unwrap_or_else(|| {
        err!(InvalidValue, "{ptr:?} is neither in a USM allocation of this context nor of another {} context", {
            own.device().backend()
        })
    }))
}

/// The command of a peer copy of `size` bytes between `dst` and `src` run
/// by `device` of `own`, one side in `own`'s USM and the other in a context
/// on a peer device with access enabled; gives the command and the other
/// context. The checks of [`Queue::usm_copy_peer`], written once for it and
/// for the peer copies of a [`ComposedCommandBuffer`](crate::command_buffer::ComposedCommandBuffer).
pub(crate) fn peer_copy_command(
    own: &Context,
    device: &Device,
    dst: UsmPtr,
    src: UsmPtr,
    size: usize,
) -> Result<(Command, ContextId)> {
    ensure!(size != 0, InvalidSize, "a peer copy of 0 bytes");
    // This context's own allocations only: memory of a context joined
    // with it (`Context::share_usm_with`) is the peer side, found below.
    let dst_local = own.tracker().find(dst, size);
    let src_local = own.tracker().find(src, size);
    let (dst_ref, src_ref, peer_ctx, peer_dev) = match (dst_local, src_local) {
        (Ok(_), Ok(_)) => {
            return Err(err!(InvalidValue, "both sides of the peer copy are in this context: use usm_memcpy"));
        }
        (Err(e @ UrError::InvalidSize(_)), _) | (_, Err(e @ UrError::InvalidSize(_))) => return Err(e),
        (Ok(d), Err(_)) => {
            let (s, ctx, dev) = find_foreign(own, src, size)?;
            (d, s, ctx, dev)
        }
        (Err(_), Ok(s)) => {
            let (d, ctx, dev) = find_foreign(own, dst, size)?;
            (d, s, ctx, dev)
        }
        (Err(_), Err(_)) => {
            return Err(err!(InvalidValue, "neither side of the peer copy is in a USM allocation of this context"));
        }
    };
    let access = device.peer_access(&peer_dev)?;
    ensure!(access.supported, UnsupportedFeature, "{device} cannot access memory of {peer_dev}");
    ensure!(
        device.peer_access_enabled(&peer_dev),
        InvalidOperation,
        "peer access from {device} to {peer_dev} is not enabled"
    );
    let command = Command::UsmMemcpy { dst: MemLoc::Usm(dst_ref), src: MemLoc::Usm(src_ref), size };
    Ok((command, peer_ctx))
}
