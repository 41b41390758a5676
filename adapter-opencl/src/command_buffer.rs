//! Native command buffers on `cl_khr_command_buffer`.
//!
//! The recorded commands are partitioned into steps ([`crate::steps`]): native
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
//! From 0.9.8 on (Intel's runtime: 1.0), a buffer that is one native step is
//! enqueued *directly* on `Q` where the device allows `Q`'s properties for
//! command-buffer enqueues: one `clEnqueueCommandBufferKHR` on `Q` after the
//! wait list (and the previous submission, unless it was made on the same
//! in-order `Q`), whose event is the submission's, as an eager command's.
//!
//! A native command (`urCommandBufferAppendNativeCommandExp`) is an eager
//! step whose work its callback recorded, once, at the append, into a
//! command-buffer of its own ([`crate::native_segment`]): instances recorded
//! anew never call it again.
//!
//! Recorded commands are *instances*: the first is recorded while appending
//! (the recording type, [`ClCommandBuffer`], holds its segments; finalize
//! finalizes them and returns [`ClExecutable`], which holds the instances);
//! an update of a recorded kernel command bumps the version, and the next
//! enqueue records a new instance from the updated commands (submissions in
//! flight keep theirs). Where a pending command-buffer cannot be enqueued
//! again (before 0.9.8 without the simultaneous-use capability), an
//! enqueue uses an idle instance of the current version or records another.
//!
//! Where the device's `cl_khr_command_buffer_mutable_dispatch` is used, the
//! kernel commands of updatable buffers are recorded as mutable dispatches,
//! and an update made while no submission of the buffer is in flight changes
//! the current instance in place (`clUpdateMutableCommandsKHR`, one call per
//! changed step) instead of bumping the version; what mutable dispatch
//! cannot express, or an update while a submission is in flight, re-records
//! as above.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use cl3::types::{cl_command_queue, cl_event};
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::toolbox::Recording;
use smallvec::SmallVec;

use crate::conv::ClResultExt;
use crate::device::{NativeCommandBuffers, Shared};
use crate::event::{ClEvent, WaitList};
use crate::exec;
use crate::ffi::{
    CL_COMMAND_BUFFER_MUTABLE_KHR, CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, RawEvent, cl_command_buffer_khr,
    cl_mutable_command_khr, cl_sync_point_khr,
};
use crate::mutable::{self, InPlace};
use crate::native_segment::NativeSegment;
use crate::one_launch::{self, RecordedKernels};
use crate::planned::HeldQueue;
use crate::program::ClKernel;
use crate::queue::ClQueue;
use crate::steps::{Placement, Planner, Step, StepKind};

/// Instances kept for one version before an enqueue waits for one to become
/// idle (only on devices that cannot enqueue a pending command-buffer).
const MAX_INSTANCES: usize = 8;

/// Most commands in a native step of an updatable buffer: what an update
/// re-records (see [`Planner::with_step_limit`]); not applied where mutable
/// dispatch updates all of [`ALL_MUTABLE_FIELDS`].
pub(crate) const UPDATABLE_STEP_LIMIT: usize = 32;

/// Arguments, global size and offset, local size: every field of a kernel
/// command that an update changes without switching kernels.
const ALL_MUTABLE_FIELDS: cl3::types::cl_bitfield = crate::ffi::CL_MUTABLE_DISPATCH_ARGUMENTS_KHR
    | crate::ffi::CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR
    | crate::ffi::CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR
    | crate::ffi::CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR;

/// The recorded commands, each with a native command's work, recorded once
/// at the append.
type Records = Recording<ClEvent, Option<NativeSegment>>;

/// One `cl_command_buffer_khr`: the recording of one native step. Instances
/// of successive versions share the segments of steps no update touched.
struct Segment {
    shared: Arc<Shared>,
    handle: cl_command_buffer_khr,
    /// Its kernel launches, tracked on devices that need one shape per
    /// kernel at a time ([`crate::one_launch`]).
    kernels: Option<RefCell<RecordedKernels>>,
    /// The sync point of each command recorded, in the step's order.
    sync: Vec<cl_sync_point_khr>,
    /// The `CL_MUTABLE_DISPATCH_*_KHR` fields its kernel commands are
    /// recorded updatable in (0: not a mutable command-buffer).
    updatable: cl3::types::cl_bitfield,
    /// Per command recorded, its mutable-dispatch handle (NULL for other
    /// commands and where `updatable` is 0).
    mutable: Vec<cl_mutable_command_khr>,
    /// What its commands need alive (the kernel objects its launches were
    /// recorded from, buffers of long fill patterns).
    kept: Vec<crate::launch::Kept>,
}

