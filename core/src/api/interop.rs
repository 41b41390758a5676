//! Interoperation with the backends' own APIs: native handles of objects and
//! native commands (`urEnqueueNativeCommandExp`,
//! `urCommandBufferAppendNativeCommandExp`).
//!
//! # Native handles
//!
//! Every object's `native_handle()` returns the driver object behind it, as
//! a [`NativeHandle`] (the integer value of the handle or pointer):
//!
//! | object | CPU | OpenCL | Vulkan | CUDA |
//! |---|---|---|---|---|
//! | [`Platform`](crate::Platform) | unsupported | `cl_platform_id` | `VkInstance` | unsupported |
//! | [`Device`](crate::Device) | unsupported | `cl_device_id` | `VkPhysicalDevice` | `CUdevice` (the ordinal) |
//! | [`Context`](crate::Context) | unsupported | `cl_context` | `VkDevice` | `CUcontext` (the primary context) |
//! | [`Queue`](crate::Queue) | unsupported | `cl_command_queue` | `VkQueue` | `CUstream` |
//! | [`MemBuffer`](crate::MemBuffer) | host address of its bytes | `cl_mem` | `VkBuffer` (from offset 0) | `CUdeviceptr` |
//! | [`Event`](crate::Event) | unsupported | `cl_event` | unsupported | `CUevent` (of the completion) |
//! | [`Program`](crate::Program) | unsupported | `cl_program` | unsupported | `CUmodule` |
//! | [`Kernel`](crate::Kernel) | unsupported | `cl_kernel` | unsupported | `CUfunction` |
//! | [`CommandBuffer`](crate::CommandBuffer), once finalized | the plan's address | `cl_command_buffer_khr` | `VkCommandBuffer` | `CUgraphExec` |
//!
//! "Unsupported" is `UnsupportedFeature`. A command buffer's handle is the
//! executable object an enqueue submits ([`ExecutableCommandBufferImpl::native_handle`](crate::adapter::ExecutableCommandBufferImpl::native_handle)):
//! before finalize there is none, and every backend answers `InvalidOperation`;
//! software and pre-planned buffers answer `UnsupportedFeature`. Handles stay owned by cmdbuf: they
//! are valid while the object lives and must not be released by the caller.
//! The reverse, objects adopted from native handles, is [`crate::adopt`].
//!
//! # Native commands
//!
//! A native command is a callback that does backend-native work in the
//! place of a command. It receives a [`NativeScope`] naming where that work
//! goes ([`NativeTarget`]):
//!
//! | backend | target | when the callback runs |
//! |---|---|---|
//! | CPU | [`NativeTarget::Host`]: the callback *is* the work | when its dependencies have completed, on a worker thread, at each execution (`Queue::enqueue_native_command_now`: on the calling thread, which waits for them) |
//! | OpenCL, eager | [`NativeTarget::Queue`]: the `cl_command_queue`, between two barriers | at the enqueue call |
//! | OpenCL, command buffer | [`NativeTarget::Recording`]: a `cl_command_buffer_khr` of the command's own, which every submission enqueues after the command's dependencies | once, at the append (instances recorded anew after updates reuse its work) |
//! | Vulkan | [`NativeTarget::Recording`]: a `VkCommandBuffer` in the recording state | eager: at the call; command buffers: at finalize, again when an update makes the buffer re-recorded (at the next enqueue) |
//! | CUDA, eager | [`NativeTarget::Queue`]: a `CUstream` of its own, after a marker of the queue | at the enqueue call |
//! | CUDA, command buffer | [`NativeTarget::Queue`]: a `CUstream` capturing into the buffer's graph after the command's dependencies; with a child command buffer, [`NativeTarget::Recording`]: the child's `CUgraph`, then added as a child-graph node | at the append |
//! | software command buffers | as the backend's eager native command | at each submission |
//!
//! A callback may thus run several times (CPU, Vulkan after a re-recording
//! update, software command buffers): the data it uses must stay valid for
//! as long as the command may run.
//!
//! Work the callback puts on the target runs after the command's
//! dependencies and before anything that depends on the command. Inside the
//! callback, `Queue::native_handle` of the queue the command was enqueued on
//! and `CommandBuffer::native_handle` of the buffer it was appended to return
//! the target, without taking any lock (the callback may run while the
//! command buffer is being recorded). On the CPU, where the callback runs on
//! the queue's worker, blocking calls that would wait for the command itself
//! (`Queue::finish`, blocking transfers) return `InvalidOperation` instead
//! of deadlocking.

