//! Events: OpenCL events, user events, command-buffer signal events and
//! submission events.
//!
//! Our wait lists order without propagating failure, while OpenCL may
//! terminate the commands that wait on an event with a negative status. So a
//! user event is an OpenCL user event that is always set to `CL_COMPLETE`;
//! the error the host gave it is kept beside it and reported by `status` and
//! `wait` only. The adapter never sets a negative status itself.

use std::any::Any;
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use cl3::types::{cl_event, cl_int};
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::Recording;
use cmdbuf_core::event::execution_error;
use opencl3::memory::ClMem;
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::conv::ClResultExt;
use crate::device::DeviceShared;
use crate::device::Shared;
use crate::ffi::{CL_COMPLETE, RawEvent};
use crate::flush::DeferredFlush;
use crate::replayer::Replayer;

const CL_RUNNING: cl_int = 1;
const CL_SUBMITTED: cl_int = 2;

fn status_of(code: cl_int) -> EventStatus {
    match code {
        CL_COMPLETE => EventStatus::Complete,
        CL_RUNNING => EventStatus::Running,
        CL_SUBMITTED => EventStatus::Submitted,
        c if c < 0 => EventStatus::Error,
        _ => EventStatus::Queued,
    }
}

fn failed(code: cl_int, what: &str) -> UrError {
    execution_error(
        Backend::OpenCl,
        format!("{what} failed with OpenCL status {code} ({})", cl3::error_codes::error_text(code)),
    )
}

/// The status word of one launch of a kernel that declares the adapter's
/// status ABI (see `program.rs`): a 4-byte buffer, zero when created, that
/// the kernel sets to a non-zero code when it cannot run as asked.
pub(crate) struct StatusWord {
    shared: Arc<Shared>,
    mem: opencl3::memory::Buffer<u32>,
    kernel: Arc<str>,
    value: OnceLock<u32>,
}

impl StatusWord {
    /// A new, zeroed status word for a launch of `kernel`.
    pub(crate) fn new(shared: Arc<Shared>, kernel: Arc<str>) -> Result<Arc<StatusWord>> {
        let mut zero = 0u32;
        // SAFETY: a valid context; COPY_HOST_PTR copies the 4 bytes of `zero`
        // before the call returns.
        let mem = unsafe {
            cl3::memory::create_buffer(
                shared.context.get(),
                cl3::memory::CL_MEM_READ_WRITE | cl3::memory::CL_MEM_COPY_HOST_PTR,
                size_of::<u32>(),
                (&raw mut zero).cast(),
            )
        }
        .cl("clCreateBuffer (kernel status word)")?;
        Ok(Arc::new(StatusWord { shared, mem: opencl3::memory::Buffer::new(mem), kernel, value: OnceLock::new() }))
    }

    /// The buffer to pass to the kernel.
    pub(crate) fn mem(&self) -> cl3::types::cl_mem {
        self.mem.get()
    }

    /// The code the kernel left, read once its launch has completed.
    fn read(&self) -> std::result::Result<u32, UrError> {
        if let Some(v) = self.value.get() {
            return Ok(*v);
        }
        let mut value = 0u32;
        // SAFETY: a blocking read of the 4-byte buffer into `value`, which
        // outlives the call; the launch that wrote it has completed.
        let event = unsafe {
            cl3::command_queue::enqueue_read_buffer(
                self.shared.status_queue()?,
                self.mem.get(),
                1,
                0,
                size_of::<u32>(),
                (&raw mut value).cast(),
                0,
                ptr::null(),
            )
        }
        .cl("clEnqueueReadBuffer (kernel status word)")?;
        // SAFETY: a new reference from the enqueue, released at once.
        drop(unsafe { RawEvent::from_raw(event) });
        Ok(*self.value.get_or_init(|| value))
    }

    /// `Err` when the kernel reported that it could not run.
    fn check(&self) -> Result<()> {
        match self.read()? {
            0 => Ok(()),
            1 => Err(execution_error(
                Backend::OpenCl,
                format!("kernel `{}` failed: its local-memory arguments are too small for the work-group", self.kernel),
            )),
            code => {
                Err(execution_error(Backend::OpenCl, format!("kernel `{}` failed with status {code}", self.kernel)))
            }
        }
    }
}

