//! Events: CUDA events recorded after commands, and user events the host
//! completes.
//!
//! A [`CudaEvent`] is recorded on a stream after its command (and, for
//! profiling, another before it). Command-buffer signal events are
//! `CudaEvent`s recorded by event-record nodes, so each execution re-arms
//! them; never recorded, they are complete, as a signal event must be before
//! the first enqueue.
//!
//! CUDA has no host-signalled event, so a [`CudaUserEvent`] is a word of
//! pinned, device-mapped host memory: a stream that must wait for it waits
//! with `cuStreamWaitValue32` until the host writes the event's target value;
//! a graph node that must wait for it waits on a CUDA event recorded, on a
//! stream of its own, after such a wait. Words only ever increase (each user
//! of a word waits for one more than the last value), so a wait left over
//! from an earlier user is always released.

use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cudarc::driver::sys;
use parking_lot::{Condvar, Mutex};
use ur_core::adapter::{EventImpl, UserEventImpl};
use ur_core::event::execution_error;
use ur_core::{Backend, EventStatus, ProfilingInfo, Result, UrError, err};

use crate::device::{DeviceShared, Word, WordKind, now_ns};
use crate::driver::{self, CuEvent, Query, cu};

/// Where an event learns whether its kernels reported a failure.
pub(crate) enum Check {
    /// An eager kernel launch's status word.
    Kernel(Word, Arc<str>),
    /// A command-buffer submission's slot in its buffer's status ring.
    Run(Arc<RunStatus>),
}

/// Slots of a [`StatusRing`]: submissions of one buffer that may be pending
/// at once before the buffer moves to a new ring.
pub(crate) const RING_SLOTS: u32 = 256;

/// Pinned, device-mapped host memory where a command buffer's last node
/// (the status collector) stores each submission's status: word 0 counts
/// the submissions run, word `1 + n % RING_SLOTS` holds submission `n`'s.
pub(crate) struct StatusRing {
    dev: Arc<DeviceShared>,
    host: *mut u32,
    /// The device address of word 0.
    pub(crate) addr: u64,
}

// SAFETY: the memory is owned by the ring; the device writes it and the host
// reads it volatilely, ordered by the submissions' events.
unsafe impl Send for StatusRing {}
// SAFETY: as for Send.
unsafe impl Sync for StatusRing {}

impl StatusRing {
    pub(crate) fn new(dev: &Arc<DeviceShared>) -> Result<StatusRing> {
        let (host, addr) = dev.pinned_mapped(RING_SLOTS as usize + 1)?;
        Ok(StatusRing { dev: dev.clone(), host, addr })
    }

    /// Submission `n`'s status, valid once it has run and until submission
    /// `n + RING_SLOTS` runs.
    fn slot(&self, n: u64) -> u32 {
        let index = 1 + (n % u64::from(RING_SLOTS)) as usize;
        // SAFETY: `index` is within the ring's RING_SLOTS + 1 words; the
        // device writes them, hence the volatile read.
        unsafe { std::ptr::read_volatile(self.host.add(index)) }
    }
}

impl Drop for StatusRing {
    fn drop(&mut self) {
        // Its buffer's graphs are gone or will not run again.
        self.dev.release(crate::device::Release::HostMemory(self.host.cast()));
    }
}

/// The status of one command-buffer submission: its slot in the ring until
/// the buffer, needing the slot again, copies the status here.
pub(crate) struct RunStatus {
    ring: Arc<StatusRing>,
    n: u64,
    harvested: AtomicBool,
    code: AtomicU32,
}

impl RunStatus {
    pub(crate) fn new(ring: Arc<StatusRing>, n: u64) -> RunStatus {
        RunStatus { ring, n, harvested: AtomicBool::new(false), code: AtomicU32::new(0) }
    }

    /// Its position among the submissions of its ring.
    pub(crate) fn ordinal(&self) -> u64 {
        self.n
    }

    /// The ring it was submitted with.
    pub(crate) fn ring(&self) -> &Arc<StatusRing> {
        &self.ring
    }

    /// Copies the status out of the ring; the submission has run.
    pub(crate) fn harvest(&self) {
        if !self.harvested.load(Ordering::SeqCst) {
            self.code.store(self.ring.slot(self.n), Ordering::SeqCst);
            self.harvested.store(true, Ordering::SeqCst);
        }
    }

