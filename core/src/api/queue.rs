//! Queues and their eager operations (the `urEnqueue*` family).
//!
//! Every operation takes a wait list and returns an [`Event`], except the
//! blocking host-memory transfers, which return when the data is in place.
//! Memory commands have one eager path, [`Queue::enqueue`] of a [`Command`]
//! from its validating builders (the commands command buffers record); the
//! typed memory methods are one-line wrappers of it.
//! Memory commands are checked against the allocations and buffers they
//! touch; kernel launches are `unsafe` because device code may touch any
//! address.
//!
//! A queue can capture into a graph instead of executing ([`crate::capture`],
//! UR's graph capture): its enqueues then append to the capture's command
//! buffer and return captured events. The eager path pays one check of an
//! atomic flag for it. SYCL's queue recording lives above cmdbuf-core, in the
//! `cmdbuf-runtime` crate's queue.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;

use crate::adapter::{EventImpl, QueueImpl};
use crate::api::command_build::{HostSide, Memcpy};
use crate::api::queue_state::{CaptureSlot, KeepAlive, Op, QueueInner, keeps_same};
use crate::api::recorded::{CommandBuffer, QueueTarget};
use crate::capture;
use crate::command::Command;
use crate::context::Context;
use crate::device::Device;
use crate::ensure;
use crate::error::Result;
use crate::error::panic_message;
use crate::event::{Event, Resolved, UserEvent, as_refs, is_captured, resolve_wait_refs};
use crate::interop::{self, NativeCommand, NativeHandle, NativeScope, NativeTarget, Owner};
use crate::launch::KernelLaunch;
use crate::memory::{BufferMapping, MapFlags, MappedMemory, MemBuffer, MigrationFlags, UsmAdvice, UsmPtr};
use crate::objects::{HoldsFreedMemory, UsmInner};
use crate::rect::{RectLayout, RectRegion};
pub use crate::types::desc::QueueProperties;

mod graph_capture;
mod peer_copy;
mod usm_2d;

pub use crate::api::queue_state::{QueueLane, QueueSlot, QueueSlotGuard};

/// A queue. Clone retains; dropping the last handle waits for its commands,
/// except inside one of its own host tasks, where it cannot: the queue then
/// finishes on a host thread once the task has returned
/// ([`enqueue_host_task`](Queue::enqueue_host_task)).
#[derive(Clone)]
pub struct Queue {
    inner: Arc<QueueInner>,
}

impl Drop for QueueInner {
    fn drop(&mut self) {
        capture::queue_dropped(&self.capture, self.key());
        if HOST_TASK_OF.get() == self.key() {
            self.end_after_own_task();
            return;
        }
        finish_dropped(&*self.imp, self.in_flight.get_mut());
    }
}

/// What a dropped queue waits for: the adapter's queue, and what is in
/// flight besides (host tasks are no commands of the adapter's queue).
fn finish_dropped(imp: &dyn QueueImpl, in_flight: &InFlight) {
    if let Err(e) = imp.finish() {
        tracing::warn!(error = %e, "queue finish on drop failed");
    }
    for (event, _) in in_flight {
        if !event.status().is_terminal() {
            let _ = event.wait();
        }
    }
}

impl QueueInner {
    /// The drop of a queue whose last handle one of its own host tasks
    /// dropped (its closure held it). Nothing can be waited for here: what
    /// is in flight may wait for that very task (on an in-order queue, the
    /// commands after it; out of order, the marker that keeps freed USM
    /// until the task ends), and the task ends only once this returns. So
    /// the adapter's queue, what is in flight and the context go to a host
    /// thread, which finishes the queue as its drop would, after the task.
    fn end_after_own_task(&mut self) {
        let ending = Arc::new(parking_lot::Mutex::new(Some(EndingQueue {
            imp: self.imp.clone(),
            in_flight: std::mem::take(self.in_flight.get_mut()),
            _context: self.context.clone(),
            _sub_device: self.sub_device.clone(),
        })));
        let job = ending.clone();
        let started = crate::host_threads::HOST_TASKS.run(move || {
            if let Some(queue) = job.lock().take() {
                queue.finish();
            }
        });
        if let Err(e) = started {
            // Dropping the adapter's queue with commands in flight could
            // free what they use: kept for the process's life instead.
            tracing::warn!(error = %e, "no host thread to end a queue dropped by its own host task: it is leaked");
            std::mem::forget(ending.lock().take());
        }
    }
}

/// A queue dropped by one of its own host tasks, ending on a host thread.
struct EndingQueue {
    imp: Arc<dyn QueueImpl>,
    in_flight: InFlight,
    /// Kept until the adapter's queue has finished, as the queue kept them.
    _context: Context,
    _sub_device: Option<Device>,
}

impl EndingQueue {
    /// Waits for what the queue ran (its task included), then drops it all.
    fn finish(self) {
        finish_dropped(&*self.imp, &self.in_flight);
    }
}

/// Checks queue properties against what `device` offers.
fn check_properties(device: &Device, properties: QueueProperties) -> Result<()> {
    let info = device.info();
    ensure!(
        !properties.out_of_order || info.out_of_order_queues,
        InvalidQueueProperties,
        "{device} has no out-of-order queues"
    );
    ensure!(!properties.profiling || info.queue_profiling, InvalidQueueProperties, "{device} cannot profile");
    Ok(())
}

impl Queue {
    /// Creates a queue on the context's first device
    /// ([`Context::devices`]); `InvalidQueueProperties` when the device cannot
    /// run out of order or record timestamps as asked.
    #[tracing::instrument(level = "debug", skip(context), fields(device = %context.device()))]
    pub fn new(context: &Context, properties: QueueProperties) -> Result<Queue> {
        // A context over sub-devices of a root device is made on that root,
        // which it need not list: its first device is a sub-device then.
        Queue::on_device(context, &context.devices()[0], properties)
    }

