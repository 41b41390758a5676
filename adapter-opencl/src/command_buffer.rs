//! Native command buffers on `cl_khr_command_buffer`.
//!
//! The recorded commands are partitioned into steps ([`crate::plan`]): native
//! steps are `cl_command_buffer_khr`s, eager steps (commands with wait or
//! signal events, or on raw host memory) are enqueued on their own at each
//! submission. A buffer without such commands is one `cl_command_buffer_khr`
//! enqueued once per submission.
//!
//! A submission, on the application's queue `Q`:
//! 1. a marker on `Q` after the submission's wait list and the previous
//!    submission of this buffer (so submissions stay in order across
//!    queues, and after everything before on an in-order `Q`);
//! 2. each step, in order, on the context's internal queue (the one the
//!    command-buffers were recorded for), after the marker or the steps it
//!    depends on, and its commands' wait events;
//! 3. a marker on `Q` after the steps nothing else waits for, so that later
//!    commands of an in-order `Q`, and `Q`'s finish, see the whole submission.
//!
//! The returned event spans the two markers.
//!
//! A native command (`urCommandBufferAppendNativeCommandExp`) is an eager
//! step whose work its callback recorded, once, at the append, into a
//! command-buffer of its own ([`crate::native_segment`]): instances recorded
//! anew never call it again.
//!
//! Recorded commands are *instances*: the first is recorded while appending;
//! an update of a recorded kernel command bumps the version, and the next
//! enqueue records a new instance from the updated commands (submissions in
//! flight keep theirs). Where a pending command-buffer cannot be enqueued
//! again (before 0.9.8 without the simultaneous-use capability), an
//! enqueue uses an idle instance of the current version or records another.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

use cl3::types::cl_event;
use smallvec::SmallVec;
use ur_core::adapter::{CommandBufferImpl, EventImpl, KernelUpdate, QueueImpl, downcast};
use ur_core::{Command, CommandBufferDesc, Event, Kernel, NativeHandle, Result, err};

use crate::context::Shared;
use crate::conv::ClResultExt;
use crate::device::NativeCommandBuffers;
use crate::event::{ClEvent, RawEvent, WaitList};
use crate::exec;
use crate::ffi::{CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, cl_command_buffer_khr, cl_sync_point_khr};
use crate::native_segment::NativeSegment;
use crate::one_launch::{self, RecordedKernels};
use crate::plan::{Placement, Planner, StepKind};
use crate::program::ClKernel;
use crate::queue::ClQueue;

/// Instances kept for one version before an enqueue waits for one to become
/// idle (only on devices that cannot enqueue a pending command-buffer).
const MAX_INSTANCES: usize = 8;

struct Record {
    command: Command,
    deps: SmallVec<[u32; 4]>,
    wait_events: Vec<Event>,
    signal: Option<Arc<ClEvent>>,
    /// A native command's work, recorded once at the append.
    native: Option<NativeSegment>,
}

/// One `cl_command_buffer_khr`.
struct Segment {
    handle: cl_command_buffer_khr,
    /// Its kernel launches, tracked on devices that need one shape per
    /// kernel at a time ([`crate::one_launch`]).
    kernels: Option<RefCell<RecordedKernels>>,
}

/// The native steps of one version of the commands, recorded.
struct Instance {
    shared: Arc<Shared>,
    version: u64,
    /// By step number; `None` for eager steps.
    segments: Vec<Option<Segment>>,
    /// Each command's sync point in its segment.
    sync: Vec<cl_sync_point_khr>,
    /// The join of the latest submission that used this instance.
    last: Option<RawEvent>,
    /// Commands replaced by updates while this instance was recorded with
    /// them: their memory objects stay alive as long as the instance.
    retired: Vec<Command>,
    /// The kernel objects its launches were recorded from.
    kernels: Vec<opencl3::kernel::Kernel>,
    finalized: bool,
}

// SAFETY: the command-buffer handles are only used under the front end's
// per-buffer lock; OpenCL objects may be used from any thread.
unsafe impl Send for Instance {}

impl Instance {
    fn new(shared: Arc<Shared>, version: u64) -> Instance {
        Instance {
            shared,
            version,
            segments: Vec::new(),
            sync: Vec::new(),
            last: None,
            retired: Vec::new(),
            kernels: Vec::new(),
            finalized: false,
        }
    }