// SAFETY: the handle is only used under the front end's per-buffer lock;
// OpenCL objects may be used from any thread.
unsafe impl Send for Segment {}

impl Segment {
    fn native(&self) -> &NativeCommandBuffers {
        self.shared.device.command_buffers.as_ref().expect("native command buffers")
    }

    /// A new, empty `cl_command_buffer_khr` on the internal queue; mutable,
    /// with its kernel commands updatable in `updatable`, where that is not 0.
    fn new(shared: &Arc<Shared>, updatable: cl3::types::cl_bitfield) -> Result<Segment> {
        let native = shared.device.command_buffers.as_ref().expect("native command buffers");
        let mut flags = if native.setup.simultaneous_use_flag { CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR } else { 0 };
        if updatable != 0 {
            flags |= CL_COMMAND_BUFFER_MUTABLE_KHR;
        }
        // SAFETY: the internal queue belongs to the device the table was resolved for.
        let handle = unsafe { native.api.create(shared.internal_queue(), flags) }.cl("clCreateCommandBufferKHR")?;
        let kernels = shared.device.one_launch_per_kernel.then(RefCell::default);
        Ok(Segment {
            shared: shared.clone(),
            handle,
            kernels,
            sync: Vec::new(),
            updatable,
            mutable: Vec::new(),
            kept: Vec::new(),
        })
    }

    /// Records the step's next command after the step's commands at
    /// `positions` (its same-step dependencies).
    fn record(&mut self, command: &Command, positions: &[usize]) -> Result<()> {
        let deps: SmallVec<[cl_sync_point_khr; 4]> = positions.iter().map(|p| self.sync[*p]).collect();
        // SAFETY: the command was validated for this context and needs no
        // host memory (it is in a native step); the segment is recording and
        // the sync points are its own.
        let recorded = unsafe {
            exec::record(
                &self.shared,
                &self.native().api,
                self.handle,
                command,
                &deps,
                self.kernels.as_ref(),
                self.updatable,
            )?
        };
        self.kept.push(recorded.kept);
        self.sync.push(recorded.point);
        self.mutable.push(recorded.mutable);
        Ok(())
    }

    fn finalize(&self) -> Result<()> {
        // SAFETY: a recording command-buffer of this table.
        unsafe { self.native().api.finalize(self.handle) }.cl("clFinalizeCommandBufferKHR")
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: this segment owns the handle; it is not pending (segments
        // are dropped with the last instance holding them, when idle, or with
        // their buffer after its last submission).
        if let Err(code) = unsafe { self.native().api.release(self.handle) } {
            tracing::error!(code, "clReleaseCommandBufferKHR failed");
        }
    }
}

/// The native steps of one version of the commands, recorded.
struct Instance {
    version: u64,
    /// By step number; `None` for eager steps. Shared (`Rc`) with the
    /// instances of other versions where the step did not change.
    segments: Vec<Option<Rc<Segment>>>,
    /// The join of the latest submission that used this instance.
    last: Option<RawEvent>,
    /// Commands replaced by updates while this instance was recorded with
    /// them: their memory objects stay alive as long as the instance.
    retired: Vec<Command>,
}

// SAFETY: the command-buffer handles are only used under the front end's
// per-buffer lock; OpenCL objects may be used from any thread. The `Rc`s of
// a segment are all held by the instances of one buffer, which move between
// threads together and are only touched under that lock.
unsafe impl Send for Instance {}

impl Instance {
    fn new(version: u64) -> Instance {
        Instance { version, segments: Vec::new(), last: None, retired: Vec::new() }
    }

