//! Events: CUDA events recorded after commands, and user events the host
//! completes.
//!
//! A [`CudaEvent`] is recorded on a stream after its command (and, for
//! profiling, another before it). Command-buffer signal events are
//! `CudaEvent`s recorded by event-record nodes, so each execution re-arms
//! them; never recorded, they are complete, as a signal event must be before
//! the first enqueue.
//!
//! CUDA has no host-signalled event, and device work must never wait for
//! the host (see `hold`), so a [`CudaUserEvent`] lives on the host only: work
//! that waits for it is held back until it completes. A held command's
//! event reports `Queued`, blocks waiters on the host until the command is
//! issued, and has no timestamps before.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use cmdbuf_core::adapter::{EventImpl, UserEventImpl};
use cmdbuf_core::event::execution_error;
use cmdbuf_core::{Backend, EventStatus, ProfilingInfo, Result, UrError, err};
use cudarc::driver::sys;
use parking_lot::Mutex;

use crate::device::{DeviceShared, Word, now_ns};
use crate::driver::{CuEvent, Query};
use crate::hold::{Dep, Gate};

/// Where an event learns whether its kernels reported a failure.
pub(crate) enum Check {
    /// An eager kernel launch's status word.
    Kernel(Word, Arc<str>),
    /// A command-buffer submission's slot in its buffer's status ring.
    Run(Arc<RunStatus>),
    /// A composition's submission: a slot per part whose kernels may report.
    Runs(Vec<Arc<RunStatus>>),
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

/// An event recorded on a stream: a command's, or a command-buffer signal
/// event's.
pub(crate) struct CudaEvent {
    dev: Arc<DeviceShared>,
    /// Recorded after the command; shared with held submissions that will
    /// wait on it. `None` only while dropping.
    end: Option<Arc<CuEvent>>,
    /// Recorded before the command, for profiling.
    start: Option<CuEvent>,
    /// Host times of queueing and submission, on profiling queues.
    times: Mutex<Option<(u64, u64)>>,
    /// What to check once complete, set when the command is issued.
    check: OnceLock<Check>,
    /// While the command is held back on the host (see `hold`): the gate
    /// that opens when it is issued.
    held: Mutex<Option<Arc<Gate>>>,
    /// Whether `held` was ever set. Most submissions are never held, and
    /// their status, waits and dependencies then read this flag instead of
    /// locking `held` (four uncontended locks per replay, issue 15 goal 2).
    /// Set after `held`, under the same lock, so that a reader seeing it
    /// finds the gate.
    ever_held: AtomicBool,
    /// Seen complete once issued. A command's event is recorded once, so it
    /// stays complete and later status queries need no driver call (the
    /// front end asks at each submission whether its oldest command is
    /// done). Never set for signal events, which each execution records again.
    done: AtomicBool,
    /// Records once: `done` may be set.
    once: bool,
    /// A timestamp recording's event, whose times read as
    /// [`ProfilingInfo::recording`].
    recording: AtomicBool,
}

impl CudaEvent {
    /// An event for a command about to be submitted, its CUDA events created
    /// (not recorded): with `profiling`, timing ones and a start event.
    pub(crate) fn new(dev: &Arc<DeviceShared>, profiling: bool) -> Result<CudaEvent> {
        let (end, start) = if profiling {
            (Arc::new(CuEvent::new(true)?), Some(CuEvent::new(true)?))
        } else {
            (dev.plain_event()?, None)
        };
        Ok(CudaEvent::of(dev, end, start, true))
    }

    fn of(dev: &Arc<DeviceShared>, end: Arc<CuEvent>, start: Option<CuEvent>, once: bool) -> CudaEvent {
        CudaEvent {
            dev: dev.clone(),
            end: Some(end),
            start,
            times: Mutex::new(None),
            check: OnceLock::new(),
            held: Mutex::new(None),
            ever_held: AtomicBool::new(false),
            done: AtomicBool::new(false),
            once,
            recording: AtomicBool::new(false),
        }
    }

    /// Marks the event of a timestamp recording: its queued and submit times
    /// are the call's, its start and end the time the stream reached it.
    pub(crate) fn mark_recording(&self) {
        self.recording.store(true, Ordering::Release);
    }