    /// Creates a queue of `context` whose commands run on `device`: one of
    /// the context's devices or a sub-device of one at any depth
    /// ([`Context::holds_device`]); a device other than the one the context
    /// was made on uses the context's memory and programs and runs on its own
    /// share of it (`urQueueCreate` with a sub-device of the context's
    /// device), or on itself in a context over unrelated devices. `InvalidDevice` for any other device;
    /// `UnsupportedFeature` where the backend cannot run a sub-device's queue
    /// in its parent's context ([api.md](../docs/api.md#sub-devices));
    /// `InvalidQueueProperties` as for [`Queue::new`], against `device`.
    #[tracing::instrument(level = "debug", skip(context), fields(device = %device))]
    pub fn on_device(context: &Context, device: &Device, properties: QueueProperties) -> Result<Queue> {
        ensure!(context.holds_device(device), InvalidDevice, "{device} is not of {context:?} or a sub-device of one");
        check_properties(device, properties)?;
        if device == context.device() {
            // SAFETY: the properties were checked against the device's capabilities.
            let imp = unsafe { context.imp().queue_create(properties)? };
            return Ok(Queue::from_imp(context, properties, imp));
        }
        // SAFETY: `device` is a listed device or a sub-device of one (checked
        // above): a sub-device of the context's device where the context is
        // made on the family's root, else a device the context was made
        // across or a sub-device of one; sub-devices are of their parent's
        // adapter. The properties were checked against its capabilities.
        let imp = unsafe { context.imp().sub_device_queue_create(&**device.imp(), properties)? };
        Ok(Queue::wrap(context, Some(device.clone()), properties, imp))
    }

    /// Wraps an adapter queue of `context`.
    pub(crate) fn from_imp(context: &Context, properties: QueueProperties, imp: Box<dyn QueueImpl>) -> Queue {
        Queue::wrap(context, None, properties, imp)
    }

    fn wrap(
        context: &Context,
        sub_device: Option<Device>,
        properties: QueueProperties,
        imp: Box<dyn QueueImpl>,
    ) -> Queue {
        let queue = Queue {
            inner: Arc::new(QueueInner {
                context: context.clone(),
                sub_device,
                properties,
                completes_in_order: !properties.out_of_order || imp.completes_in_order(),
                imp: Arc::from(imp),
                in_flight: Mutex::default(),
                capture: CaptureSlot::default(),
                _live: crate::live::Live::new(),
            }),
        };
        // Freeing USM of the context looks at the queues that may use it.
        let weak: Weak<QueueInner> = Arc::downgrade(&queue.inner);
        context.tracker().add_queue(weak);
        queue
    }

    /// The queue's context.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The queue's device: the context's, or the sub-device it was made on
    /// ([`Queue::on_device`]).
    pub fn device(&self) -> &Device {
        self.inner.sub_device.as_ref().unwrap_or_else(|| self.inner.context.device())
    }

    /// The properties it was created with.
    pub fn properties(&self) -> QueueProperties {
        self.inner.properties
    }

    /// The adapter's queue.
    pub(crate) fn imp(&self) -> &dyn QueueImpl {
        &*self.inner.imp
    }

    /// The native queue (see [`crate::interop`]); inside a native command's
    /// callback enqueued on this queue, that command's target (on Vulkan the
    /// command buffer being recorded), found without taking any lock.
    pub fn native_handle(&self) -> Result<NativeHandle> {
        if let Some(target) = interop::running_target(Owner::Queue(self.key())) {
            return target
                .handle()
                .ok_or_else(|| crate::err!(UnsupportedFeature, "a CPU native command has no native queue"));
        }
        self.inner.imp.native_handle()
    }

    /// Enqueues a native command (`urEnqueueNativeCommandExp`): `callback`
    /// does backend-native work where its [`NativeScope`] says (see
    /// [`crate::interop`]), after the events of `wait` (and, on an in-order
    /// queue, everything before); the returned event completes when that
    /// work has. `mems` are buffers the work uses: kept alive until then and
    /// listed in the scope. Queue methods may be called from the callback,
    /// except blocking ones on the CPU (`InvalidOperation`). A capturing queue
    /// captures the command ([`crate::capture`]: it is appended to the
    /// capture's command buffer with
    /// [`CommandBuffer::append_native_command`]'s rules, so the callback runs
    /// when that backend's command buffers call it). Executed, the callback
    /// runs once and is dropped as soon as it has run (on the CPU, by a thread
    /// of its own: it may hold the queue's last handle), so a callback holding
    /// its own queue forms no cycle.
    ///
    /// # Safety
    /// The native work is unchecked: it must only touch memory that stays
    /// valid until the returned event completes, and leave the native objects
    /// as it found them (no release, no state the adapter relies on).
    #[tracing::instrument(level = "debug", skip_all, fields(mems = mems.len()))]
    pub unsafe fn enqueue_native_command(
        &self,
        mems: &[&MemBuffer],
        wait: &[&Event],
        callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'static,
    ) -> Result<Event> {
        let mems = self.native_mems(mems)?;
        // A captured callback runs at each execution where the backend calls
        // it per run; an executed one runs once and must not outlive its run.
        let captured = self.inner.capture.is_active() || wait.iter().any(|e| is_captured(e));
        let callback: Arc<interop::NativeFn> = if captured { Arc::new(callback) } else { interop::run_once(callback) };
        let native = NativeCommand::new(callback, mems, Owner::Queue(self.key()), None);
        self.submit_op(Op::Command(Command::Native(native)), wait)
    }

    /// What every native command checks: its buffers of this queue's context.
    fn native_mems(&self, mems: &[&MemBuffer]) -> Result<Vec<MemBuffer>> {
        for mem in mems {
            mem.check_context(&self.inner.context)?;
        }
        Ok(mems.iter().map(|m| (*m).clone()).collect())
    }

