//! Contexts: the scope of memory, programs, queues, events and command buffers.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::adapter::ContextImpl;
use crate::device::Device;
use crate::error::Result;
use crate::memory::{AllocationTracker, UsmPtr, UsmRef};
pub use crate::objects::Context;
use crate::objects::ContextInner;
pub use crate::types::desc::ContextId;

static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Context {
    /// Creates a context on `device`. A context made from an
    /// [`emulated`](Device::emulated) view builds software command buffers.
    #[tracing::instrument(level = "debug", fields(device = %device))]
    pub fn new(device: &Device) -> Result<Context> {
        let imp = device.inner.imp.clone().create_context()?;
        Ok(Context::from_imp(device, imp))
    }

    /// Wraps an adapter context of `device` (a new identity).
    pub(crate) fn from_imp(device: &Device, imp: Arc<dyn ContextImpl>) -> Context {
        let context = Context {
            inner: Arc::new(ContextInner {
                id: ContextId(NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed)),
                device: device.clone(),
                imp,
                tracker: Arc::default(),
                _live: crate::live::Live::new(),
            }),
        };
        crate::peer::register(&context);
        context
    }

    /// The context's device (the view it was created from).
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// Whether work for `device` may use this context: it is the context's
    /// device or a sub-device of it at any depth (the same device's memory and
    /// programs; queues and command buffers on it run on its share).
    pub fn holds_device(&self, device: &Device) -> bool {
        // The context's own device is the common case: one pointer compare.
        if device == self.device() {
            return true;
        }
        // A sub-device's parent is a native device also when the sub-device
        // was made from an emulated view (and is itself emulated): the view
        // must match the context's, the ancestry is compared natively.
        let ours = self.device().native();
        let mut ancestor = device.parent();
        while let Some(parent) = ancestor {
            if parent.native() == ours {
                return device.is_emulated() == self.device().is_emulated();
            }
            ancestor = parent.parent();
        }
        false
    }

    /// The context's identity.
    pub fn id(&self) -> ContextId {
        self.inner.id
    }

    /// The adapter's context.
    pub(crate) fn imp(&self) -> &Arc<dyn ContextImpl> {
        &self.inner.imp
    }

    /// The native object behind the context (see [`crate::interop`] for each
    /// backend's); `UnsupportedFeature` where the backend has none.
    pub fn native_handle(&self) -> crate::Result<crate::NativeHandle> {
        self.inner.imp.native_handle()
    }

    /// Resolves `[ptr, ptr + size)` to the USM allocation of this context, or
    /// of a context joined with it ([`share_usm_with`](Context::share_usm_with)),
    /// that holds it: `InvalidValue` when no allocation holds `ptr`,
    /// `InvalidSize` when the range leaves it.
    pub fn find_usm(&self, ptr: UsmPtr, size: usize) -> Result<UsmRef> {
        self.inner.tracker.find_joined(ptr, size)
    }

    /// Number of USM allocations of this context still alive.
    pub fn live_usm_allocations(&self) -> usize {
        self.inner.tracker.live_allocations()
    }

    /// The adapter objects of this context still alive, by kind, when its
    /// device was wrapped for fault injection
    /// ([`FaultInjector::wrap_device`](crate::faults::FaultInjector::wrap_device));
    /// `None` otherwise.
    #[cfg(feature = "fault-injection")]
    pub fn live_objects(&self) -> Option<crate::faults::LiveObjects> {
        crate::faults::live_objects(&*self.inner.imp)
    }

    /// Number of handles to this context (objects that hold it included).
    pub fn reference_count(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    pub(crate) fn tracker(&self) -> &Arc<AllocationTracker> {
        &self.inner.tracker
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Context) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for Context {}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").field("id", &self.inner.id.0).field("device", &self.inner.device).finish()
    }
}