    fn native(&self) -> &NativeCommandBuffers {
        self.shared.device.command_buffers.as_ref().expect("native command buffers")
    }

    fn is_idle(&self) -> bool {
        self.last.as_ref().is_none_or(RawEvent::is_done)
    }

    /// A new, empty `cl_command_buffer_khr` on the internal queue.
    fn create_segment(&self) -> Result<Segment> {
        let native = self.native();
        let flags = if native.plan.simultaneous_use_flag { CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR } else { 0 };
        // SAFETY: the internal queue belongs to the device the table was resolved for.
        let handle =
            unsafe { native.api.create(self.shared.internal_queue(), flags) }.cl("clCreateCommandBufferKHR")?;
        let kernels = self.shared.device.one_launch_per_kernel.then(RefCell::default);
        Ok(Segment { handle, kernels })
    }

    /// Records command `index` into step `step`'s segment (created on first
    /// use), after its dependencies of the same step.
    fn record(&mut self, step: u32, index: u32, command: &Command, same_step_deps: &[u32]) -> Result<()> {
        let step = step as usize;
        if self.segments.len() <= step {
            self.segments.resize_with(step + 1, || None);
        }
        let created = self.segments[step].is_none();
        if created {
            self.segments[step] = Some(self.create_segment()?);
        }
        let segment = self.segments[step].as_ref().expect("just created");
        let deps: SmallVec<[cl_sync_point_khr; 4]> = same_step_deps.iter().map(|d| self.sync[*d as usize]).collect();
        // SAFETY: the command was validated for this context and needs no
        // host memory (it is in a native step); the segment is recording and
        // the sync points are its own.
        let point = unsafe {
            exec::record(&self.shared, &self.native().api, segment.handle, command, &deps, segment.kernels.as_ref())
        };
        match point {
            Ok((point, kernel)) => {
                self.kernels.extend(kernel);
                if self.sync.len() <= index as usize {
                    self.sync.resize(index as usize + 1, 0);
                }
                self.sync[index as usize] = point;
                Ok(())
            }
            Err(e) => {
                if created {
                    self.segments[step] = None;
                }
                Err(e)
            }
        }
    }

    fn finalize(&mut self) -> Result<()> {
        let native = self.shared.device.command_buffers.as_ref().expect("native command buffers");
        for segment in self.segments.iter().flatten() {
            // SAFETY: a recording command-buffer of this table.
            unsafe { native.api.finalize(segment.handle) }.cl("clFinalizeCommandBufferKHR")?;
        }
        self.finalized = true;
        Ok(())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let Some(native) = self.shared.device.command_buffers.as_ref() else { return };
        for segment in self.segments.iter().flatten() {
            // SAFETY: this instance owns the handle; it is not pending (instances
            // are dropped when idle, or with their buffer after its last submission).
            if let Err(code) = unsafe { native.api.release(segment.handle) } {
                tracing::error!(code, "clReleaseCommandBufferKHR failed");
            }
        }
    }
}

/// A native command buffer.
pub(crate) struct ClCommandBuffer {
    shared: Arc<Shared>,
    desc: CommandBufferDesc,
    records: Vec<Record>,
    planner: Planner,
    instances: Vec<Instance>,
    version: u64,
    /// The join of the latest submission.
    previous: Option<RawEvent>,
    /// An empty, finalized command-buffer standing for one without native
    /// steps, so that it still has a native handle.
    placeholder: Option<Instance>,
}

impl ClCommandBuffer {
    pub(crate) fn new(shared: Arc<Shared>, desc: CommandBufferDesc) -> Result<ClCommandBuffer> {
        if shared.device.command_buffers.is_none() {
            return Err(err!(UnsupportedFeature, "the device has no native command buffers"));
        }
        let first = Instance::new(shared.clone(), 0);
        Ok(ClCommandBuffer {
            shared,
            desc,
            records: Vec::new(),
            planner: Planner::default(),
            instances: vec![first],
            version: 0,
            previous: None,
            placeholder: None,
        })
    }

    fn native(&self) -> &NativeCommandBuffers {
        self.shared.device.command_buffers.as_ref().expect("native command buffers")
    }

    /// Commands of `index`'s step that it depends on.
    fn same_step_deps(&self, step: u32, deps: &[u32]) -> SmallVec<[u32; 4]> {
        deps.iter().copied().filter(|d| self.planner.step_of(*d) == step).collect()
    }

