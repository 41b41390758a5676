//! Command buffers: record once, replay many (the `urCommandBuffer*Exp` API).
//!
//! A command buffer is recorded with `append_*` calls, each of which returns
//! a [`SyncPoint`] that later appends of the same buffer can wait on, then
//! [`finalize`](CommandBuffer::finalize)d, then enqueued any number of times
//! with [`Queue::enqueue_command_buffer`]. Updatable buffers hand out a
//! [`CommandHandle`] per command, through which kernel launches (arguments,
//! sizes, offset, kernel) and events can be changed between enqueues.
//!
//! Every rule is checked here, once, for every backend:
//!
//! | misuse | error |
//! |---|---|
//! | append after finalize, finalize twice | `InvalidOperation` |
//! | update before finalize, or of a buffer that is not updatable | `InvalidOperation` |
//! | enqueue or native handle before finalize | `InvalidOperation` |
//! | a sync point of another buffer, or one not yet issued | `InvalidSyncPointWaitList` |
//! | a command handle of another buffer, or of a non-kernel command for a kernel update | `InvalidCommandHandle` |
//! | an update or event feature the device lacks | `UnsupportedFeature` |
//! | sizes, patterns, bounds | `InvalidSize` |
//! | work dimensions, work-group sizes | `InvalidWorkDimension`, `InvalidWorkGroupSize` |
//!
//! ```
//! use ur_core::*;
//! # let device = ur_adapter_cpu::default_device();
//! let ctx = Context::new(&device)?;
//! let queue = Queue::new(&ctx, QueueProperties::default())?;
//! let buf = UsmAllocation::new(&ctx, UsmKind::Device, 64)?;
//! let cb = CommandBuffer::new(&ctx, &device, CommandBufferDesc::default())?;
//! let fill = cb.append_usm_fill(buf.ptr(), &[7], 64, AppendOptions::new())?;
//! cb.append_usm_fill(buf.ptr(), &[9], 32, AppendOptions::new().after(&[fill.sync_point]))?;
//! cb.finalize()?;
//! queue.enqueue_command_buffer(&cb, &[])?.wait()?;
//! let mut out = [0u8; 64];
//! queue.read_usm(buf.ptr(), &mut out, &[])?;
//! assert_eq!((out[0], out[63]), (9, 7));
//! # Ok::<(), ur_core::UrError>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::adapter::{EventImpl, ExecutableCommandBufferImpl, KernelUpdate, RecordingCommandBufferImpl};
use crate::command::Command;
use crate::command::build::{HostSide, expect_kernel};
use crate::context::Context;
use crate::device::{CommandBufferSupport, Device, UpdateCapabilities};
use crate::error::Result;
use crate::event::{Event, as_refs, check_events};
use crate::interop::{self, NativeCommand, NativeScope, Owner};
use crate::launch::resolve::resolve_arg;
use crate::launch::{
    ArgValue, KernelArg, KernelCommand, KernelLaunch, LocalSizeOrigin, check_dims, check_local_memory, resolve_range,
    to_3d,
};
use crate::memory::{MemBuffer, MigrationFlags, UsmAdvice, UsmPtr};
use crate::program::Kernel;
use crate::queue::Queue;
use crate::rect::{RectLayout, RectRegion};
use crate::software::SoftwareCommandBuffer;
pub use crate::types::desc::CommandBufferDesc;
use crate::{ensure, err};

/// Names a command of one command buffer for later appends of that buffer to
/// wait on (`ur_exp_command_buffer_sync_point_t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SyncPoint {
    buffer: u64,
    index: u32,
}

impl SyncPoint {
    /// The UR value: the command's number in append order.
    pub fn index(self) -> u32 {
        self.index
    }
}

/// Names a command of an updatable command buffer for updates
/// (`ur_exp_command_buffer_command_handle_t`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommandHandle {
    buffer: u64,
    index: u32,
}

impl CommandHandle {
    /// The command's number in append order.
    pub fn index(&self) -> u32 {
        self.index
    }
}

/// Native handles now live in [`crate::interop`]; re-exported here for
/// existing users.
pub use crate::interop::NativeHandle;

/// Dependencies and events of an append (the tail every `Append*Exp` shares).
#[derive(Copy, Clone, Debug, Default)]
pub struct AppendOptions<'a> {
    /// Commands of this buffer to run after.
    pub sync_points: &'a [SyncPoint],
    /// Events from outside the buffer to wait for at each execution.
    pub wait_events: &'a [&'a Event],
    /// Whether to return an event signalled at each execution of the command.
    pub signal_event: bool,
}

impl<'a> AppendOptions<'a> {
    /// No dependencies, no events.
    pub fn new() -> AppendOptions<'a> {
        AppendOptions::default()
    }

    /// Runs after these commands.
    pub fn after(mut self, sync_points: &'a [SyncPoint]) -> AppendOptions<'a> {
        self.sync_points = sync_points;
        self
    }

    /// Waits for these events at each execution.
    pub fn wait_events(mut self, events: &'a [&'a Event]) -> AppendOptions<'a> {
        self.wait_events = events;
        self
    }

    /// Asks for a signal event.
    pub fn signal_event(mut self) -> AppendOptions<'a> {
        self.signal_event = true;
        self
    }
}

/// What an append produced.
#[derive(Clone, Debug)]
pub struct Appended {
    /// For later appends of the same buffer to wait on.
    pub sync_point: SyncPoint,
    /// The signal event, when asked for.
    pub event: Option<Event>,
    /// The command's handle, on updatable buffers.
    pub command: Option<CommandHandle>,
}

