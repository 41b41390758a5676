//! The software command buffer: records commands, and at each enqueue replays
//! them through the queue's eager operations, wiring the recorded DAG with
//! events.
//!
//! It gives every adapter the whole command-buffer API, updates and events
//! included, whatever its driver offers, and it is the reference semantics
//! native implementations are tested against (the conformance suite runs
//! every case through it as `[backend:N emulated]`).
//!
//! One enqueue submits, on the given queue:
//! 1. a marker waiting for the enqueue's wait list and the previous
//!    submission of this buffer (so submissions stay in order, across queues);
//! 2. each command, waiting for its sync-point dependencies and its wait
//!    events, or for the marker when it has no dependencies;
//! 3. a join waiting for every command nothing else waits on.
//!
//! The returned event spans marker to join. Updates change the record, which
//! is read at enqueue time only, so submissions in flight never see them.
//!
//! On an in-order queue the queue's order already runs each command after
//! everything enqueued before it, so a submission there is only its commands,
//! as eager submission of them would be: the first waits for the enqueue's
//! wait list and for the previous submission (unless that was on the same
//! queue, or is complete), each waits for its own wait events, and the span
//! runs from the first command's start to the last one's end. Dependency
//! wait lists, the marker and the join cost a wait list per command (which
//! some drivers, such as Intel's OpenCL CPU runtime, handle far more slowly
//! than none) and two more submissions: replay was up to twice as slow as
//! eager submission of the same commands there (issue 31).

use std::sync::Arc;

use smallvec::SmallVec;

use crate::adapter::toolbox::Recording;
use crate::adapter::{
    EventImpl, ExecutableCommandBufferImpl, FinalizeFailed, KernelUpdate, QueueImpl, RecordingCommandBufferImpl,
};
use crate::command::Command;
use crate::err;
use crate::event::{Event, ForwardingEvent, SpanEvent};
use crate::program::Kernel;
use crate::types::backend::Backend;
use crate::types::error::Result;
use crate::types::interop::NativeHandle;

/// The record: each command's signal event stands for its latest execution.
type Commands = Recording<ForwardingEvent>;

/// A software command buffer being recorded.
pub(crate) struct SoftwareCommandBuffer {
    backend: Backend,
    commands: Commands,
}

/// A finalized software command buffer: the record, replayed at each enqueue.
struct SoftwareExecutable {
    commands: Commands,
    /// What the next submission waits for: the previous one's join, or,
    /// when it failed halfway, every part of it that was submitted.
    previous: Vec<Arc<dyn EventImpl>>,
    /// The queue of the previous submission (its address), when that queue
    /// runs in order: a submission on the same queue is ordered after it
    /// without waiting. (An address reused by a new queue means the old one
    /// was dropped, which finished its work.)
    previous_queue: Option<usize>,
}

impl SoftwareCommandBuffer {
    pub(crate) fn new(backend: Backend) -> SoftwareCommandBuffer {
        SoftwareCommandBuffer { backend, commands: Commands::new() }
    }
}

impl RecordingCommandBufferImpl for SoftwareCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        _alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let signal = signal.then(|| Arc::new(ForwardingEvent::default()));
        self.commands.push(command, deps, wait_events, signal.clone(), ())?;
        Ok(signal.map(|s| s as Arc<dyn EventImpl>))
    }

    fn finalize(self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed> {
        tracing::debug!(backend = %self.backend, commands = self.commands.len(), "software command buffer finalized");
        Ok(Box::new(SoftwareExecutable { commands: self.commands, previous: Vec::new(), previous_queue: None }))
    }
}

impl ExecutableCommandBufferImpl for SoftwareExecutable {
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        // SAFETY: `queue` and `wait` are as `enqueue_ordered` requires (the trait's `enqueue`
        // contract), and `false` claims no order of the queue.
        unsafe { self.enqueue_ordered(queue, wait, false) }
    }

    unsafe fn enqueue_ordered(
        &mut self,
        queue: &dyn QueueImpl,
        wait: &[&dyn EventImpl],
        in_order: bool,
    ) -> Result<Arc<dyn EventImpl>> {
        let key = queue as *const dyn QueueImpl as *const () as usize;
        if in_order && !self.commands.is_empty() {
            // SAFETY: `queue` and `wait` are as the trait's `enqueue` requires; the queue runs in
            // order (`in_order`, true only then) and `key` is its address, as `submit_in_order`
            // requires.
            return unsafe { self.submit_in_order(queue, key, wait) };
        }
        self.previous_queue = None;
        let marker = {
            let mut start: SmallVec<[&dyn EventImpl; 8]> = SmallVec::from_slice(wait);
            start.extend(self.previous.iter().map(|e| &**e));
            // SAFETY: the wait events are events of this context (the trait's
            // contract), the previous submission's events are this queue's adapter's.
            unsafe { queue.enqueue_wait(&start, false)? }
        };
        let mut done: Vec<Arc<dyn EventImpl>> = Vec::with_capacity(self.commands.len());
        // SAFETY: the caller's contract; the marker was just returned by this queue.
        let result = unsafe { self.submit(queue, &marker, &mut done) };
        if result.is_err() {
            // Submitted parts run anyway: the next submission comes after them.
            self.previous = std::iter::once(marker).chain(done).collect();
        }
        result
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        self.commands.update_launches(updates)
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        let signal = Arc::new(ForwardingEvent::default());
        self.commands.replace_signal(command, signal.clone())?;
        Ok(signal)
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        self.commands.set_wait_events(command, events)
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        Err(err!(UnsupportedFeature, "a software command buffer has no native handle"))
    }
}