    /// [`enqueue_native_command`](Self::enqueue_native_command) for a
    /// callback that must have run, and be dropped, before this returns: UR's
    /// contract for `urEnqueueNativeCommandExp` ("executed immediately"),
    /// whose data need only live for the call. Where the callback's work goes
    /// to a native queue, the adapter calls it during the enqueue as always;
    /// on the CPU, whose native work is the callback itself, this blocks until
    /// the wait list (and, in order, everything before) has completed, then
    /// calls it on this thread, and returns its completed event. A callback
    /// that does not outlive the call cannot be captured: on a capturing
    /// queue this is `GraphCaptureUnsupported` (use
    /// [`enqueue_native_command`](Self::enqueue_native_command)).
    ///
    /// # Safety
    /// As for [`enqueue_native_command`](Self::enqueue_native_command), for
    /// the lifetime `'a` of what the callback borrows.
    pub unsafe fn enqueue_native_command_now<'a>(
        &self,
        mems: &[&MemBuffer],
        wait: &[&Event],
        callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'a,
    ) -> Result<Event> {
        self.check_not_capturing("a native command whose callback must run before its enqueue returns")?;
        let mems = self.native_mems(mems)?;
        if !self.inner.imp.native_commands_at_enqueue() {
            interop::check_not_in_host_command("a native command that runs now")?;
            let start = self.eager_events_wait(wait)?;
            // Wait lists order, they do not propagate failure; a wait that
            // failed before the dependencies ended must not run the command.
            start.wait_to_order()?;
            let native = interop::Borrowed::new(callback);
            let command = NativeCommand::new(native.shared(), mems, Owner::Queue(self.key()), None);
            // SAFETY: the host is the CPU's target, and the command's
            // dependencies have completed; later commands of an in-order
            // queue are enqueued after this returns.
            unsafe { command.invoke(self.device().backend(), NativeTarget::Host)? };
            return Ok(start);
        }
        let mut held = Resolved::new();
        let resolved = resolve_wait_refs(self.inner.context.id(), wait, &mut held)?;
        let native = interop::Borrowed::new(callback);
        let command = NativeCommand::new(native.shared(), mems, Owner::Queue(self.key()), None);
        let result = self.execute(Command::Native(command), &resolved);
        // The adapter called it during the enqueue; whatever still holds the
        // command from now on finds no callback.
        drop(native);
        result
    }

    /// Whether both handles are the same queue.
    pub fn same_queue(&self, other: &Queue) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// What a command buffer's submission needs of this queue.
    pub(crate) fn target(&self) -> QueueTarget<'_> {
        QueueTarget {
            context: &self.inner.context,
            imp: &*self.inner.imp,
            in_order: !self.inner.properties.out_of_order,
        }
    }

    /// The queue's identity while it lives (captures key their queues by it).
    pub(crate) fn key(&self) -> usize {
        self.inner.key()
    }

    /// Enqueues `command` after the events of `wait` (and, on an in-order
    /// queue, everything submitted before): the one eager path of every
    /// memory command (`urEnqueueUSMFill`, `urEnqueueMemBufferCopy`, ...),
    /// which the typed methods below wrap. The command comes from one of
    /// [`Command`]'s validating builders, the same ones command buffers
    /// record ([`CommandBuffer::append_command`] takes the same commands
    /// with the same rules): `InvalidContext` for a command of another
    /// context, `InvalidValue` for a kernel launch (launched from a
    /// [`KernelLaunch`] with [`launch_kernel`](Self::launch_kernel), which
    /// validates it). A capturing queue captures the command
    /// ([`crate::capture`]).
    ///
    /// Safe: commands over raw host memory are built by the `unsafe`
    /// builders (such as [`Command::buffer_read_host`]), whose callers
    /// promise that memory for every run of the command.
    ///
    /// ```
    /// use cmdbuf::*;
    /// # let device = cmdbuf_cpu::default_device();
    /// let ctx = Context::new(&device)?;
    /// let queue = Queue::new(&ctx, QueueProperties::default())?;
    /// let usm = UsmAllocation::new(&ctx, UsmKind::Shared, 64)?;
    /// let fill = Command::usm_fill(&ctx, usm.ptr(), &[7], 64)?;
    /// queue.enqueue(fill.clone(), &[])?.wait()?;
    ///
    /// let other = Context::new(&device)?;
    /// let foreign = Queue::new(&other, QueueProperties::default())?;
    /// assert!(matches!(foreign.enqueue(fill, &[]), Err(UrError::InvalidContext(_))));
    /// # Ok::<(), UrError>(())
    /// ```
    #[tracing::instrument(level = "trace", skip_all, fields(kind = %command.kind()))]
    pub fn enqueue(&self, command: Command, wait: &[&Event]) -> Result<Event> {
        command.check_context(&self.inner.context)?;
        self.enqueue_built(command, wait)
    }

    /// [`enqueue`](Self::enqueue) of a command its caller built for this
    /// queue's context (the typed methods), which needs no second check.
    fn enqueue_built(&self, command: Command, wait: &[&Event]) -> Result<Event> {
        self.submit_op(Op::Command(command), wait)
    }

    /// Executes `op`, or captures it when the queue captures (or joins a
    /// capture because `wait` holds a captured event).
    pub(crate) fn submit_op(&self, op: Op, wait: &[&Event]) -> Result<Event> {
        if self.inner.capture.is_active() {
            return capture::submit(&self.inner, op, wait, |op| self.submit_op(op, wait));
        }
        // Borrowed, not retained: the adapter does not keep the list.
        let mut held = Resolved::new();
        match resolve_wait_refs(self.inner.context.id(), wait, &mut held) {
            Ok(resolved) => self.execute_op(op, &resolved),
            Err(e) if wait.iter().any(|e| is_captured(e)) => {
                capture::submit_joining(&self.inner, op, wait, e, |op| self.submit_op(op, wait))
            }
            Err(e) => Err(e),
        }
    }

    /// Executes `op` after the resolved wait list.
    #[inline]
    pub(crate) fn execute_op(&self, op: Op, resolved: &[&dyn EventImpl]) -> Result<Event> {
        match op {
            Op::Command(command) => self.execute(command, resolved),
            Op::Kernel(kernel, _) => self.execute(Command::KernelLaunch(kernel), resolved),
            Op::Wait { barrier } => self.marker(resolved, barrier),
            Op::Graph(graph) => self.execute_command_buffer(graph.command_buffer(), resolved),
        }
    }

    /// Executes `command` after the resolved wait list.
    pub(crate) fn execute(&self, command: Command, resolved: &[&dyn EventImpl]) -> Result<Event> {
        // SAFETY: `command` was built by a validating constructor for this
        // queue's context; the wait events were checked to belong to it (or to a
        // context whose events its adapter waits for). Raw
        // host memory in the command comes from `unsafe` entry points whose
        // callers keep it valid, or from blocking calls that wait below.
        let event = unsafe { self.inner.imp.enqueue(&command, resolved)? };
        self.inner.track_command(event.clone(), command);
        Ok(Event::from_imp(event, &self.inner.context))
    }

    /// `GraphCaptureUnsupported` (which invalidates the capture) while the
    /// queue captures.
    pub(crate) fn check_not_capturing(&self, what: &str) -> Result<()> {
        if self.inner.capture.is_active() {
            return capture::refuse(&self.inner.capture, what);
        }
        Ok(())
    }

    /// Executes a peer copy built and checked by [`Queue::usm_copy_peer`],
    /// keeping both allocations alive until it completes.
    pub(crate) fn execute_peer_copy(&self, command: Command, resolved: &[Arc<dyn EventImpl>]) -> Result<Event> {
        // SAFETY: `usm_copy_peer` found each side in its allocation, one of
        // this context and one of a peer context whose access it checked is
        // enabled; the wait events belong to one of the two contexts.
        let event = unsafe { self.inner.imp.usm_copy_peer(&command, &as_refs(resolved))? };
        self.track(event.clone(), KeepAlive::Command(command));
        Ok(Event::from_imp(event, &self.inner.context))
    }

    /// Blocking calls never record: their host memory is borrowed for the call.
    fn submit_blocking(&self, command: Command, wait: &[&Event]) -> Result<()> {
        self.check_not_capturing("a blocking transfer")?;
        interop::check_not_in_host_command("a blocking transfer")?;
        let mut held = Resolved::new();
        let event = self.execute(command, &resolve_wait_refs(self.inner.context.id(), wait, &mut held)?)?;
        let result = event.wait();
        if result.is_err() && !event.status().is_terminal() {
            // The command might still write into the caller's slice: do not
            // return before the queue has drained.
            let _ = self.inner.imp.finish();
        }
        result
    }

    /// Keeps `command_buffer` alive until everything submitted to this
    /// queue so far has completed, after its adapter's enqueue failed: part
    /// of the submission may already run (the software command buffer
    /// submits command by command) and use memory the caller, seeing the
    /// error, releases. A barrier marks the point; if even that cannot be
    /// enqueued, the buffer is leaked rather than freed under running work.
    fn hold_after_failed_submission(&self, command_buffer: &CommandBuffer) {
        // SAFETY: an empty wait list.
        match unsafe { self.inner.imp.enqueue_wait(&[], true) } {
            Ok(fence) => self.track(fence, KeepAlive::CommandBuffer(command_buffer.clone())),
            Err(e) => {
                tracing::warn!(error = %e, "no barrier after a failed command-buffer submission; the buffer is leaked");
                std::mem::forget(command_buffer.clone());
            }
        }
    }

    fn track(&self, event: Arc<dyn EventImpl>, keep: KeepAlive) {
        self.inner.track(event, keep);
    }

    /// Wraps `event`, an adapter event of this queue's context for work
    /// of a native collective, keeping `keep` (the allocations it reaches
    /// by address, its communicator, ...) until it has completed and
    /// `finish` waiting for it.
    pub(crate) fn adopt_event(&self, event: Arc<dyn EventImpl>, keep: Box<dyn std::any::Any + Send + Sync>) -> Event {
        self.track(event.clone(), KeepAlive::Collective(keep));
        Event::from_imp(event, &self.inner.context)
    }

    /// Wraps `event`, this queue's submission of a composed command buffer,
    /// keeping `composition` (its state) until it has completed.
    pub(crate) fn adopt_composed_event(
        &self,
        event: Arc<dyn EventImpl>,
        composition: Arc<dyn std::any::Any + Send + Sync>,
    ) -> Event {
        self.track(event.clone(), KeepAlive::Composed(composition));
        Event::from_imp(event, &self.inner.context)
    }

    /// Launches a kernel (`urEnqueueKernelLaunch` with explicit arguments).
    ///
    /// # Safety
    /// The kernel may read and write any memory its arguments let it reach:
    /// pointer arguments must point to memory of the right size that stays
    /// allocated, and not used by the host, until the returned event completes.
    #[tracing::instrument(level = "trace", skip_all, fields(kernel = launch.kernel.name()))]
    pub unsafe fn launch_kernel(&self, launch: &KernelLaunch<'_>, wait: &[&Event]) -> Result<Event> {
        let (command, origin) = launch.resolve(&self.inner.context)?;
        self.submit_op(Op::Kernel(command, origin), wait)
    }

    /// Copies `size` bytes between USM allocations of this context.
    #[tracing::instrument(level = "trace", skip(self, wait))]
    pub fn usm_memcpy(&self, dst: UsmPtr, src: UsmPtr, size: usize, wait: &[&Event]) -> Result<Event> {
        self.enqueue_built(Command::usm_copy(&self.inner.context, dst, src, size)?, wait)
    }

    /// Copies `size` bytes where each side is either a USM pointer of this
    /// context or, lying in no USM allocation of it, host memory
    /// (`urEnqueueUSMMemcpy`, which accepts both). A side that starts in an
    /// allocation must end in it (`InvalidSize`).
    ///
    /// When neither side is USM the copy is a host copy, run in queue order
    /// on a host thread as a host task is: after `wait` (and, on an in-order
    /// queue, after everything submitted before), and later commands of an
    /// in-order queue after it; the returned event completes when the bytes
    /// are copied (it has no profiling information). A capturing queue
    /// refuses it (`GraphCaptureUnsupported`), as command buffers do
    /// (`UnsupportedFeature`): no backend's native command buffer can hold
    /// host work.
    ///
    /// # Safety
    /// A side in no USM allocation must be host memory valid for `size`
    /// bytes (reads of `src`, writes of `dst`), neither freed nor accessed by
    /// the host in conflict until the returned event completes; on a
    /// capturing queue, at every execution of the graphs made from it.
    #[tracing::instrument(level = "trace", skip(self, wait))]
    pub unsafe fn usm_memcpy_host(&self, dst: *mut u8, src: *const u8, size: usize, wait: &[&Event]) -> Result<Event> {
        let (dst, src) = (HostSide::Raw(dst), HostSide::Raw(src.cast_mut()));
        match Memcpy::new(&self.inner.context, dst, src, size)? {
            Memcpy::Command(command) => self.enqueue_built(command, wait),
            Memcpy::HostToHost { dst, src } => {
                self.check_not_capturing("a copy between two host pointers (a host copy)")?;
                let copy = move || {
                    // SAFETY: the caller keeps both ranges valid and unused
                    // in conflict until the event completes (this function's
                    // contract); `Memcpy::new` checked that they do not overlap.
                    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().cast_const(), dst.as_ptr(), size) }
                };
                self.enqueue_host_task(wait, copy)
            }
        }
    }

    /// Fills `size` bytes of USM with a pattern of any length dividing the size.
    #[tracing::instrument(level = "trace", skip(self, pattern, wait))]
    pub fn usm_fill(&self, dst: UsmPtr, pattern: &[u8], size: usize, wait: &[&Event]) -> Result<Event> {
        self.enqueue_built(Command::usm_fill(&self.inner.context, dst, pattern, size)?, wait)
    }

    /// Hints a migration of a USM range.
    #[tracing::instrument(level = "trace", skip(self, wait))]
    pub fn usm_prefetch(&self, ptr: UsmPtr, size: usize, flags: MigrationFlags, wait: &[&Event]) -> Result<Event> {
        self.enqueue_built(Command::usm_prefetch(&self.inner.context, ptr, size, flags)?, wait)
    }

    /// Gives advice about a USM range.
    #[tracing::instrument(level = "trace", skip(self))]
    pub fn usm_advise(&self, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<Event> {
        self.enqueue_built(Command::usm_advise(&self.inner.context, ptr, size, advice)?, &[])
    }

    /// Copies host data into USM, returning once it is there.
    #[tracing::instrument(level = "trace", skip(self, data, wait), fields(size = data.len()))]
    pub fn write_usm(&self, dst: UsmPtr, data: &[u8], wait: &[&Event]) -> Result<()> {
        let src = HostSide::Slice(data.as_ptr().cast_mut(), data.len());
        self.submit_blocking(Command::usm_memcpy(&self.inner.context, HostSide::Usm(dst), src, data.len())?, wait)
    }

    /// Copies USM into a host slice, returning once it is there.
    #[tracing::instrument(level = "trace", skip(self, out, wait), fields(size = out.len()))]
    pub fn read_usm(&self, src: UsmPtr, out: &mut [u8], wait: &[&Event]) -> Result<()> {
        let dst = HostSide::Slice(out.as_mut_ptr(), out.len());
        self.submit_blocking(Command::usm_memcpy(&self.inner.context, dst, HostSide::Usm(src), out.len())?, wait)
    }

    /// Reads `out.len()` bytes of a buffer from `offset`, returning once they are there.
    #[tracing::instrument(level = "trace", skip(self, buffer, out, wait), fields(size = out.len()))]
    pub fn read_buffer(&self, buffer: &MemBuffer, offset: usize, out: &mut [u8], wait: &[&Event]) -> Result<()> {
        let dst = HostSide::Slice(out.as_mut_ptr(), out.len());
        self.submit_blocking(Command::buffer_read(&self.inner.context, buffer, offset, out.len(), dst)?, wait)
    }

    /// Writes `data` into a buffer at `offset`, returning once it is there.
    #[tracing::instrument(level = "trace", skip(self, buffer, data, wait), fields(size = data.len()))]
    pub fn write_buffer(&self, buffer: &MemBuffer, offset: usize, data: &[u8], wait: &[&Event]) -> Result<()> {
        let src = HostSide::Slice(data.as_ptr().cast_mut(), data.len());
        self.submit_blocking(Command::buffer_write(&self.inner.context, buffer, offset, data.len(), src)?, wait)
    }

    /// Reads a buffer into USM (which may be host USM), without blocking.
    pub fn read_buffer_to_usm(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: UsmPtr,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue_built(Command::buffer_read_to_usm(&self.inner.context, buffer, offset, size, dst)?, wait)
    }

    /// Writes USM (which may be host USM) into a buffer, without blocking.
    pub fn write_buffer_from_usm(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: UsmPtr,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue_built(Command::buffer_write_from_usm(&self.inner.context, buffer, offset, size, src)?, wait)
    }

    /// Reads a rect of a buffer into a host slice laid out by `host_layout`.
    #[tracing::instrument(level = "trace", skip(self, buffer, out, wait))]
    pub fn read_buffer_rect(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        out: &mut [u8],
        wait: &[&Event],
    ) -> Result<()> {
        let dst = HostSide::Slice(out.as_mut_ptr(), out.len());
        let command = Command::buffer_read_rect(&self.inner.context, buffer, buffer_layout, host_layout, region, dst)?;
        self.submit_blocking(command, wait)
    }

    /// Writes a rect of a host slice laid out by `host_layout` into a buffer.
    #[tracing::instrument(level = "trace", skip(self, buffer, data, wait))]
    pub fn write_buffer_rect(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        data: &[u8],
        wait: &[&Event],
    ) -> Result<()> {
        let src = HostSide::Slice(data.as_ptr().cast_mut(), data.len());
        let command = Command::buffer_write_rect(&self.inner.context, buffer, buffer_layout, host_layout, region, src)?;
        self.submit_blocking(command, wait)
    }

    /// Copies between buffers.
    #[tracing::instrument(level = "trace", skip(self, src, dst, wait))]
    pub fn copy_buffer(
        &self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_offset: usize,
        dst_offset: usize,
        size: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue_built(Command::buffer_copy(&self.inner.context, src, dst, src_offset, dst_offset, size)?, wait)
    }

    /// Copies a rect between buffers.
    #[tracing::instrument(level = "trace", skip(self, src, dst, wait))]
    pub fn copy_buffer_rect(
        &self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_layout: RectLayout,
        dst_layout: RectLayout,
        region: RectRegion,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue_built(
            Command::buffer_copy_rect(&self.inner.context, src, dst, src_layout, dst_layout, region)?,
            wait,
        )
    }

    /// Fills `size` bytes of a buffer from `offset` with a pattern of any length dividing the size.
    #[tracing::instrument(level = "trace", skip(self, buffer, pattern, wait))]
    pub fn fill_buffer(
        &self,
        buffer: &MemBuffer,
        pattern: &[u8],
        offset: usize,
        size: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue_built(Command::buffer_fill(&self.inner.context, buffer, pattern, offset, size)?, wait)
    }

    /// Maps `size` bytes of `buffer` from `offset` into host memory the queue
    /// allocates (`urEnqueueMemBufferMap`): once the returned event completes,
    /// [`BufferMapping::ptr`] holds the buffer's bytes (unless mapped with
    /// `WRITE_INVALIDATE_REGION`), and what the host writes there reaches the
    /// buffer at [`unmap_buffer`](Self::unmap_buffer) for mappings made for
    /// writing. Not on a capturing queue (`GraphCaptureUnsupported`).
    pub fn map_buffer(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        flags: MapFlags,
        wait: &[&Event],
    ) -> Result<(Event, BufferMapping)> {
        self.map_into(buffer, offset, size, flags, MappedMemory::staging(size), wait)
    }

    /// As [`map_buffer`](Self::map_buffer), into host memory the caller gives:
    /// the memory a buffer was made over (`UR_MEM_FLAG_USE_HOST_POINTER`).
    ///
    /// # Safety
    /// `host` must be valid for `size` bytes of reads and writes until the
    /// mapping is unmapped and the unmap's event has completed.
    pub unsafe fn map_buffer_at(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        flags: MapFlags,
        host: *mut u8,
        wait: &[&Event],
    ) -> Result<(Event, BufferMapping)> {
        ensure!(!host.is_null(), InvalidNullPointer, "map target is null");
        self.map_into(buffer, offset, size, flags, MappedMemory::Caller(crate::memory::HostPtr(host)), wait)
    }

    fn map_into(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        flags: MapFlags,
        memory: MappedMemory,
        wait: &[&Event],
    ) -> Result<(Event, BufferMapping)> {
        self.check_not_capturing("a buffer map (the host uses the bytes)")?;
        ensure!(!flags.is_empty(), InvalidValue, "a buffer map for neither reading nor writing");
        ensure!(
            !(flags.contains(MapFlags::WRITE_INVALIDATE_REGION) && flags.intersects(MapFlags::READ | MapFlags::WRITE)),
            InvalidValue,
            "WRITE_INVALIDATE_REGION excludes READ and WRITE"
        );
        buffer.check_range(offset, size)?;
        let mut held = Resolved::new();
        let resolved = resolve_wait_refs(self.inner.context.id(), wait, &mut held)?;
        // A buffer whose storage is host memory used in place is mapped where
        // it lies, whatever memory the caller offered: a copy would be a copy
        // of the bytes onto themselves.
        let in_place = buffer.host_memory().map(|p| {
            // SAFETY: the range lies inside the buffer (checked above).
            MappedMemory::InPlace(crate::memory::HostPtr(unsafe { p.add(offset) }))
        });
        let (memory, ready) = match in_place {
            Some(memory) => {
                buffer.check_context(&self.inner.context)?;
                (memory, self.marker(&resolved, false)?)
            }
            None => {
                let ready = self.map_ready(buffer, offset, size, flags, &memory, &resolved)?;
                (memory, ready)
            }
        };
        let mapping =
            BufferMapping { buffer: buffer.clone(), offset, size, flags, memory: Some(memory), ready: ready.clone() };
        Ok((ready, mapping))
    }

    /// The event after which `memory` holds the mapped bytes of `buffer`.
    fn map_ready(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        flags: MapFlags,
        memory: &MappedMemory,
        resolved: &[&dyn EventImpl],
    ) -> Result<Event> {
        if flags.contains(MapFlags::WRITE_INVALIDATE_REGION) {
            self.marker(resolved, false)
        } else {
            let dst = HostSide::Slice(memory.ptr(), size);
            self.execute(Command::buffer_read(&self.inner.context, buffer, offset, size, dst)?, resolved)
        }
    }

    /// Unmaps a mapping (`urEnqueueMemUnmap`): writes the host's bytes back
    /// when it was made for writing. The returned event completes when the
    /// buffer holds them; the mapping's memory is released after it.
    pub fn unmap_buffer(&self, mut mapping: BufferMapping, wait: &[&Event]) -> Result<Event> {
        self.check_not_capturing("a buffer unmap")?;
        mapping.buffer.check_context(&self.inner.context)?;
        let mut after: SmallVec<[&Event; 8]> = SmallVec::from_slice(wait);
        after.push(&mapping.ready);
        let mut held = Resolved::new();
        let resolved = resolve_wait_refs(self.inner.context.id(), &after, &mut held)?;
        let in_place = matches!(mapping.memory, Some(MappedMemory::InPlace(_)));
        if in_place || !mapping.flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE_REGION) {
            // The host is done with the bytes (written in place, or only
            // read); dropping the mapping waits for the map's read before the
            // memory goes.
            return self.marker(&resolved, false);
        }
        let memory = mapping.memory.take().ok_or_else(|| crate::err!(InvalidValue, "the mapping was unmapped"))?;
        let src = HostSide::Slice(memory.ptr(), mapping.size);
        let command = Command::buffer_write(&self.inner.context, &mapping.buffer, mapping.offset, mapping.size, src)?;
        // SAFETY: as in `execute`; the mapping's memory is kept until the
        // write-back completes (tracked below).
        let event = unsafe { self.inner.imp.enqueue(&command, &resolved)? };
        self.track(event.clone(), KeepAlive::Mapping(memory, command));
        Ok(Event::from_imp(event, &self.inner.context))
    }

    /// An event completing when all of `wait` have (`urEnqueueEventsWait`).
    pub fn events_wait(&self, wait: &[&Event]) -> Result<Event> {
        self.wait_marker(wait, false)
    }

    /// A barrier: completes after `wait` and everything submitted before, and
    /// everything submitted after waits for it (`urEnqueueEventsWaitWithBarrier`).
    pub fn barrier(&self, wait: &[&Event]) -> Result<Event> {
        self.wait_marker(wait, true)
    }

    fn wait_marker(&self, wait: &[&Event], barrier: bool) -> Result<Event> {
        self.submit_op(Op::Wait { barrier }, wait)
    }

    /// A marker (or barrier) after the resolved wait list, never recorded.
    pub(crate) fn marker(&self, resolved: &[&dyn EventImpl], barrier: bool) -> Result<Event> {
        // SAFETY: the events were checked as wait-list events of this queue's context.
        let event = unsafe { self.inner.imp.enqueue_wait(resolved, barrier)? };
        Ok(Event::from_imp(event, &self.inner.context))
    }

    /// Records the device's time once `wait` (and, on an in-order queue,
    /// everything submitted before) has completed
    /// (`urEnqueueTimestampRecordingExp`). The returned event has profiling
    /// info on any queue, profiling or not: its start and end are the device
    /// time at which it ran, on the clock of
    /// [`Device::global_timestamps`](crate::Device::global_timestamps).
    /// `GraphCaptureUnsupported` on a capturing queue.
    ///
    /// ```
    /// use cmdbuf::{Context, Queue, QueueProperties};
    /// # let ctx = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    /// let queue = Queue::new(&ctx, QueueProperties::default()).unwrap();
    /// let before = ctx.device().global_timestamps().unwrap();
    /// let stamp = queue.enqueue_timestamp(&[]).unwrap();
    /// stamp.wait().unwrap();
    /// let times = stamp.profiling_info().unwrap();
    /// assert!(before.device <= times.start && times.start <= times.end);
    /// ```
    #[tracing::instrument(level = "trace", skip_all)]
    pub fn enqueue_timestamp(&self, wait: &[&Event]) -> Result<Event> {
        self.check_not_capturing("a timestamp recording")?;
        let mut held = Resolved::new();
        let resolved = resolve_wait_refs(self.inner.context.id(), wait, &mut held)?;
        // SAFETY: the events were checked as wait-list events of this queue's context.
        let event = unsafe { self.inner.imp.enqueue_timestamp(&resolved)? };
        Ok(Event::from_imp(event, &self.inner.context))
    }

    /// [`events_wait`](Self::events_wait) that never records or captures, for
    /// the queue's own host-side orderings.
    pub(crate) fn eager_events_wait(&self, wait: &[&Event]) -> Result<Event> {
        let mut held = Resolved::new();
        self.marker(&resolve_wait_refs(self.inner.context.id(), wait, &mut held)?, false)
    }

    /// Runs `task` on a host thread once `wait` (and, on an in-order queue,
    /// everything submitted before) has completed. On an in-order queue, later
    /// commands wait for the task. The returned event completes when the task
    /// has returned, or reports `AdapterSpecific` if it panicked.
    /// [`finish`](Self::finish) and the queue's drop wait for it, out of
    /// order too; a task calling `finish` on its own queue gets
    /// `InvalidOperation`, and a task dropping its queue's last handle does
    /// not wait: the queue finishes on a host thread once the task has
    /// returned. Out of order, ready tasks run at the same time
    /// (SYCL's host tasks of independent branches may wait for each other).
    ///
    /// A task that runs once cannot be captured: on a capturing queue this is
    /// `GraphCaptureUnsupported`.
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn enqueue_host_task(&self, wait: &[&Event], task: impl FnOnce() + Send + 'static) -> Result<Event> {
        self.check_not_capturing("`enqueue_host_task` (a task that runs once)")?;
        let start = self.eager_events_wait(wait)?;
        let done = UserEvent::new(&self.inner.context)?;
        let finished = done.event().clone();
        if !self.inner.properties.out_of_order {
            // Later commands of an in-order queue wait for the task.
            self.eager_events_wait(&[&finished])?;
        }
        let queue = self.key();
        // On a thread reused from earlier host tasks (`ur-host-task`): drivers
        // keep state per thread that called them (see `host_threads`).
        crate::host_threads::HOST_TASKS.run(move || {
            // The task runs after its dependencies whether they succeeded
            // or not: wait lists order, they do not propagate failure. A
            // wait that failed before they ended (a driver failure) fails
            // the task's event with that error instead of running it early.
            let outcome = match start.wait_to_order() {
                Err(e) => done.fail_with(e),
                Ok(()) => {
                    HOST_TASK_OF.set(queue);
                    let ran = catch_unwind(AssertUnwindSafe(task));
                    HOST_TASK_OF.set(0);
                    match ran {
                        Ok(()) => done.complete(),
                        Err(payload) => done.fail(format!("host task panicked: {}", panic_message(&*payload))),
                    }
                }
            };
            if let Err(e) = outcome {
                tracing::error!(error = %e, "host task event");
            }
        })?;
        // The adapter's queue knows nothing of the task: `finish` and the
        // queue's drop wait for it here.
        self.track(finished.imp().clone(), KeepAlive::HostTask);
        Ok(finished)
    }

    /// Submits an executable graph of UR's graph capture (`urEnqueueGraphExp`):
    /// its command buffer runs after `wait`; a capturing queue captures it.
    /// Submissions of one executable graph run in submission order, also
    /// across queues. `InvalidQueue` for a graph of another context.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = graph.graph_id()))]
    pub fn enqueue_graph(&self, graph: &crate::InstantiatedGraph, wait: &[&Event]) -> Result<Event> {
        ensure!(
            graph.context() == self.context(),
            InvalidQueue,
            "an executable graph of another context cannot run on a queue of {}",
            self.device()
        );
        self.submit_op(Op::Graph(graph.clone()), wait)
    }

    /// Submits a finalized command buffer (`urEnqueueCommandBufferExp`).
    ///
    /// Submissions of one command buffer run in submission order, also across
    /// queues; an update made after this call does not affect this submission.
    #[tracing::instrument(level = "debug", skip_all, fields(label = command_buffer.label()))]
    pub fn enqueue_command_buffer(&self, command_buffer: &CommandBuffer, wait: &[&Event]) -> Result<Event> {
        self.check_not_capturing("a command-buffer enqueue (add an executable graph with `enqueue_graph`)")?;
        let mut held = Resolved::new();
        let resolved = resolve_wait_refs(self.inner.context.id(), wait, &mut held)?;
        self.execute_command_buffer(command_buffer, &resolved)
    }

    /// Enqueues a finalized command buffer after the resolved wait list.
    pub(crate) fn execute_command_buffer(
        &self,
        command_buffer: &CommandBuffer,
        resolved: &[&dyn EventImpl],
    ) -> Result<Event> {
        let event = command_buffer
            .enqueue_on(self.target(), resolved)?
            .inspect_err(|_| self.hold_after_failed_submission(command_buffer))?;
        self.track(event.clone(), KeepAlive::CommandBuffer(command_buffer.clone()));
        Ok(Event::from_imp(event, &self.inner.context))
    }

    /// Blocks until everything submitted to this queue has completed, host
    /// tasks included; `GraphCaptureUnsupported` on a capturing queue.
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn finish(&self) -> Result<()> {
        self.check_not_capturing("`finish` (a host wait)")?;
        interop::check_not_in_host_command("`finish`")?;
        ensure!(
            HOST_TASK_OF.get() != self.key(),
            InvalidOperation,
            "`finish` inside one of the queue's host tasks would wait for the task itself"
        );
        let result = self.inner.imp.finish();
        // What is still running now is what the adapter's queue does not
        // know of (host tasks, and what waits for them): wait for it too.
        let pending = self.retire_completed();
        if !pending.is_empty() {
            // A failed task reports through its event, not through finish.
            for event in &pending {
                let _ = event.wait();
            }
            self.retire_completed();
        }
        result
    }

    /// Drops what completed commands kept (after the lock: what they kept
    /// may be memory whose release looks at this queue); returns the events
    /// still running.
    fn retire_completed(&self) -> SmallVec<[Arc<dyn EventImpl>; 8]> {
        let mut pending = SmallVec::new();
        let mut retired = Vec::new();
        let mut in_flight = self.inner.in_flight.lock();
        // Each entry is taken off the front and what still runs goes back
        // at the end, in order, inside the same buffer: taking the list
        // instead left the queue an empty one after every `finish`, which
        // the next round of eager submissions grew again entry by entry
        // (over 100 instructions per launch in chains of 1000, docs/performance.md).
        for _ in 0..in_flight.len() {
            let Some(entry) = in_flight.pop_front() else { break };
            if entry.0.status().is_terminal() {
                retired.push(entry);
            } else {
                pending.push(entry.0.clone());
                in_flight.push_back(entry);
            }
        }
        drop(in_flight);
        drop(retired);
        pending
    }

    /// Makes sure everything submitted will start.
    pub fn flush(&self) -> Result<()> {
        self.inner.imp.flush()
    }
}

