//! The API objects as adapters are handed them, inside commands and as
//! arguments of the adapter interface: devices, contexts, programs,
//! kernels, events, USM allocations and memory buffers.
//!
//! Only their definitions are here, so that the adapter interface can name
//! them without importing the front end. Their behaviour, validating
//! constructors included, is written in the front-end module of each
//! (`device`, `context`, `program`, `event`, `memory`), which re-exports the
//! type.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use parking_lot::RwLock;

use crate::adapter::{BufferImpl, ContextImpl, DeviceImpl, EventImpl, KernelImpl, ProgramImpl, UsmImpl};
use crate::error::Result;
use crate::types::backend::Backend;
use crate::types::desc::ContextId;
use crate::types::device::{DeviceId, DeviceInfo, Partition, PartitionSupport};
use crate::types::interop::{NativeHandle, NativeTarget};
use crate::types::memory::{HostPtr, MemFlags, UsmKind};
use crate::types::program::{KernelSignature, SourceForm};

/// A device of a platform. Cheap to clone.
///
/// A device may be viewed as [`emulated`](Device::emulated): contexts made
/// from that view build every command buffer with cmdbuf-core's software command
/// buffer, whatever the adapter offers natively. The conformance suite runs
/// both views so that both paths are tested on every run.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

pub(crate) struct DeviceInner {
    pub(crate) imp: Arc<dyn DeviceImpl>,
    pub(crate) info: DeviceInfo,
    pub(crate) id: DeviceId,
    /// For an emulated view, the native view it was made from.
    pub(crate) native: Option<Arc<DeviceInner>>,
    /// The partitions the adapter offers, asked once.
    pub(crate) partitions: PartitionSupport,
    /// For a sub-device, where it came from.
    pub(crate) sub: Option<SubDeviceOf>,
}

/// A sub-device's parent, the partition that made it, and its place in it.
#[derive(Clone)]
pub(crate) struct SubDeviceOf {
    pub(crate) parent: Device,
    pub(crate) partition: Partition,
    pub(crate) index: usize,
}

/// A context on one device, or over several ([`Context::with_devices`]):
/// a family of devices made on their root, or unrelated devices an adapter
/// spans, made on the first. Clone retains, drop releases.
///
/// Objects of different contexts never mix: passing a buffer, event, kernel
/// or queue of another context is an error naming the object.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    pub(crate) id: ContextId,
    pub(crate) device: Device,
    /// The devices the context was made over when they were several
    /// ([`Context::with_devices`]); `None` for a context of `device`.
    pub(crate) devices: Option<Box<[Device]>>,
    pub(crate) imp: Arc<dyn ContextImpl>,
    pub(crate) tracker: Arc<AllocationTracker>,
    pub(crate) _live: crate::live::Live<{ crate::live::CONTEXT }>,
}

/// A program built for a context. Clone retains, drop releases.
#[derive(Clone)]
pub struct Program {
    pub(crate) inner: Arc<ProgramInner>,
}

pub(crate) struct ProgramInner {
    pub(crate) context: Context,
    pub(crate) signatures: Vec<KernelSignature>,
    pub(crate) form: SourceForm,
    pub(crate) options: String,
    pub(crate) given: Option<Arc<[u8]>>,
    pub(crate) label: Option<&'static str>,
    /// Adopted from a native program: its signatures are derived.
    pub(crate) adopted: bool,
    pub(crate) imp: Box<dyn ProgramImpl>,
    pub(crate) _live: crate::live::Live<{ crate::live::PROGRAM }>,
}

/// A kernel of a program. Clone retains, drop releases; clones are the same
/// kernel for alternative-kernel checks.
#[derive(Clone)]
pub struct Kernel {
    pub(crate) inner: Arc<KernelInner>,
}

pub(crate) struct KernelInner {
    pub(crate) program: Program,
    pub(crate) signature: KernelSignature,
    pub(crate) max_work_group_size: usize,
    pub(crate) compile_size: Option<[usize; 3]>,
    pub(crate) imp: Box<dyn KernelImpl>,
    /// The last cache-configuration hint given.
    pub(crate) cache_config: parking_lot::Mutex<crate::types::program::CacheConfig>,
    pub(crate) _live: crate::live::Live<{ crate::live::KERNEL }>,
}

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
    /// ([`Context::share_usm_with`]).
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
