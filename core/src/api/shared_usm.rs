//! Contexts of one device joined into one USM address space
//! ([`Context::share_usm_with`]), an explicit opt-in beyond UR.
//!
//! UR, and cmdbuf-core by default, accept a USM pointer only in commands of the
//! context that allocated it (`InvalidValue` elsewhere). Where two contexts
//! hold the same device and the adapter says that device's memory is one
//! address space for all its contexts (the device is its own peer,
//! [`Device::peer_access`](crate::Device::peer_access): the CPU's host memory, CUDA's primary context,
//! Vulkan's one `VkDevice` per device), the contexts can be joined: from then
//! on either context's USM commands, command buffers and kernels accept the
//! other's pointers, still checked against the allocation that holds them.
//! OpenCL cannot join: USM of one `cl_context` is unusable in another.
//!
//! Joining is transitive (a group of contexts) and lasts for the contexts'
//! lives. Events stay per context: wait lists still take only their own
//! context's events.

use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::context::Context;
use crate::error::Result;
use crate::memory::AllocationTracker;
use crate::{ensure, err};

/// Serializes joins, so that two concurrent joins of overlapping groups
/// agree on the members.
static JOINS: Mutex<()> = Mutex::new(());

impl Context {
    /// Joins the USM of this context and `other` (and of every context
    /// either was joined with before): afterwards USM pointers of any of them
    /// are accepted in commands of the others. Joining a context with
    /// itself, or contexts already joined, succeeds and changes nothing.
    ///
    /// Errors: `InvalidDevice` when the contexts hold different devices (a
    /// device and its emulated view are the same device);
    /// `UnsupportedFeature` when the device's adapter does not make its
    /// memory one address space for all its contexts (the device is not its
    /// own peer: OpenCL).
    #[tracing::instrument(level = "debug", skip_all, fields(device = %self.device(), other = ?other.id()))]
    pub fn share_usm_with(&self, other: &Context) -> Result<()> {
        self.check_can_share_usm_with(other)?;
        if self.shares_usm_with(other) {
            return Ok(());
        }
        let _serial = JOINS.lock();
        let mut group: Vec<Arc<AllocationTracker>> = Vec::new();
        for context in [self, other] {
            let tracker = context.tracker();
            for member in std::iter::once(tracker.clone()).chain(tracker.joined()) {
                if !group.iter().any(|m| Arc::ptr_eq(m, &member)) {
                    group.push(member);
                }
            }
        }
        for member in &group {
            let others: Vec<Weak<AllocationTracker>> =
                group.iter().filter(|m| !Arc::ptr_eq(m, member)).map(Arc::downgrade).collect();
            member.set_joined(others);
        }
        tracing::debug!(members = group.len(), "contexts joined into one USM address space");
        Ok(())
    }

    /// Whether [`share_usm_with`](Self::share_usm_with) would succeed, as
    /// its error: `Ok(())` where the contexts can be joined.
    pub fn check_can_share_usm_with(&self, other: &Context) -> Result<()> {
        let (a, b) = (self.device(), other.device());
        ensure!(
            Arc::ptr_eq(a.imp(), b.imp()),
            InvalidDevice,
            "contexts of different devices ({a} and {b}) cannot share USM"
        );
        if !a.peer_access(a)?.supported {
            return Err(err!(UnsupportedFeature, "{a}: USM of one context is not usable in another of this device"));
        }
        Ok(())
    }

    /// Whether this context accepts `other`'s USM pointers: the same
    /// context, or joined with it ([`share_usm_with`](Self::share_usm_with)).
    pub fn shares_usm_with(&self, other: &Context) -> bool {
        self == other || self.tracker().joined().iter().any(|t| Arc::ptr_eq(t, other.tracker()))
    }
}