impl QueueInner {
    /// Keeps `command` until `event` has completed.
    #[inline]
    fn track_command(&self, event: Arc<dyn EventImpl>, command: Command) {
        let mut in_flight = self.in_flight.lock();
        // Where the command keeps the very objects the last one keeps (an
        // eager chain of one kernel over the same buffers), only the last
        // entry's event changes, in place: wrapping the command and popping
        // the last entry and pushing the new one moved three entries of over
        // 150 bytes per eager launch (docs/performance.md). The command is
        // dropped where it lies, as the function returns, after the lock (a
        // local) is let go: the entry keeps the same.
        if self.completes_in_order
            && let Some(last) = in_flight.back_mut()
            && keeps_same(&command, &last.1)
        {
            let replaced = std::mem::replace(&mut last.0, event);
            let mut retired = Retired::new();
            // The entries before the replaced one, as `track_locked`.
            let before = in_flight.len() - 1;
            if before > 0 {
                retire_first(&mut in_flight, before, &mut retired);
            }
            drop(in_flight);
            drop(replaced);
            if !retired.is_empty() {
                self.drop_retired(&mut retired);
            }
            return;
        }
        self.track_locked(in_flight, event, KeepAlive::Command(command));
    }

    /// Keeps `keep` until `event` has completed.
    fn track(&self, event: Arc<dyn EventImpl>, keep: KeepAlive) {
        self.track_locked(self.in_flight.lock(), event, keep);
    }