    /// A command-buffer signal event: recorded by graph nodes at each
    /// execution, complete until then. With `profiling`, both its events time.
    pub(crate) fn signal(dev: &Arc<DeviceShared>, profiling: bool) -> Result<CudaEvent> {
        dev.bind()?;
        // New events, never recorded (a pooled one may still be pending).
        let start = if profiling { Some(CuEvent::new(true)?) } else { None };
        Ok(CudaEvent::of(dev, Arc::new(CuEvent::new(profiling)?), start, false))
    }

    /// The event recorded after the command.
    pub(crate) fn end(&self) -> &CuEvent {
        self.end.as_ref().expect("the end event lives until drop")
    }

    /// The event recorded before the command, for profiling.
    pub(crate) fn start(&self) -> Option<&CuEvent> {
        self.start.as_ref()
    }

    /// The command was issued: its host times (on profiling queues) and what
    /// to check once complete.
    pub(crate) fn issued(&self, times: Option<(u64, u64)>, check: Option<Check>) {
        // A command's event starts without times: only profiling sets them.
        if times.is_some() {
            *self.times.lock() = times;
        }
        if let Some(check) = check {
            let _ = self.check.set(check);
        }
    }

    /// The command is held back on the host until `gate` opens.
    pub(crate) fn hold(&self, gate: Arc<Gate>) {
        let mut held = self.held.lock();
        *held = Some(gate);
        self.ever_held.store(true, Ordering::Release);
    }

    /// The gate it was last held back with, if it ever was.
    fn gate(&self) -> Option<Arc<Gate>> {
        if !self.ever_held.load(Ordering::Acquire) {
            return None;
        }
        self.held.lock().clone()
    }

    /// The gate of a command still held back, if it is.
    pub(crate) fn held_gate(&self) -> Option<Arc<Gate>> {
        self.gate().filter(|g| !g.is_open())
    }

    /// The dependency on this event: its gate while held, and, when `device`,
    /// its end event for the waiting stream.
    pub(crate) fn dep(&self, device: bool) -> Dep {
        Dep { gate: self.held_gate(), end: device.then(|| self.end.clone().expect("alive")) }
    }

    /// Issued and complete.
    pub(crate) fn is_done(&self) -> bool {
        self.held_gate().is_none() && self.end_ready()
    }

    /// Whether the end event has completed; the command was issued.
    fn end_ready(&self) -> bool {
        if self.done.load(Ordering::Acquire) {
            return true;
        }
        let ready = matches!(self.end().query(), Ok(Query::Ready));
        if ready {
            self.saw_done();
        }
        ready
    }

    /// The command was issued and its end event has completed.
    fn saw_done(&self) {
        if self.once {
            self.done.store(true, Ordering::Release);
        }
    }

    /// Starts a new execution of a signal event, timed when the queue profiles.
    pub(crate) fn arm(&self, queue_profiling: bool) {
        let now = now_ns();
        *self.times.lock() = (queue_profiling && self.start.is_some()).then_some((now, now));
    }

    /// A signal event's execution was issued at `now` (after being held).
    pub(crate) fn submitted_at(&self, now: u64) {
        if let Some((_, submit)) = self.times.lock().as_mut() {
            *submit = now;
        }
    }

    /// The outcome of issuing the command, once issued: `None` while held.
    fn issue_outcome(&self) -> Option<Result<()>> {
        match self.gate() {
            Some(gate) => gate.result(),
            None => Some(Ok(())),
        }
    }

    /// The failure its kernels reported, once complete.
    fn failure(&self) -> Option<String> {
        match self.check.get()? {
            Check::Kernel(word, name) => match word.read() {
                0 => None,
                code => Some(format!("kernel `{name}` reported failure code {code}")),
            },
            Check::Run(run) => match run.code() {
                0 => None,
                code => Some(format!("a kernel of the command buffer reported failure code {code}")),
            },
            Check::Runs(runs) => runs
                .iter()
                .map(|run| run.code())
                .find(|code| *code != 0)
                .map(|code| format!("a kernel of a command buffer of the composition reported failure code {code}")),
        }
    }
}

impl EventImpl for CudaEvent {
    /// The `CUevent` recorded after the command.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(self.end().raw() as u64))
    }