    /// The status code; the submission has run.
    fn code(&self) -> u32 {
        if self.harvested.load(Ordering::SeqCst) {
            return self.code.load(Ordering::SeqCst);
        }
        let read = self.ring.slot(self.n);
        // The slot is reused only after the status was harvested: if it
        // still was not after the read, the read saw this submission's.
        if self.harvested.load(Ordering::SeqCst) { self.code.load(Ordering::SeqCst) } else { read }
    }
}

/// An event recorded on a stream.
pub(crate) struct CudaEvent {
    dev: Arc<DeviceShared>,
    /// Recorded after the command. `None` only while dropping.
    end: Option<CuEvent>,
    /// Recorded before the command, for profiling.
    start: Option<CuEvent>,
    /// Host times of queueing and submission, on profiling queues.
    times: Mutex<Option<(u64, u64)>>,
    check: Option<Check>,
    /// Whether the command waited, perhaps through other commands, for a
    /// user event that was not complete when it was submitted.
    host_gated: bool,
}

impl CudaEvent {
    /// An event for a command about to be submitted: `start`, when given, is
    /// already recorded; `end` is recorded by the caller after the command.
    pub(crate) fn new(
        dev: Arc<DeviceShared>,
        end: CuEvent,
        start: Option<CuEvent>,
        times: Option<(u64, u64)>,
        check: Option<Check>,
    ) -> CudaEvent {
        CudaEvent { dev, end: Some(end), start, times: Mutex::new(times), check, host_gated: false }
    }

    /// Marks the command as waiting for a user event (see [`is_held`]).
    pub(crate) fn held_by_host(mut self, gated: bool) -> CudaEvent {
        self.host_gated = gated;
        self
    }

    /// Whether the command may still be waiting for the host.
    pub(crate) fn is_held(&self) -> bool {
        self.host_gated && !matches!(self.end().query(), Ok(Query::Ready))
    }

    /// A command-buffer signal event: recorded by graph nodes at each
    /// execution, complete until then. With `profiling`, both its events time.
    pub(crate) fn signal(dev: &Arc<DeviceShared>, profiling: bool) -> Result<CudaEvent> {
        dev.bind()?;
        let start = if profiling { Some(CuEvent::new(true)?) } else { None };
        Ok(CudaEvent::new(dev.clone(), CuEvent::new(profiling)?, start, None, None))
    }

    /// The event recorded after the command.
    pub(crate) fn end(&self) -> &CuEvent {
        self.end.as_ref().expect("the end event lives until drop")
    }

    /// The event recorded before the command, for profiling.
    pub(crate) fn start(&self) -> Option<&CuEvent> {
        self.start.as_ref()
    }

    /// Starts a new execution of a signal event, timed when the queue profiles.
    pub(crate) fn arm(&self, queue_profiling: bool) {
        let now = now_ns();
        *self.times.lock() = (queue_profiling && self.start.is_some()).then_some((now, now));
    }

    /// The failure its kernels reported, once complete.
    fn failure(&self) -> Option<String> {
        match self.check.as_ref()? {
            Check::Kernel(word, name) => match word.read() {
                0 => None,
                code => Some(format!("kernel `{name}` reported failure code {code}")),
            },
            Check::Run(run) => match run.code() {
                0 => None,
                code => Some(format!("a kernel of the command buffer reported failure code {code}")),
            },
        }
    }
}

impl EventImpl for CudaEvent {
    /// The `CUevent` recorded after the command.
    fn native_handle(&self) -> Result<ur_core::NativeHandle> {
        Ok(ur_core::NativeHandle(self.end().raw() as u64))
    }

    fn status(&self) -> EventStatus {
        match self.end().query() {
            Ok(Query::Ready) if self.failure().is_some() => EventStatus::Error,
            Ok(Query::Ready) => EventStatus::Complete,
            Ok(Query::Pending) => match self.start.as_ref().map(CuEvent::query) {
                Some(Ok(Query::Ready)) => EventStatus::Running,
                _ => EventStatus::Submitted,
            },
            Err(_) => EventStatus::Error,
        }
    }