/// The local size an update asks for.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum LocalSizeUpdate<'a> {
    /// Keep the current choice: a user-given local size stays, an
    /// implementation-chosen one is chosen again for the new global size.
    #[default]
    Keep,
    /// Let the implementation choose.
    ImplementationChosen,
    /// Use this local size.
    Set(&'a [usize]),
}

/// One kernel-command update (`ur_exp_command_buffer_update_kernel_launch_desc_t`).
///
/// Omitted fields keep their current values. The work dimension follows the
/// new global size; changing it requires a new global offset as well, and a
/// local size (or [`LocalSizeUpdate::ImplementationChosen`]) when the current
/// one was given by the user.
#[derive(Clone, Debug)]
pub struct KernelLaunchUpdate<'a> {
    /// The command.
    pub command: &'a CommandHandle,
    /// Switch to this kernel: the original or a registered alternative. A
    /// switch to a different kernel must give every argument of the new kernel.
    pub new_kernel: Option<&'a Kernel>,
    /// New arguments by index; when an index repeats, the last one wins.
    pub args: Vec<(usize, KernelArg<'a>)>,
    /// New global size (its length is the new work dimension).
    pub global_size: Option<&'a [usize]>,
    /// New global offset.
    pub global_offset: Option<&'a [usize]>,
    /// New local size.
    pub local_size: LocalSizeUpdate<'a>,
}

