//! Command buffers' definitions: recording, finalize, updates, submission
//! (the public module is [`crate::command_buffer`], which re-exports them
//! beside the composed command buffers, [`crate::api::composed`], which
//! hold command buffers and sit above queues and collectives).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::adapter::{EventImpl, ExecutableCommandBufferImpl, QueueImpl, RecordingCommandBufferImpl};
use crate::command::Command;
use crate::context::Context;
use crate::device::{CommandBufferSupport, Device};
use crate::error::Result;
use crate::event::Event;
use crate::interop::{self, NativeHandle, Owner};
use crate::launch::{KernelArg, LocalSizeOrigin};
use crate::program::Kernel;
use crate::software::SoftwareCommandBuffer;
use crate::types::desc::CommandBufferDesc;
use crate::{ensure, err};

mod append;
mod update;

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
    /// Updates made since finalize, counted under the state's lock, so that
    /// a composition of this buffer notices it is older than the buffer.
    updates: AtomicU64,
    _live: crate::live::Live<{ crate::live::COMMAND_BUFFER }>,
}

pub(crate) struct State {
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

    pub(crate) fn executable(&mut self, what: &str) -> Result<&mut dyn ExecutableCommandBufferImpl> {
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
    /// be one of the context's devices or a sub-device of one at any depth
    /// ([`Context::holds_device`])
    /// (`InvalidDevice` otherwise; for a sub-device the backend may answer
    /// `UnsupportedFeature`, [api.md](../docs/api.md#sub-devices)); an
    /// updatable buffer needs a device with update capabilities
    /// (`UnsupportedFeature` otherwise).
    #[tracing::instrument(level = "debug", skip(context, device), fields(device = %device, label = desc.label))]
    pub fn new(context: &Context, device: &Device, desc: CommandBufferDesc) -> Result<CommandBuffer> {
        ensure!(context.holds_device(device), InvalidDevice, "{device} is not of {context:?} or a sub-device of one");
        let sub_device = device != context.device();
        let caps = device.info().command_buffer;
        ensure!(
            !desc.updatable || !caps.update.is_empty(),
            UnsupportedFeature,
            "{device} cannot update command buffers"
        );
        let imp: Box<dyn RecordingCommandBufferImpl> = match caps.support {
            CommandBufferSupport::Native => {
                // SAFETY: the device reports native command buffers, and update
                // capabilities when the buffer is updatable; another device is
                // one the context holds (checked above), as
                // `sub_device_command_buffer_create` asks.
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
                updates: AtomicU64::new(0),
                _live: crate::live::Live::new(),
            }),
        })
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The buffer's identity while it lives.
    /// Updates made since finalize (read by compositions of the buffer,
    /// under its state's lock to see the count that state matches).
    pub(crate) fn updates(&self) -> u64 {
        self.inner.updates.load(Ordering::Acquire)
    }

    /// Whether it was made for a sub-device of its context's device.
    pub(crate) fn is_for_sub_device(&self) -> bool {
        self.inner.sub_device.is_some()
    }

    /// Its state, locked (compositions lock their parts' states together).
    pub(crate) fn lock_state(&self) -> parking_lot::MutexGuard<'_, State> {
        self.inner.state.lock()
    }

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

    /// Submits on the queue `target` describes; called by
    /// [`Queue::enqueue_command_buffer`](crate::Queue::enqueue_command_buffer).
    ///
    /// The outer error is a refusal before anything was submitted; the
    /// inner one is the adapter's submission failing, after which part of
    /// it may run (the software command buffer submits command by command),
    /// so the queue holds the buffer until what it submitted has completed.
    pub(crate) fn enqueue_on(
        &self,
        target: QueueTarget<'_>,
        wait: &[&dyn EventImpl],
    ) -> Result<Result<Arc<dyn EventImpl>>> {
        ensure!(
            target.context == &self.inner.context,
            InvalidQueue,
            "the queue belongs to another context than the command buffer"
        );
        let mut state = self.inner.state.lock();
        let imp = state.executable("enqueue of")?;
        // SAFETY: the queue is of this context (so of this adapter), the
        // wait events were resolved from events of this context, and
        // `in_order` is the queue's own property.
        Ok(unsafe { imp.enqueue_ordered(target.imp, wait, target.in_order) })
    }
}

/// What a command buffer's submission needs of the queue it runs on, so
/// that command buffers need not know queues (which hold command buffers
/// they submitted).
#[derive(Clone, Copy)]
pub(crate) struct QueueTarget<'a> {
    /// The queue's context.
    pub(crate) context: &'a Context,
    /// The adapter's queue.
    pub(crate) imp: &'a dyn QueueImpl,
    /// Whether the queue runs its commands in order.
    pub(crate) in_order: bool,
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