    fn is_idle(&self) -> bool {
        self.last.as_ref().is_none_or(RawEvent::is_done)
    }
}

/// The commands of a buffer and their partition into steps, in both phases.
struct Commands {
    shared: Arc<Shared>,
    desc: CommandBufferDesc,
    records: Records,
    planner: Planner,
    /// The mutable-dispatch fields of its segments (0: updates re-record).
    updatable: cl3::types::cl_bitfield,
}

/// A native command buffer being recorded: its first instance is recorded
/// as commands are appended.
pub(crate) struct ClCommandBuffer {
    commands: Commands,
    /// By step number, the first instance's segments; `None` for eager steps.
    segments: Vec<Option<Segment>>,
}

/// A finalized native command buffer.
struct ClExecutable {
    commands: Commands,
    instances: Vec<Instance>,
    version: u64,
    /// Per step, the version that last changed it (updates of its commands).
    step_version: Vec<u64>,
    /// The join of the latest submission.
    previous: Option<RawEvent>,
    /// The in-order queue of the latest submission, where it was made
    /// directly on it (which then orders the next one made there).
    previous_queue: Option<HeldQueue>,
    /// An empty, finalized command-buffer standing for one without native
    /// steps, so that it still has a native handle.
    placeholder: Option<Segment>,
}

impl ClCommandBuffer {
    pub(crate) fn new(shared: Arc<Shared>, desc: CommandBufferDesc) -> Result<ClCommandBuffer> {
        let Some(native) = shared.device.command_buffers.as_ref() else {
            return Err(err!(UnsupportedFeature, "the device has no native command buffers"));
        };
        let updatable = if desc.updatable { native.setup.mutable_fields } else { 0 };
        // Steps bound what an update re-records; where mutable dispatch
        // updates every field in place, only kernel switches, work-dimension
        // changes and empty launches re-record, and one step replays fastest.
        let planner = if desc.updatable && updatable != ALL_MUTABLE_FIELDS {
            Planner::with_step_limit(UPDATABLE_STEP_LIMIT)
        } else {
            Planner::default()
        };
        Ok(ClCommandBuffer {
            commands: Commands { shared, desc, records: Records::new(), planner, updatable },
            segments: Vec::new(),
        })
    }

    /// Finalizes the first instance's segments, and makes the placeholder
    /// where there are none.
    fn finish_recording(&mut self) -> Result<Option<Segment>> {
        for segment in self.segments.iter().flatten() {
            segment.finalize()?;
        }
        let steps = self.commands.planner.steps().len();
        self.segments.resize_with(steps, || None);
        if self.segments.iter().any(Option::is_some) {
            return Ok(None);
        }
        let placeholder = Segment::new(&self.commands.shared, 0)?;
        placeholder.finalize()?;
        Ok(Some(placeholder))
    }
}

impl Commands {
    /// Positions, in step `step`, of the dependencies of a command that are
    /// in that step (commands of a step are in append order).
    fn same_step_positions(&self, step: u32, deps: &[u32]) -> SmallVec<[usize; 4]> {
        let commands = &self.planner.steps()[step as usize].commands;
        deps.iter()
            .filter(|d| self.planner.step_of(**d) == step)
            .filter_map(|d| commands.binary_search(d).ok())
            .collect()
    }

    /// Records native step `step` of the current commands into a new segment.
    fn record_step(&self, step: u32) -> Result<Segment> {
        let mut segment = Segment::new(&self.shared, self.updatable)?;
        for &index in &self.planner.steps()[step as usize].commands {
            let record = &self.records[index];
            segment.record(record.command(), &self.same_step_positions(step, record.deps()))?;
        }
        segment.finalize()?;
        Ok(segment)
    }
}

impl ClExecutable {
    fn native(&self) -> &NativeCommandBuffers {
        self.commands.shared.device.command_buffers.as_ref().expect("native command buffers")
    }

    /// Records the current version into a new instance. Steps no update
    /// touched since `base` was recorded are shared with it, when its
    /// segments may be enqueued while it is pending or it is idle; the
    /// others are recorded again.
    fn build_instance(&self, base: Option<&Instance>) -> Result<Instance> {
        let mut instance = Instance::new(self.version);
        let mut recorded = 0usize;
        for (step, info) in self.commands.planner.steps().iter().enumerate() {
            if info.kind != StepKind::Native {
                instance.segments.push(None);
                continue;
            }
            let reuse = base
                .filter(|b| self.step_version[step] <= b.version)
                .and_then(|b| b.segments.get(step).cloned().flatten());
            let segment = match reuse {
                Some(segment) => segment,
                None => {
                    recorded += info.commands.len();
                    Rc::new(self.commands.record_step(step as u32)?)
                }
            };
            instance.segments.push(Some(segment));
        }
        tracing::debug!(
            version = self.version,
            commands = self.commands.records.len(),
            recorded,
            "OpenCL command buffer re-recorded (changed steps only)"
        );
        Ok(instance)
    }