    /// Records every native command of the current version into a new instance.
    fn build_instance(&self) -> Result<Instance> {
        let mut instance = Instance::new(self.shared.clone(), self.version);
        for (index, record) in self.records.iter().enumerate() {
            let step = self.planner.step_of(index as u32);
            if self.planner.steps()[step as usize].kind == StepKind::Native {
                let deps = self.same_step_deps(step, &record.deps);
                instance.record(step, index as u32, &record.command, &deps)?;
            }
        }
        instance.finalize()?;
        tracing::debug!(version = self.version, commands = self.records.len(), "OpenCL command buffer re-recorded");
        Ok(instance)
    }

    /// The instance the next submission uses.
    fn instance_for_submission(&mut self) -> Result<usize> {
        let version = self.version;
        let reuse_pending = !self.native().plan.instance_per_pending_submission;
        self.instances.retain(|i| i.version == version || !i.is_idle());
        if let Some(i) = self.instances.iter().position(|i| i.version == version && (reuse_pending || i.is_idle())) {
            return Ok(i);
        }
        let current: Vec<usize> = (0..self.instances.len()).filter(|i| self.instances[*i].version == version).collect();
        if current.len() >= MAX_INSTANCES {
            // Every instance is pending: wait for the one submitted first.
            let oldest = current[0];
            if let Some(last) = &self.instances[oldest].last {
                last.wait().cl("waiting for an earlier submission of the command buffer")?;
            }
            return Ok(oldest);
        }
        let instance = self.build_instance()?;
        self.instances.push(instance);
        Ok(self.instances.len() - 1)
    }
}