/// A submission handed to the replayer: its event once the replayer has
/// enqueued its commands.
pub(crate) struct PendingReplay {
    device: Arc<DeviceShared>,
    /// Set once, right after the job is handed, before the event is given
    /// out (0: made on the caller's thread, nothing to wait for).
    ticket: AtomicU64,
    made: OnceLock<Arc<ClEvent>>,
}

impl PendingReplay {
    pub(crate) fn new(device: Arc<DeviceShared>) -> Arc<PendingReplay> {
        Arc::new(PendingReplay { device, ticket: AtomicU64::new(0), made: OnceLock::new() })
    }

    /// Records the ticket the replay was handed with.
    pub(crate) fn handed(&self, ticket: u64) {
        Replayer::count_handed();
        self.ticket.store(ticket, Ordering::Release);
    }

    /// What the job made: the submission's event, or an event that reports
    /// why it could not be made.
    pub(crate) fn set(&self, event: Arc<ClEvent>) {
        if self.made.set(event).is_err() {
            tracing::error!("a planned replay was made twice");
        }
    }

    /// The submission's event, if the replayer has made it.
    pub(crate) fn peek(&self) -> Option<&Arc<ClEvent>> {
        self.made.get()
    }

    /// The submission's event, once the replayer has made it.
    pub(crate) fn resolve(&self) -> Arc<ClEvent> {
        if let Some(made) = self.made.get() {
            return made.clone();
        }
        self.device.replayer.worker.wait_made(self.ticket.load(Ordering::Acquire));
        match self.made.get() {
            Some(made) => made.clone(),
            // Every handed job runs before its ticket is made (and the
            // worker runs every handed job before it stops).
            None => ClEvent::failed(
                execution_error(
                    Backend::OpenCl,
                    "the replayer made no event for this command-buffer submission".to_string(),
                ),
                None,
            ),
        }
    }
}

/// An event of this adapter.
pub(crate) struct ClEvent {
    kind: Kind,
}

/// What the profiling times of a command's event are.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Timing {
    /// None: the queue does not profile.
    Off,
    /// The driver's four times.
    Profiled,
    /// A timestamp recording's ([`ProfilingInfo::recording`]): the driver's
    /// queued time (taken in the enqueue call) and end time (the marker ran
    /// once the work before it had finished).
    Recording,
}

enum Kind {
    /// The event of one OpenCL command, with the status word of a kernel
    /// launch that has one, and the deferred flush of its queue where the
    /// command is an eager one not flushed at once (`flush.rs`).
    Command { raw: RawEvent, timing: Timing, status: Option<Arc<StatusWord>>, queue: Option<Arc<DeferredFlush>> },
    /// A user event; `error` is what the host failed it with.
    User { raw: RawEvent, error: Mutex<Option<UrError>> },
    /// A command-buffer command's signal event: the event of its latest
    /// execution, complete before the first.
    Signal { current: Mutex<Option<Arc<ClEvent>>> },
    /// A command-buffer submission, from the marker that starts it to the
    /// marker that joins its last commands; `checks` are the events of its
    /// kernel launches with status words, whose failures it reports. `first`
    /// is `None` where one command both starts and ends the submission: a
    /// second reference to it would cost a retain and a release per
    /// submission that an eager launch does not pay.
    /// `queue`: a planned submission's queue, told of host waits.
    Submission {
        first: Option<RawEvent>,
        last: RawEvent,
        profiling: bool,
        checks: Vec<Arc<ClEvent>>,
        queue: Option<Arc<DeferredFlush>>,
    },
    /// A command-buffer submission handed to the device's replayer, of the
    /// queue whose deferred flush is `queue`: the submission's event once the
    /// replayer has enqueued its commands (`replayer.rs`).
    Pending { replay: Arc<PendingReplay>, queue: Arc<DeferredFlush> },
    /// A submission the replayer could not make: `error`, reported once the
    /// commands it did enqueue (`after`, a marker behind them where one could
    /// be enqueued) have completed.
    Failed { error: UrError, after: Option<RawEvent> },
}

impl ClEvent {
    /// The event of a command just enqueued on a queue with or without profiling.
    pub(crate) fn command(raw: RawEvent, profiling: bool) -> Arc<ClEvent> {
        ClEvent::checked(raw, profiling, None)
    }