    fn status(&self) -> EventStatus {
        match self.issue_outcome() {
            None => return EventStatus::Queued,
            Some(Err(_)) => return EventStatus::Error,
            Some(Ok(())) => {}
        }
        let query = if self.done.load(Ordering::Acquire) { Ok(Query::Ready) } else { self.end().query() };
        if matches!(query, Ok(Query::Ready)) {
            self.saw_done();
        }
        match query {
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
        // A held command is waited for on the host until it is issued.
        if let Some(gate) = self.gate() {
            gate.wait()?;
        }
        if !self.done.load(Ordering::Acquire) {
            self.end().synchronize()?;
            self.saw_done();
        }
        match self.failure() {
            Some(message) => Err(execution_error(Backend::Cuda, message)),
            None => Ok(()),
        }
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        if !matches!(self.issue_outcome(), Some(Ok(()))) {
            return None;
        }
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
        if self.recording.load(Ordering::Acquire) {
            // The call's host time, on the device's timeline like the recorded time.
            let call = self.dev.host_to_device_ns(queued).ok()?;
            return Some(ProfilingInfo::recording(call, end));
        }
        let submit = submit.min(start);
        Some(ProfilingInfo { queued: queued.min(submit), submit, start, end })
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        let Some(end) = self.end.take() else { return };
        match self.check.take() {
            // Seen complete (by a wait or a status query): the kernel no
            // longer writes its word, which goes back at once, without the
            // query that otherwise falls on whoever drops the event (the
            // front end's next submission, issue 15 goal 2).
            Some(Check::Kernel(word, _)) if *self.done.get_mut() => {
                self.dev.free_word(word);
                self.dev.recycle_event(end);
            }
            // The kernel may still write its status word: the word goes back
            // to the pool once the event says the kernel is done.
            Some(Check::Kernel(word, _)) => self.dev.retire_status_word(word, end),
            Some(Check::Run(_) | Check::Runs(_)) | None => self.dev.recycle_event(end),
        }
    }
}

/// An event the host completes. It never reaches the device: work that
/// waits for it is held back on the host until it completes (see `hold`).
pub(crate) struct CudaUserEvent {
    gate: Arc<Gate>,
}

impl CudaUserEvent {
    pub(crate) fn new() -> CudaUserEvent {
        CudaUserEvent { gate: Gate::new() }
    }

    fn finish(&self, result: Result<()>) {
        // Whatever the outcome, waiters only order: held work goes on.
        if self.gate.open(result) {
            crate::queue::HELD.release();
        }
    }
}

impl Drop for CudaUserEvent {
    fn drop(&mut self) {
        // Nothing can complete it any more: release what waits for it.
        self.finish(Err(err!(InvalidOperation, "user event dropped")));
    }
}

impl EventImpl for CudaUserEvent {
    fn status(&self) -> EventStatus {
        match self.gate.result() {
            None => EventStatus::Submitted,
            Some(Ok(())) => EventStatus::Complete,
            Some(Err(_)) => EventStatus::Error,
        }
    }

    fn wait(&self) -> Result<()> {
        self.gate.wait()
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        None
    }
}

impl UserEventImpl for CudaUserEvent {
    fn complete(&self, result: Result<()>) {
        self.finish(result);
    }
}

/// The dependency of a submission on `event` (an event of this adapter);
/// with `device`, its stream waits for the event's device work.
pub(crate) fn dep(event: &dyn EventImpl, device: bool) -> Result<Dep> {
    let any = event as &dyn Any;
    if let Some(e) = any.downcast_ref::<CudaEvent>() {
        return Ok(e.dep(device));
    }
    if let Some(u) = any.downcast_ref::<CudaUserEvent>() {
        return Ok(Dep { gate: (!u.gate.is_open()).then(|| u.gate.clone()), end: None });
    }
    Err(wrong_adapter())
}

/// The CUDA event a graph's event-wait node waits on to wait for `event`:
/// for a user event, one that is always complete, the launch being held on
/// the host until the user event is (see `CudaExecutable::enqueue`).
pub(crate) fn graph_wait_event(dev: &DeviceShared, event: &dyn EventImpl) -> Result<sys::CUevent> {
    let any = event as &dyn Any;
    if let Some(e) = any.downcast_ref::<CudaEvent>() {
        return Ok(e.end().raw());
    }
    if any.downcast_ref::<CudaUserEvent>().is_some() {
        return Ok(dev.complete.raw());
    }
    Err(wrong_adapter())
}

fn wrong_adapter() -> UrError {
    err!(InvalidEvent, "a wait event belongs to another adapter")
}
