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
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::event::execution_error;
use cudarc::driver::sys;
use parking_lot::Mutex;

use crate::device::{DeviceShared, StreamProgress, Word, now_ns};
use crate::driver::{CuEvent, Query};
use crate::hold::{Dep, Gate};
use crate::launcher::Pending;

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

/// Submissions of a stream between two probes (see [`StreamClock`]).
pub(crate) const PROBE_EVERY: u64 = 32;

/// What is known of the work completed on one stream of a queue, shared by
/// the events its submissions record there.
///
/// Work on a stream completes in the order it was submitted, so an event
/// seen complete says that every event recorded before it on the same stream
/// is complete too: one `cuEventQuery` then answers for all of them. The
/// front end asks at every submission whether its oldest command in flight
/// is done (`status_quiet`); answering each of those with a query of its own
/// cost a driver call per eager launch, about as much as the
/// `cuEventRecord` every launch needs (issue 31, item 3). Instead the
/// quiet status asks only about a *probe*, an event the queue keeps every
/// [`PROBE_EVERY`] submissions of the stream: a few queries for that many
/// launches, and commands leave the front end's list in batches.
pub(crate) struct StreamClock {
    /// Whose pool the probes go back to; kept alive until the last probe has.
    dev: Arc<DeviceShared>,
    /// Sequence numbers given to submissions issued on the stream (the
    /// last one given); advanced under the queue's lock.
    issued: AtomicU64,
    /// Every submission of the stream with a sequence number up to this one
    /// has completed.
    done_upto: AtomicU64,
    /// The newest probe: a submission's sequence number and end event, and
    /// its ticket at the device's launcher when it was deferred (0 if not).
    probe: Mutex<Option<(u64, Arc<CuEvent>, u64)>>,
    /// No probe is queried before this many submissions were issued: set
    /// when a query found the probe pending. The front end asks at every
    /// submission, and a pending probe asked again at the next one was a
    /// second `cuEventQuery` (about 0.9 µs on an H200) per
    /// [`PROBE_EVERY`] launches.
    quiet_until: AtomicU64,
}

impl StreamClock {
    pub(crate) fn new(dev: &Arc<DeviceShared>) -> StreamClock {
        StreamClock {
            dev: dev.clone(),
            issued: AtomicU64::new(0),
            done_upto: AtomicU64::new(0),
            probe: Mutex::new(None),
            quiet_until: AtomicU64::new(0),
        }
    }

    /// The sequence number of a submission being issued on the stream, whose
    /// end event is `end`, recorded by the device's launcher when `ticket`
    /// is not 0; the caller holds the queue's lock, so numbers follow the
    /// order of the records on the stream (the queue drains its deferred
    /// launches before it issues anything itself). Every [`PROBE_EVERY`]th
    /// (the first included) becomes the probe; the probe it replaces goes
    /// back to the device's pool if nothing else holds it.
    pub(crate) fn next(&self, end: &Arc<CuEvent>, ticket: u64) -> u64 {
        let seq = self.issued.load(Ordering::Relaxed) + 1;
        self.issued.store(seq, Ordering::Relaxed);
        if seq % PROBE_EVERY == 1 {
            let old = self.probe.lock().replace((seq, end.clone(), ticket));
            if let Some((_, event, _)) = old {
                self.dev.recycle_event(event);
            }
        }
        seq
    }

    /// Whether the submission numbered `seq` is known complete.
    fn covers(&self, seq: u64) -> bool {
        seq <= self.done_upto.load(Ordering::Acquire)
    }

    /// The submission numbered `seq` was seen complete, and with it every
    /// earlier one of the stream.
    fn saw(&self, seq: u64) {
        self.done_upto.fetch_max(seq, Ordering::AcqRel);
    }

    /// Whether the newest probe, when it is not older than the submission
    /// numbered `seq`, has completed: one query. `false` says nothing.
    fn probe_covers(&self, seq: u64) -> bool {
        let issued = self.issued.load(Ordering::Relaxed);
        if issued < self.quiet_until.load(Ordering::Relaxed) {
            return false;
        }
        let probe = self.probe.lock();
        match &*probe {
            // A probe the launcher has not recorded yet says nothing.
            Some((_, _, ticket)) if *ticket != 0 && !self.dev.launcher.made(*ticket) => false,
            Some((at, event, _)) if *at >= seq => {
                if matches!(event.query(), Ok(Query::Ready)) {
                    self.saw(*at);
                    return true;
                }
                self.quiet_until.store(issued + PROBE_EVERY / 2, Ordering::Relaxed);
                false
            }
            _ => false,
        }
    }
}