    /// [`track`](Self::track), given the list of commands in flight locked.
    fn track_locked(&self, mut in_flight: MutexGuard<'_, InFlight>, event: Arc<dyn EventImpl>, keep: KeepAlive) {
        let mut retired = Retired::new();
        // On an in-order queue the new command completes after the last
        // one; where it also keeps all that one keeps (an eager chain of one
        // kernel over the same buffers, a command buffer submitted again),
        // the last one's entry holds nothing the new entry does not, running
        // or complete, and goes unasked.
        // In such a chain the queue then holds one entry and asks the
        // driver nothing per submission: asking the oldest command's status
        // at every submission was a `clGetEventInfo` (`cuEventQuery`) per
        // eager launch, and two where one had completed since.
        let _replaced = match in_flight.back() {
            Some((_, kept)) if self.completes_in_order && keep.covers(kept) => in_flight.pop_back(),
            _ => None,
        };
        retire_front(&mut in_flight, &mut retired);
        // Not asked whether it is already complete: a status query costs a
        // driver call on GPU backends (a CUDA replay's host time, issue 15
        // goal 2), and a complete one leaves at the next submission or finish.
        in_flight.push_back((event, keep));
        drop(in_flight);
        // `_replaced` is dropped as the function returns, after the lock: not
        // moved into `drop`, which copied the whole entry, even when none.
        self.drop_retired(&mut retired);
    }

