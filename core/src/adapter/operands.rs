//! The objects commands hold and the adapter interface's methods are
//! given, as adapters see them: kernels, events, USM allocations, memory
//! buffers and native commands.
//!
//! They hold only adapter objects of the traits that execute nothing
//! (`resources`), so that they sit below the commands (`command`, `launch`)
//! and the traits that take commands (`mod.rs`). `Device`, `Context` and
//! `Program`, which hold adapter objects of those traits, are defined above
//! them, in `objects`, which re-exports this module's objects too. The
//! behaviour of every object is written in the front end.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use parking_lot::RwLock;

use crate::adapter::resources::{BufferImpl, EventImpl, KernelImpl, UsmImpl};
use crate::error::Result;
use crate::types::backend::Backend;
use crate::types::desc::ContextId;
use crate::types::interop::{NativeHandle, NativeTarget};
use crate::types::memory::{HostPtr, MemFlags, UsmKind};
use crate::types::program::KernelSignature;

/// A kernel of a program. Clone retains, drop releases; clones are the same
/// kernel for alternative-kernel checks.
#[derive(Clone)]
pub struct Kernel {
    pub(crate) inner: Arc<KernelInner>,
}

pub(crate) struct KernelInner {
    /// Its program, a `Program` (see [`KernelProgram`]).
    pub(crate) program: Arc<dyn KernelProgram>,
    pub(crate) signature: KernelSignature,
    pub(crate) max_work_group_size: usize,
    pub(crate) compile_size: Option<[usize; 3]>,
    pub(crate) imp: Box<dyn KernelImpl>,
    /// The last cache-configuration hint given.
    pub(crate) cache_config: parking_lot::Mutex<crate::types::program::CacheConfig>,
    pub(crate) _live: crate::live::Live<{ crate::live::KERNEL }>,
}

/// The program a kernel belongs to, as a kernel holds it. A kernel sits
/// inside commands, below the traits that take them, and a `Program` above
/// those traits (it holds its context, whose adapter object makes the
/// queues that take commands): naming `Program` here would close a circle
/// of types through the adapter interface. `Program` is the one
/// implementation (`objects`), so `Kernel::program` gets it back by a
/// downcast that cannot fail.
pub(crate) trait KernelProgram: Any + Send + Sync {}

/// An event. Clone retains, drop releases.
#[derive(Clone)]
pub struct Event {
    pub(crate) imp: Arc<dyn EventImpl>,
    pub(crate) context: ContextId,
    /// For the event of a command captured into a UR graph: the graph's id
    /// and the node it stands for, so that an eager wait list refuses it
    /// (`event::check_not_captured`) by reading this, not by asking the
    /// capture above the events.
    pub(crate) captured: Option<(u64, u32)>,
    pub(crate) _live: crate::live::Live<{ crate::live::EVENT }>,
}

/// The shared part of a USM allocation: what commands hold alive.
pub struct UsmInner {
    pub(crate) imp: Box<dyn UsmImpl>,
    pub(crate) address: u64,
    pub(crate) size: usize,
    pub(crate) kind: UsmKind,
    pub(crate) tracker: Weak<AllocationTracker>,
    pub(crate) _live: crate::live::Live<{ crate::live::USM }>,
}

/// A validated position inside a USM allocation, holding it alive.
#[derive(Clone)]
pub struct UsmRef {
    pub(crate) alloc: Arc<UsmInner>,
    pub(crate) offset: usize,
}

/// The USM allocations of one context, by address.
#[derive(Default)]
pub(crate) struct AllocationTracker {
    pub(crate) by_address: RwLock<BTreeMap<u64, Weak<UsmInner>>>,
    /// The trackers of the contexts joined with this one
    /// ([`Context::share_usm_with`](crate::Context::share_usm_with)).
    pub(crate) joined: RwLock<Vec<Weak<AllocationTracker>>>,
    /// The context's queues, which a freed allocation waits for.
    pub(crate) queues: parking_lot::Mutex<Vec<Weak<dyn HoldsFreedMemory>>>,
}

/// A queue, as a freed USM allocation sees it: it keeps the allocation
/// until what it was given so far has completed (the front end's queues).
pub(crate) trait HoldsFreedMemory: Send + Sync {
    /// Keeps `alloc` until the work submitted so far has completed.
    fn hold_until_done(&self, alloc: &Arc<UsmInner>);
}

/// A memory buffer (`ur_mem_handle_t`): device memory addressed by handle and
/// offset. Clone retains, drop releases.
///
/// A buffer is either a root buffer, which owns its memory, or a sub-buffer
/// ([`MemBuffer::partition`], `urMemBufferPartition`): a view of a region
/// of a root buffer, which it holds alive. A sub-buffer is usable wherever a
/// buffer is; its offsets and sizes are checked against the view, and the
/// commands adapters receive name the root buffer at absolute offsets.
#[derive(Clone)]
pub struct MemBuffer {
    pub(crate) inner: Arc<BufferInner>,
}

pub(crate) struct BufferInner {
    pub(crate) id: u64,
    pub(crate) storage: Storage,
    pub(crate) size: usize,
    pub(crate) flags: MemFlags,
    pub(crate) context: ContextId,
    /// The device's base address alignment in bytes: sub-buffer origins are
    /// multiples of it.
    pub(crate) align: usize,
}

pub(crate) enum Storage {
    /// A buffer owning its memory.
    Root(Box<dyn BufferImpl>),
    /// A region of a root buffer.
    View {
        /// The root buffer (never itself a view).
        parent: MemBuffer,
        /// Where the region starts in the parent.
        offset: usize,
        /// The adapter's own object for the region, where it needs one.
        native: Option<Box<dyn BufferImpl>>,
    },
}

/// Host-side memory of a read, write or USM copy: a USM allocation, or raw
/// host memory.
#[derive(Clone, Debug)]
pub enum MemLoc {
    /// A position in a USM allocation of the command's context.
    Usm(UsmRef),
    /// Host memory outside any allocation.
    Host(HostPtr),
}

/// What a native command's callback is given.
pub struct NativeScope<'a> {
    pub(crate) backend: Backend,
    pub(crate) target: NativeTarget,
    pub(crate) mems: &'a [MemBuffer],
}

/// The callback of a native command.
pub type NativeFn = dyn Fn(&NativeScope<'_>) + Send + Sync;

/// Whose native command it is: `native_handle()` of that object returns the
/// target while the callback runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A queue, by its key.
    Queue(usize),
    /// A command buffer, by its id.
    CommandBuffer(u64),
}

/// A validated native command: the callback, the buffers it uses (kept alive
/// while it may run), its owner, and a command buffer's child.
#[derive(Clone)]
pub struct NativeCommand {
    pub(crate) callback: Arc<NativeFn>,
    pub(crate) mems: Vec<MemBuffer>,
    pub(crate) owner: Owner,
    pub(crate) child: Option<Arc<dyn NestedCommandBuffer>>,
}

/// The child command buffer of a native command, as the layers below the
/// front end hold it: the front end's `CommandBuffer` implements it (in
/// `interop`), so that a command can own its child without this layer
/// naming the front end.
pub(crate) trait NestedCommandBuffer: Send + Sync {
    /// The buffer's identity, the owner of the callback's target.
    fn id(&self) -> u64;
    /// The native object the child records into.
    fn recording_target(&self) -> Result<NativeHandle>;
    /// The front end's `CommandBuffer` behind it.
    fn as_any(&self) -> &dyn std::any::Any;
}
