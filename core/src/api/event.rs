//! Events: completion of queue commands, command-buffer submissions and
//! command-buffer commands.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use smallvec::SmallVec;

use crate::adapter::{EventImpl, UserEventImpl};
use crate::context::{Context, ContextId};
use crate::error::{Result, UrError};
pub use crate::objects::Event;
pub use crate::types::event::{EventStatus, ProfilingInfo};
use crate::{ensure, err};

impl Event {
    /// An event for work that starts when `first` does and ends when `last`
    /// does (its status and profiling interval span both; with `profiled`
    /// false it reports no timestamps), and that reports the first failure
    /// among `parts`, which `last` is ordered after: the event of a
    /// submission made of several commands. `first` and `last` must share a
    /// context; a part may also be of a context whose events that context's
    /// queues wait for ([`Context::waits_on_events_of`]).
    pub fn span(first: &Event, last: &Event, parts: &[Event], profiled: bool) -> Result<Event> {
        ensure!(
            first.context == last.context
                && parts
                    .iter()
                    .all(|p| p.context == first.context || crate::registry::waits_across(first.context, p.context)),
            InvalidEvent,
            "a span of events of several contexts"
        );
        let parts = parts.iter().map(|p| p.imp.clone()).collect();
        let imp = Arc::new(SpanEvent {
            first: first.imp.clone(),
            last: last.imp.clone(),
            profiled,
            parts,
            first_is_work: false,
        });
        Ok(Event { imp, context: first.context, captured: None, _live: crate::live::Live::new() })
    }

    /// Wraps an adapter event of `context`.
    pub(crate) fn from_imp(imp: Arc<dyn EventImpl>, context: &Context) -> Event {
        Event { imp, context: context.id(), captured: None, _live: crate::live::Live::new() }
    }

    /// Blocks until the command completes; returns the command's error if it failed.
    pub fn wait(&self) -> Result<()> {
        self.imp.wait()
    }