    /// Drops the batch [`retire_front`] took into `retired`, after the
    /// lock, and retires the completed commands after it a batch at a time
    /// while batches come back full.
    fn drop_retired(&self, retired: &mut Retired) {
        while retired.len() == RETIRE_BATCH {
            retired.clear();
            retire_front(&mut self.in_flight.lock(), retired);
        }
        retired.clear();
    }
}

impl HoldsFreedMemory for QueueInner {
    /// Keeps `alloc`, which the application freed, until everything this
    /// queue was given so far has completed (`urUSMFree`: "wait for
    /// previously enqueued commands that may be accessing `pMem`"). Where
    /// commands complete in order, that is the last command in flight;
    /// otherwise a marker after all of them. Nothing in flight: nothing to
    /// keep.
    fn hold_until_done(&self, alloc: &Arc<UsmInner>) {
        // What has completed needs no holding: retired first, every batch.
        let mut retired = Retired::new();
        retire_front(&mut self.in_flight.lock(), &mut retired);
        self.drop_retired(&mut retired);
        let mut in_flight = self.in_flight.lock();
        let events: Vec<Arc<dyn EventImpl>> = match (in_flight.len(), self.completes_in_order) {
            (0, _) => Vec::new(),
            (1, _) | (_, true) => {
                if let Some(last) = in_flight.back().map(|(e, _)| e.clone()) {
                    in_flight.push_back((last, KeepAlive::Freed(alloc.clone())));
                }
                Vec::new()
            }
            _ => in_flight.iter().map(|(e, _)| e.clone()).collect(),
        };
        drop(in_flight);
        if events.is_empty() {
            return;
        }
        // SAFETY: events of this queue.
        match unsafe { self.imp.enqueue_wait(&as_refs(&events), false) } {
            Ok(marker) => self.track(marker, KeepAlive::Freed(alloc.clone())),
            Err(e) => {
                tracing::warn!(error = %e, "no marker after the commands that may use a freed allocation: waiting");
                for event in &events {
                    let _ = event.wait();
                }
            }
        }
    }
}