    /// The event of a command that may have a kernel status word.
    pub(crate) fn checked(raw: RawEvent, profiling: bool, status: Option<Arc<StatusWord>>) -> Arc<ClEvent> {
        ClEvent::of_queue(raw, profiling, status, None)
    }

    /// The event of an eager command on a queue whose flush is deferred.
    pub(crate) fn eager(
        raw: RawEvent,
        profiling: bool,
        status: Option<Arc<StatusWord>>,
        queue: &Arc<DeferredFlush>,
    ) -> Arc<ClEvent> {
        ClEvent::of_queue(raw, profiling, status, Some(queue.clone()))
    }

    fn of_queue(
        raw: RawEvent,
        profiling: bool,
        status: Option<Arc<StatusWord>>,
        queue: Option<Arc<DeferredFlush>>,
    ) -> Arc<ClEvent> {
        let timing = if profiling { Timing::Profiled } else { Timing::Off };
        Arc::new(ClEvent { kind: Kind::Command { raw, timing, status, queue } })
    }

    /// The event of a timestamp recording's marker on a profiling queue.
    pub(crate) fn recording(raw: RawEvent) -> Arc<ClEvent> {
        Arc::new(ClEvent { kind: Kind::Command { raw, timing: Timing::Recording, status: None, queue: None } })
    }

    /// Flushes the queue of an eager command or a one-command submission
    /// not flushed yet.
    fn start(&self) {
        if let Kind::Command { queue: Some(queue), .. } | Kind::Submission { queue: Some(queue), .. } = &self.kind {
            queue.flush();
        }
    }

    /// Whether the event carries a kernel status word.
    pub(crate) fn has_status(&self) -> bool {
        matches!(&self.kind, Kind::Command { status: Some(_), .. })
    }

    /// A user event of `context`.
    pub(crate) fn user(context: cl3::types::cl_context) -> Result<Arc<ClEvent>> {
        let raw = cl3::event::create_user_event(context).cl("clCreateUserEvent")?;
        // SAFETY: clCreateUserEvent returned a new reference.
        let raw = unsafe { RawEvent::from_raw(raw) };
        Ok(Arc::new(ClEvent { kind: Kind::User { raw, error: Mutex::new(None) } }))
    }

    /// A signal event, complete until its command first runs.
    pub(crate) fn signal() -> Arc<ClEvent> {
        Arc::new(ClEvent { kind: Kind::Signal { current: Mutex::new(None) } })
    }

    /// The event of a command-buffer submission; `first` is `None` where one
    /// command is the whole submission.
    pub(crate) fn submission(
        first: Option<RawEvent>,
        last: RawEvent,
        profiling: bool,
        checks: Vec<Arc<ClEvent>>,
    ) -> Arc<ClEvent> {
        Arc::new(ClEvent { kind: Kind::Submission { first, last, profiling, checks, queue: None } })
    }

    /// The event of a planned submission on the queue whose deferred flush
    /// is `queue`, told when the host waits for it.
    pub(crate) fn planned_submission(
        first: Option<RawEvent>,
        last: RawEvent,
        profiling: bool,
        checks: Vec<Arc<ClEvent>>,
        queue: Arc<DeferredFlush>,
    ) -> Arc<ClEvent> {
        Arc::new(ClEvent { kind: Kind::Submission { first, last, profiling, checks, queue: Some(queue) } })
    }

    /// A submission handed to the replayer, on the queue whose deferred
    /// flush is `queue`.
    pub(crate) fn pending(replay: Arc<PendingReplay>, queue: &Arc<DeferredFlush>) -> Arc<ClEvent> {
        Arc::new(ClEvent { kind: Kind::Pending { replay, queue: queue.clone() } })
    }

    /// A submission that failed with `error` after enqueueing what `after`
    /// follows.
    pub(crate) fn failed(error: UrError, after: Option<RawEvent>) -> Arc<ClEvent> {
        Arc::new(ClEvent { kind: Kind::Failed { error, after } })
    }