impl StreamProgress for StreamClock {
    /// As far as the clock knows, or its newest probe tells (one query).
    fn has_completed(&self, seq: u64) -> bool {
        self.covers(seq) || self.probe_covers(seq)
    }
}

impl Drop for StreamClock {
    fn drop(&mut self) {
        // Before the device (its context) may go: the probe is destroyed, or
        // pooled, while the context it was created in is alive.
        if let Some((_, event, _)) = self.probe.get_mut().take() {
            self.dev.recycle_event(event);
        }
    }
}

/// Where a queue issued a command, and what its event checks once complete.
pub(crate) struct Issued {
    /// The clock of the stream it was recorded on, and its sequence number
    /// there: completion learnt of a later record on the stream is its own
    /// too (see [`StreamClock`]).
    pub(crate) clock: Arc<StreamClock>,
    pub(crate) seq: u64,
    /// Host times of queueing and submission, on profiling queues.
    pub(crate) times: Option<(u64, u64)>,
    /// What to check once complete.
    pub(crate) check: Option<Check>,
    /// Its ticket at the device's launcher, which makes the launch and
    /// records its end event; 0 when the queue issued it itself.
    pub(crate) ticket: u64,
}

/// What an event knows of where its command went.
enum Place {
    /// Issued as it was submitted, the common case: known when the event is
    /// made, so read without synchronisation. Setting a `OnceLock` costs
    /// two atomic read-modify-writes, and holding the device apart from
    /// the clock (which holds it) a count up and down: four per eager
    /// launch at 20-40 ns each on an H200's host (issue 31).
    Now { clock: Arc<StreamClock>, seq: u64, check: Option<Check>, ticket: u64 },
    /// Not issued yet (held back on the host, see `hold`), or never by a
    /// queue (a native command's work, a command-buffer signal event): the
    /// device, and where it was issued once it is.
    Later { dev: Arc<DeviceShared>, order: OnceLock<(Arc<StreamClock>, u64)>, check: OnceLock<Check> },
}

impl Place {
    /// Not issued yet.
    fn later(dev: &Arc<DeviceShared>) -> Place {
        Place::Later { dev: dev.clone(), order: OnceLock::new(), check: OnceLock::new() }
    }
}

/// An event recorded on a stream: a command's, or a command-buffer signal
/// event's.
pub(crate) struct CudaEvent {
    /// Recorded after the command; shared with held submissions that will
    /// wait on it. `None` only while dropping.
    end: Option<Arc<CuEvent>>,
    /// Recorded before the command, for profiling.
    start: Option<CuEvent>,
    /// Host times of queueing and submission, on profiling queues.
    times: Mutex<Option<(u64, u64)>>,
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
    /// Where its command went, and its device. Declared last, so dropped
    /// last: the device (its context) outlives the start event's destruction.
    place: Place,
}

impl CudaEvent {
    /// An event for a command about to be submitted, its CUDA events created
    /// (not recorded): with `profiling`, timing ones and a start event.
    pub(crate) fn new(dev: &Arc<DeviceShared>, profiling: bool) -> Result<CudaEvent> {
        let (end, start) = if profiling { timing_pair()? } else { (dev.plain_event()?, None) };
        Ok(CudaEvent::command(dev, end, start))
    }

    /// A command's event over CUDA events already made, not issued yet:
    /// `end` recorded after the command, `start` (profiling) before it.
    pub(crate) fn command(dev: &Arc<DeviceShared>, end: Arc<CuEvent>, start: Option<CuEvent>) -> CudaEvent {
        CudaEvent::of(Place::later(dev), end, start, None, true)
    }