    /// The instance the next submission uses.
    fn instance_for_submission(&mut self) -> Result<usize> {
        let version = self.version;
        let reuse_pending = !self.native().setup.instance_per_pending_submission;
        let usable = |i: &Instance| i.version == version && (reuse_pending || i.is_idle());
        if !self.instances.iter().any(usable) {
            let current: Vec<usize> =
                (0..self.instances.len()).filter(|i| self.instances[*i].version == version).collect();
            if current.len() >= MAX_INSTANCES {
                // Every instance is pending: wait for the one submitted first.
                if let Some(last) = &self.instances[current[0]].last {
                    last.wait().cl("waiting for an earlier submission of the command buffer")?;
                }
            } else {
                // The newest older version is the base: its segments are those
                // of the steps updated least recently.
                let base = self
                    .instances
                    .iter()
                    .filter(|i| i.version < version && (reuse_pending || i.is_idle()))
                    .max_by_key(|i| i.version);
                let instance = self.build_instance(base)?;
                self.instances.push(instance);
            }
        }
        self.instances.retain(|i| i.version == version || !i.is_idle());
        let found = self.instances.iter().position(usable);
        found.ok_or_else(|| err!(Unknown, "no instance of the command buffer is free after waiting for one"))
    }
}

impl ClExecutable {
    /// Enqueues a buffer of one native step directly on the application's
    /// queue (see the module documentation), where the device's version and
    /// queue properties allow; `None` (nothing enqueued) elsewhere.
    ///
    /// # Safety
    /// As for [`ExecutableCommandBufferImpl::enqueue`].
    unsafe fn enqueue_direct(
        &mut self,
        queue: &ClQueue,
        wait: &[&dyn EventImpl],
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        const OUT_OF_ORDER: cl3::types::cl_bitfield = 1 << 0;
        const PROFILING: cl3::types::cl_bitfield = 1 << 1;
        let steps = self.commands.planner.steps();
        let native = self.native();
        let Some((required, supported)) = native.setup.enqueue_queue_properties else { return Ok(None) };
        let one_native_step = steps.len() == 1 && steps[0].kind == StepKind::Native;
        // OpenCL runs a command buffer on queues of the device it was
        // recorded for: a queue of another device of a context over several
        // takes the submission through the internal queue.
        let own_device = queue.device_id() == self.commands.shared.device.id;
        if !one_native_step || !own_device || self.commands.shared.device.one_launch_per_kernel {
            return Ok(None);
        }
        let mut properties = if queue.in_order() { 0 } else { OUT_OF_ORDER };
        if queue.profiling {
            properties |= PROFILING;
        }
        if properties & !supported != 0 || required & !properties != 0 {
            return Ok(None);
        }
        let q = queue.raw();
        let mut list = WaitList::new(wait, &queue.deferred)?;
        let same_queue = queue.in_order() && self.previous_queue.as_ref().is_some_and(|held| held.0 == q);
        if let Some(previous) = self.previous.as_ref().filter(|_| !same_queue) {
            list.push(previous.retain());
        }
        let held = match (queue.in_order(), same_queue) {
            // SAFETY: the application's queue, valid during the call.
            (true, false) => Some(unsafe { HeldQueue::retain(q)? }),
            _ => None,
        };
        let instance = self.instance_for_submission()?;
        let segment = self.instances[instance].segments[0].as_ref().expect("native steps are recorded");
        // SAFETY: a finalized command-buffer of this table on a queue of its
        // device and context with properties the device allows; events of
        // this context.
        let event = unsafe { self.native().api.enqueue_on(segment.handle, q, list.handles()) }
            .cl("clEnqueueCommandBufferKHR")?;
        // SAFETY: a new reference from the enqueue.
        let event = unsafe { RawEvent::from_raw(event) };
        queue.flush_raw()?;
        self.instances[instance].last = Some(event.retain());
        self.previous = Some(event.retain());
        if !same_queue {
            self.previous_queue = held;
        }
        Ok(Some(ClEvent::submission(None, event, queue.profiling, Vec::new())))
    }

