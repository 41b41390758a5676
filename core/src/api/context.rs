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
use crate::{ensure, err};

static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Context {
    /// Creates a context on `device`. A context made from an
    /// [`emulated`](Device::emulated) view builds software command buffers.
    #[tracing::instrument(level = "debug", fields(device = %device))]
    pub fn new(device: &Device) -> Result<Context> {
        let imp = device.inner.imp.clone().create_context()?;
        Ok(Context::from_imp(device, imp))
    }

    /// Creates a context over `devices` (`urContextCreate` with a list): one
    /// device is [`Context::new`]; several must be of one view (emulated or
    /// not) and one backend, and are either one family, a root device and/or
    /// sub-devices of it at any depth, or unrelated devices, which the
    /// adapter may span ([`DeviceImpl::create_context_across`](crate::adapter::DeviceImpl::create_context_across):
    /// OpenCL devices of one platform) with the first listed as the
    /// context's [`device`](Context::device). A family's adapter context is
    /// made for it on its root device (which [`device`](Context::device)
    /// answers), so memory and programs are shared by all of them (OpenCL:
    /// one `cl_context` of the listed devices; elsewhere the root's context,
    /// used as a sub-device uses its parent's). Either way queues and
    /// command buffers go to any listed device or a sub-device of
    /// one ([`holds_device`](Context::holds_device)). A device listed twice
    /// counts once, as `clCreateContext` ignores duplicates.
    ///
    /// `InvalidSize` for an empty list; `UnsupportedFeature` for devices of
    /// different views or backends, and for unrelated devices where the
    /// adapter has no context spanning them
    /// ([api.md](../docs/api.md#sub-devices)).
    #[tracing::instrument(level = "debug", skip(devices), fields(devices = devices.len()))]
    pub fn with_devices(devices: &[Device]) -> Result<Context> {
        let mut list: Vec<Device> = Vec::with_capacity(devices.len());
        for device in devices {
            if !list.contains(device) {
                list.push(device.clone());
            }
        }
        let [first, rest @ ..] = list.as_slice() else {
            return Err(err!(InvalidSize, "a context of no device"));
        };
        if rest.is_empty() {
            return Context::new(first);
        }
        for device in rest {
            ensure!(
                device.is_emulated() == first.is_emulated(),
                UnsupportedFeature,
                "a context over {first} and {device}: one context's devices are of one view"
            );
            ensure!(
                device.backend() == first.backend(),
                UnsupportedFeature,
                "a context over {first} and {device}: one context's devices are of one backend"
            );
        }
        let members: Vec<Arc<dyn crate::adapter::DeviceImpl>> = list.iter().map(|d| d.inner.imp.clone()).collect();
        let root = first.root().native();
        if rest.iter().any(|device| device.root().native() != root) {
            // SAFETY: at least two distinct devices of one backend (so of
            // one adapter), `first` first, not all of one root device.
            let imp = unsafe { first.inner.imp.clone().create_context_across(&members)? };
            let first = first.clone();
            return Ok(Context::wrap(&first, Some(list.into_boxed_slice()), imp));
        }
        let root = if first.is_emulated() { root.emulated() } else { root };
        // SAFETY: `root` is a root device; the list holds at least two
        // distinct devices (duplicates were dropped), each `root` or a
        // sub-device of it (checked above), and sub-devices are made by their
        // parent's adapter.
        let imp = unsafe { root.inner.imp.clone().create_context_over(&members)? };
        Ok(Context::wrap(&root, Some(list.into_boxed_slice()), imp))
    }

    /// Wraps an adapter context of `device` (a new identity).
    pub(crate) fn from_imp(device: &Device, imp: Arc<dyn ContextImpl>) -> Context {
        Context::wrap(device, None, imp)
    }

    fn wrap(device: &Device, devices: Option<Box<[Device]>>, imp: Arc<dyn ContextImpl>) -> Context {
        let context = Context {
            inner: Arc::new(ContextInner {
                id: ContextId(NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed)),
                device: device.clone(),
                devices,
                imp,
                tracker: Arc::default(),
                _live: crate::live::Live::new(),
            }),
        };
        crate::registry::register(context.id(), context.device(), context.tracker(), context.imp());
        context
    }

    /// The device the adapter context was made on (the view it was created
    /// from): for a context over several devices of one family
    /// ([`Context::with_devices`]), their root device; over unrelated
    /// devices, the first listed.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// The devices the context was made over, without duplicates, in the
    /// order given: `[device()]` for a context of one device.
    pub fn devices(&self) -> &[Device] {
        self.inner.devices.as_deref().unwrap_or(std::slice::from_ref(&self.inner.device))
    }

    /// Whether work for `device` may use this context: it is one of the
    /// context's [`devices`](Context::devices) or a sub-device of one at any
    /// depth (the same device's memory and programs; queues and command
    /// buffers on it run on its share).
    pub fn holds_device(&self, device: &Device) -> bool {
        self.devices().iter().any(|listed| within(device, listed))
    }

    /// The context's identity.
    pub fn id(&self) -> ContextId {
        self.inner.id
    }

    /// Whether this context's queues accept events of `other` in their wait
    /// lists and command-buffer enqueues, waiting for them device-side with no
    /// host thread involved: always for the context itself; for another
    /// context, where its adapter says so ([`ContextImpl::waits_on_events_of`],
    /// asked once per pair): the CPU adapter for any two of its contexts, CUDA
    /// for any two of its contexts (a stream waits on another device's
    /// `CUevent`), Vulkan for two contexts of one device (their events are
    /// points on the same timelines); never across backends, nor on OpenCL
    /// (a `cl_event` belongs to its `cl_context`) or between two Vulkan
    /// devices. Elsewhere such an event is `InvalidEventWaitList`; wait
    /// lists of command-buffer appends take only the context's own events.
    pub fn waits_on_events_of(&self, other: &Context) -> bool {
        self.waits_on_events_of_id(other.inner.id)
    }

    /// Whether this context's commands use memory buffers of `other` as
    /// their own: always for the context itself; for another context, where
    /// its adapter says so ([`ContextImpl::uses_buffers_of`], asked once per
    /// pair): the CPU adapter for any two of its contexts, Vulkan and CUDA
    /// for two contexts of one device; never on OpenCL (a `cl_mem` belongs
    /// to its `cl_context`). Elsewhere such a buffer is `InvalidMemObject`.
    ///
    /// ```
    /// use cmdbuf::Context;
    /// let device = cmdbuf_cpu::default_device();
    /// let (a, b) = (Context::new(&device).unwrap(), Context::new(&device).unwrap());
    /// assert!(a.uses_buffers_of(&b)); // the CPU adapter's buffers are the process's memory
    /// ```
    pub fn uses_buffers_of(&self, other: &Context) -> bool {
        self.uses_buffers_of_id(other.inner.id)
    }

    /// [`uses_buffers_of`](Self::uses_buffers_of) for the context whose
    /// identity is `other` (false for one no longer alive).
    pub fn uses_buffers_of_id(&self, other: ContextId) -> bool {
        self.inner.id == other || crate::registry::buffers_across(self.inner.id, other)
    }

    /// [`waits_on_events_of`](Self::waits_on_events_of) for the context
    /// whose identity is `other` (false for one no longer alive).
    pub fn waits_on_events_of_id(&self, other: ContextId) -> bool {
        self.inner.id == other || crate::registry::waits_across(self.inner.id, other)
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

    /// Number of handles to this context (objects that hold it included).
    pub fn reference_count(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    pub(crate) fn tracker(&self) -> &Arc<AllocationTracker> {
        &self.inner.tracker
    }
}

/// Whether `device` is `ancestor` or a sub-device of it at any depth.
fn within(device: &Device, ancestor: &Device) -> bool {
    // The device itself is the common case: one pointer compare.
    if device == ancestor {
        return true;
    }
    // A sub-device's parent is a native device also when the sub-device was
    // made from an emulated view (and is itself emulated): the views must
    // match, the ancestry is compared natively.
    let ours = ancestor.native();
    let mut parent = device.parent();
    while let Some(up) = parent {
        if up.native() == ours {
            return device.is_emulated() == ancestor.is_emulated();
        }
        parent = up.parent();
    }
    false
}

impl PartialEq for Context {
    fn eq(&self, other: &Context) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for Context {}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").field("id", &self.inner.id.0).field("devices", &self.devices()).finish()
    }
}