    /// The event of a command its queue issued as it was submitted, with
    /// `end` and `start` (see [`command`](Self::command)) recorded.
    pub(crate) fn issued_now(end: Arc<CuEvent>, start: Option<CuEvent>, issued: Issued) -> CudaEvent {
        let Issued { clock, seq, times, check, ticket } = issued;
        CudaEvent::of(Place::Now { clock, seq, check, ticket }, end, start, times, true)
    }

    fn of(place: Place, end: Arc<CuEvent>, start: Option<CuEvent>, times: Option<(u64, u64)>, once: bool) -> CudaEvent {
        CudaEvent {
            place,
            end: Some(end),
            start,
            times: Mutex::new(times),
            held: Mutex::new(None),
            ever_held: AtomicBool::new(false),
            done: AtomicBool::new(false),
            once,
            recording: AtomicBool::new(false),
        }
    }

    /// Its device.
    fn dev(&self) -> &Arc<DeviceShared> {
        match &self.place {
            Place::Now { clock, .. } => &clock.dev,
            Place::Later { dev, .. } => dev,
        }
    }

    /// The clock of the stream its queue issued it on and its sequence
    /// number there, once issued.
    fn order(&self) -> Option<(&StreamClock, u64)> {
        match &self.place {
            Place::Now { clock, seq, .. } => Some((clock, *seq)),
            Place::Later { order, .. } => order.get().map(|(clock, seq)| (&**clock, *seq)),
        }
    }

    /// [`order`](Self::order) with the clock held weakly.
    fn stream_order(&self) -> Option<(Weak<dyn StreamProgress>, u64)> {
        let weak = |clock: &Arc<StreamClock>| Arc::downgrade(clock) as Weak<dyn StreamProgress>;
        match &self.place {
            Place::Now { clock, seq, .. } => Some((weak(clock), *seq)),
            Place::Later { order, .. } => order.get().map(|(clock, seq)| (weak(clock), *seq)),
        }
    }

    /// What to check once complete, once issued.
    fn check(&self) -> Option<&Check> {
        match &self.place {
            Place::Now { check, .. } => check.as_ref(),
            Place::Later { check, .. } => check.get(),
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
        Ok(CudaEvent::of(Place::later(dev), Arc::new(CuEvent::new(profiling)?), start, None, false))
    }

    /// Its launch, while the device's launcher has not made it (and
    /// recorded its end event): see `launcher`.
    pub(crate) fn pending(&self) -> Option<Pending<'_>> {
        match &self.place {
            Place::Now { clock, ticket, .. } if *ticket != 0 => {
                let launcher = &clock.dev.launcher;
                (!launcher.made(*ticket)).then_some(Pending { launcher, ticket: *ticket })
            }
            _ => None,
        }
    }

    /// Blocks until its end event is recorded, if the launcher records it.
    pub(crate) fn await_made(&self) {
        if let Some(pending) = self.pending() {
            pending.wait();
        }
    }

    /// Its error from the launcher, if its launch failed there.
    fn launch_failure(&self) -> Option<UrError> {
        match &self.place {
            Place::Now { clock, ticket, .. } if *ticket != 0 => clock.dev.launcher.failure(*ticket),
            _ => None,
        }
    }

    /// The event recorded after the command.
    pub(crate) fn end(&self) -> &CuEvent {
        self.end_shared()
    }

    /// The event recorded after the command, as shared with those that wait on it.
    pub(crate) fn end_shared(&self) -> &Arc<CuEvent> {
        self.end.as_ref().expect("the end event lives until drop")
    }

    /// The event recorded before the command, for profiling.
    pub(crate) fn start(&self) -> Option<&CuEvent> {
        self.start.as_ref()
    }