impl CommandBufferImpl for ClCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let index = self.records.len() as u32;
        // Kernels with a status word need one per launch: enqueued, not recorded.
        let status_word = exec::has_status_word(command)
            || alternatives
                .iter()
                .any(|k| downcast::<ClKernel>(k.imp() as &dyn Any, "a kernel").is_ok_and(|kernel| kernel.status_abi));
        // A native command's callback runs once, here, into a command-buffer
        // of its own, which every submission enqueues as an eager step.
        let native = match command {
            Command::Native(native) => Some(NativeSegment::record(&self.shared, native)?),
            _ => None,
        };
        let eager =
            signal || !wait_events.is_empty() || exec::uses_host_memory(command) || status_word || native.is_some();
        let placement = self.planner.decide(deps, eager);
        if !matches!(placement, Placement::NewEager(_)) {
            let step = placement.step();
            let same_step: SmallVec<[u32; 4]> = match placement {
                Placement::Join(_) => self.same_step_deps(step, deps),
                _ => SmallVec::new(),
            };
            self.instances[0].record(step, index, command, &same_step)?;
        }
        self.planner.apply(placement, deps);
        let signal = signal.then(ClEvent::signal);
        self.records.push(Record {
            command: command.clone(),
            deps: SmallVec::from_slice(deps),
            wait_events: wait_events.to_vec(),
            signal: signal.clone(),
            native,
        });
        Ok(signal.map(|s| s as Arc<dyn EventImpl>))
    }

    fn finalize(&mut self) -> Result<()> {
        self.instances[0].finalize()?;
        if self.instances[0].segments.iter().all(Option::is_none) {
            let mut placeholder = Instance::new(self.shared.clone(), 0);
            placeholder.segments.push(Some(placeholder.create_segment()?));
            placeholder.finalize()?;
            self.placeholder = Some(placeholder);
        }
        let steps = self.planner.steps();
        tracing::debug!(
            commands = self.records.len(),
            native_steps = steps.iter().filter(|s| s.kind == StepKind::Native).count(),
            eager_steps = steps.iter().filter(|s| s.kind == StepKind::Eager).count(),
            "OpenCL command buffer finalized"
        );
        Ok(())
    }

    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let queue = downcast::<ClQueue>(queue as &dyn Any, "the queue")?;
        let mut start = WaitList::new(wait)?;
        if let Some(previous) = &self.previous {
            start.push(previous.retain());
        }
        // SAFETY: the application's queue and events of this context.
        let first = unsafe { exec::marker(&self.shared, queue.raw(), &start)? };
        queue.flush_raw()?;
        let instance = self.instance_for_submission()?;
        let internal = self.shared.internal_queue();
        let step_profiling = queue.profiling && self.desc.profiling;
        let steps = self.planner.steps();
        let mut done: Vec<RawEvent> = Vec::with_capacity(steps.len());
        let mut checks = Vec::new();
        for step in steps {
            let mut wait = WaitList::default();
            if step.deps.is_empty() {
                wait.push(first.retain());
            }
            for d in &step.deps {
                wait.push(done[*d as usize].retain());
            }
            let event = match step.kind {
                StepKind::Native => {
                    let segment =
                        self.instances[instance].segments[done.len()].as_ref().expect("native steps are recorded");
                    let enqueue = |wait: &[cl_event]| {
                        // SAFETY: a finalized command-buffer of this table; valid events.
                        let event = unsafe { self.native().api.enqueue(segment.handle, wait) }
                            .cl("clEnqueueCommandBufferKHR")?;
                        // SAFETY: a new reference from the enqueue.
                        Ok(unsafe { RawEvent::from_raw(event) })
                    };
                    match &segment.kernels {
                        Some(kernels) => one_launch::enqueue_exclusive(
                            self.shared.context.get(),
                            &kernels.borrow().names,
                            wait.handles(),
                            enqueue,
                        )?,
                        None => enqueue(wait.handles())?,
                    }
                }
                StepKind::Eager => {
                    let record = &self.records[step.commands[0] as usize];
                    for e in &record.wait_events {
                        if let Some(resolved) = e.resolve() {
                            wait.add(downcast::<ClEvent>(&*resolved as &dyn Any, "a wait event")?);
                        }
                    }
                    let (event, status) = match &record.native {
                        // SAFETY: events of this context.
                        Some(native) => (unsafe { native.enqueue(&wait)? }, None),
                        // SAFETY: the command was validated for this context when
                        // appended or updated; raw host memory in it is valid at
                        // every execution (the append's contract).
                        None => unsafe { exec::enqueue(&self.shared, internal, &record.command, &wait)? },
                    };
                    let wrapped = ClEvent::checked(event.retain(), step_profiling, status);
                    if wrapped.has_status() {
                        checks.push(wrapped.clone());
                    }
                    if let Some(signal) = &record.signal {
                        signal.set_current(wrapped);
                    }
                    event
                }
            };
            done.push(event);
        }
        cl3::command_queue::flush(internal).cl("clFlush")?;
        let mut ends = WaitList::default();
        for (step, event) in steps.iter().zip(&done) {
            if !step.has_dependents {
                ends.push(event.retain());
            }
        }
        if ends.is_empty() {
            ends.push(first.retain());
        }
        // SAFETY: the application's queue and events of this context.
        let last = unsafe { exec::marker(&self.shared, queue.raw(), &ends)? };
        queue.flush_raw()?;
        self.instances[instance].last = Some(last.retain());
        self.previous = Some(last.retain());
        Ok(ClEvent::submission(first, last, queue.profiling, checks))
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        let mut rerecord = false;
        for u in updates {
            let step = self.planner.step_of(u.command);
            let old = std::mem::replace(
                &mut self.records[u.command as usize].command,
                Command::KernelLaunch(u.launch.clone()),
            );
            if self.planner.steps()[step as usize].kind == StepKind::Native {
                rerecord = true;
                for instance in &mut self.instances {
                    instance.retired.push(old.clone());
                }
            }
        }
        if rerecord {
            self.version += 1;
            tracing::debug!(version = self.version, "kernel update: the next enqueue re-records");
        }
        Ok(())
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        let signal = ClEvent::signal();
        let record = &mut self.records[command as usize];
        if record.signal.is_none() {
            return Err(err!(InvalidOperation, "command {command} has no signal event"));
        }
        record.signal = Some(signal.clone());
        Ok(signal)
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        self.records[command as usize].wait_events = events.to_vec();
        Ok(())
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        let current = self.instances.iter().find(|i| i.version == self.version).or(self.instances.first());
        let handle = current
            .and_then(|i| i.segments.iter().flatten().next())
            .or_else(|| self.placeholder.as_ref().and_then(|p| p.segments.iter().flatten().next()))
            .map(|s| s.handle as u64);
        handle.map(NativeHandle).ok_or_else(|| err!(InvalidOperation, "the command buffer has no native object yet"))
    }
}