    /// Waits until the command has ended (complete or failed), also when the
    /// wait itself fails before that (a transient driver failure): the
    /// status is then polled until it is terminal. Returns the wait's
    /// error, if any. For what must not go on while the command may still
    /// run: freeing the memory it writes, a callback promised at its end.
    pub fn wait_ended(&self) -> Result<()> {
        let result = self.wait();
        if result.is_err() {
            let mut pause = std::time::Duration::from_micros(50);
            while !self.status().is_terminal() {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(5));
            }
        }
        result
    }

    /// Waits for all events; returns the first error after all have ended.
    /// The events may belong to several contexts, as UR's `urEventWait` takes
    /// them (UR's conformance case `urEventWaitTest.WaitWithMultipleContexts`):
    /// each is waited for in turn.
    pub fn wait_all(events: &[&Event]) -> Result<()> {
        let mut first = None;
        for e in events {
            if let Err(err) = e.wait() {
                first.get_or_insert(err);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Current status.
    pub fn status(&self) -> EventStatus {
        self.imp.status()
    }

    /// Profiling timestamps: `ProfilingInfoNotAvailable` unless the command
    /// ran on a profiling queue and has completed.
    pub fn profiling_info(&self) -> Result<ProfilingInfo> {
        self.imp.profiling().ok_or_else(|| {
            crate::err!(ProfilingInfoNotAvailable, "the event has no timestamps (not complete, or not profiled)")
        })
    }

    /// The native object behind the event (see [`crate::interop`] for each
    /// backend's); `UnsupportedFeature` where the backend has none.
    /// A command-buffer signal event names its latest execution's event.
    pub fn native_handle(&self) -> Result<crate::NativeHandle> {
        match self.resolve() {
            Some(imp) => imp.native_handle(),
            None => Err(crate::err!(UnsupportedFeature, "the event has no native event before its first execution")),
        }
    }

    /// The event object passed to adapters.
    pub(crate) fn imp(&self) -> &Arc<dyn EventImpl> {
        &self.imp
    }

    /// The adapter event that waiting on this event means waiting on now, or
    /// `None` when there is nothing to wait for (a command-buffer signal event
    /// before the first enqueue). Adapters call this when they use a wait
    /// event, so that signal events of software command buffers resolve to
    /// their latest execution.
    pub(crate) fn resolve(&self) -> Option<Arc<dyn EventImpl>> {
        let any: &dyn Any = &*self.imp;
        if let Some(forwarding) = any.downcast_ref::<ForwardingEvent>() {
            return forwarding.current();
        }
        if let Some(span) = any.downcast_ref::<SpanEvent>() {
            // A graph's span may end in a software command buffer's span.
            return Event {
                imp: span.last.clone(),
                context: self.context,
                captured: None,
                _live: crate::live::Live::new(),
            }
            .resolve();
        }
        Some(self.imp.clone())
    }

    /// The adapter event itself when waiting on this event means waiting on
    /// it (any event but a software command buffer's signal event or a
    /// span, which [`resolve`](Self::resolve) to another).
    fn direct(&self) -> Option<&Arc<dyn EventImpl>> {
        let any: &dyn Any = &*self.imp;
        (!any.is::<ForwardingEvent>() && !any.is::<SpanEvent>()).then_some(&self.imp)
    }

    /// Runs `callback` with the final status (complete or failed) once the
    /// command has ended, on a host thread of the front end's
    /// (`ur-event-callback`, reused between callbacks) that waits for it
    /// (`urEventSetCallback`).
    pub fn on_complete(&self, callback: impl FnOnce(EventStatus) + Send + 'static) -> Result<()> {
        let event = self.clone();
        crate::host_threads::CALLBACKS.run(move || {
            // The status, not the error, is what the callback reports;
            // a failed wait must not run it before the command has ended
            // (a bridged dependency would release its dependents early).
            let _ = event.wait_ended();
            callback(event.status());
        })
    }

    /// Waits as a wait list does, for the host work that must start after
    /// this event: the event's own failure is not returned (wait lists order,
    /// they do not propagate failure), but a wait that failed before the
    /// event ended is, since what waits must then not start.
    pub(crate) fn wait_to_order(&self) -> Result<()> {
        match self.wait() {
            Err(e) if !self.status().is_terminal() => Err(e),
            _ => Ok(()),
        }
    }

    /// Whether both handles are the same event.
    pub fn same_event(&self, other: &Event) -> bool {
        Arc::ptr_eq(&self.imp, &other.imp)
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").field("status", &self.status()).finish()
    }
}

/// An event the host completes (OpenCL's `clCreateUserEvent`): commands that
/// wait on [`event`](UserEvent::event) start once [`complete`](UserEvent::complete)
/// is called. Dropping it uncompleted fails it, so nothing waits forever.
///
/// ```
/// use cmdbuf::*;
/// # let ctx = Context::new(&cmdbuf_cpu::default_device()).unwrap();
/// let queue = Queue::new(&ctx, QueueProperties::default())?;
/// let buf = UsmAllocation::new(&ctx, UsmKind::Device, 4)?;
/// let gate = UserEvent::new(&ctx)?;
/// let fill = queue.usm_fill(buf.ptr(), &[7], 4, &[gate.event()])?;
/// assert_ne!(fill.status(), EventStatus::Complete);
/// gate.complete()?;
/// fill.wait()?;
/// # Ok::<(), UrError>(())
/// ```
pub struct UserEvent {
    imp: Arc<dyn UserEventImpl>,
    event: Event,
    completed: AtomicBool,
}

impl UserEvent {
    /// A new, incomplete user event of `context`.
    pub fn new(context: &Context) -> Result<UserEvent> {
        let imp = context.imp().user_event_create()?;
        let event = Event::from_imp(imp.clone(), context);
        Ok(UserEvent { imp, event, completed: AtomicBool::new(false) })
    }

    /// The event to put in wait lists.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Completes the event; `InvalidOperation` if it already was.
    pub fn complete(&self) -> Result<()> {
        self.finish(Ok(()))
    }

    /// Fails the event with `message` (as `AdapterSpecific`); `InvalidOperation`
    /// if it was already completed.
    pub fn fail(&self, message: impl Into<String>) -> Result<()> {
        self.finish(Err(UrError::AdapterSpecific(crate::error::Detail::msg(message.into()))))
    }

    /// Fails the event with `error` itself, keeping its code;
    /// `InvalidOperation` if it was already completed.
    pub(crate) fn fail_with(&self, error: UrError) -> Result<()> {
        self.finish(Err(error))
    }

    fn finish(&self, result: Result<()>) -> Result<()> {
        ensure!(!self.completed.swap(true, Ordering::AcqRel), InvalidOperation, "the user event was already completed");
        self.imp.complete(result);
        Ok(())
    }
}

impl Drop for UserEvent {
    fn drop(&mut self) {
        if !self.completed.load(Ordering::Acquire) {
            let _ = self.fail("the user event was dropped before it was completed");
        }
    }
}

impl fmt::Debug for UserEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserEvent").field("status", &self.event.status()).finish()
    }
}