    fn wait(&self) -> Result<()> {
        self.end().synchronize()?;
        match self.failure() {
            Some(message) => Err(execution_error(Backend::Cuda, message)),
            None => Ok(()),
        }
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        let (queued, submit) = (*self.times.lock())?;
        let start_event = self.start.as_ref()?;
        if self.end().query().ok()? != Query::Ready {
            return None;
        }
        // Both device times come from the device's timing base, so that the
        // order of events on the device is the order of their timestamps. The
        // host's queue and submit times never come after the device's start.
        let start = self.dev.timestamp_ns(start_event).ok()?;
        let end = self.dev.timestamp_ns(self.end()).ok()?.max(start);
        let submit = submit.min(start);
        Some(ProfilingInfo { queued: queued.min(submit), submit, start, end })
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        let Some(end) = self.end.take() else { return };
        match self.check.take() {
            // The kernel may still write its status word: the word goes back
            // to the pool once the event says the kernel is done.
            Some(Check::Kernel(word, _)) => self.dev.retire_status_word(word, end),
            Some(Check::Run(_)) | None => self.dev.recycle_event(end),
        }
    }
}

struct UserState {
    result: Option<Result<()>>,
    /// Device work waits on the word (the device's gate counts the event).
    device_waits: bool,
}

struct UserInner {
    dev: Arc<DeviceShared>,
    word: Word,
    target: u32,
    state: Mutex<UserState>,
    completed: Condvar,
}

/// An event the host completes.
pub(crate) struct CudaUserEvent {
    inner: Arc<UserInner>,
    /// For graph nodes: recorded on its own stream once the word is written.
    gated: Mutex<Option<CuEvent>>,
}

/// `CUDA_ERROR_NOT_SUPPORTED`: stream memory operations unavailable.
const NOT_SUPPORTED: u32 = 801;

/// Runs on the driver's callback thread when a stream cannot wait on memory:
/// blocks that stream until the user event completes.
unsafe extern "C" fn block_until_complete(data: *mut c_void) {
    // SAFETY: `data` is an `Arc<UserInner>` leaked by `UserInner::device_wait` for this call.
    let inner = unsafe { Arc::from_raw(data.cast::<UserInner>()) };
    let mut state = inner.state.lock();
    while state.result.is_none() {
        inner.completed.wait(&mut state);
    }
}

impl UserInner {
    /// Makes `stream` wait until the event completes.
    fn device_wait(self: &Arc<Self>, stream: sys::CUstream) -> Result<()> {
        let mut state = self.state.lock();
        if state.result.is_some() {
            return Ok(());
        }
        // Counted before the wait is issued, so that no module load starts
        // while the stream may be held (see `DeviceShared::load_module`).
        let entered = !state.device_waits;
        if entered {
            self.dev.gate_enter();
            state.device_waits = true;
        }
        let issued = self.issue_wait(stream);
        if issued.is_err() && entered {
            state.device_waits = false;
            self.dev.gate_leave();
        }
        issued
    }

    fn issue_wait(self: &Arc<Self>, stream: sys::CUstream) -> Result<()> {
        let flags = sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32;
        // SAFETY: the word is device-mapped host memory that lives as long as
        // the device; the stream is alive.
        let result = unsafe { sys::cuStreamWaitValue32_v2(stream, self.word.addr, self.target, flags) };
        if result as u32 != NOT_SUPPORTED {
            return driver::check(result, "cuStreamWaitValue32_v2");
        }
        tracing::debug!("stream memory operations unsupported: user event waits through a host function");
        let data = Arc::into_raw(self.clone()).cast_mut().cast::<c_void>();
        // SAFETY: the callback takes back the leaked Arc exactly once.
        if let Err(e) = unsafe { cu!(cuLaunchHostFunc(stream, Some(block_until_complete), data)) } {
            // SAFETY: the callback was not enqueued; reclaim the Arc.
            drop(unsafe { Arc::from_raw(data.cast::<UserInner>()) });
            return Err(e);
        }
        Ok(())
    }

    fn finish(&self, result: Result<()>) {
        let device_waits = {
            let mut state = self.state.lock();
            if state.result.is_some() {
                return;
            }
            state.result = Some(result);
            // Whatever the outcome, waiters only order: release them.
            self.word.write(self.target);
            std::mem::take(&mut state.device_waits)
        };
        self.completed.notify_all();
        if device_waits {
            self.dev.gate_leave();
        }
    }
}

