//! Pre-planned eager replay: the command-buffer path of devices whose
//! driver has no usable `cl_khr_command_buffer`, or whose command buffer is
//! slower than enqueueing the commands (see [`crate::device::replay_path`]).
//!
//! The record is the validated commands; finalize works out, once, what each
//! submission needs: which commands' events later commands wait for, which
//! commands end the buffer, which have signal events or status words. A
//! submission, on the application's queue `Q`:
//! 1. a marker after the submission's wait list and the previous submission
//!    of this buffer (submissions stay in order across queues); on an
//!    in-order `Q` without profiling, the first command waits for those
//!    itself instead;
//! 2. every command, in append order (a topological order), enqueued
//!    directly with the adapter's eager form of the command. On an in-order
//!    `Q` the queue's order is the dependencies; on an out-of-order `Q` each
//!    command waits for the events of its dependencies (or the marker);
//!    either way a command also waits for its current wait events;
//! 3. on an out-of-order `Q`, a marker after the commands nothing waits for;
//!    on an in-order `Q` the last command ends the submission;
//! 4. one `clFlush`.
//!
//! Unlike ur-core's software command buffer, nothing is validated or
//! wrapped per command at replay, events are only kept where something
//! waits for them, and `Q` is flushed once, not per command.
//!
//! A planned buffer has no `cl_command_buffer_khr`: its native handle is
//! `UnsupportedFeature`. Native commands run at each submission with `Q` as
//! their target, as on eager queues.

use std::any::Any;
use std::sync::Arc;

use smallvec::SmallVec;
use ur_core::adapter::EventBacking;
use ur_core::adapter::{
    EventImpl, ExecutableCommandBufferImpl, FinalizeFailed, KernelUpdate, QueueImpl, RecordingCommandBufferImpl,
    downcast,
};
use ur_core::{Command, CommandBufferDesc, Event, Kernel, NativeHandle, Result, err};

use crate::context::Shared;
use crate::event::{ClEvent, RawEvent, WaitList};
use crate::exec;
use crate::queue::ClQueue;

struct Record {
    command: Command,
    deps: SmallVec<[u32; 4]>,
    wait_events: Vec<Event>,
    signal: Option<Arc<ClEvent>>,
    /// Whether a later command depends on it (finalize).
    has_dependents: bool,
}

/// A command buffer replayed as pre-planned eager submissions, being recorded.
pub(crate) struct PlannedCommandBuffer {
    shared: Arc<Shared>,
    desc: CommandBufferDesc,
    records: Vec<Record>,
}

/// A finalized [`PlannedCommandBuffer`]: the planned record.
struct PlannedExecutable {
    shared: Arc<Shared>,
    desc: CommandBufferDesc,
    records: Vec<Record>,
    /// The join of the latest submission.
    previous: Option<RawEvent>,
}

impl PlannedCommandBuffer {
    pub(crate) fn new(shared: Arc<Shared>, desc: CommandBufferDesc) -> PlannedCommandBuffer {
        PlannedCommandBuffer { shared, desc, records: Vec::new() }
    }
}

impl RecordingCommandBufferImpl for PlannedCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        _alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let signal = signal.then(ClEvent::signal);
        self.records.push(Record {
            command: command.clone(),
            deps: SmallVec::from_slice(deps),
            wait_events: wait_events.to_vec(),
            signal: signal.clone(),
            has_dependents: false,
        });
        Ok(signal.map(|s| s as Arc<dyn EventImpl>))
    }

    fn finalize(self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed> {
        let PlannedCommandBuffer { shared, desc, mut records } = *self;
        for i in 0..records.len() {
            for d in records[i].deps.clone() {
                records[d as usize].has_dependents = true;
            }
        }
        tracing::debug!(
            commands = records.len(),
            replay = "planned",
            "OpenCL command buffer finalized for pre-planned eager replay"
        );
        Ok(Box::new(PlannedExecutable { shared, desc, records, previous: None }))
    }
}

impl ExecutableCommandBufferImpl for PlannedExecutable {
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let queue = downcast::<ClQueue>(queue as &dyn Any, "the queue")?;
        let q = queue.raw();
        let in_order = queue.in_order();
        let profiling = queue.profiling && self.desc.profiling;
        let mut start = WaitList::new(wait)?;
        if let Some(previous) = &self.previous {
            start.push(previous.retain());
        }
        // On an in-order queue without profiling the first command takes the
        // start's wait list itself and its event starts the submission: a
        // marker there would be one more command per submission, which is
        // what a one-command replay would lose to an eager launch by.
        let fused_start = in_order && !queue.profiling && !self.records.is_empty();
        let mut first = if fused_start {
            None
        } else {
            // SAFETY: the application's queue and events of this context.
            Some(unsafe { exec::marker(&self.shared, q, &start)? })
        };
        // Events of commands that a later command waits for, by command number.
        let mut events: Vec<Option<RawEvent>> = Vec::with_capacity(if in_order { 0 } else { self.records.len() });
        let mut ends = WaitList::default();
        let mut last = None;
        let mut checks = Vec::new();
        for record in &self.records {
            let mut wait = WaitList::default();
            match &first {
                None => std::mem::swap(&mut wait, &mut start),
                Some(_) if in_order => {}
                Some(first) => {
                    if record.deps.is_empty() {
                        wait.push(first.retain());
                    }
                    for d in &record.deps {
                        let event = events[*d as usize].as_ref().expect("dependencies keep their events");
                        wait.push(event.retain());
                    }
                }
            }
            for e in &record.wait_events {
                if let Some(resolved) = e.resolve() {
                    wait.add(downcast::<ClEvent>(&*resolved as &dyn Any, "a wait event")?);
                }
            }
            // SAFETY: the command was validated for this context when appended
            // or updated; raw host memory in it is valid at every execution
            // (the append's contract); `q` and the events are this context's.
            let (event, status) = unsafe { exec::enqueue(&self.shared, q, &record.command, &wait)? };
            if status.is_some() || record.signal.is_some() {
                let wrapped = ClEvent::checked(event.retain(), profiling, status);
                if wrapped.has_status() {
                    checks.push(wrapped.clone());
                }
                if let Some(signal) = &record.signal {
                    signal.set_current(wrapped);
                }
            }
            if first.is_none() {
                first = Some(event.retain());
            }
            if in_order {
                // The queue orders everything: only the last event is kept.
                last = Some(event);
            } else {
                if !record.has_dependents {
                    ends.push(event.retain());
                }
                events.push(record.has_dependents.then_some(event));
            }
        }
        let first = first.expect("a marker or the first command");
        let last = match last {
            Some(last) => last,
            None => {
                if ends.is_empty() {
                    ends.push(first.retain());
                }
                // SAFETY: the application's queue and events of this context.
                unsafe { exec::marker(&self.shared, q, &ends)? }
            }
        };
        queue.flush_raw()?;
        self.previous = Some(last.retain());
        Ok(ClEvent::submission(first, last, queue.profiling, checks))
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        // Submissions in flight hold their own references: the record is only
        // read while enqueueing.
        for u in updates {
            self.records[u.command as usize].command = Command::KernelLaunch(u.launch.clone());
        }
        Ok(())
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        ClEvent::renew_signal(&mut self.records[command as usize].signal, command)
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        self.records[command as usize].wait_events = events.to_vec();
        Ok(())
    }

    /// `UnsupportedFeature`: a pre-planned buffer has no
    /// `cl_command_buffer_khr` (see the module documentation).
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(err!(
            UnsupportedFeature,
            "this device replays command buffers as pre-planned eager submissions: there is no cl_command_buffer_khr"
        ))
    }
}
