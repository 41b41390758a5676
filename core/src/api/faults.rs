//! Fault injection, for tests (cargo feature `fault-injection`): a wrapper
//! around any adapter's objects that makes the Nth adapter call of a chosen
//! kind fail with the error a driver would give, and that counts the adapter
//! objects each context holds alive.
//!
//! [`FaultInjector::wrap_device`] gives a view of a device whose contexts,
//! and everything made from them (allocations, programs, kernels, queues,
//! events, command buffers), are wrapped. Every fallible adapter call
//! ([`CallKind`]) goes through [`FaultInjector`] first: it is counted per
//! kind, and when it is the call a [`Fault`] names, it fails without
//! reaching the driver, with an error whose message names the call
//! (`injected fault in ContextImpl::usm_alloc (call 3 of its kind)`).
//! [`live_objects`] counts the wrapped objects of a context still alive, so
//! a test can check that a scenario that failed halfway released everything
//! it made. These are adapter objects of one context, which may outlive
//! their front-end handles (a command buffer kept by a submission in
//! flight); [`crate::live`] counts front-end handles process-wide in every
//! build, for long runs. `docs/reliability.md` ("Two counters, and why
//! both") compares them.
//!
//! The wrapper sits entirely above the adapter interface: the adapter it
//! wraps never sees a wrapped object. Before a wrapped call is forwarded,
//! every wrapped object among its arguments (the buffers, allocations and
//! kernels of a command, wait lists, the queue of a command-buffer enqueue,
//! a peer device) is replaced by the adapter's own object behind it (module
//! `peel`), so adapters downcast with plain
//! [`downcast`](crate::adapter::downcast) and need nothing to run wrapped,
//! and nothing of this module is on the path of a build without it. The
//! adapter's own calls on the objects it is handed are neither counted nor
//! injected.

mod peel;

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

use crate::adapter::{
    Backing, BufferImpl, ContextImpl, DeviceImpl, EventImpl, ExecutableCommandBufferImpl, FinalizeFailed, KernelImpl,
    KernelUpdate, ProgramImpl, QueueImpl, RecordingCommandBufferImpl, UserEventImpl, UsmImpl,
};
use crate::clock::Timestamps;
use crate::command::Command;
use crate::command_buffer::CommandBufferDesc;
use crate::context::Context;
use crate::device::{Device, DeviceInfo};
use crate::error::{Detail, Result, UrError};
use crate::event::{Event, EventStatus, ProfilingInfo};
use crate::interop::NativeHandle;
use crate::memory::{MemBuffer, MemFlags, UsmKind};
use crate::objects::UsmInner;
use crate::program::{Kernel, KernelSignature, ProgramBundle, SourceForm};
use crate::queue::QueueProperties;