    /// A new signal event for command `command` of a command buffer's
    /// record (`InvalidOperation` if it was appended without one).
    pub(crate) fn renew_signal<X>(records: &mut Recording<ClEvent, X>, command: u32) -> Result<Arc<dyn EventImpl>> {
        let signal = ClEvent::signal();
        records.replace_signal(command, signal.clone())?;
        Ok(signal)
    }

    /// Points a signal event at its command's latest execution.
    pub(crate) fn set_current(&self, event: Arc<ClEvent>) {
        if let Kind::Signal { current } = &self.kind {
            *current.lock() = Some(event);
        }
    }

    /// What a command that waits on this event must wait on now: `None` for
    /// a signal event before its command first ran.
    pub(crate) fn wait_handle(&self) -> Option<RawEvent> {
        match &self.kind {
            Kind::Command { raw, .. } | Kind::User { raw, .. } => Some(raw.retain()),
            Kind::Signal { current } => current.lock().as_ref().and_then(|e| e.wait_handle()),
            Kind::Submission { last, .. } => Some(last.retain()),
            Kind::Pending { replay, .. } => replay.resolve().wait_handle(),
            Kind::Failed { after, .. } => after.as_ref().map(RawEvent::retain),
        }
    }
}

impl EventImpl for ClEvent {
    /// `CL_EVENT_COMMAND_QUEUE` of a command's event (null for user events).
    fn adopted_native_queue(&self) -> Option<cmdbuf_core::NativeHandle> {
        let Kind::Command { raw, .. } = &self.kind else { return None };
        match cl3::event::get_event_info(raw.get(), cl3::event::CL_EVENT_COMMAND_QUEUE) {
            Ok(cl3::info_type::InfoType::Ptr(queue)) if queue != 0 => Some(cmdbuf_core::NativeHandle(queue as u64)),
            _ => None,
        }
    }

    /// The `cl_event`: of the command, of the user event, of a signal
    /// event's latest execution, or of a submission's last marker. Its
    /// queue is flushed: the application may poll it or wait on it from a
    /// queue of its own.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        self.start();
        let raw = match &self.kind {
            Kind::Command { raw, .. } | Kind::User { raw, .. } => raw.get(),
            Kind::Submission { last, .. } => last.get(),
            Kind::Pending { replay, .. } => return replay.resolve().native_handle(),
            Kind::Failed { error, after } => match after {
                Some(after) => after.get(),
                None => return Err(error.clone()),
            },
            Kind::Signal { current } => match &*current.lock() {
                Some(event) => return event.native_handle(),
                None => {
                    return Err(cmdbuf_core::err!(
                        UnsupportedFeature,
                        "a signal event has no cl_event before its first run"
                    ));
                }
            },
        };
        Ok(cmdbuf_core::NativeHandle(raw as u64))
    }

    /// The status, after flushing the queue of an eager command not
    /// flushed yet: a command polled for must start (`flush.rs`).
    fn status(&self) -> EventStatus {
        self.start();
        self.status_quiet()
    }

    fn status_quiet(&self) -> EventStatus {
        match &self.kind {
            Kind::Command { raw, status, .. } => match status_of(raw.execution_status()) {
                EventStatus::Complete if status.as_ref().is_some_and(|s| s.check().is_err()) => EventStatus::Error,
                s => s,
            },
            Kind::User { raw, error } => match status_of(raw.execution_status()) {
                EventStatus::Complete if error.lock().is_some() => EventStatus::Error,
                s => s,
            },
            Kind::Signal { current } => current.lock().as_ref().map_or(EventStatus::Complete, |e| e.status_quiet()),
            Kind::Submission { first, last, checks, .. } => match status_of(last.execution_status()) {
                EventStatus::Complete if checks.iter().any(|c| c.status_quiet() == EventStatus::Error) => {
                    EventStatus::Error
                }
                s if s.is_terminal() => s,
                _ if first.as_ref().unwrap_or(last).is_done() => EventStatus::Running,
                s => s,
            },
            // Not made yet: none of its commands is enqueued.
            Kind::Pending { replay, .. } => replay.peek().map_or(EventStatus::Queued, |e| e.status_quiet()),
            Kind::Failed { after, .. } => match after {
                Some(after) if !after.is_done() => EventStatus::Running,
                _ => EventStatus::Error,
            },
        }
    }

    fn wait(&self) -> Result<()> {
        self.start();
        match &self.kind {
            Kind::Command { queue: Some(queue), .. }
            | Kind::Submission { queue: Some(queue), .. }
            | Kind::Pending { queue, .. } => queue.host_waits(),
            _ => {}
        }
        match &self.kind {
            Kind::Command { raw, status, .. } => {
                raw.wait().map_err(|_| failed(raw.execution_status(), "the command"))?;
                match raw.execution_status() {
                    c if c < 0 => Err(failed(c, "the command")),
                    _ => status.as_ref().map_or(Ok(()), |s| s.check()),
                }
            }
            Kind::User { raw, error } => {
                raw.wait().cl("clWaitForEvents on a user event")?;
                error.lock().clone().map_or(Ok(()), Err)
            }
            Kind::Signal { current } => {
                let current = current.lock().clone();
                current.map_or(Ok(()), |e| e.wait())
            }
            Kind::Submission { last, checks, .. } => {
                last.wait().map_err(|_| failed(last.execution_status(), "the command-buffer submission"))?;
                match last.execution_status() {
                    c if c < 0 => Err(failed(c, "the command-buffer submission")),
                    _ => checks.iter().try_for_each(|c| c.wait()),
                }
            }
            Kind::Pending { replay, .. } => replay.resolve().wait(),
            Kind::Failed { error, after } => {
                if let Some(after) = after {
                    // The error to report is the submission's, whatever the marker's.
                    let _ = after.wait();
                }
                Err(error.clone())
            }
        }
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        // An application may poll for the times as for the status.
        self.start();
        match &self.kind {
            Kind::Command { raw, timing: Timing::Profiled, .. } if raw.is_done() => raw.timestamps(),
            Kind::Command { raw, timing: Timing::Recording, .. } if raw.is_done() => {
                raw.timestamps().map(|t| ProfilingInfo::recording(t.queued, t.end))
            }
            Kind::Signal { current } => current.lock().as_ref().and_then(|e| e.profiling()),
            Kind::Pending { replay, .. } => replay.peek().and_then(|e| e.profiling()),
            Kind::Submission { first, last, profiling: true, .. } if last.is_done() => {
                let (first, last) = (first.as_ref().unwrap_or(last).timestamps()?, last.timestamps()?);
                Some(ProfilingInfo { queued: first.queued, submit: first.submit, start: first.end, end: last.end })
            }
            _ => None,
        }
    }
}