    /// The command, held back when it was submitted (an event made with
    /// [`command`](Self::command)), was issued.
    pub(crate) fn issued(&self, issued: Issued) {
        // Held work is issued by its queue itself: no ticket.
        let Issued { clock, seq, times, check, ticket: _ } = issued;
        if let Place::Later { order, check: slot, .. } = &self.place {
            let _ = order.set((clock, seq));
            if let Some(check) = check {
                let _ = slot.set(check);
            }
        }
        // A command's event starts without times: only profiling sets them.
        if times.is_some() {
            *self.times.lock() = times;
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
    /// its end event for the waiting stream. An event known complete needs
    /// no `cuStreamWaitEvent` (a driver call per dependency: a fork-join's
    /// branches all wait for the fork, issue 31 item 3): its one record
    /// has completed, and a wait on it would wait for nothing. The end
    /// event is borrowed from this event (see [`Dep::end`]).
    pub(crate) fn dep(&self, device: bool) -> Dep<'_> {
        let end = (device && !self.known_done()).then(|| Cow::Borrowed(self.end_shared()));
        Dep { gate: self.held_gate(), end, pending: self.pending() }
    }

    /// Issued and complete.
    pub(crate) fn is_done(&self) -> bool {
        self.held_gate().is_none() && self.end_ready()
    }

    /// Whether the end event has completed; the command was issued.
    pub(crate) fn end_ready(&self) -> bool {
        matches!(self.query_end(), Ok(Query::Ready))
    }

    /// The end event's state: from what is known when it is known complete,
    /// else from the driver; the command was issued.
    fn query_end(&self) -> Result<Query> {
        if self.known_done() {
            return Ok(Query::Ready);
        }
        if self.pending().is_some() {
            return Ok(Query::Pending);
        }
        let query = self.end().query();
        if matches!(query, Ok(Query::Ready)) {
            self.seen_complete();
        }
        query
    }

    /// Blocks until the end event has completed, unless it is known to have;
    /// the command was issued (or its issue failed: nothing to wait for).
    pub(crate) fn synchronize(&self) -> Result<()> {
        if !self.known_done() {
            self.await_made();
            self.end().synchronize()?;
            self.seen_complete();
        }
        Ok(())
    }

    /// Its end event was seen complete (queried or synchronized): so were
    /// the earlier submissions of its stream.
    fn seen_complete(&self) {
        self.saw_done();
        if let Some((clock, seq)) = self.order() {
            clock.saw(seq);
        }
    }

    /// Whether its end event is known complete without asking the driver:
    /// seen so, or a later record on its stream was (see [`StreamClock`]).
    /// Only a command's event (recorded once) is ever known complete.
    pub(crate) fn known_done(&self) -> bool {
        if self.done.load(Ordering::Acquire) {
            return true;
        }
        match self.order() {
            Some((clock, seq)) if self.once && clock.covers(seq) => {
                self.saw_done();
                true
            }
            _ => false,
        }
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

    /// The outcome of issuing the command, once issued: `None` while held,
    /// or while the launcher has not made its launch.
    fn issue_outcome(&self) -> Option<Result<()>> {
        if self.pending().is_some() {
            return None;
        }
        if let Some(e) = self.launch_failure() {
            return Some(Err(e));
        }
        match self.gate() {
            Some(gate) => gate.result(),
            None => Some(Ok(())),
        }
    }

    /// The failure its kernels reported, once complete.
    fn failure(&self) -> Option<String> {
        match self.check()? {
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
        // The application may wait on it at once.
        self.await_made();
        Ok(cmdbuf_core::NativeHandle(self.end().raw() as u64))
    }

    fn status(&self) -> EventStatus {
        match self.issue_outcome() {
            None => return EventStatus::Queued,
            Some(Err(_)) => return EventStatus::Error,
            Some(Ok(())) => {}
        }
        match self.query_end() {
            Ok(Query::Ready) if self.failure().is_some() => EventStatus::Error,
            Ok(Query::Ready) => EventStatus::Complete,
            Ok(Query::Pending) => match self.start.as_ref().map(CuEvent::query) {
                Some(Ok(Query::Ready)) => EventStatus::Running,
                _ => EventStatus::Submitted,
            },
            Err(_) => EventStatus::Error,
        }
    }

    /// For the front end's retirement of commands in flight, asked at every
    /// submission: a driver query only of its stream's probe (see
    /// [`StreamClock`]), so that most submissions make none. `Submitted`
    /// when neither the event nor the probe is known complete, which the
    /// front end reads as "not yet": the command leaves with a later probe,
    /// a wait, a status query or `finish`.
    fn status_quiet(&self) -> EventStatus {
        let Some((clock, seq)) = self.order() else {
            // Not issued by a queue (held, or failed to issue): `status` knows.
            return self.status();
        };
        if !matches!(self.issue_outcome(), Some(Ok(()))) {
            return self.status();
        }
        if self.known_done() || clock.probe_covers(seq) {
            // Known complete now: `status` makes no driver call.
            return self.status();
        }
        EventStatus::Submitted
    }

    fn wait(&self) -> Result<()> {
        // A held command is waited for on the host until it is issued.
        if let Some(gate) = self.gate() {
            gate.wait()?;
        }
        self.synchronize()?;
        if let Some(e) = self.launch_failure() {
            return Err(e);
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
        if self.query_end().ok()? != Query::Ready {
            return None;
        }
        // Both device times come from the device's timing base, so that the
        // order of events on the device is the order of their timestamps. The
        // host's queue and submit times never come after the device's start.
        let start = self.dev().timestamp_ns(start_event).ok()?;
        let end = self.dev().timestamp_ns(self.end()).ok()?.max(start);
        if self.recording.load(Ordering::Acquire) {
            // The call's host time, on the device's timeline like the recorded time.
            let call = self.dev().host_to_device_ns(queued).ok()?;
            return Some(ProfilingInfo::recording(call, end));
        }
        let submit = submit.min(start);
        Some(ProfilingInfo { queued: queued.min(submit), submit, start, end })
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        if let Place::Now { clock, ticket, .. } = &self.place
            && *ticket != 0
        {
            clock.dev.launcher.forget(*ticket);
        }
        let done = self.known_done();
        let Some(end) = self.end.take() else { return };
        let check = match &mut self.place {
            Place::Now { check, .. } => check.take(),
            Place::Later { check, .. } => check.take(),
        };
        let dev = self.dev();
        match check {
            // Seen complete (by a wait or a status query, its own or of a
            // later record on its stream): the kernel no
            // longer writes its word, which goes back at once, without the
            // query that otherwise falls on whoever drops the event (the
            // front end's next submission, issue 15 goal 2).
            Some(Check::Kernel(word, _)) if done => {
                dev.free_word(word);
                dev.recycle_event(end);
            }
            // The kernel may still write its status word: the word goes back
            // to the pool once the event says the kernel is done.
            Some(Check::Kernel(word, _)) => dev.retire_status_word(word, end, self.stream_order()),
            Some(Check::Run(_) | Check::Runs(_)) | None => dev.recycle_event(end),
        }
    }
}

/// A profiling command's new end and start events, both timing (pooled
/// events have no timing).
pub(crate) fn timing_pair() -> Result<(Arc<CuEvent>, Option<CuEvent>)> {
    Ok((Arc::new(CuEvent::new(true)?), Some(CuEvent::new(true)?)))
}

/// An event the host completes. It never reaches the device: work that
/// waits for it is held back on the host until it completes (see `hold`).
/// Completing it releases that work, which is the queues' (`queue.rs`):
/// `UserEventImpl` and the drop are there.
pub(crate) struct CudaUserEvent {
    pub(crate) gate: Arc<Gate>,
}

impl CudaUserEvent {
    pub(crate) fn new() -> CudaUserEvent {
        CudaUserEvent { gate: Gate::new() }
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

/// The dependency of a submission on `event` (an event of this adapter);
/// with `device`, its stream waits for the event's device work.
pub(crate) fn dep(event: &dyn EventImpl, device: bool) -> Result<Dep<'_>> {
    let any = event as &dyn Any;
    if let Some(e) = any.downcast_ref::<CudaEvent>() {
        return Ok(e.dep(device));
    }
    if let Some(u) = any.downcast_ref::<CudaUserEvent>() {
        return Ok(Dep { gate: (!u.gate.is_open()).then(|| u.gate.clone()), end: None, pending: None });
    }
    Err(wrong_adapter())
}

/// The CUDA event a graph's event-wait node waits on to wait for `event`:
/// for a user event, one that is always complete, the launch being held on
/// the host until the user event is (see `CudaExecutable::enqueue`).
pub(crate) fn graph_wait_event(dev: &DeviceShared, event: &dyn EventImpl) -> Result<sys::CUevent> {
    let any = event as &dyn Any;
    if let Some(e) = any.downcast_ref::<CudaEvent>() {
        e.await_made();
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
