//! The allocations of a buffer: one host allocation and one USM allocation
//! per device the buffer is used on, each of the buffer's full size, made
//! lazily and kept until the buffer is dropped.
//!
//! cmdbuf-core contexts hold one device, and a USM pointer belongs to one
//! context, so an allocation serves the context that made it (every queue of
//! it) and the contexts of the same device joined with it
//! ([`Context::share_usm_with`]): where the device's adapter makes the
//! device's memory one address space (CPU, CUDA, Vulkan), a second context of
//! the device (a device and its emulated view, two contexts a user made) is
//! joined at its first use and shares the allocation. Elsewhere (OpenCL, or
//! a buffer whose sharing was turned off) each context gets its own.

use std::sync::Arc;

use cmdbuf_core::{
    Context, ContextId, DeviceType, Event, Queue, QueueProperties, Result, UserEvent, UsmAllocation, UsmKind, UsmKinds,
    UsmPtr, UsmRef, err,
};
use parking_lot::Mutex;

/// The host allocation: heap memory of the buffer's size, 16-byte aligned
/// (enough for any element type a kernel argument uses), never moved.
pub(crate) struct HostMem {
    words: Box<[u128]>,
    len: usize,
}

impl HostMem {
    pub(crate) fn new(len: usize) -> Result<HostMem> {
        let mut words = Vec::new();
        words
            .try_reserve_exact(len.div_ceil(16))
            .map_err(|_| err!(OutOfHostMemory, "cannot allocate {len} bytes of host memory for a buffer"))?;
        words.resize(len.div_ceil(16), 0);
        Ok(HostMem { words: words.into_boxed_slice(), len })
    }

    /// The first byte. Device copies write through this pointer while the
    /// buffer holds the memory; nothing hands out references to bytes a
    /// copy in flight may touch (see the host accessor).
    pub(crate) fn ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// Memory of a device allocation.
pub(crate) enum DeviceMem {
    /// Allocated by the buffer.
    Owned(UsmAllocation),
    /// The user's allocation the buffer was constructed over.
    User(UsmRef),
}

/// One device allocation and a queue of its context for transfers out of it.
pub(crate) struct DeviceAlloc {
    pub(crate) context: Context,
    pub(crate) mem: DeviceMem,
    pub(crate) queue: Option<Queue>,
    /// Other contexts of the device, joined with `context`, that use this
    /// allocation as theirs.
    pub(crate) sharers: Vec<Context>,
}

impl DeviceAlloc {
    /// Whether `context` uses this allocation.
    pub(crate) fn serves(&self, context: &Context) -> bool {
        self.context == *context || self.sharers.contains(context)
    }

    /// Joins `context` to the allocation where its USM can be one address
    /// space with the allocation's context ([`Context::share_usm_with`]);
    /// whether it was.
    pub(crate) fn try_share(&mut self, context: &Context) -> bool {
        match self.context.share_usm_with(context) {
            Ok(()) => {
                tracing::debug!(device = %context.device(), "buffer allocation shared by a second context of its device");
                self.sharers.push(context.clone());
                true
            }
            Err(e) => {
                tracing::debug!(device = %context.device(), reason = %e, "buffer allocation not shared");
                false
            }
        }
    }

    pub(crate) fn ptr(&self) -> UsmPtr {
        match &self.mem {
            DeviceMem::Owned(a) => a.ptr(),
            DeviceMem::User(r) => UsmPtr::from_addr(r.address()),
        }
    }

    /// A queue of the allocation's context, made the first time one is needed.
    pub(crate) fn queue(&mut self) -> Result<Queue> {
        if let Some(q) = &self.queue {
            return Ok(q.clone());
        }
        let q = Queue::new(&self.context, QueueProperties::default())?;
        self.queue = Some(q.clone());
        Ok(q)
    }