/// Resolves a wait list for an adapter call, checking every event belongs to
/// `context`, or to a context whose events the adapter waits for device-side
/// ([`Context::waits_on_events_of`]), and is no event of a capture.
pub(crate) fn resolve_wait_list(context: ContextId, events: &[&Event]) -> Result<Resolved> {
    let mut out = SmallVec::new();
    for (i, e) in events.iter().enumerate() {
        check_wait_event(context, e, i)?;
        out.extend(e.resolve());
    }
    Ok(out)
}

/// Events a wait list resolved to, each retained.
pub(crate) type Resolved = SmallVec<[Arc<dyn EventImpl>; 4]>;

/// A wait list resolved for an adapter call as [`resolve_wait_list`]
/// resolves it, with the same checks, for a call that does not keep it:
/// the events that stand for themselves (every event but a software
/// command buffer's signal event or a span) are borrowed from `events`,
/// and only the others' resolutions are retained, into `held`. Retaining
/// every event cost two atomic read-modify-writes per event per
/// submission, 20-40 ns each on a GPU machine's host (issue 31). The order
/// of the events is not kept: a wait list is a set.
#[inline]
pub(crate) fn resolve_wait_refs<'a>(
    context: ContextId,
    events: &[&'a Event],
    held: &'a mut Resolved,
) -> Result<SmallVec<[&'a dyn EventImpl; 4]>> {
    // Most eager launches of an in-order queue wait for nothing: the call
    // and the loop's setup were 41 instructions of such a launch
    // (docs/performance.md).
    if events.is_empty() {
        return Ok(SmallVec::new());
    }
    resolve_listed_refs(context, events, held)
}