impl Drop for UserInner {
    fn drop(&mut self) {
        // Nothing can wait any more once the last handle is gone, but make
        // sure no stream stays blocked on the word.
        self.finish(Err(err!(InvalidOperation, "user event dropped")));
        self.dev.free_word(WordKind::UserEvent, self.word);
    }
}

impl CudaUserEvent {
    pub(crate) fn new(dev: &Arc<DeviceShared>) -> Result<CudaUserEvent> {
        let word = dev.word(WordKind::UserEvent)?;
        let target = word.read().wrapping_add(1);
        Ok(CudaUserEvent {
            inner: Arc::new(UserInner {
                dev: dev.clone(),
                word,
                target,
                state: Mutex::new(UserState { result: None, device_waits: false }),
                completed: Condvar::new(),
            }),
            gated: Mutex::new(None),
        })
    }

    /// A CUDA event that completes once this event has, for graph nodes.
    fn gated_event(&self) -> Result<sys::CUevent> {
        let mut gated = self.gated.lock();
        if let Some(e) = gated.as_ref() {
            return Ok(e.raw());
        }
        let dev = &self.inner.dev;
        dev.bind()?;
        let event = CuEvent::new(false)?;
        if self.inner.state.lock().result.is_none() {
            // The stream goes back to the pool right away: it is reused only
            // once its work (the wait, then the record) has run.
            let stream = dev.take_stream()?;
            let waited = self.inner.device_wait(stream.raw()).and_then(|()| event.record(stream.raw()));
            dev.return_stream(stream);
            waited?;
        }
        let raw = event.raw();
        *gated = Some(event);
        Ok(raw)
    }
}

impl EventImpl for CudaUserEvent {
    fn status(&self) -> EventStatus {
        match &self.inner.state.lock().result {
            None => EventStatus::Submitted,
            Some(Ok(())) => EventStatus::Complete,
            Some(Err(_)) => EventStatus::Error,
        }
    }

    fn wait(&self) -> Result<()> {
        let mut state = self.inner.state.lock();
        loop {
            if let Some(result) = &state.result {
                return result.clone();
            }
            self.inner.completed.wait(&mut state);
        }
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        None
    }
}

impl UserEventImpl for CudaUserEvent {
    fn complete(&self, result: Result<()>) {
        self.inner.finish(result);
    }
}

/// Whether work waiting for `event` may wait for the host: `event` is a user
/// event not yet complete, or a command that waited for one and has not run.
pub(crate) fn is_held(event: &dyn EventImpl) -> bool {
    let any = ur_core::adapter::unwrap_object(event as &dyn Any);
    if let Some(e) = any.downcast_ref::<CudaEvent>() {
        return e.is_held();
    }
    any.downcast_ref::<CudaUserEvent>().is_some_and(|u| !u.status().is_terminal())
}

/// Makes `stream` wait for `event` (an event of this adapter).
pub(crate) fn stream_wait(stream: sys::CUstream, event: &dyn EventImpl) -> Result<()> {
    let any = ur_core::adapter::unwrap_object(event as &dyn Any);
    if let Some(e) = any.downcast_ref::<CudaEvent>() {
        return driver::stream_wait_event(stream, e.end().raw());
    }
    if let Some(u) = any.downcast_ref::<CudaUserEvent>() {
        return u.inner.device_wait(stream);
    }
    Err(wrong_adapter())
}

/// The CUDA event a graph's event-wait node waits on to wait for `event`.
pub(crate) fn graph_wait_event(event: &dyn EventImpl) -> Result<sys::CUevent> {
    let any = ur_core::adapter::unwrap_object(event as &dyn Any);
    if let Some(e) = any.downcast_ref::<CudaEvent>() {
        return Ok(e.end().raw());
    }
    if let Some(u) = any.downcast_ref::<CudaUserEvent>() {
        return u.gated_event();
    }
    Err(wrong_adapter())
}

fn wrong_adapter() -> UrError {
    err!(InvalidEvent, "a wait event belongs to another adapter")
}