    /// The instance that updates may change in place, if any: mutable
    /// dispatch is used, no submission of the buffer is in flight, and an
    /// instance of the current version exists. The other instances go (they
    /// are idle, and a segment they do not share with it would no longer
    /// match the step versions).
    fn in_place_instance(&mut self) -> Option<usize> {
        if self.commands.updatable == 0 || !self.instances.iter().all(Instance::is_idle) {
            return None;
        }
        let current = self.instances.iter().position(|i| i.version == self.version)?;
        let keep = self.instances.swap_remove(current);
        self.instances.clear();
        self.instances.push(keep);
        // It has every command as recorded: nothing retired is in it.
        self.instances[0].retired.clear();
        Some(0)
    }

    /// Applies the updates of the native commands in `before` (each with
    /// the command the current instance recorded) to instance `current`
    /// through mutable dispatch, one `clUpdateMutableCommandsKHR` per step;
    /// returns the steps it could not update, to be recorded again (their
    /// old commands are kept with the instance).
    ///
    /// # Safety
    /// No submission of the buffer is in flight; the records hold validated
    /// launches.
    unsafe fn update_in_place(&mut self, current: usize, before: Vec<(u32, Command)>) -> Result<SmallVec<[u32; 4]>> {
        let planner = &self.commands.planner;
        let usm = &self.commands.shared.device.usm;
        let mut per_step: Vec<(u32, Vec<Box<mutable::OwnedUpdate>>)> = Vec::new();
        let mut rerecord: SmallVec<[u32; 4]> = SmallVec::new();
        for (index, old) in &before {
            let step = planner.step_of(*index);
            if rerecord.contains(&step) {
                continue;
            }
            let segment = self.instances[current].segments[step as usize].as_ref().expect("native steps are recorded");
            let position = planner.steps()[step as usize].commands.binary_search(index).ok();
            let handle = position.and_then(|p| segment.mutable.get(p).copied()).unwrap_or(std::ptr::null_mut());
            let outcome = match (old, self.commands.records[*index].command()) {
                (Command::KernelLaunch(o), Command::KernelLaunch(n)) => {
                    mutable::dispatch_update(usm, handle, o, n, segment.updatable)?
                }
                _ => InPlace::Rerecord,
            };
            match outcome {
                InPlace::Unchanged => {}
                InPlace::Rerecord => rerecord.push(step),
                InPlace::Update(update) => match per_step.iter_mut().find(|(s, _)| *s == step) {
                    Some((_, list)) => list.push(update),
                    None => per_step.push((step, vec![update])),
                },
            }
        }
        let api = &self.native().api;
        for (step, list) in &per_step {
            if rerecord.contains(step) {
                continue;
            }
            let segment = self.instances[current].segments[*step as usize].as_ref().expect("native steps are recorded");
            let configs: Vec<_> = list.iter().map(|u| &u.update).collect();
            // SAFETY: a finalized mutable command-buffer that no submission
            // uses (contract); handles recorded into it with the fields
            // `dispatch_update` checked; arguments of the validated launches.
            match unsafe { api.update_mutable(segment.handle, &configs) } {
                Ok(()) => {}
                Err(code) => {
                    tracing::debug!(code, step, "clUpdateMutableCommandsKHR failed: the step is recorded again");
                    rerecord.push(*step);
                }
            }
        }
        for (index, old) in before {
            if rerecord.contains(&planner.step_of(index)) {
                self.instances[current].retired.push(old);
            }
        }
        tracing::debug!(
            in_place = per_step.len(),
            rerecorded = rerecord.len(),
            "kernel update through mutable dispatch (steps)"
        );
        Ok(rerecord)
    }
}

impl RecordingCommandBufferImpl for ClCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let commands = &mut self.commands;
        // Kernels with a status word need one per launch: enqueued, not recorded.
        let status_word = exec::has_status_word(command)
            || alternatives
                .iter()
                .any(|k| downcast::<ClKernel>(k.imp() as &dyn Any, "a kernel").is_ok_and(|kernel| kernel.status_abi));
        // A native command's callback runs once, here, into a command-buffer
        // of its own, which every submission enqueues as an eager step.
        let native = match command {
            Command::Native(native) => Some(NativeSegment::record(&commands.shared, native)?),
            _ => None,
        };
        let eager =
            signal || !wait_events.is_empty() || exec::uses_host_memory(command) || status_word || native.is_some();
        let placement = commands.planner.decide(deps, eager);
        if !matches!(placement, Placement::NewEager(_)) {
            let step = placement.step();
            let positions: SmallVec<[usize; 4]> = match placement {
                Placement::Join(_) => commands.same_step_positions(step, deps),
                _ => SmallVec::new(),
            };
            if self.segments.len() <= step as usize {
                self.segments.resize_with(step as usize + 1, || None);
            }
            let slot = &mut self.segments[step as usize];
            let (mut segment, created) = match slot.take() {
                Some(segment) => (segment, false),
                None => (Segment::new(&commands.shared, commands.updatable)?, true),
            };
            let recorded = segment.record(command, &positions);
            // A segment created for this command goes when its first command fails.
            if recorded.is_ok() || !created {
                *slot = Some(segment);
            }
            recorded?;
        }
        commands.planner.apply(placement, deps);
        let signal = signal.then(ClEvent::signal);
        commands.records.push(command, deps, wait_events, signal.clone(), native)?;
        Ok(signal.map(|s| s as Arc<dyn EventImpl>))
    }

    fn finalize(mut self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed> {
        let placeholder = match self.finish_recording() {
            Ok(placeholder) => placeholder,
            Err(error) => return Err(FinalizeFailed::new(error, self)),
        };
        let ClCommandBuffer { commands, segments } = *self;
        let steps = commands.planner.steps();
        tracing::debug!(
            commands = commands.records.len(),
            native_steps = steps.iter().filter(|s| s.kind == StepKind::Native).count(),
            eager_steps = steps.iter().filter(|s| s.kind == StepKind::Eager).count(),
            "OpenCL command buffer finalized"
        );
        let mut first = Instance::new(0);
        first.segments = segments.into_iter().map(|s| s.map(Rc::new)).collect();
        Ok(Box::new(ClExecutable {
            step_version: vec![0; steps.len()],
            commands,
            instances: vec![first],
            version: 0,
            previous: None,
            previous_queue: None,
            placeholder,
        }))
    }
}