macro_rules! call_kinds {
    ($( $(#[$doc:meta])* $kind:ident => $name:literal, $error:ident; )*) => {
        /// A fallible adapter call that faults can be injected into.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum CallKind {
            $( $(#[$doc])* $kind, )*
        }

        impl CallKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [CallKind] = &[$(CallKind::$kind,)*];

            /// The adapter trait method, such as `QueueImpl::enqueue`.
            pub fn name(self) -> &'static str {
                match self { $(CallKind::$kind => $name,)* }
            }

            /// The error a driver gives most often for this call: out of
            /// device memory for allocations, out of host memory for objects
            /// the driver builds on the host, out of resources for
            /// submissions, device lost for waits.
            pub fn driver_error(self) -> fn(Detail) -> UrError {
                match self { $(CallKind::$kind => UrError::$error,)* }
            }
        }
    };
}

call_kinds! {
    /// `DeviceImpl::create_context`.
    ContextCreate => "DeviceImpl::create_context", OutOfHostMemory;
    /// `ContextImpl::usm_alloc`.
    UsmAlloc => "ContextImpl::usm_alloc", OutOfDeviceMemory;
    /// `ContextImpl::buffer_create`.
    BufferCreate => "ContextImpl::buffer_create", OutOfDeviceMemory;
    /// `BufferImpl::sub_buffer`.
    SubBuffer => "BufferImpl::sub_buffer", OutOfResources;
    /// `ContextImpl::program_create`.
    ProgramCreate => "ContextImpl::program_create", OutOfHostMemory;
    /// `ProgramImpl::create_kernel`.
    KernelCreate => "ProgramImpl::create_kernel", OutOfHostMemory;
    /// `ContextImpl::queue_create`.
    QueueCreate => "ContextImpl::queue_create", OutOfResources;
    /// `ContextImpl::command_buffer_create`.
    CommandBufferCreate => "ContextImpl::command_buffer_create", OutOfHostMemory;
    /// `ContextImpl::user_event_create`.
    UserEventCreate => "ContextImpl::user_event_create", OutOfHostMemory;
    /// `QueueImpl::enqueue`.
    Enqueue => "QueueImpl::enqueue", OutOfResources;
    /// `QueueImpl::enqueue_wait`.
    EnqueueWait => "QueueImpl::enqueue_wait", OutOfResources;
    /// `QueueImpl::enqueue_timestamp`.
    EnqueueTimestamp => "QueueImpl::enqueue_timestamp", OutOfResources;
    /// `QueueImpl::finish`.
    Finish => "QueueImpl::finish", DeviceLost;
    /// `QueueImpl::flush`.
    Flush => "QueueImpl::flush", DeviceLost;
    /// `EventImpl::wait`.
    EventWait => "EventImpl::wait", DeviceLost;
    /// `RecordingCommandBufferImpl::append`.
    Append => "RecordingCommandBufferImpl::append", OutOfResources;
    /// `RecordingCommandBufferImpl::finalize`.
    Finalize => "RecordingCommandBufferImpl::finalize", OutOfResources;
    /// `ExecutableCommandBufferImpl::enqueue`.
    CommandBufferEnqueue => "ExecutableCommandBufferImpl::enqueue", OutOfResources;
    /// `ExecutableCommandBufferImpl::update_kernel_launches`.
    UpdateKernelLaunches => "ExecutableCommandBufferImpl::update_kernel_launches", OutOfResources;
    /// `ExecutableCommandBufferImpl::update_signal_event`.
    UpdateSignalEvent => "ExecutableCommandBufferImpl::update_signal_event", OutOfResources;
    /// `ExecutableCommandBufferImpl::update_wait_events`.
    UpdateWaitEvents => "ExecutableCommandBufferImpl::update_wait_events", OutOfResources;
}

impl fmt::Display for CallKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One injected failure: call number `nth` (from 1, counted from when the
/// fault is armed) of `kind` fails with `error`.
#[derive(Copy, Clone, Debug)]
pub struct Fault {
    /// The kind of call that fails.
    pub kind: CallKind,
    /// Which call of that kind fails, from 1.
    pub nth: u64,
    /// The error it fails with (a variant constructor, such as `UrError::DeviceLost`).
    pub error: fn(Detail) -> UrError,
}

impl Fault {
    /// Call `nth` of `kind` fails with the kind's [`driver_error`](CallKind::driver_error).
    pub fn new(kind: CallKind, nth: u64) -> Fault {
        Fault { kind, nth, error: kind.driver_error() }
    }
}

/// The text every injected error's message starts with.
pub const INJECTED: &str = "injected fault in";

/// Counts adapter calls per kind and fails the one an armed [`Fault`] names.
/// Cheap to clone; clones share their counts.
#[derive(Clone, Default)]
pub struct FaultInjector {
    inner: Arc<InjectorInner>,
}

#[derive(Default)]
struct InjectorInner {
    calls: [AtomicU64; CALL_KINDS],
    state: Mutex<Armed>,
}

#[derive(Default)]
struct Armed {
    fault: Option<Fault>,
    /// Calls of the fault's kind since it was armed.
    seen: u64,
    fired: Option<UrError>,
    /// The name of the thread the fault fired on.
    fired_on: Option<String>,
}

const CALL_KINDS: usize = 21;
const _: () = assert!(CallKind::ALL.len() == CALL_KINDS);

impl FaultInjector {
    /// An injector with no fault armed.
    pub fn new() -> FaultInjector {
        FaultInjector::default()
    }

    /// A view of `device` whose contexts and their objects go through this
    /// injector. An emulated view stays emulated.
    pub fn wrap_device(&self, device: &Device) -> Device {
        let imp: Arc<dyn DeviceImpl> = Arc::new(FaultyDevice { inner: device.imp().clone(), injector: self.clone() });
        let wrapped = Device::new(imp, device.id());
        if device.is_emulated() { wrapped.emulated() } else { wrapped }
    }

    /// Arms `fault`, replacing any armed one; its count starts now.
    pub fn arm(&self, fault: Fault) {
        *self.inner.state.lock() = Armed { fault: Some(fault), seen: 0, fired: None, fired_on: None };
    }

    /// Disarms and returns the error injected since [`arm`](Self::arm), if one was.
    pub fn disarm(&self) -> Option<UrError> {
        let mut state = self.inner.state.lock();
        state.fault = None;
        state.fired.take()
    }

    /// The name of the thread the last injected fault fired on (`None` for
    /// an unnamed thread, or before any fired): tells a failure in a worker
    /// thread of the runtime (a host task's `ur-host-task`) from one in the
    /// caller's.
    pub fn fired_on(&self) -> Option<String> {
        self.inner.state.lock().fired_on.clone()
    }

    /// Calls of `kind` made so far through this injector (injected ones included).
    pub fn calls(&self, kind: CallKind) -> u64 {
        self.inner.calls[kind as usize].load(Ordering::Relaxed)
    }

    /// Calls of every kind made so far, indexed like [`CallKind::ALL`].
    pub fn all_calls(&self) -> Vec<(CallKind, u64)> {
        CallKind::ALL.iter().map(|&k| (k, self.calls(k))).collect()
    }

    /// Counts a call of `kind`; fails it when it is the armed fault's.
    fn enter(&self, kind: CallKind) -> Result<()> {
        self.inner.calls[kind as usize].fetch_add(1, Ordering::Relaxed);
        let mut state = self.inner.state.lock();
        let Some(fault) = state.fault.filter(|f| f.kind == kind) else {
            return Ok(());
        };
        state.seen += 1;
        if state.seen != fault.nth {
            return Ok(());
        }
        // One failure per arming: the calls after it run, as after a
        // transient driver failure.
        state.fault = None;
        let error = (fault.error)(Detail::msg(format!("{INJECTED} {kind} (call {} of its kind)", fault.nth)));
        state.fired = Some(error.clone());
        state.fired_on = std::thread::current().name().map(str::to_owned);
        // Where the call came from, with RUST_BACKTRACE=1: what to look at
        // when an injected failure does not reach the caller.
        tracing::debug!(%kind, nth = fault.nth, backtrace = %std::backtrace::Backtrace::capture(), "fault injected");
        Err(error)
    }
}

impl fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultInjector").field("fault", &self.inner.state.lock().fault).finish()
    }
}