impl UserEventImpl for ClEvent {
    fn complete(&self, result: Result<()>) {
        let Kind::User { raw, error } = &self.kind else {
            tracing::error!("complete called on an event that is not a user event");
            return;
        };
        *error.lock() = result.err();
        // Always CL_COMPLETE: commands waiting on it must still run.
        if let Err(code) = cl3::event::set_user_event_status(raw.get(), CL_COMPLETE) {
            tracing::error!(code, "clSetUserEventStatus failed");
        }
    }
}

/// A wait list that holds its events, for a submission the replayer makes
/// after the call that gave them has returned (`replayer.rs`). Events of
/// submissions the replayer has not made yet are resolved when it makes
/// this one, after them.
#[derive(Default)]
pub(crate) struct HeldWaitList {
    raw: SmallVec<[RawEvent; 2]>,
    events: SmallVec<[Arc<ClEvent>; 1]>,
    pending: SmallVec<[Arc<PendingReplay>; 1]>,
}

impl HeldWaitList {
    /// The events behind adapter events, as [`WaitList::new`] has them for a
    /// command of the queue whose deferred flush is `on`.
    pub(crate) fn new(events: &[&dyn EventImpl], on: &Arc<DeferredFlush>) -> Result<HeldWaitList> {
        let mut list = HeldWaitList::default();
        for e in events {
            let event = downcast::<ClEvent>(*e as &dyn Any, "a wait-list event")?;
            match &event.kind {
                Kind::Command { queue: Some(queue), .. } | Kind::Pending { queue, .. }
                    if Arc::ptr_eq(queue, on) && on.in_order => {}
                Kind::Pending { replay, .. } => list.pending.push(replay.clone()),
                _ => {
                    event.start();
                    list.raw.extend(event.wait_handle());
                }
            }
        }
        Ok(list)
    }