impl ClExecutable {
    /// Enqueues native step `index` of `instance`: its command-buffer
    /// segment after `wait`, alone on the device where its kernels need it.
    ///
    /// # Safety
    /// `instance` is a finalized instance of this buffer; `wait` holds
    /// events of this context.
    unsafe fn enqueue_native_step(&self, instance: usize, index: usize, wait: &WaitList) -> Result<RawEvent> {
        let segment = self.instances[instance].segments[index].as_ref().expect("native steps are recorded");
        let enqueue = |wait: &[cl_event]| {
            // SAFETY: a finalized command-buffer of this table; valid events.
            let event = unsafe { self.native().api.enqueue(segment.handle, wait) }.cl("clEnqueueCommandBufferKHR")?;
            // SAFETY: a new reference from the enqueue.
            Ok(unsafe { RawEvent::from_raw(event) })
        };
        Ok(match &segment.kernels {
            Some(kernels) => one_launch::enqueue_exclusive(
                self.commands.shared.context.get(),
                None,
                &kernels.borrow().names,
                wait.handles(),
                enqueue,
            )?,
            None => enqueue(wait.handles())?,
        })
    }

    /// Enqueues an eager step, its one command after `wait` and its own
    /// wait events on the internal queue; hands its status check to
    /// `checks` and its event to its signal event.
    ///
    /// # Safety
    /// `internal` is this context's internal queue; `wait` holds events of
    /// this context.
    unsafe fn enqueue_eager_step(
        &self,
        step: &Step,
        mut wait: WaitList,
        internal: cl_command_queue,
        step_profiling: bool,
        checks: &mut Vec<Arc<ClEvent>>,
    ) -> Result<RawEvent> {
        let record = &self.commands.records[step.commands[0]];
        for e in record.wait_events() {
            if let Some(resolved) = e.resolve() {
                wait.add_retained(downcast::<ClEvent>(&*resolved as &dyn Any, "a wait event")?);
            }
        }
        let (event, status) = match &record.extra {
            // SAFETY: events of this context.
            Some(native) => (unsafe { native.enqueue(&wait)? }, None),
            // SAFETY: the command was validated for this context when
            // appended or updated; raw host memory in it is valid at
            // every execution (the append's contract).
            None => unsafe { exec::enqueue(&self.commands.shared, internal, record.command(), &wait, false)? },
        };
        let wrapped = ClEvent::checked(event.retain(), step_profiling, status);
        if wrapped.has_status() {
            checks.push(wrapped.clone());
        }
        if let Some(signal) = record.signal() {
            signal.set_current(wrapped);
        }
        Ok(event)
    }
}