/// Adapter objects of one context that are still alive, by kind: the
/// objects the front end holds (or dropped but the adapter has not yet
/// released, which never happens: the wrapper is released with the handle).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveObjects {
    /// USM allocations.
    pub usm: isize,
    /// Memory buffers and sub-buffers.
    pub buffers: isize,
    /// Bytes of USM allocations and (root) buffers.
    pub bytes: isize,
    /// Programs.
    pub programs: isize,
    /// Kernels.
    pub kernels: isize,
    /// Queues.
    pub queues: isize,
    /// Events, user events included.
    pub events: isize,
    /// Native command buffers.
    pub command_buffers: isize,
}

impl LiveObjects {
    /// All objects, bytes left out.
    pub fn total(&self) -> isize {
        self.usm + self.buffers + self.programs + self.kernels + self.queues + self.events + self.command_buffers
    }
}

#[derive(Default)]
struct Live {
    usm: AtomicIsize,
    buffers: AtomicIsize,
    bytes: AtomicIsize,
    programs: AtomicIsize,
    kernels: AtomicIsize,
    queues: AtomicIsize,
    events: AtomicIsize,
    command_buffers: AtomicIsize,
}

/// What every object of one wrapped context shares.
struct Shared {
    injector: FaultInjector,
    live: Live,
    /// Objects whose wrapper is gone while the adapter still holds their
    /// twin (see [`Held`]): counted until the twin is dropped too.
    lingering: Mutex<Vec<Lingering>>,
}

/// A count whose object lives on in its twin.
struct Lingering {
    twin: Weak<dyn Any + Send + Sync>,
    field: fn(&Live) -> &AtomicIsize,
    bytes: isize,
}

impl Shared {
    fn new(injector: FaultInjector) -> Shared {
        Shared { injector, live: Live::default(), lingering: Mutex::new(Vec::new()) }
    }

    fn release(&self, field: fn(&Live) -> &AtomicIsize, bytes: isize) {
        field(&self.live).fetch_sub(1, Ordering::SeqCst);
        self.live.bytes.fetch_sub(bytes, Ordering::SeqCst);
    }