    /// Adds an event, resolved when the list is.
    pub(crate) fn add(&mut self, event: Arc<ClEvent>) {
        self.events.push(event);
    }

    /// The wait list, once every submission it names is made.
    pub(crate) fn resolve(self) -> WaitList<'static> {
        let mut list = WaitList::default();
        for raw in self.raw {
            list.push(raw);
        }
        for replay in self.pending {
            list.add_retained(&replay.resolve());
        }
        for event in self.events {
            list.add_retained(&event);
        }
        list
    }
}

/// The OpenCL events a wait list stands for, for the duration of a call.
///
/// The handles of the events it was given are borrowed from them (`'a`):
/// a wait list of an eager launch costs no `clRetainEvent` and
/// `clReleaseEvent` per event (two driver calls that take the event's lock
/// on PoCL, per node of an eager fork-join). What is not borrowed (the
/// execution a signal event stands for now, which the next execution of its
/// command replaces, and raw events given to [`push`](Self::push)) is held
/// by a reference of the list's own.
#[derive(Default)]
pub(crate) struct WaitList<'a> {
    keep: SmallVec<[RawEvent; 2]>,
    handles: SmallVec<[cl_event; 8]>,
    events: PhantomData<&'a ClEvent>,
}

impl<'a> WaitList<'a> {
    /// The events behind adapter events (signal events resolve to their
    /// current execution, and are left out before the first), for a command
    /// of the queue whose deferred flush is `on`: the queues of the others'
    /// eager commands not flushed yet are flushed (`flush.rs`). The eager
    /// commands of `on`'s own queue are left out where that queue runs in
    /// order: it orders them already, and a driver that sees a dependency
    /// schedules by it (PoCL 5.0: an eager fork-join of 1,000 launches on
    /// such a queue took 45 µs per launch with them, 35-40 without).
    pub(crate) fn new(events: &[&'a dyn EventImpl], on: &Arc<DeferredFlush>) -> Result<WaitList<'a>> {
        let mut list = WaitList::default();
        for e in events {
            let event = downcast::<ClEvent>(*e as &dyn Any, "a wait-list event")?;
            match &event.kind {
                Kind::Command { queue: Some(queue), .. } if Arc::ptr_eq(queue, on) => {
                    if on.in_order {
                        continue;
                    }
                }
                // The queue was drained before its command's wait list was
                // made (`ClQueue::drain`), or this is a later submission of
                // the replayer's, which makes them in order: the replay is in
                // the queue, before the command.
                Kind::Pending { queue, .. } if Arc::ptr_eq(queue, on) && on.in_order => continue,
                _ => event.start(),
            }
            list.add_started(event);
        }
        Ok(list)
    }

    /// Adds one event, borrowed for the list's lifetime, for a command of
    /// another queue than the event's (the context's internal queue).
    pub(crate) fn add(&mut self, event: &'a ClEvent) {
        event.start();
        self.add_started(event);
    }

    fn add_started(&mut self, event: &'a ClEvent) {
        match &event.kind {
            Kind::Command { raw, .. } | Kind::User { raw, .. } | Kind::Submission { last: raw, .. } => {
                self.handles.push(raw.get());
            }
            Kind::Signal { .. } | Kind::Pending { .. } | Kind::Failed { .. } => self.add_retained(event),
        }
    }

    /// Adds one event that may be dropped before the list: the list takes
    /// a reference of its own.
    pub(crate) fn add_retained(&mut self, event: &ClEvent) {
        event.start();
        if let Some(raw) = event.wait_handle() {
            self.push(raw);
        }
    }

    /// Adds one raw event.
    pub(crate) fn push(&mut self, raw: RawEvent) {
        self.handles.push(raw.get());
        self.keep.push(raw);
    }

    /// The handles, valid while the list lives.
    pub(crate) fn handles(&self) -> &[cl_event] {
        &self.handles
    }

    /// Number of events.
    pub(crate) fn len(&self) -> usize {
        self.handles.len()
    }

    /// Whether the list is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Pointer for an OpenCL call: NULL when empty.
    pub(crate) fn as_ptr(&self) -> *const cl_event {
        if self.handles.is_empty() { ptr::null() } else { self.handles.as_ptr() }
    }
}