/// [`resolve_wait_refs`] for a list of one or more events.
fn resolve_listed_refs<'a>(
    context: ContextId,
    events: &[&'a Event],
    held: &'a mut Resolved,
) -> Result<SmallVec<[&'a dyn EventImpl; 4]>> {
    let mut out: SmallVec<[&'a dyn EventImpl; 4]> = SmallVec::new();
    for (i, e) in events.iter().enumerate() {
        check_wait_event(context, e, i)?;
        match e.direct() {
            Some(own) => out.push(&**own),
            None => held.extend(e.resolve()),
        }
    }
    if !held.is_empty() {
        let held: &'a Resolved = held;
        out.extend(held.iter().map(|e| &**e));
    }
    Ok(out)
}

/// Checks that event `i` of a wait list belongs to `context`, or to a
/// context whose events the adapter waits for device-side, and is no event
/// of a capture.
fn check_wait_event(context: ContextId, e: &Event, i: usize) -> Result<()> {
    // The id comparison is all a wait list of the queue's own events costs.
    ensure!(
        e.context == context || crate::registry::waits_across(context, e.context),
        InvalidEventWaitList,
        "event {i} of the wait list belongs to another context, whose events this context's queues cannot wait for"
    );
    check_not_captured(e, i)
}

/// Whether `event` stands for a command captured into a UR graph.
pub(crate) fn is_captured(event: &Event) -> bool {
    event.captured.is_some()
}

/// `InvalidEventWaitList` for a captured event in an eager wait list.
pub(crate) fn check_not_captured(event: &Event, i: usize) -> Result<()> {
    match event.captured {
        None => Ok(()),
        Some((graph, node)) => Err(err!(
            InvalidEventWaitList,
            "event {i} of the wait list stands for command {node} captured into graph #{graph}; it is usable only in \
             the wait lists of that capture"
        )),
    }
}

/// Borrows resolved events as the adapter interface takes them.
pub(crate) fn as_refs(events: &[Arc<dyn EventImpl>]) -> SmallVec<[&dyn EventImpl; 8]> {
    events.iter().map(|e| &**e).collect()
}

/// Checks events given to a command buffer belong to its context.
pub(crate) fn check_events(context: ContextId, events: &[&Event], what: &str) -> Result<Vec<Event>> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            ensure!(e.context == context, InvalidEventWaitList, "{what}: event {i} belongs to another context");
            check_not_captured(e, i).map_err(|err| err.in_context(what))?;
            Ok((*e).clone())
        })
        .collect()
}

/// A software command-buffer command's signal event (see the toolbox's
/// [`ForwardingEvent`](crate::adapter::toolbox::ForwardingEvent)).
pub(crate) type ForwardingEvent = crate::adapter::toolbox::ForwardingEvent<dyn EventImpl>;

/// The event of a software command-buffer or graph submission: from a
/// marker that completes when the submission may start to the join of its
/// last commands, so that its profiling interval covers the whole execution.
pub(crate) struct SpanEvent {
    pub(crate) first: Arc<dyn EventImpl>,
    pub(crate) last: Arc<dyn EventImpl>,
    /// Whether it reports profiling timestamps (graphs finalized without
    /// profiling do not).
    pub(crate) profiled: bool,
    /// Parts whose failure the span reports, though the join only orders
    /// after them (a graph's partitions).
    pub(crate) parts: Vec<Arc<dyn EventImpl>>,
    /// Whether `first` is the first command's own event rather than a
    /// marker before the work: the span then starts at its start, not its end.
    pub(crate) first_is_work: bool,
}

impl SpanEvent {
    fn failed_part(&self) -> Option<&Arc<dyn EventImpl>> {
        self.parts.iter().find(|p| p.status() == EventStatus::Error)
    }
}

impl EventImpl for SpanEvent {
    fn status(&self) -> EventStatus {
        match self.last.status() {
            EventStatus::Complete if self.failed_part().is_some() => EventStatus::Error,
            s if s.is_terminal() => s,
            _ if self.first.status().is_terminal() => EventStatus::Running,
            s => s,
        }
    }

    fn wait(&self) -> Result<()> {
        self.last.wait()?;
        self.failed_part().map_or(Ok(()), |p| p.wait())
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        if !self.profiled {
            return None;
        }
        if Arc::ptr_eq(&self.first, &self.last) {
            return self.last.profiling();
        }
        let (first, last) = (self.first.profiling()?, self.last.profiling()?);
        let start = if self.first_is_work { first.start } else { first.end };
        Some(ProfilingInfo { queued: first.queued, submit: first.submit, start, end: last.end })
    }
}

impl From<Event> for Arc<dyn EventImpl> {
    fn from(e: Event) -> Self {
        e.imp
    }
}

/// An error a command's event reports, for adapters: the command failed while running.
pub fn execution_error(backend: crate::Backend, message: impl Into<String>) -> UrError {
    UrError::AdapterSpecific(crate::error::Detail::adapter(backend, message.into()))
}
