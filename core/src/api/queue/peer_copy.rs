//! Copies between USM allocations of contexts on two devices on a queue
//! (`urEnqueueUSMMemcpy` across peers), checked as the peer copies of
//! composed command buffers are ([`peer_copy_command`], in `peer.rs` below
//! the queues and command buffers).

use std::sync::Arc;

use smallvec::SmallVec;

use super::Queue;
use crate::adapter::EventImpl;
use crate::err;
use crate::error::Result;
use crate::event::{Event, resolve_wait_list};
use crate::memory::UsmPtr;
use crate::peer::peer_copy_command;

impl Queue {
    /// Copies `size` bytes between a USM allocation of this queue's context
    /// and one of a context on a peer device, for which peer access from this
    /// queue's device was enabled
    /// ([`Device::enable_peer_access`](crate::device::Device::enable_peer_access)).
    /// Either side may be the local one; the copy runs on this queue. A
    /// context joined with this one
    /// ([`Context::share_usm_with`](crate::context::Context::share_usm_with))
    /// is another context here, of the same device (its own peer).
    ///
    /// Errors: `InvalidSize` for 0 bytes or a range leaving its allocation;
    /// `InvalidValue` when neither or both sides are in this context, or the
    /// other side is in no context of this backend; `UnsupportedFeature` when
    /// the devices are not peers; `InvalidOperation` when peer access is not
    /// enabled; `InvalidEventWaitList` for an event of neither context. Events
    /// of both contexts may be waited for: the adapters with peer copies
    /// (CUDA, the CPU) wait for events of any of their contexts.
    #[tracing::instrument(level = "trace", skip(self, wait))]
    pub fn usm_copy_peer(&self, dst: UsmPtr, src: UsmPtr, size: usize, wait: &[&Event]) -> Result<Event> {
        self.check_not_capturing("a peer copy")?;
        let own = self.context();
        let (command, peer_ctx) = peer_copy_command(own, self.device(), dst, src, size)?;
        let mut resolved: SmallVec<[Arc<dyn EventImpl>; 4]> = SmallVec::new();
        for (i, event) in wait.iter().enumerate() {
            let one = [*event];
            let events = resolve_wait_list(own.id(), &one)
                .or_else(|_| resolve_wait_list(peer_ctx, &one))
                .map_err(|_| err!(InvalidEventWaitList, "event {i} belongs to neither context of the peer copy"))?;
            resolved.extend(events);
        }
        self.execute_peer_copy(command, &resolved)
    }
}