impl SoftwareExecutable {
    /// Submits the commands on an in-order queue (see the module's doc):
    /// no marker, no join, no dependency wait lists.
    ///
    /// # Safety
    /// As for [`ExecutableCommandBufferImpl::enqueue`]; `queue` runs in
    /// order, and `key` is its address.
    unsafe fn submit_in_order(
        &mut self,
        queue: &dyn QueueImpl,
        key: usize,
        wait: &[&dyn EventImpl],
    ) -> Result<Arc<dyn EventImpl>> {
        let previous: SmallVec<[Arc<dyn EventImpl>; 2]> = if self.previous_queue == Some(key) {
            SmallVec::new()
        } else {
            self.previous.iter().filter(|e| !e.status().is_terminal()).cloned().collect()
        };
        // The queue runs in order: the first event starts the span and the
        // last one ends after every other, so only those two are kept.
        let mut span: Option<(Arc<dyn EventImpl>, Arc<dyn EventImpl>)> = None;
        let mut failed = None;
        for rec in self.commands.iter() {
            let resolved: SmallVec<[Arc<dyn EventImpl>; 4]> =
                rec.wait_events().iter().filter_map(Event::resolve).collect();
            let mut list: SmallVec<[&dyn EventImpl; 8]> = SmallVec::new();
            if span.is_none() {
                list.extend(wait.iter().copied().chain(previous.iter().map(|e| &**e)));
            }
            list.extend(resolved.iter().map(|e| &**e));
            // SAFETY: the command was validated for this context when it was
            // appended or updated; the events are this adapter's, resolved now.
            match unsafe { queue.enqueue(rec.command(), &list) } {
                Ok(event) => {
                    if let Some(signal) = rec.signal() {
                        signal.set(event.clone());
                    }
                    match &mut span {
                        Some((_, last)) => *last = event,
                        None => span = Some((event.clone(), event)),
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            // Submitted parts run anyway, in this queue's order: the next
            // submission comes after the last of them. With none, nothing changed.
            if let Some((_, last)) = span {
                self.previous = vec![last];
                self.previous_queue = Some(key);
            }
            return Err(e);
        }
        let Some((head, tail)) = span else {
            return Err(crate::err!(InvalidOperation, "an empty command buffer is not submitted command by command"));
        };
        self.previous = vec![tail.clone()];
        self.previous_queue = Some(key);
        Ok(Arc::new(SpanEvent { first: head, last: tail, profiled: true, parts: Vec::new(), first_is_work: true }))
    }

    /// Submits the commands after `marker`, pushing each one's event on
    /// `done`, then the join; returns the submission's event.
    ///
    /// # Safety
    /// As for [`ExecutableCommandBufferImpl::enqueue`]; `marker` is an event of `queue`.
    unsafe fn submit(
        &mut self,
        queue: &dyn QueueImpl,
        marker: &Arc<dyn EventImpl>,
        done: &mut Vec<Arc<dyn EventImpl>>,
    ) -> Result<Arc<dyn EventImpl>> {
        let mut leaves: SmallVec<[Arc<dyn EventImpl>; 8]> = SmallVec::new();
        for rec in self.commands.iter() {
            let resolved: SmallVec<[Arc<dyn EventImpl>; 4]> =
                rec.wait_events().iter().filter_map(Event::resolve).collect();
            let event = {
                let mut list: SmallVec<[&dyn EventImpl; 8]> = rec.deps().iter().map(|d| &*done[*d as usize]).collect();
                if rec.deps().is_empty() {
                    list.push(&**marker);
                }
                list.extend(resolved.iter().map(|e| &**e));
                // SAFETY: the command was validated for this context when it was
                // appended or updated; the events are this adapter's, resolved now.
                unsafe { queue.enqueue(rec.command(), &list)? }
            };
            if let Some(signal) = rec.signal() {
                signal.set(event.clone());
            }
            if rec.is_leaf() {
                leaves.push(event.clone());
            }
            done.push(event);
        }
        let join = {
            let mut ends: SmallVec<[&dyn EventImpl; 8]> = leaves.iter().map(|e| &**e).collect();
            if ends.is_empty() {
                ends.push(&**marker);
            }
            // SAFETY: the events were just returned by this queue.
            unsafe { queue.enqueue_wait(&ends, false)? }
        };
        self.previous = vec![join.clone()];
        Ok(Arc::new(SpanEvent {
            first: marker.clone(),
            last: join,
            profiled: true,
            parts: Vec::new(),
            first_is_work: false,
        }))
    }
}