    fn snapshot(&self) -> LiveObjects {
        self.lingering.lock().retain(|l| {
            let alive = l.twin.strong_count() > 0;
            if !alive {
                self.release(l.field, l.bytes);
            }
            alive
        });
        let live = &self.live;
        let get = |a: &AtomicIsize| a.load(Ordering::SeqCst);
        LiveObjects {
            usm: get(&live.usm),
            buffers: get(&live.buffers),
            bytes: get(&live.bytes),
            programs: get(&live.programs),
            kernels: get(&live.kernels),
            queues: get(&live.queues),
            events: get(&live.events),
            command_buffers: get(&live.command_buffers),
        }
    }
}

/// One live object of a kind: counted while it exists, and after, while
/// its twin does.
struct Count {
    shared: Arc<Shared>,
    field: fn(&Live) -> &AtomicIsize,
    bytes: isize,
    twin: OnceLock<Weak<dyn Any + Send + Sync>>,
}

impl Count {
    fn new(shared: &Arc<Shared>, field: fn(&Live) -> &AtomicIsize, bytes: usize) -> Count {
        let bytes = bytes as isize;
        field(&shared.live).fetch_add(1, Ordering::SeqCst);
        shared.live.bytes.fetch_add(bytes, Ordering::SeqCst);
        Count { shared: shared.clone(), field, bytes, twin: OnceLock::new() }
    }

    fn enter(&self, kind: CallKind) -> Result<()> {
        self.shared.injector.enter(kind)
    }
}

impl Drop for Count {
    fn drop(&mut self) {
        if let Some(twin) = self.twin.take()
            && twin.strong_count() > 0
        {
            self.shared.lingering.lock().push(Lingering { twin, field: self.field, bytes: self.bytes });
            return;
        }
        self.shared.release(self.field, self.bytes);
    }
}

/// The adapter objects of `context` still alive, by kind, when its device
/// was wrapped ([`FaultInjector::wrap_device`]); `None` otherwise.
pub fn live_objects(context: &Context) -> Option<LiveObjects> {
    let imp: &Arc<dyn ContextImpl> = Backing::imp(context);
    (&**imp as &dyn Any).downcast_ref::<FaultyContext>().map(|c| c.shared.snapshot())
}

/// A front-end handle whose adapter object is the adapter's own (module
/// `peel`).
trait Twin<I: ?Sized>: Clone {
    /// The adapter's object.
    fn object(&self) -> &I;
    /// The handle's shared part, which lives as long as some clone of it.
    fn alive(&self) -> Weak<dyn Any + Send + Sync>;
}

impl Twin<dyn BufferImpl> for MemBuffer {
    fn object(&self) -> &dyn BufferImpl {
        // A sub-buffer's twin holds the adapter's object for the region.
        match self.sub_buffer_imp() {
            Some(native) => native,
            None => self.imp(),
        }
    }

    fn alive(&self) -> Weak<dyn Any + Send + Sync> {
        Arc::downgrade(&self.inner) as Weak<dyn Any + Send + Sync>
    }
}

impl Twin<dyn UsmImpl> for Arc<UsmInner> {
    fn object(&self) -> &dyn UsmImpl {
        self.imp()
    }

    fn alive(&self) -> Weak<dyn Any + Send + Sync> {
        Arc::downgrade(self) as Weak<dyn Any + Send + Sync>
    }
}

impl Twin<dyn KernelImpl> for Kernel {
    fn object(&self) -> &dyn KernelImpl {
        self.imp()
    }

    fn alive(&self) -> Weak<dyn Any + Send + Sync> {
        Arc::downgrade(&self.inner) as Weak<dyn Any + Send + Sync>
    }
}

/// The adapter object behind a wrapped buffer, USM allocation or kernel
/// (the objects the front end hands back inside commands), and its count.
/// The wrapper owns the object until a call first hands it to the adapter:
/// then the object moves into the twin made for that call, which the
/// wrapper keeps and hands out at every call after, and through which it
/// reaches the object itself.
struct Held<I: ?Sized, T> {
    state: Mutex<State<I, T>>,
    // After `state`, so that the wrapper's own hold on the twin is gone
    // when the count looks whether the twin lives on.
    count: Count,
}

enum State<I: ?Sized, T> {
    Own(Box<I>),
    Lent(T),
    /// Only while the twin is made, under the lock.
    Moving,
}