impl<'a> KernelLaunchUpdate<'a> {
    /// An update of `command` that changes nothing yet.
    pub fn new(command: &'a CommandHandle) -> KernelLaunchUpdate<'a> {
        KernelLaunchUpdate {
            command,
            new_kernel: None,
            args: Vec::new(),
            global_size: None,
            global_offset: None,
            local_size: LocalSizeUpdate::Keep,
        }
    }

    /// Sets argument `index`.
    pub fn arg(mut self, index: usize, arg: KernelArg<'a>) -> KernelLaunchUpdate<'a> {
        self.args.push((index, arg));
        self
    }

    /// Switches the kernel.
    pub fn kernel(mut self, kernel: &'a Kernel) -> KernelLaunchUpdate<'a> {
        self.new_kernel = Some(kernel);
        self
    }

    /// Sets the global size.
    pub fn global_size(mut self, size: &'a [usize]) -> KernelLaunchUpdate<'a> {
        self.global_size = Some(size);
        self
    }

    /// Sets the global offset.
    pub fn global_offset(mut self, offset: &'a [usize]) -> KernelLaunchUpdate<'a> {
        self.global_offset = Some(offset);
        self
    }

    /// Sets the local size.
    pub fn local_size(mut self, local: LocalSizeUpdate<'a>) -> KernelLaunchUpdate<'a> {
        self.local_size = local;
        self
    }
}

static NEXT_COMMAND_BUFFER_ID: AtomicU64 = AtomicU64::new(1);

/// A command buffer. Clone retains, drop releases; dropping it while a
/// submission runs is safe (the submission keeps what it needs).
#[derive(Clone)]
pub struct CommandBuffer {
    inner: Arc<CommandBufferInner>,
}

struct CommandBufferInner {
    id: u64,
    context: Context,
    /// The sub-device of the context's device it was made for, if it was.
    sub_device: Option<Device>,
    desc: CommandBufferDesc,
    support: CommandBufferSupport,
    state: Mutex<State>,
    _live: crate::live::Live<{ crate::live::COMMAND_BUFFER }>,
}

struct State {
    records: Vec<Record>,
    phase: Phase,
}

/// The adapter's command buffer, in the phase it is in.
enum Phase {
    Recording(Box<dyn RecordingCommandBufferImpl>),
    Executable(Box<dyn ExecutableCommandBufferImpl>),
    /// Only while `finalize` moves the recording into the adapter's
    /// finalize: seen afterwards only if that call panicked.
    Finalizing,
}

impl State {
    fn recording(&mut self, what: &str) -> Result<&mut dyn RecordingCommandBufferImpl> {
        match &mut self.phase {
            Phase::Recording(imp) => Ok(&mut **imp),
            _ => Err(err!(InvalidOperation, "{what} a finalized command buffer")),
        }
    }

    fn executable(&mut self, what: &str) -> Result<&mut dyn ExecutableCommandBufferImpl> {
        match &mut self.phase {
            Phase::Executable(imp) => Ok(&mut **imp),
            _ => Err(err!(InvalidOperation, "{what} a command buffer that is not finalized")),
        }
    }

    fn is_finalized(&self) -> bool {
        matches!(self.phase, Phase::Executable(_))
    }
}

/// What the front end remembers of each command, to validate updates.
struct Record {
    command: Command,
    kernel: Option<KernelRecord>,
    signal: bool,
    wait_events: usize,
}

struct KernelRecord {
    original: Kernel,
    alternatives: Vec<Kernel>,
    local_origin: LocalSizeOrigin,
}

impl CommandBuffer {
    /// Creates a command buffer (`urCommandBufferCreateExp`). `device` must
    /// be the context's device or a sub-device of it at any depth
    /// (`InvalidDevice` otherwise; for a sub-device the backend may answer
    /// `UnsupportedFeature`, [api.md](../docs/api.md#sub-devices)); an
    /// updatable buffer needs a device with update capabilities
    /// (`UnsupportedFeature` otherwise).
    #[tracing::instrument(level = "debug", skip(context, device), fields(device = %device, label = desc.label))]
    pub fn new(context: &Context, device: &Device, desc: CommandBufferDesc) -> Result<CommandBuffer> {
        let sub_device = device != context.device();
        ensure!(
            !sub_device || context.holds_device(device),
            InvalidDevice,
            "{device} is not {} or a sub-device of it",
            context.device()
        );
        let caps = device.info().command_buffer;
        ensure!(
            !desc.updatable || !caps.update.is_empty(),
            UnsupportedFeature,
            "{device} cannot update command buffers"
        );
        let imp: Box<dyn RecordingCommandBufferImpl> = match caps.support {
            CommandBufferSupport::Native => {
                // SAFETY: the device reports native command buffers, and update
                // capabilities when the buffer is updatable; a sub-device is one
                // of the context's device (checked above).
                unsafe {
                    if sub_device {
                        context.imp().sub_device_command_buffer_create(&**device.imp(), &desc)?
                    } else {
                        context.imp().command_buffer_create(&desc)?
                    }
                }
            }
            CommandBufferSupport::Emulated => Box::new(SoftwareCommandBuffer::new(context.device().backend())),
        };
        tracing::debug!(support = ?caps.support, "command buffer created");
        Ok(CommandBuffer {
            inner: Arc::new(CommandBufferInner {
                id: NEXT_COMMAND_BUFFER_ID.fetch_add(1, Ordering::Relaxed),
                context: context.clone(),
                sub_device: sub_device.then(|| device.clone()),
                desc,
                support: caps.support,
                state: Mutex::new(State { records: Vec::new(), phase: Phase::Recording(imp) }),
                _live: crate::live::Live::new(),
            }),
        })
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The buffer's identity while it lives.
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The device: the context's, or the sub-device it was made for.
    pub fn device(&self) -> &Device {
        self.inner.sub_device.as_ref().unwrap_or_else(|| self.inner.context.device())
    }

    /// The descriptor it was created with (`UR_EXP_COMMAND_BUFFER_INFO_DESCRIPTOR`).
    pub fn descriptor(&self) -> CommandBufferDesc {
        self.inner.desc
    }

    /// The descriptor's label, for diagnostics.
    pub fn label(&self) -> Option<&'static str> {
        self.inner.desc.label
    }

    /// Native or software (`emulated`) implementation.
    pub fn support(&self) -> CommandBufferSupport {
        self.inner.support
    }

    /// Number of handles to this buffer (`UR_EXP_COMMAND_BUFFER_INFO_REFERENCE_COUNT`),
    /// submissions in flight included.
    pub fn reference_count(&self) -> u32 {
        Arc::strong_count(&self.inner) as u32
    }

    /// Whether it has been finalized.
    pub fn is_finalized(&self) -> bool {
        self.inner.state.lock().is_finalized()
    }

    /// Number of commands recorded.
    pub fn len(&self) -> usize {
        self.inner.state.lock().records.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The native object (`urCommandBufferGetNativeHandleExp`): the
    /// executable object an enqueue submits (see [`crate::interop`] for each
    /// backend's), so `InvalidOperation` before finalize on every device;
    /// `UnsupportedFeature` for software and pre-planned buffers. Inside the
    /// callback of a native command of this buffer, that command's target,
    /// found without taking the buffer's lock.
    pub fn native_handle(&self) -> Result<NativeHandle> {
        if let Some(target) = interop::running_target(Owner::CommandBuffer(self.inner.id)) {
            return target
                .handle()
                .ok_or_else(|| err!(UnsupportedFeature, "a CPU native command has no native object to record into"));
        }
        self.inner.state.lock().executable("the native handle of")?.native_handle()
    }

    /// The native object a child of a native command records into
    /// ([`RecordingCommandBufferImpl::recording_target`]); `InvalidOperation`
    /// once finalized.
    pub(crate) fn recording_target(&self) -> Result<NativeHandle> {
        self.inner.state.lock().recording("a recording target of")?.recording_target()
    }

    /// Appends a native command (`urCommandBufferAppendNativeCommandExp`):
    /// `callback` does backend-native work where its [`NativeScope`] says,
    /// at the times [`crate::interop`] lists per backend (it may run more
    /// than once), after the commands of `sync_points`.
    ///
    /// `child` is UR's child command buffer: on devices that nest command
    /// buffers (`CommandBufferCaps::subgraphs`: CUDA's native command
    /// buffers), the callback's target is the child's native object (its
    /// `CUgraph`), and the child, with the work, becomes a child node of this
    /// buffer. Elsewhere a valid child is `UnsupportedFeature`, rather than
    /// ignored as UR allows. A child of another context is
    /// `InvalidCommandBuffer`, the buffer itself `InvalidValue`, a finalized
    /// child `InvalidOperation`.
    ///
    /// # Safety
    /// The native work is unchecked: everything it touches must stay valid
    /// for as long as the buffer may be enqueued, and it must leave the native
    /// objects as it found them.
    #[tracing::instrument(level = "debug", skip_all, fields(label = self.label()))]
    pub unsafe fn append_native_command(
        &self,
        child: Option<&CommandBuffer>,
        sync_points: &[SyncPoint],
        callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'static,
    ) -> Result<SyncPoint> {
        if let Some(child) = child {
            ensure!(
                child.context() == &self.inner.context,
                InvalidCommandBuffer,
                "the child command buffer belongs to another context"
            );
            ensure!(!Arc::ptr_eq(&child.inner, &self.inner), InvalidValue, "a command buffer cannot be its own child");
            ensure!(!child.is_finalized(), InvalidOperation, "the child command buffer is finalized");
            ensure!(
                self.device().info().command_buffer.subgraphs,
                UnsupportedFeature,
                "{} cannot nest command buffers: no child command buffer for native commands",
                self.device()
            );
        }
        let native =
            NativeCommand::new(Arc::new(callback), Vec::new(), Owner::CommandBuffer(self.inner.id), child.cloned());
        Ok(self.append(Command::Native(native), None, &AppendOptions::new().after(sync_points))?.sync_point)
    }

    /// The sync point of this buffer with the raw UR value `index`, for
    /// interoperation with code that stores sync points as integers. Using one
    /// whose command has not been appended yet is `InvalidSyncPointWaitList`.
    pub fn sync_point_from_raw(&self, index: u32) -> SyncPoint {
        SyncPoint { buffer: self.inner.id, index }
    }

    /// Finalizes the buffer; `InvalidOperation` the second time.
    #[tracing::instrument(level = "debug", skip(self), fields(label = self.label()))]
    pub fn finalize(&self) -> Result<()> {
        let mut state = self.inner.state.lock();
        let recording = match std::mem::replace(&mut state.phase, Phase::Finalizing) {
            Phase::Recording(imp) => imp,
            other => {
                state.phase = other;
                return Err(err!(InvalidOperation, "the command buffer is already finalized"));
            }
        };
        match recording.finalize() {
            Ok(executable) => {
                state.phase = Phase::Executable(executable);
                Ok(())
            }
            Err(failed) => {
                state.phase = Phase::Recording(failed.recording);
                Err(failed.error)
            }
        }
    }

    fn append(&self, command: Command, kernel: Option<KernelRecord>, opts: &AppendOptions<'_>) -> Result<Appended> {
        let _span = tracing::debug_span!("append", kind = %command.kind(), label = self.label()).entered();
        let ctx = &self.inner.context;
        let caps = ctx.device().info().command_buffer;
        let mut state = self.inner.state.lock();
        state.recording("append to")?;
        let count = state.records.len() as u32;
        let mut deps: SmallVec<[u32; 4]> = SmallVec::new();
        for sp in opts.sync_points {
            ensure!(
                sp.buffer == self.inner.id,
                InvalidSyncPointWaitList,
                "sync point {} belongs to another command buffer",
                sp.index
            );
            ensure!(
                sp.index < count,
                InvalidSyncPointWaitList,
                "sync point {} names a command not yet appended ({count} so far)",
                sp.index
            );
            deps.push(sp.index);
        }
        // The same sync point may be listed twice (UR's DuplicateSyncPoint);
        // adapters get each dependency once.
        deps.sort_unstable();
        deps.dedup();
        if self.inner.desc.in_order {
            deps.clear();
            deps.extend(count.checked_sub(1));
        }
        ensure!(
            caps.events || (opts.wait_events.is_empty() && !opts.signal_event),
            UnsupportedFeature,
            "{} has no command-buffer event support",
            ctx.device()
        );
        let wait_events = check_events(ctx.id(), opts.wait_events, "append wait list")?;
        let alternatives = kernel.as_ref().map_or(&[][..], |k| &k.alternatives[..]);
        // SAFETY: the command was validated for this context, deps name earlier
        // commands (or the previous one for in-order buffers), the events are of
        // this context, and alternatives are only present on updatable
        // buffers (checked by `append_kernel_launch`).
        let signal = unsafe {
            state.recording("append to")?.append(&command, alternatives, &deps, &wait_events, opts.signal_event)?
        };
        let event = match (opts.signal_event, signal) {
            (true, Some(e)) => Some(Event::from_imp(e, ctx)),
            (true, None) => return Err(err!(Unknown, "the adapter returned no signal event")),
            (false, _) => None,
        };
        state.records.push(Record { command, kernel, signal: opts.signal_event, wait_events: wait_events.len() });
        let handle = self.inner.desc.updatable.then_some(CommandHandle { buffer: self.inner.id, index: count });
        Ok(Appended { sync_point: SyncPoint { buffer: self.inner.id, index: count }, event, command: handle })
    }

    /// Appends a kernel launch (`urCommandBufferAppendKernelLaunchWithArgsExp`).
    /// `alternatives` are kernels an update may switch this command to (updatable
    /// buffers on devices with the KERNEL_HANDLE capability only).
    ///
    /// # Safety
    /// The kernel may read and write any memory its arguments let it reach, at
    /// every execution: pointer arguments must stay valid for as long as the
    /// buffer may be enqueued with them.
    #[tracing::instrument(level = "debug", skip_all, fields(kernel = launch.kernel.name(), label = self.label()))]
    pub unsafe fn append_kernel_launch(
        &self,
        launch: &KernelLaunch<'_>,
        alternatives: &[&Kernel],
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let (command, local_origin) = launch.resolve(&self.inner.context)?;
        // SAFETY: the caller's contract is this function's.
        unsafe { self.append_kernel_command(command, local_origin, alternatives, opts) }
    }

    /// Appends a kernel launch validated by [`KernelLaunch::resolve`] for
    /// this buffer's context (the graph layer keeps launches in that form).
    ///
    /// # Safety
    /// As for [`append_kernel_launch`](Self::append_kernel_launch).
    pub(crate) unsafe fn append_kernel_command(
        &self,
        command: KernelCommand,
        local_origin: LocalSizeOrigin,
        alternatives: &[&Kernel],
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let ctx = &self.inner.context;
        if !alternatives.is_empty() {
            ensure!(
                self.inner.desc.updatable,
                InvalidOperation,
                "kernel alternatives on a buffer that is not updatable"
            );
            ensure!(
                ctx.device().info().command_buffer.update.contains(UpdateCapabilities::KERNEL_HANDLE),
                UnsupportedFeature,
                "{} cannot switch kernels in command buffers",
                ctx.device()
            );
        }
        for alt in alternatives {
            ensure!(
                alt.program().context() == ctx,
                InvalidKernel,
                "alternative `{}` belongs to another context",
                alt.name()
            );
            ensure!(
                !alt.same_kernel(&command.kernel),
                InvalidValue,
                "the launched kernel is listed among its alternatives"
            );
        }
        let record = KernelRecord {
            original: command.kernel.clone(),
            alternatives: alternatives.iter().map(|k| (*k).clone()).collect(),
            local_origin,
        };
        self.append(Command::KernelLaunch(command), Some(record), &opts)
    }

    /// Appends a command built by one of [`Command`]'s public builders
    /// (memory commands kept in validated form); `InvalidContext` for one
    /// of another context, `InvalidValue` for a kernel launch (appended with
    /// [`append_kernel_launch`](Self::append_kernel_launch)).
    ///
    /// ```
    /// use ur_core::*;
    /// # let device = ur_adapter_cpu::default_device();
    /// let ctx = Context::new(&device)?;
    /// let buf = UsmAllocation::new(&ctx, UsmKind::Device, 64)?;
    /// let fill = Command::usm_fill(&ctx, buf.ptr(), &[7], 64)?;
    /// let cb = CommandBuffer::new(&ctx, &device, CommandBufferDesc::default())?;
    /// cb.append_command(fill.clone(), AppendOptions::new())?;
    ///
    /// let other = Context::new(&device)?;
    /// let foreign = CommandBuffer::new(&other, &device, CommandBufferDesc::default())?;
    /// assert!(matches!(foreign.append_command(fill, AppendOptions::new()), Err(UrError::InvalidContext(_))));
    /// # Ok::<(), UrError>(())
    /// ```
    pub fn append_command(&self, command: Command, opts: AppendOptions<'_>) -> Result<Appended> {
        command.check_appendable(&self.inner.context)?;
        self.append(command, None, &opts)
    }

    /// Appends a USM copy (`urCommandBufferAppendUSMMemcpyExp`); both ranges
    /// are checked against their allocations.
    pub fn append_usm_memcpy(
        &self,
        dst: UsmPtr,
        src: UsmPtr,
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::usm_memcpy(&self.inner.context, HostSide::Usm(dst), HostSide::Usm(src), size)?;
        self.append(command, None, &opts)
    }

    /// Appends a copy where each side is either a USM pointer of the buffer's
    /// context or, lying in no USM allocation of it, host memory
    /// (`urCommandBufferAppendUSMMemcpyExp`, which accepts both). At least one
    /// side must be USM: a copy between two host memories, which a queue runs
    /// on the host ([`Queue::usm_memcpy_host`](crate::Queue::usm_memcpy_host)),
    /// is `UnsupportedFeature` here, because no backend's native command
    /// buffer holds host work.
    ///
    /// # Safety
    /// A side in no USM allocation must be host memory valid for `size`
    /// bytes (reads of `src`, writes of `dst`) at every execution of the
    /// buffer, and not accessed by the host in conflict while one runs.
    pub unsafe fn append_usm_memcpy_host(
        &self,
        dst: *mut u8,
        src: *const u8,
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let (dst, src) = (HostSide::Raw(dst), HostSide::Raw(src.cast_mut()));
        let command = Command::usm_memcpy(&self.inner.context, dst, src, size)?;
        self.append(command, None, &opts)
    }

    /// Appends a USM fill with a pattern of any length dividing the size (`urCommandBufferAppendUSMFillExp`).
    pub fn append_usm_fill(
        &self,
        dst: UsmPtr,
        pattern: &[u8],
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::usm_fill(&self.inner.context, dst, pattern, size)?, None, &opts)
    }

    /// Appends a USM prefetch (`urCommandBufferAppendUSMPrefetchExp`).
    pub fn append_usm_prefetch(
        &self,
        ptr: UsmPtr,
        size: usize,
        flags: MigrationFlags,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::usm_prefetch(&self.inner.context, ptr, size, flags)?, None, &opts)
    }

    /// Appends USM advice (`urCommandBufferAppendUSMAdviseExp`).
    pub fn append_usm_advise(
        &self,
        ptr: UsmPtr,
        size: usize,
        advice: UsmAdvice,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::usm_advise(&self.inner.context, ptr, size, advice)?, None, &opts)
    }

    /// Appends a buffer copy (`urCommandBufferAppendMemBufferCopyExp`).
    pub fn append_buffer_copy(
        &self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_offset: usize,
        dst_offset: usize,
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::buffer_copy(&self.inner.context, src, dst, src_offset, dst_offset, size)?, None, &opts)
    }

    /// Appends a rect copy between buffers (`urCommandBufferAppendMemBufferCopyRectExp`).
    pub fn append_buffer_copy_rect(
        &self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_layout: RectLayout,
        dst_layout: RectLayout,
        region: RectRegion,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_copy_rect(&self.inner.context, src, dst, src_layout, dst_layout, region)?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer read into USM, host USM included (`urCommandBufferAppendMemBufferReadExp`).
    pub fn append_buffer_read(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: UsmPtr,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_read(&self.inner.context, buffer, offset, size, HostSide::Usm(dst))?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer read into memory: a USM pointer of the buffer's
    /// context or raw host memory.
    ///
    /// # Safety
    /// Outside USM, `dst` must be valid for `size` bytes of writes at every execution of the
    /// buffer, and not accessed by the host while one runs.
    pub unsafe fn append_buffer_read_host(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: *mut u8,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_read(&self.inner.context, buffer, offset, size, HostSide::Raw(dst))?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer write from USM, host USM included (`urCommandBufferAppendMemBufferWriteExp`).
    pub fn append_buffer_write(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: UsmPtr,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_write(&self.inner.context, buffer, offset, size, HostSide::Usm(src))?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer write from memory: a USM pointer of the buffer's
    /// context or raw host memory.
    ///
    /// # Safety
    /// Outside USM, `src` must be valid for `size` bytes of reads at every execution of the
    /// buffer, and not written by the host while one runs.
    pub unsafe fn append_buffer_write_host(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: *const u8,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_write(&self.inner.context, buffer, offset, size, HostSide::Raw(src.cast_mut()))?;
        self.append(command, None, &opts)
    }

    /// Appends a rect read into USM laid out by `host_layout` from `dst`
    /// (`urCommandBufferAppendMemBufferReadRectExp`).
    pub fn append_buffer_read_rect(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        dst: UsmPtr,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_read_rect(
            &self.inner.context,
            buffer,
            buffer_layout,
            host_layout,
            region,
            HostSide::Usm(dst),
        )?;
        self.append(command, None, &opts)
    }

    /// Appends a rect write from USM laid out by `host_layout` from `src`
    /// (`urCommandBufferAppendMemBufferWriteRectExp`).
    pub fn append_buffer_write_rect(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        src: UsmPtr,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let command = Command::buffer_write_rect(
            &self.inner.context,
            buffer,
            buffer_layout,
            host_layout,
            region,
            HostSide::Usm(src),
        )?;
        self.append(command, None, &opts)
    }

    /// Appends a rect read into memory laid out by `host_layout` from `dst`:
    /// a USM pointer of the buffer's context or raw host memory.
    ///
    /// # Safety
    /// Outside USM, `dst` must be valid for writes over the host layout's
    /// extent at every execution of the buffer, and not accessed by the host
    /// while one runs.
    pub unsafe fn append_buffer_read_rect_host(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        dst: *mut u8,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let dst = HostSide::Raw(dst);
        let command = Command::buffer_read_rect(&self.inner.context, buffer, buffer_layout, host_layout, region, dst)?;
        self.append(command, None, &opts)
    }

    /// Appends a rect write from memory laid out by `host_layout` from `src`:
    /// a USM pointer of the buffer's context or raw host memory.
    ///
    /// # Safety
    /// Outside USM, `src` must be valid for reads over the host layout's
    /// extent at every execution of the buffer, and not written by the host
    /// while one runs.
    pub unsafe fn append_buffer_write_rect_host(
        &self,
        buffer: &MemBuffer,
        buffer_layout: RectLayout,
        host_layout: RectLayout,
        region: RectRegion,
        src: *const u8,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        let src = HostSide::Raw(src.cast_mut());
        let command = Command::buffer_write_rect(&self.inner.context, buffer, buffer_layout, host_layout, region, src)?;
        self.append(command, None, &opts)
    }

    /// Appends a buffer fill with a pattern of any length dividing the size (`urCommandBufferAppendMemBufferFillExp`).
    pub fn append_buffer_fill(
        &self,
        buffer: &MemBuffer,
        pattern: &[u8],
        offset: usize,
        size: usize,
        opts: AppendOptions<'_>,
    ) -> Result<Appended> {
        self.append(Command::buffer_fill(&self.inner.context, buffer, pattern, offset, size)?, None, &opts)
    }

    /// Submits on `queue`; called by [`Queue::enqueue_command_buffer`].
    pub(crate) fn enqueue_on(&self, queue: &Queue, wait: &[Arc<dyn EventImpl>]) -> Result<Arc<dyn EventImpl>> {
        ensure!(
            queue.context() == &self.inner.context,
            InvalidQueue,
            "the queue belongs to another context than the command buffer"
        );
        let mut state = self.inner.state.lock();
        let imp = state.executable("enqueue of")?;
        let in_order = !queue.properties().out_of_order;
        // SAFETY: the queue is of this context (so of this adapter), the
        // wait events were resolved from events of this context, and
        // `in_order` is the queue's own property.
        let result = unsafe { imp.enqueue_ordered(queue.imp(), &as_refs(wait), in_order) };
        if result.is_err() {
            drop(state);
            queue.hold_after_failed_submission(self);
        }
        result
    }

    fn check_updatable(&self, state: &State) -> Result<()> {
        ensure!(self.inner.desc.updatable, InvalidOperation, "the command buffer is not updatable");
        ensure!(state.is_finalized(), InvalidOperation, "update of a command buffer that is not finalized");
        Ok(())
    }

    fn check_handle(&self, handle: &CommandHandle) -> Result<u32> {
        ensure!(handle.buffer == self.inner.id, InvalidCommandHandle, "command handle of another command buffer");
        Ok(handle.index)
    }

    /// Updates kernel commands for the next enqueues
    /// (`urCommandBufferUpdateKernelLaunchExp`). All updates are validated
    /// before any is applied: on error nothing changes. Submissions already
    /// enqueued are not affected.
    ///
    /// # Safety
    /// As for [`append_kernel_launch`](Self::append_kernel_launch): the updated
    /// kernels may touch any memory their new arguments let them reach.
    #[tracing::instrument(level = "debug", skip_all, fields(updates = updates.len(), label = self.label()))]
    pub unsafe fn update_kernel_launches(&self, updates: &[KernelLaunchUpdate<'_>]) -> Result<()> {
        ensure!(!updates.is_empty(), InvalidSize, "empty list of kernel updates");
        let ctx = &self.inner.context;
        let caps = ctx.device().info().command_buffer.update;
        let mut state = self.inner.state.lock();
        self.check_updatable(&state)?;
        // New state per touched command, in first-touch order, kept off the
        // heap for the usual one-command update: where other threads free
        // into the allocator at the same time (a replay's clean-up, ours or
        // the driver's), each allocation is what the call pays most for
        // (docs/performance.md, goal 1).
        let mut pending: SmallVec<[(u32, KernelCommand, LocalSizeOrigin); 1]> = SmallVec::new();
        let mut slots = Slots::default();
        for update in updates {
            let index = self.check_handle(update.command)?;
            let record = &state.records[index as usize];
            let recorded = expect_kernel(&record.command)?;
            let kernel_record = record.kernel.as_ref().expect("kernel commands have a kernel record");
            match slots.find(&pending, index) {
                Some(slot) => {
                    let (_, current, origin) = &pending[slot];
                    let merged = merge_update(ctx, caps, kernel_record, current, *origin, update)?;
                    (pending[slot].1, pending[slot].2) = merged;
                }
                None => {
                    let (launch, origin) =
                        merge_update(ctx, caps, kernel_record, recorded, kernel_record.local_origin, update)?;
                    pending.push((index, launch, origin));
                    slots.pushed(&pending);
                }
            }
        }
        let adapter_updates: SmallVec<[KernelUpdate<'_>; 1]> =
            pending.iter().map(|(index, launch, _)| KernelUpdate { command: *index, launch }).collect();
        // SAFETY: finalized and updatable (checked), each command appears once
        // and is a kernel command, each launch was validated against its kernel
        // (the original or a registered alternative) and the device's
        // capabilities were checked for every change.
        unsafe { state.executable("update of")?.update_kernel_launches(&adapter_updates)? };
        // The views borrow `pending`, whose entries move into the records.
        drop(adapter_updates);
        for (index, launch, origin) in pending {
            let record = &mut state.records[index as usize];
            record.command = Command::KernelLaunch(launch);
            if let Some(k) = record.kernel.as_mut() {
                k.local_origin = origin;
            }
        }
        Ok(())
    }

    fn check_event_update(&self, state: &State, handle: &CommandHandle) -> Result<u32> {
        let device = self.inner.context.device();
        ensure!(
            device.info().command_buffer.update.contains(UpdateCapabilities::EVENTS),
            UnsupportedFeature,
            "{device} cannot update command-buffer events"
        );
        self.check_updatable(state)?;
        self.check_handle(handle)
    }

    /// Gives a command a new signal event for the next enqueues
    /// (`urCommandBufferUpdateSignalEventExp`); the command must have been
    /// appended with one.
    #[tracing::instrument(level = "debug", skip_all, fields(command = handle.index, label = self.label()))]
    pub fn update_signal_event(&self, handle: &CommandHandle) -> Result<Event> {
        let mut state = self.inner.state.lock();
        let index = self.check_event_update(&state, handle)?;
        ensure!(
            state.records[index as usize].signal,
            InvalidOperation,
            "command {index} was appended without a signal event"
        );
        // SAFETY: finalized, updatable, the command has a signal event and the
        // device reports the EVENTS capability.
        let event = unsafe { state.executable("update of")?.update_signal_event(index)? };
        Ok(Event::from_imp(event, &self.inner.context))
    }

    /// Replaces a command's wait events for the next enqueues
    /// (`urCommandBufferUpdateWaitEventsExp`); the count must match the append's.
    #[tracing::instrument(level = "debug", skip_all, fields(command = handle.index, label = self.label()))]
    pub fn update_wait_events(&self, handle: &CommandHandle, events: &[&Event]) -> Result<()> {
        let mut state = self.inner.state.lock();
        let index = self.check_event_update(&state, handle)?;
        let expected = state.records[index as usize].wait_events;
        ensure!(
            events.len() == expected,
            InvalidEventWaitList,
            "command {index} was appended with {expected} wait events, {} given",
            events.len()
        );
        let events = check_events(self.inner.context.id(), events, "wait-event update")?;
        // SAFETY: as for update_signal_event; the count matches and the events
        // are of this context.
        unsafe { state.executable("update of")?.update_wait_events(index, &events) }
    }
}

/// Finds the pending entry of a command during one update call: a scan
/// while few commands are touched (no allocation), a map once many are, so
/// that an update of every command stays linear.
#[derive(Default)]
struct Slots {
    map: Option<HashMap<u32, usize>>,
}

impl Slots {
    /// Commands scanned before the map is built.
    const SCAN: usize = 8;

    fn find<T>(&self, pending: &[(u32, T, LocalSizeOrigin)], index: u32) -> Option<usize> {
        match &self.map {
            Some(map) => map.get(&index).copied(),
            None => pending.iter().position(|(i, ..)| *i == index),
        }
    }

    /// Records the entry just pushed at the end of `pending`.
    fn pushed<T>(&mut self, pending: &[(u32, T, LocalSizeOrigin)]) {
        let last = pending.len() - 1;
        match &mut self.map {
            Some(map) => {
                map.insert(pending[last].0, last);
            }
            None if pending.len() > Self::SCAN => {
                self.map = Some(pending.iter().enumerate().map(|(slot, (i, ..))| (*i, slot)).collect());
            }
            None => {}
        }
    }
}

/// Applies one update to a kernel command's current state.
fn merge_update(
    ctx: &Context,
    caps: UpdateCapabilities,
    record: &KernelRecord,
    current: &KernelCommand,
    origin: LocalSizeOrigin,
    update: &KernelLaunchUpdate<'_>,
) -> Result<(KernelCommand, LocalSizeOrigin)> {
    let device = ctx.device();
    let need = |cap: UpdateCapabilities, what: &str| -> Result<()> {
        ensure!(caps.contains(cap), UnsupportedFeature, "{device} cannot update {what} in command buffers");
        Ok(())
    };
    let kernel = match update.new_kernel {
        Some(k) if !k.same_kernel(&current.kernel) => {
            need(UpdateCapabilities::KERNEL_HANDLE, "the kernel")?;
            ensure!(
                k.same_kernel(&record.original) || record.alternatives.iter().any(|a| a.same_kernel(k)),
                InvalidValue,
                "kernel `{}` was not registered as an alternative of this command",
                k.name()
            );
            k.clone()
        }
        _ => current.kernel.clone(),
    };
    let switched = !kernel.same_kernel(&current.kernel);
    if !update.args.is_empty() {
        need(UpdateCapabilities::KERNEL_ARGUMENTS, "kernel arguments")?;
    }
    if update.global_size.is_some() {
        need(UpdateCapabilities::GLOBAL_WORK_SIZE, "the global size")?;
    }
    if update.global_offset.is_some() {
        need(UpdateCapabilities::GLOBAL_WORK_OFFSET, "the global offset")?;
    }
    if update.local_size != LocalSizeUpdate::Keep {
        need(UpdateCapabilities::LOCAL_WORK_SIZE, "the local size")?;
    }

    // Geometry.
    let old = current.range;
    let local_given = match update.local_size {
        LocalSizeUpdate::Set(l) => Some(l),
        _ => None,
    };
    let work_dim = match update.global_size {
        Some(global) => global.len(),
        None => {
            // An offset or local size of another (valid) dimension changes the
            // work dimension without a new global size: UR's `INVALID_VALUE`,
            // as for a change without a new offset below.
            for (name, list) in [("global offset", update.global_offset), ("local size", local_given)] {
                let changes = list.is_some_and(|l| (1..=3).contains(&l.len()) && l.len() != old.work_dim as usize);
                ensure!(
                    !changes,
                    InvalidValue,
                    "the new {name} changes the work dimension from {} without a new global size",
                    old.work_dim
                );
            }
            old.work_dim as usize
        }
    };
    let work_dim = check_dims(work_dim, &[("global offset", update.global_offset), ("local size", local_given)])?;
    let dims_changed = work_dim != old.work_dim;
    ensure!(
        !dims_changed || update.global_offset.is_some(),
        InvalidValue,
        "the work dimension changes from {} to {work_dim} without a new global offset",
        old.work_dim
    );
    let global = update.global_size.map_or(old.global_size, |g| to_3d(g, 1));
    let offset = update.global_offset.map_or(old.global_offset, |o| to_3d(o, 0));
    let local = match (update.local_size, origin) {
        (LocalSizeUpdate::Set(l), _) => Some(to_3d(l, 1)),
        (LocalSizeUpdate::ImplementationChosen, _) => None,
        (LocalSizeUpdate::Keep, LocalSizeOrigin::Implementation) => {
            if update.global_size.is_some() || switched {
                // The implementation chooses again for the new sizes: that changes
                // the local size.
                need(UpdateCapabilities::LOCAL_WORK_SIZE, "the implementation-chosen local size")?;
            }
            None
        }
        (LocalSizeUpdate::Keep, LocalSizeOrigin::User) => {
            ensure!(
                !dims_changed,
                InvalidValue,
                "the work dimension changes from {} to {work_dim}: give a local size or let the implementation choose",
                old.work_dim
            );
            Some(old.local_size)
        }
    };
    let (range, origin) = resolve_range(device.info(), &kernel, work_dim, global, offset, local)?;

    // Arguments.
    let kinds = &kernel.signature().args;
    let resolve = |index: usize, arg| {
        ensure!(
            index < kinds.len(),
            InvalidKernelArgumentIndex,
            "argument index {index} of `{}`, which takes {}",
            kernel.name(),
            kinds.len()
        );
        resolve_arg(ctx, &kernel, index, kinds[index], arg)
    };
    let args = if switched {
        let mut args: Vec<Option<ArgValue>> = vec![None; kinds.len()];
        for (index, arg) in &update.args {
            args[*index] = Some(resolve(*index, arg)?);
        }
        args.into_iter()
            .enumerate()
            .map(|(i, a)| {
                a.ok_or_else(|| {
                    err!(InvalidKernelArgumentIndex, "switching to `{}` leaves its argument {i} unset", kernel.name())
                })
            })
            .collect::<Result<Vec<_>>>()?
    } else {
        // Same kernel: the current arguments (one per declared argument)
        // with the changed ones replaced, in one allocation.
        let mut args = current.args.clone();
        for (index, arg) in &update.args {
            args[*index] = resolve(*index, arg)?;
        }
        args
    };
    check_local_memory(device.info(), &kernel, &args)?;
    Ok((KernelCommand { kernel, range, args }, origin))
}

impl fmt::Debug for CommandBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandBuffer")
            .field("id", &self.inner.id)
            .field("desc", &self.inner.desc)
            .field("support", &self.inner.support)
            .finish()
    }
}