use std::cell::RefCell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock, mpsc};

use parking_lot::Mutex;

use crate::error::{Result, panic_message};
use crate::event::execution_error;
use crate::memory::MemBuffer;
pub use crate::objects::{NativeCommand, NativeFn, NativeScope};
pub(crate) use crate::objects::{NestedCommandBuffer, Owner};
use crate::platform::Backend;
pub use crate::types::interop::{NativeHandle, NativeTarget};

impl NativeScope<'_> {
    /// The backend.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Where the work goes.
    pub fn target(&self) -> NativeTarget {
        self.target
    }

    /// The memory buffers the command was enqueued with (`phMemList`).
    pub fn mems(&self) -> &[MemBuffer] {
        self.mems
    }
}

/// A callback borrowing data for `'a`, shared with a [`NativeCommand`] that
/// may outlive `'a`: dropping the `Borrowed` takes the callback out, so that
/// it is neither called nor dropped after `'a` (a later call does nothing).
pub(crate) struct Borrowed<'a> {
    slot: Arc<Mutex<Option<Box<NativeFn>>>>,
    _borrow: std::marker::PhantomData<&'a ()>,
}

impl<'a> Borrowed<'a> {
    pub(crate) fn new(callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'a) -> Borrowed<'a> {
        let boxed: Box<dyn Fn(&NativeScope<'_>) + Send + Sync + 'a> = Box::new(callback);
        // SAFETY: only the lifetime is erased; `Drop` takes the box out of the
        // slot (and drops it) before `'a` ends, and every call goes through
        // the slot, so nothing uses it after.
        let boxed: Box<NativeFn> = unsafe { std::mem::transmute(boxed) };
        Borrowed { slot: Arc::new(Mutex::new(Some(boxed))), _borrow: std::marker::PhantomData }
    }

    /// The callback as a native command holds it.
    pub(crate) fn shared(&self) -> Arc<NativeFn> {
        let slot = self.slot.clone();
        Arc::new(move |scope: &NativeScope<'_>| {
            if let Some(callback) = &*slot.lock() {
                callback(scope);
            }
        })
    }
}

impl Drop for Borrowed<'_> {
    fn drop(&mut self) {
        let callback = self.slot.lock().take();
        drop(callback);
    }
}

/// The callback of a queue's native command, which runs once: it is dropped
/// as soon as it has run rather than with the command, which the queue keeps
/// until a later call prunes it. A callback holding a handle of its own queue
/// (a natural thing to do) would otherwise form a cycle through the queue's
/// in-flight list and leak the queue when no later call comes.
pub(crate) fn run_once(callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'static) -> Arc<NativeFn> {
    let slot: Mutex<Option<Box<NativeFn>>> = Mutex::new(Some(Box::new(callback)));
    Arc::new(move |scope: &NativeScope<'_>| {
        let Some(callback) = slot.lock().take() else { return };
        // Dropped on unwind too: a panic is reported by `invoke`.
        let spent = SpentCallback(Some(callback), scope.target());
        if let Some(callback) = &spent.0 {
            callback(scope);
        }
    })
}

/// Drops a spent callback where that cannot deadlock.
struct SpentCallback(Option<Box<NativeFn>>, NativeTarget);

impl Drop for SpentCallback {
    fn drop(&mut self) {
        let Some(callback) = self.0.take() else { return };
        if self.1 != NativeTarget::Host {
            // Run on the enqueuing thread, which holds the queue.
            return drop(callback);
        }
        // On a CPU queue's worker the callback may hold the queue's last
        // handle, whose drop finishes the queue: waiting here for the very
        // command this worker runs. The reaper thread drops it instead.
        reap(callback);
    }
}