impl<I: ?Sized, T: Twin<I>> Held<I, T> {
    fn new(inner: Box<I>, count: Count) -> Held<I, T> {
        Held { state: Mutex::new(State::Own(inner)), count }
    }

    /// Runs `f` on the adapter's object.
    fn with<R>(&self, f: impl FnOnce(&I) -> R) -> R {
        match &*self.state.lock() {
            State::Own(inner) => f(inner),
            State::Lent(twin) => f(twin.object()),
            State::Moving => unreachable!("a twin is made under the lock"),
        }
    }

    /// The twin, made by `make` from the adapter's object the first time.
    fn twin(&self, make: impl FnOnce(Box<I>) -> T) -> T {
        let mut state = self.state.lock();
        if let State::Lent(twin) = &*state {
            return twin.clone();
        }
        let State::Own(inner) = std::mem::replace(&mut *state, State::Moving) else {
            unreachable!("a twin is made under the lock")
        };
        let twin = make(inner);
        let _ = self.count.twin.set(twin.alive());
        *state = State::Lent(twin.clone());
        twin
    }
}

fn wrap_event(shared: &Arc<Shared>, inner: Arc<dyn EventImpl>) -> Arc<dyn EventImpl> {
    Arc::new(FaultyEvent { inner, count: Count::new(shared, |l| &l.events, 0) })
}

struct FaultyDevice {
    inner: Arc<dyn DeviceImpl>,
    injector: FaultInjector,
}

impl DeviceImpl for FaultyDevice {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }

    fn free_memory(&self) -> Result<Option<u64>> {
        self.inner.free_memory()
    }

    fn timestamps(&self) -> Result<Timestamps> {
        self.inner.timestamps()
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        self.injector.enter(CallKind::ContextCreate)?;
        let inner = self.inner.clone().create_context()?;
        let shared = Arc::new(Shared::new(self.injector.clone()));
        Ok(Arc::new(FaultyContext { inner, shared }))
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.inner.native_handle()
    }

    fn peer_access(&self, peer: &dyn DeviceImpl) -> Result<crate::PeerAccess> {
        self.inner.peer_access(peel::device(peer))
    }

    fn enable_peer_access(&self, peer: &dyn DeviceImpl) -> Result<()> {
        self.inner.enable_peer_access(peel::device(peer))
    }

    fn disable_peer_access(&self, peer: &dyn DeviceImpl) -> Result<()> {
        self.inner.disable_peer_access(peel::device(peer))
    }
}

struct FaultyContext {
    inner: Arc<dyn ContextImpl>,
    shared: Arc<Shared>,
}

impl FaultyContext {
    fn enter(&self, kind: CallKind) -> Result<()> {
        self.shared.injector.enter(kind)
    }
}

impl ContextImpl for FaultyContext {
    unsafe fn usm_alloc(&self, kind: UsmKind, size: usize, align: usize) -> Result<Box<dyn UsmImpl>> {
        self.enter(CallKind::UsmAlloc)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let inner = unsafe { self.inner.usm_alloc(kind, size, align)? };
        Ok(Box::new(FaultyUsm { held: Held::new(inner, Count::new(&self.shared, |l| &l.usm, size)) }))
    }

    unsafe fn buffer_create(&self, flags: MemFlags, size: usize, init: Option<&[u8]>) -> Result<Box<dyn BufferImpl>> {
        self.enter(CallKind::BufferCreate)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let inner = unsafe { self.inner.buffer_create(flags, size, init)? };
        Ok(Box::new(FaultyBuffer { held: Held::new(inner, Count::new(&self.shared, |l| &l.buffers, size)) }))
    }

    unsafe fn buffer_over_host(
        &self,
        flags: MemFlags,
        host: std::ptr::NonNull<u8>,
        size: usize,
    ) -> Result<Box<dyn BufferImpl>> {
        self.enter(CallKind::BufferCreate)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let inner = unsafe { self.inner.buffer_over_host(flags, host, size)? };
        Ok(Box::new(FaultyBuffer { held: Held::new(inner, Count::new(&self.shared, |l| &l.buffers, size)) }))
    }

    unsafe fn program_create(
        &self,
        bundle: &ProgramBundle,
        form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        self.enter(CallKind::ProgramCreate)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let inner = unsafe { self.inner.program_create(bundle, form, options)? };
        Ok(Box::new(FaultyProgram { inner, count: Count::new(&self.shared, |l| &l.programs, 0) }))
    }