thread_local! {
    /// The queue (its key) whose host task this thread is running, or 0.
    static HOST_TASK_OF: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many completed commands [`retire_front`] takes at most: the batch
/// lives on the submitting thread's stack, filled in place, so that
/// retiring allocates nothing and copies each command once, and a long run
/// of completed commands (the previous round of an eager chain, retired by
/// the next round's first submission) is not moved into one large buffer.
const RETIRE_BATCH: usize = 8;

/// A queue's commands in flight, oldest first, each with what it keeps.
type InFlight = VecDeque<(Arc<dyn EventImpl>, KeepAlive)>;

/// Completed commands taken off the front of a queue's commands in flight.
type Retired = SmallVec<[(Arc<dyn EventImpl>, KeepAlive); RETIRE_BATCH]>;

/// Moves completed commands off the front of `in_flight` into `retired`,
/// until it holds [`RETIRE_BATCH`], for the caller to drop once it has let
/// go of the lock ([`QueueInner::drop_retired`] takes the rest).
fn retire_front(in_flight: &mut InFlight, retired: &mut Retired) {
    retire_first(in_flight, usize::MAX, retired);
}

/// [`retire_front`], looking at no more than the first `n` entries.
fn retire_first(in_flight: &mut InFlight, mut n: usize, retired: &mut Retired) {
    while n > 0
        && retired.len() < RETIRE_BATCH
        && in_flight.front().is_some_and(|(e, _)| e.status_quiet().is_terminal())
    {
        retired.extend(in_flight.pop_front());
        n -= 1;
    }
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue").field("device", self.device()).field("properties", &self.inner.properties).finish()
    }
}