impl ExecutableCommandBufferImpl for ClExecutable {
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let queue = downcast::<ClQueue>(queue as &dyn Any, "the queue")?;
        // Submissions of planned buffers handed to the replayer come first.
        queue.drain();
        // SAFETY: `queue` is a queue of this adapter and context and `wait` events it may wait on
        // (`ExecutableCommandBufferImpl::enqueue`'s contract), which is `enqueue_direct`'s `# Safety`.
        if let Some(submission) = unsafe { self.enqueue_direct(queue, wait)? } {
            return Ok(submission);
        }
        let mut start = WaitList::new(wait, &queue.deferred)?;
        if let Some(previous) = &self.previous {
            start.push(previous.retain());
        }
        self.previous_queue = None;
        // SAFETY: the application's queue and events of this context.
        let first = unsafe { exec::marker(&self.commands.shared, queue.raw(), &start)? };
        queue.flush_raw()?;
        let instance = self.instance_for_submission()?;
        let internal = self.commands.shared.internal_queue();
        let step_profiling = queue.profiling && self.commands.desc.profiling;
        let steps = self.commands.planner.steps();
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
                // SAFETY: `instance` is finalized for this submission and
                // `wait` holds events of this context.
                StepKind::Native => unsafe { self.enqueue_native_step(instance, done.len(), &wait)? },
                // SAFETY: `internal` is this context's internal queue and
                // `wait` holds events of this context.
                StepKind::Eager => unsafe {
                    self.enqueue_eager_step(step, wait, internal, step_profiling, &mut checks)?
                },
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
        let last = unsafe { exec::marker(&self.commands.shared, queue.raw(), &ends)? };
        queue.flush_raw()?;
        self.instances[instance].last = Some(last.retain());
        self.previous = Some(last.retain());
        Ok(ClEvent::submission(Some(first), last, queue.profiling, checks))
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        let in_place = self.in_place_instance();
        let mut changed: SmallVec<[u32; 4]> = SmallVec::new();
        // In place: each changed native command as the current instance has it.
        let mut before: Vec<(u32, Command)> = Vec::new();
        for u in updates {
            let step = self.commands.planner.step_of(u.command);
            let old = self.commands.records.update_launch(u)?;
            if self.commands.planner.steps()[step as usize].kind == StepKind::Native {
                if in_place.is_some() {
                    if !before.iter().any(|(c, _)| *c == u.command) {
                        before.push((u.command, old));
                    }
                    continue;
                }
                changed.push(step);
                for instance in &mut self.instances {
                    instance.retired.push(old.clone());
                }
            }
        }
        if let Some(current) = in_place {
            // SAFETY: the new launches were validated (the trait's contract) and no submission of the
            // buffer is in flight (`in_place_instance` answered only then), as `update_in_place`
            // requires.
            changed.extend(unsafe { self.update_in_place(current, before)? });
        }
        if !changed.is_empty() {
            self.version += 1;
            for step in changed {
                self.step_version[step as usize] = self.version;
            }
            tracing::debug!(version = self.version, "kernel update: the next enqueue re-records the changed steps");
        }
        Ok(())
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        ClEvent::renew_signal(&mut self.commands.records, command)
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        self.commands.records.set_wait_events(command, events)
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        let current = self.instances.iter().find(|i| i.version == self.version).or(self.instances.first());
        let handle = current
            .and_then(|i| i.segments.iter().flatten().next().map(|s| s.handle))
            .or_else(|| self.placeholder.as_ref().map(|p| p.handle))
            .map(|h| h as u64);
        handle.map(NativeHandle).ok_or_else(|| err!(InvalidOperation, "the command buffer has no native object yet"))
    }
}