    unsafe fn program_link(
        &self,
        inputs: &[(&ProgramBundle, &str)],
        form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        self.enter(CallKind::ProgramCreate)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let inner = unsafe { self.inner.program_link(inputs, form, options)? };
        Ok(Box::new(FaultyProgram { inner, count: Count::new(&self.shared, |l| &l.programs, 0) }))
    }

    unsafe fn queue_create(&self, properties: QueueProperties) -> Result<Box<dyn QueueImpl>> {
        self.enter(CallKind::QueueCreate)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let inner = unsafe { self.inner.queue_create(properties)? };
        Ok(Box::new(FaultyQueue { inner, count: Count::new(&self.shared, |l| &l.queues, 0) }))
    }

    unsafe fn sub_device_queue_create(
        &self,
        device: &dyn DeviceImpl,
        properties: QueueProperties,
    ) -> Result<Box<dyn QueueImpl>> {
        self.enter(CallKind::QueueCreate)?;
        // SAFETY: the caller's guarantees; the device is the same, unwrapped.
        let inner = unsafe { self.inner.sub_device_queue_create(peel::device(device), properties)? };
        Ok(Box::new(FaultyQueue { inner, count: Count::new(&self.shared, |l| &l.queues, 0) }))
    }

    unsafe fn command_buffer_create(&self, desc: &CommandBufferDesc) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        self.enter(CallKind::CommandBufferCreate)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let inner = unsafe { self.inner.command_buffer_create(desc)? };
        Ok(Box::new(FaultyCommandBuffer { inner, count: Count::new(&self.shared, |l| &l.command_buffers, 0) }))
    }

    unsafe fn sub_device_command_buffer_create(
        &self,
        device: &dyn DeviceImpl,
        desc: &CommandBufferDesc,
    ) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        self.enter(CallKind::CommandBufferCreate)?;
        // SAFETY: the caller's guarantees; the device is the same, unwrapped.
        let inner = unsafe { self.inner.sub_device_command_buffer_create(peel::device(device), desc)? };
        Ok(Box::new(FaultyCommandBuffer { inner, count: Count::new(&self.shared, |l| &l.command_buffers, 0) }))
    }

    fn user_event_create(&self) -> Result<Arc<dyn UserEventImpl>> {
        self.enter(CallKind::UserEventCreate)?;
        let inner = self.inner.user_event_create()?;
        Ok(Arc::new(FaultyUserEvent { inner, _count: Count::new(&self.shared, |l| &l.events, 0) }))
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.inner.native_handle()
    }
}

struct FaultyUsm {
    held: Held<dyn UsmImpl, Arc<UsmInner>>,
}

impl UsmImpl for FaultyUsm {
    fn address(&self) -> u64 {
        self.held.with(|u| u.address())
    }

    fn host_ptr(&self) -> Option<*mut u8> {
        self.held.with(|u| u.host_ptr())
    }
}

struct FaultyBuffer {
    held: Held<dyn BufferImpl, MemBuffer>,
}

impl BufferImpl for FaultyBuffer {
    unsafe fn sub_buffer(&self, offset: usize, size: usize, flags: MemFlags) -> Result<Option<Box<dyn BufferImpl>>> {
        let count = &self.held.count;
        count.enter(CallKind::SubBuffer)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let sub = self.held.with(|b| unsafe { b.sub_buffer(offset, size, flags) })?;
        Ok(sub.map(|inner| -> Box<dyn BufferImpl> {
            Box::new(FaultyBuffer { held: Held::new(inner, Count::new(&count.shared, |l| &l.buffers, 0)) })
        }))
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.held.with(|b| b.native_handle())
    }

    fn host_memory(&self) -> Option<std::ptr::NonNull<u8>> {
        self.held.with(|b| b.host_memory())
    }
}

struct FaultyProgram {
    inner: Box<dyn ProgramImpl>,
    count: Count,
}

impl ProgramImpl for FaultyProgram {
    unsafe fn create_kernel(&self, signature: &KernelSignature) -> Result<Box<dyn KernelImpl>> {
        self.count.enter(CallKind::KernelCreate)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let inner = unsafe { self.inner.create_kernel(signature)? };
        Ok(Box::new(FaultyKernel { held: Held::new(inner, Count::new(&self.count.shared, |l| &l.kernels, 0)) }))
    }

    fn build_log(&self) -> String {
        self.inner.build_log()
    }