/// Hands `spent` to a thread that drops what it is given, one at a time;
/// where that thread cannot be started, drops it here (logged).
fn reap(spent: Box<NativeFn>) {
    static REAPER: OnceLock<Option<mpsc::Sender<Box<NativeFn>>>> = OnceLock::new();
    let reaper = REAPER.get_or_init(|| {
        let (send, receive) = mpsc::channel::<Box<NativeFn>>();
        let started = std::thread::Builder::new().name("ur-native-reaper".into()).spawn(move || {
            for spent in receive {
                drop(spent);
            }
        });
        match started {
            Ok(_) => Some(send),
            Err(e) => {
                tracing::warn!(error = %e, "no thread to drop spent native callbacks: dropping them on the worker");
                None
            }
        }
    });
    match reaper {
        Some(send) => {
            if let Err(mpsc::SendError(spent)) = send.send(spent) {
                drop(spent);
            }
        }
        None => drop(spent),
    }
}

thread_local! {
    /// The native commands whose callbacks run on this thread, innermost last.
    static RUNNING: RefCell<Vec<(Owner, NativeTarget)>> = const { RefCell::new(Vec::new()) };
}

/// Pops the running entry even when the callback unwinds.
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|r| r.borrow_mut().pop());
    }
}

impl NativeCommand {
    /// A native command of `owner`; `child` is a command-buffer native
    /// command's child command buffer (see `recorded/append.rs`).
    pub(crate) fn new(
        callback: Arc<NativeFn>,
        mems: Vec<MemBuffer>,
        owner: Owner,
        child: Option<Arc<dyn NestedCommandBuffer>>,
    ) -> NativeCommand {
        NativeCommand { callback, mems, owner, child }
    }

    /// The native object the child command buffer records into, which the
    /// adapter gives the callback as its target (CUDA: the child's `CUgraph`);
    /// `None` without a child.
    pub fn child_target(&self) -> Option<Result<NativeHandle>> {
        self.child.as_ref().map(|child| child.recording_target())
    }

    /// The memory buffers the command was enqueued with.
    pub fn mems(&self) -> &[MemBuffer] {
        &self.mems
    }

    /// Runs the callback with `target`. Adapters call it where the backend's
    /// native work goes (see the [module documentation](self)); a panic of
    /// the callback is returned as an execution error.
    ///
    /// # Safety
    /// `target` is the backend's documented target, valid for the call, and
    /// ordered after the command's dependencies and before its dependents.
    pub(crate) unsafe fn invoke(&self, backend: Backend, target: NativeTarget) -> Result<()> {
        RUNNING.with(|r| r.borrow_mut().push((self.owner, target)));
        let _running = Running;
        let _child = self.child.as_ref().map(|child| {
            RUNNING.with(|r| r.borrow_mut().push((Owner::CommandBuffer(child.id()), target)));
            Running
        });
        let scope = NativeScope { backend, target, mems: &self.mems };
        catch_unwind(AssertUnwindSafe(|| (self.callback)(&scope))).map_err(|payload| {
            execution_error(backend, format!("native command panicked: {}", panic_message(&*payload)))
        })
    }
}

impl fmt::Debug for NativeCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NativeCommand")
            .field("mems", &self.mems.len())
            .field("owner", &self.owner)
            .field("child", &self.child.is_some())
            .finish()
    }
}

/// The target of `owner`'s native command running on this thread, if any.
pub(crate) fn running_target(owner: Owner) -> Option<NativeTarget> {
    // A thread whose locals are being destroyed runs no native command.
    RUNNING.try_with(|r| r.borrow().iter().rev().find(|(o, _)| *o == owner).map(|(_, t)| *t)).ok().flatten()
}

/// `InvalidOperation` inside a host native command (which runs on a queue
/// worker): a blocking call there would wait for the command itself.
pub(crate) fn check_not_in_host_command(what: &str) -> Result<()> {
    // A thread whose locals are being destroyed (a release from a static
    // destructor at exit) runs no native command.
    let inside = RUNNING.try_with(|r| r.borrow().iter().any(|(_, t)| *t == NativeTarget::Host)).unwrap_or(false);
    crate::ensure!(
        !inside,
        InvalidOperation,
        "{what} inside a native command running on a CPU queue's worker would wait for the command itself"
    );
    Ok(())
}