    /// A new allocation of `bytes` on `queue`'s device: host USM on CPU
    /// devices that offer it (the host's memory is the device's), device USM
    /// elsewhere, shared USM where the device has only that.
    pub(crate) fn allocate(queue: &Queue, bytes: usize) -> Result<DeviceAlloc> {
        let context = queue.context().clone();
        let info = context.device().info();
        let kind = if info.device_type == DeviceType::Cpu && info.usm.contains(UsmKinds::HOST) {
            UsmKind::Host
        } else if info.usm.contains(UsmKinds::DEVICE) {
            UsmKind::Device
        } else if info.usm.contains(UsmKinds::SHARED) {
            UsmKind::Shared
        } else {
            return Err(err!(UnsupportedFeature, "device {} offers no USM kind a buffer can use", context.device()));
        };
        tracing::debug!(device = %context.device(), ?kind, bytes, "buffer allocation");
        let mem = DeviceMem::Owned(UsmAllocation::new(&context, kind, bytes)?);
        Ok(DeviceAlloc { context, mem, queue: Some(queue.clone()), sharers: Vec::new() })
    }
}

/// Marks the end of a host accessor's use: work that conflicts with it waits
/// for user events completed when the accessor is dropped.
#[derive(Default)]
pub(crate) struct HostRelease {
    state: Mutex<(bool, Vec<UserEvent>)>,
}

impl HostRelease {
    /// An event of `context` completing at the release; `None` once released.
    fn gate(&self, context: &Context) -> Result<Option<Event>> {
        let mut state = self.state.lock();
        if state.0 {
            return Ok(None);
        }
        let user = UserEvent::new(context)?;
        let event = user.event().clone();
        state.1.push(user);
        Ok(Some(event))
    }

    pub(crate) fn release(&self) {
        let mut state = self.state.lock();
        state.0 = true;
        for user in state.1.drain(..) {
            // Each gate is completed once, here.
            let _ = user.complete();
        }
    }

    pub(crate) fn released(&self) -> bool {
        self.state.lock().0
    }
}

/// What a later use of a buffer waits for.
#[derive(Clone)]
pub(crate) enum Dep {
    /// Work submitted to a queue of `context`.
    Event {
        /// The context of the queue that made the event.
        context: ContextId,
        /// The event.
        event: Event,
    },
    /// A live host accessor.
    Host(Arc<HostRelease>),
}

impl Dep {
    pub(crate) fn of(queue: &Queue, event: Event) -> Dep {
        Dep::Event { context: queue.context().id(), event }
    }

    pub(crate) fn is_done(&self) -> bool {
        match self {
            Dep::Event { event, .. } => event.status().is_terminal(),
            Dep::Host(release) => release.released(),
        }
    }

    /// An event of `queue`'s context to wait for, if any is still needed.
    /// An event of another context is bridged: a user event of this context
    /// completes when it does (cmdbuf-core's wait lists take events of their own
    /// context only).
    pub(crate) fn event_for(&self, queue: &Queue) -> Result<Option<Event>> {
        let context = queue.context();
        match self {
            Dep::Event { context: c, event } if *c == context.id() => Ok(Some(event.clone())),
            Dep::Event { event, .. } => {
                // Wait lists order and do not propagate failures (as cmdbuf-core's
                // eager wait lists): a failed dependency releases its dependents.
                if event.status().is_terminal() {
                    return Ok(None);
                }
                let user = UserEvent::new(context)?;
                let bridged = user.event().clone();
                event.on_complete(move |_| {
                    let _ = user.complete();
                })?;
                Ok(Some(bridged))
            }
            Dep::Host(release) => release.gate(context),
        }
    }

    /// [`wait_host`](Self::wait_host), but an event's wait that fails
    /// returns only once the event has ended ([`Event::wait_ended`]).
    pub(crate) fn wait_ended(&self) -> Result<()> {
        match self {
            Dep::Event { event, .. } => event.wait_ended(),
            Dep::Host(_) => self.wait_host(),
        }
    }

    /// Blocks the host until the dependency is done. A live host accessor
    /// would never be released while the caller waits (it is the thread that
    /// holds it), so it is `InvalidOperation`.
    pub(crate) fn wait_host(&self) -> Result<()> {
        match self {
            Dep::Event { event, .. } => event.wait(),
            Dep::Host(release) if release.released() => Ok(()),
            Dep::Host(_) => Err(err!(
                InvalidOperation,
                "a conflicting host accessor of this buffer is alive; drop it before this host access"
            )),
        }
    }
}

/// The events of `deps` for a wait list on `queue`.
pub(crate) fn wait_list<'a>(queue: &Queue, deps: impl IntoIterator<Item = &'a Dep>) -> Result<Vec<Event>> {
    let mut out = Vec::new();
    for dep in deps {
        if let Some(e) = dep.event_for(queue)? {
            out.push(e);
        }
    }
    Ok(out)
}