    fn binary(&self) -> Option<Vec<u8>> {
        self.inner.binary()
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.inner.native_handle()
    }
}

struct FaultyKernel {
    held: Held<dyn KernelImpl, Kernel>,
}

impl KernelImpl for FaultyKernel {
    fn max_work_group_size(&self) -> usize {
        self.held.with(|k| k.max_work_group_size())
    }

    fn compile_work_group_size(&self) -> Option<[usize; 3]> {
        self.held.with(|k| k.compile_work_group_size())
    }

    fn local_mem_size(&self) -> usize {
        self.held.with(|k| k.local_mem_size())
    }

    fn private_mem_size(&self) -> usize {
        self.held.with(|k| k.private_mem_size())
    }

    fn preferred_work_group_size_multiple(&self) -> Option<usize> {
        self.held.with(|k| k.preferred_work_group_size_multiple())
    }

    fn max_sub_group_size(&self) -> Option<u32> {
        self.held.with(|k| k.max_sub_group_size())
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.held.with(|k| k.native_handle())
    }

    fn apply_cache_config(&self, config: crate::types::program::CacheConfig) -> Result<bool> {
        self.held.with(|k| k.apply_cache_config(config))
    }
}

struct FaultyQueue {
    inner: Box<dyn QueueImpl>,
    count: Count,
}

impl QueueImpl for FaultyQueue {
    unsafe fn enqueue(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        self.count.enter(CallKind::Enqueue)?;
        let command = peel::command(command);
        // SAFETY: the caller's guarantees: the command and the wait list
        // hold the same objects, unwrapped, which the command's twins keep
        // alive as long as the adapter holds it.
        let event = unsafe { self.inner.enqueue(&command, &peel::wait_list(wait))? };
        Ok(wrap_event(&self.count.shared, event))
    }

    unsafe fn enqueue_wait(&self, wait: &[&dyn EventImpl], barrier: bool) -> Result<Arc<dyn EventImpl>> {
        self.count.enter(CallKind::EnqueueWait)?;
        // SAFETY: as for `enqueue`.
        let event = unsafe { self.inner.enqueue_wait(&peel::wait_list(wait), barrier)? };
        Ok(wrap_event(&self.count.shared, event))
    }

    unsafe fn enqueue_timestamp(&self, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        self.count.enter(CallKind::EnqueueTimestamp)?;
        // SAFETY: as for `enqueue`.
        let event = unsafe { self.inner.enqueue_timestamp(&peel::wait_list(wait))? };
        Ok(wrap_event(&self.count.shared, event))
    }

    unsafe fn usm_copy_peer(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        self.count.enter(CallKind::Enqueue)?;
        let command = peel::command(command);
        // SAFETY: as for `enqueue`.
        let event = unsafe { self.inner.usm_copy_peer(&command, &peel::wait_list(wait))? };
        Ok(wrap_event(&self.count.shared, event))
    }

    fn finish(&self) -> Result<()> {
        self.count.enter(CallKind::Finish)?;
        self.inner.finish()
    }

    fn flush(&self) -> Result<()> {
        self.count.enter(CallKind::Flush)?;
        self.inner.flush()
    }

    fn native_commands_at_enqueue(&self) -> bool {
        self.inner.native_commands_at_enqueue()
    }

    fn completes_in_order(&self) -> bool {
        self.inner.completes_in_order()
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.inner.native_handle()
    }
}

struct FaultyEvent {
    inner: Arc<dyn EventImpl>,
    count: Count,
}

impl EventImpl for FaultyEvent {
    fn status(&self) -> EventStatus {
        self.inner.status()
    }

    fn wait(&self) -> Result<()> {
        self.count.enter(CallKind::EventWait)?;
        self.inner.wait()
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        self.inner.profiling()
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.inner.native_handle()
    }
}

struct FaultyUserEvent {
    inner: Arc<dyn UserEventImpl>,
    _count: Count,
}

impl EventImpl for FaultyUserEvent {
    fn status(&self) -> EventStatus {
        self.inner.status()
    }

    fn wait(&self) -> Result<()> {
        // A user event's wait is the host's own: nothing a driver fails.
        self.inner.wait()
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        self.inner.profiling()
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.inner.native_handle()
    }
}

impl UserEventImpl for FaultyUserEvent {
    fn complete(&self, result: Result<()>) {
        self.inner.complete(result)
    }
}

struct FaultyCommandBuffer {
    inner: Box<dyn RecordingCommandBufferImpl>,
    count: Count,
}

/// A finalized [`FaultyCommandBuffer`], which keeps its count of live
/// command buffers.
struct FaultyExecutable {
    inner: Box<dyn ExecutableCommandBufferImpl>,
    count: Count,
}

impl RecordingCommandBufferImpl for FaultyCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        self.count.enter(CallKind::Append)?;
        let command = peel::command(command);
        let (alternatives, wait_events) = (peel::kernels(alternatives), peel::events(wait_events));
        // SAFETY: the caller's guarantees: the command, the alternatives and
        // the wait events are the same objects, unwrapped.
        let event = unsafe { self.inner.append(&command, &alternatives, deps, &wait_events, signal)? };
        Ok(event.map(|e| wrap_event(&self.count.shared, e)))
    }

    fn finalize(self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed> {
        if let Err(error) = self.count.enter(CallKind::Finalize) {
            return Err(FinalizeFailed::new(error, self));
        }
        let FaultyCommandBuffer { inner, count } = *self;
        match inner.finalize() {
            Ok(inner) => Ok(Box::new(FaultyExecutable { inner, count })),
            Err(failed) => {
                let recording = Box::new(FaultyCommandBuffer { inner: failed.recording, count });
                Err(FinalizeFailed::new(failed.error, recording))
            }
        }
    }

    fn recording_target(&self) -> Result<NativeHandle> {
        self.inner.recording_target()
    }
}

impl ExecutableCommandBufferImpl for FaultyExecutable {
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        self.count.enter(CallKind::CommandBufferEnqueue)?;
        // SAFETY: the caller's guarantees; the queue and the wait list are
        // the same objects, unwrapped.
        let event = unsafe { self.inner.enqueue(peel::queue(queue), &peel::wait_list(wait))? };
        Ok(wrap_event(&self.count.shared, event))
    }

    unsafe fn enqueue_ordered(
        &mut self,
        queue: &dyn QueueImpl,
        wait: &[&dyn EventImpl],
        in_order: bool,
    ) -> Result<Arc<dyn EventImpl>> {
        self.count.enter(CallKind::CommandBufferEnqueue)?;
        // SAFETY: as for `enqueue`; the queue's order is the wrapped queue's.
        let event = unsafe { self.inner.enqueue_ordered(peel::queue(queue), &peel::wait_list(wait), in_order)? };
        Ok(wrap_event(&self.count.shared, event))
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        self.count.enter(CallKind::UpdateKernelLaunches)?;
        let launches: Vec<_> = updates.iter().map(|u| peel::kernel_command(u.launch)).collect();
        let updates: Vec<_> =
            updates.iter().zip(&launches).map(|(u, launch)| KernelUpdate { command: u.command, launch }).collect();
        // SAFETY: the caller's guarantees: each launch is the same, its
        // kernel and buffers unwrapped.
        unsafe { self.inner.update_kernel_launches(&updates) }
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        self.count.enter(CallKind::UpdateSignalEvent)?;
        // SAFETY: the caller's guarantees, passed on unchanged.
        let event = unsafe { self.inner.update_signal_event(command)? };
        Ok(wrap_event(&self.count.shared, event))
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        self.count.enter(CallKind::UpdateWaitEvents)?;
        // SAFETY: the caller's guarantees; the events are the same, unwrapped.
        unsafe { self.inner.update_wait_events(command, &peel::events(events)) }
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        self.inner.native_handle()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_whose_twin_lives_on_stays_counted_until_the_twin_is_dropped() {
        let shared = Arc::new(Shared::new(FaultInjector::new()));
        let twin = Arc::new(0u8);
        let count = Count::new(&shared, |l| &l.buffers, 64);
        let _ = count.twin.set(Arc::downgrade(&twin) as Weak<dyn Any + Send + Sync>);
        drop(count);
        let live = shared.snapshot();
        assert_eq!((live.buffers, live.bytes), (1, 64), "the adapter still holds the twin");
        drop(twin);
        assert_eq!(shared.snapshot(), LiveObjects::default());
        let gone = Count::new(&shared, |l| &l.usm, 8);
        let _ = gone.twin.set(Weak::<u8>::new() as Weak<dyn Any + Send + Sync>);
        drop(gone);
        assert_eq!(shared.snapshot(), LiveObjects::default(), "a dropped twin releases at once");
    }
}
