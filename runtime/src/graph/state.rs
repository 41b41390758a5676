//! The definitions of what a graph holds, which hold each other: a graph's
//! shared state holds its nodes, dynamic parameters and groups, buffers,
//! recording queues, placement and the executable graph made from it; a
//! node holds a sub-graph's executable graph, which holds its source graph;
//! a recording queue holds the graph it records into. Their behaviour is in
//! the modules above (`node`, `dynamic`, `buffers`, `record`,
//! `multi_device`, `collective`, `executable`, `modifiable`), so that those
//! name each other one way only, as `adapter-vulkan/src/shared/state.rs`
//! does for a device's lanes, events and batches.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use cmdbuf_core::collective::{CollectiveOp, DataType, RecordedCollective};
use cmdbuf_core::command::Command;
use cmdbuf_core::command_buffer::{CommandBuffer, CommandHandle, ComposedCommandBuffer};
use cmdbuf_core::context::Context;
use cmdbuf_core::event::Event;
use cmdbuf_core::interop::NativeScope;
use cmdbuf_core::launch::ArgValue;
use cmdbuf_core::memory::{UsmAllocation, UsmPtr, UsmRef};
use cmdbuf_core::program::Kernel;
use cmdbuf_core::queue::{Queue, QueueLane, QueueSlot};

use super::memory::{GraphPool, MemoryStats};
use super::props::RecordingProperties;
use super::topo::TopoOrder;
use super::{Executable, FinalizeProperties, Graph, GraphProperties};
use crate::buffer::Buffer;
use crate::buffer::deps::DepTracker;
use crate::buffer::graph::GraphAccess;

// A modifiable graph (behaviour: `modifiable.rs`, with `ModifiableHandle`'s
// drop, which ends recording).

/// What every handle to a modifiable graph shares (and its nodes, dynamic
/// parameters, recorded events and recording queues refer to).
pub(crate) struct GraphShared {
    pub(crate) id: u64,
    pub(crate) context: Context,
    /// Its devices (the context's first): see [`super::multi_device`].
    pub(crate) devices: Devices,
    pub(crate) props: GraphProperties,
    pub(crate) state: Mutex<GraphState>,
    /// The users' handle, while one exists: queues recording into the graph
    /// hand out copies of it.
    pub(crate) handle: Weak<ModifiableHandle>,
}

/// The mutable part of a graph, under one lock (so that dynamic parameters,
/// dynamic command groups, recording queues and nodes never need two).
#[derive(Default)]
pub(crate) struct GraphState {
    pub(crate) nodes: Vec<NodeData>,
    pub(crate) topo: TopoOrder,
    /// Nodes without successors, in insertion order.
    pub(crate) leaves: BTreeSet<u32>,
    pub(crate) edges: usize,
    pub(crate) recording: Vec<QueueRecord>,
    pub(crate) params: Vec<ParamState>,
    pub(crate) groups: Vec<GroupState>,
    pub(crate) pool: GraphPool,
    /// The executable graph made from this one while it holds allocation
    /// nodes: only one may exist at a time.
    pub(crate) alloc_exec: Weak<ExecInner>,
    /// The buffers its nodes access.
    pub(crate) buffers: GraphBuffers,
    /// The device of each node, in multi-device graphs.
    pub(crate) placed: Placement,
}

/// The users' handle: when its last copy drops, recording ends.
pub(crate) struct ModifiableHandle {
    pub(crate) shared: Arc<GraphShared>,
}

// Nodes (behaviour: `node.rs`).

/// The kind of command a node holds (`sycl::ext::oneapi::experimental::node_type`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeType {
    /// No command: a connection point (`node_type::empty`), or an eager
    /// `events_wait` recorded from a queue.
    Empty,
    /// An executable graph added as a node.
    Subgraph,
    /// A kernel launch.
    Kernel,
    /// A copy: USM to USM, or a buffer copy, read or write (rect included).
    Memcpy,
    /// A fill with a one-byte pattern.
    Memset,
    /// A fill with a longer pattern.
    Memfill,
    /// A USM prefetch.
    Prefetch,
    /// USM advice.
    MemAdvise,
    /// A barrier recorded from a queue.
    Barrier,
    /// A host task.
    HostTask,
    /// A graph-owned allocation (`async_malloc`).
    AsyncMalloc,
    /// The release of a graph-owned allocation (`async_free`).
    AsyncFree,
    /// A native command (`node_type::native_command` of the newer revision,
    /// 8.11.2).
    NativeCommand,
    /// A collective over the graph's devices (all-reduce, all-gather,
    /// reduce-scatter, broadcast).
    Collective,
}

/// A host task's body: run on a host thread at every execution of the graph.
pub(crate) type HostFn = Arc<dyn Fn() + Send + Sync>;

/// A native command's callback (`ext_codeplay_enqueue_native_command` in a
/// graph): it records or does backend-native work where its scope says.
pub(crate) type NativeFn = Arc<dyn Fn(&NativeScope<'_>) + Send + Sync>;

/// A kernel launch as a node keeps it: what the application gave, so that
/// updates can change parts of it and the implementation can choose the
/// local size again.
#[derive(Clone, Debug)]
pub(crate) struct KernelSpec {
    pub(crate) kernel: Kernel,
    pub(crate) work_dim: u32,
    pub(crate) global: [usize; 3],
    pub(crate) offset: [usize; 3],
    /// The user's local size, or `None` for the implementation's choice.
    pub(crate) local: Option<[usize; 3]>,
    pub(crate) args: Vec<ArgValue>,
}

/// What a node holds.
#[derive(Clone)]
pub(crate) enum NodeKind {
    Empty,
    Barrier,
    Kernel(KernelSpec),
    /// A memory command, validated when the node was added.
    Memory(Command),
    HostTask(HostFn),
    Subgraph(Graph<Executable>),
    /// A node of a dynamic command group: its command is the group's active one.
    Dynamic(u32),
    AsyncMalloc {
        alloc: u32,
        ptr: UsmPtr,
        size: usize,
    },
    AsyncFree {
        alloc: u32,
        ptr: UsmPtr,
    },
    /// A native command, appended to its partition's command buffer.
    Native(NativeFn),
    /// A collective over the graph's devices, a partition of its own.
    Collective(Arc<CollectiveNode>),
}

/// A node of a modifiable graph.
pub(crate) struct NodeData {
    pub(crate) kind: NodeKind,
    pub(crate) preds: Vec<u32>,
    pub(crate) succs: Vec<u32>,
    /// The queue it was recorded from (its identity), for barriers.
    pub(crate) queue: Option<usize>,
}

// Dynamic parameters and dynamic command groups (behaviour: `dynamic.rs`).

/// Where a dynamic parameter is registered: a kernel node's argument, or an
/// argument of one command group of a dynamic command group.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Node(u32),
    Group { group: u32, cg: u32 },
}

/// A dynamic parameter's value and registrations (kept in the graph state).
pub(crate) struct ParamState {
    pub(crate) value: ArgValue,
    pub(crate) regs: Vec<(Target, usize)>,
}

/// One command group of a dynamic command group.
#[derive(Clone)]
pub(crate) enum GroupOp {
    Kernel(KernelSpec),
    Host(HostFn),
}

/// A dynamic command group (kept in the graph state).
pub(crate) struct GroupState {
    pub(crate) cgs: Vec<GroupOp>,
    pub(crate) active: usize,
    /// The dependencies every command group declared.
    pub(crate) deps: Vec<u32>,
    /// The nodes made from it.
    pub(crate) nodes: Vec<u32>,
    /// The accessors each command group declared.
    pub(crate) accesses: Vec<Vec<PendingAccess>>,
}

/// A kernel argument whose value can change after the node was added
/// (`dynamic_parameter`). Register it with [`Handler::set_arg`](super::Handler::set_arg); one
/// [`update`](Self::update) changes the argument in every registered node of
/// the modifiable graph, and an executable graph sees the change at its next
/// [`Graph::update`]. Clones are the same parameter.
///
/// ```
/// use cmdbuf_core::*;
/// use cmdbuf_runtime::graph::*;
/// use cmdbuf_runtime::Queue;
/// # fn demo(ctx: &Context, graph: &Graph<Modifiable>, kernel: &Kernel, a: &UsmAllocation, b: &UsmAllocation)
/// #     -> Result<()> {
/// let ptr = DynamicParameter::new(graph, KernelArg::Pointer(a.ptr()))?;
/// let n = 7u32;
/// let node = graph.add(
///     |h| {
///         h.set_arg(0, &ptr)?;
///         let args = [KernelArg::Pointer(a.ptr()), KernelArg::value(&n)];
///         // SAFETY: the kernel writes 64 elements of the 64-element allocations.
///         unsafe { h.launch(&KernelLaunch::new(kernel, &[64], &args)) }
///     },
///     NodeProperties::new(),
/// )?;
/// let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
/// // SAFETY: `b` is as large as `a`.
/// unsafe { ptr.update(KernelArg::Pointer(b.ptr()))? };
/// exec.update(&node)?; // the next executions write `b`
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DynamicParameter {
    pub(crate) graph: Arc<GraphShared>,
    pub(crate) id: u32,
}

// The buffers' accessors (behaviour: `buffers.rs`).

/// An accessor of a node.
#[derive(Clone)]
pub(crate) struct NodeUse {
    pub(crate) node: u32,
    pub(crate) access: GraphAccess,
    /// The dynamic parameter whose buffer it accesses.
    pub(crate) param: Option<u32>,
    /// For a node of a dynamic command group: the command group that
    /// declared it (it moves data only while that one is active).
    pub(crate) cg: Option<usize>,
}

/// An accessor declared by a command group not yet added.
#[derive(Clone)]
pub(crate) struct PendingAccess {
    pub(super) access: GraphAccess,
    pub(super) param: Option<u32>,
}

/// The buffers of a modifiable graph (part of its state).
#[derive(Default)]
pub(crate) struct GraphBuffers {
    /// Per buffer, the nodes' uses, for the edges of new accessors.
    pub(super) trackers: HashMap<u64, DepTracker<u32>>,
    /// Every accessor, in the order nodes were added.
    pub(crate) uses: Vec<NodeUse>,
    /// The buffer each buffer-valued dynamic parameter holds.
    pub(super) params: HashMap<u32, Buffer>,
    /// Orders command groups recorded from queues: their edges are found
    /// before the node exists.
    pub(super) serial: Arc<Mutex<()>>,
    /// A queue of the graph's context, for the buffers' allocations.
    pub(super) queue: Option<cmdbuf_core::Queue>,
}

// Recording queues (behaviour: `record.rs`, which re-exports `QueueInner` and
// `RecordingSlot` for the queue layer).

/// The graph a queue records into, if any.
pub(crate) type RecordingSlot = QueueSlot<GraphShared>;

/// What a [`Queue`](crate::Queue) holds: the cmdbuf-core queue and the graph
/// it records into.
pub(crate) struct QueueInner {
    pub(crate) core: cmdbuf_core::Queue,
    /// The graph this queue records into, if any.
    pub(crate) recording: RecordingSlot,
}

/// A queue recording into a graph, as the graph sees it.
pub(crate) struct QueueRecord {
    /// The queue, not kept alive by the graph.
    pub(super) queue: Weak<QueueInner>,
    /// Its identity and the order it adds to its nodes: cmdbuf-core's, which
    /// UR's graph capture orders its captured commands with.
    pub(super) lane: QueueLane,
    /// Its `begin_recording` property list.
    pub(crate) props: RecordingProperties,
}

// A graph's devices and where its nodes run (behaviour: `multi_device.rs`).

/// The devices of a graph: one context each, the graph's own first.
pub(crate) struct Devices {
    pub(super) contexts: Vec<Context>,
    /// `direct[on * n + from]`: whether queues of device `on` wait for events
    /// of device `from` device-side ([`Context::waits_on_events_of`]), so
    /// that no bridge joins them; asked once, when the graph is made.
    pub(super) direct: Vec<bool>,
    /// The communicator of its collective nodes, made for the first one.
    pub(super) collectives: parking_lot::Mutex<Option<cmdbuf_core::collective::Communicator>>,
}

/// A memcpy node between the USM of two devices.
#[derive(Clone)]
pub(crate) struct CrossCopy {
    pub(crate) src_dev: u16,
    pub(crate) dst_dev: u16,
    pub(super) dst: UsmRef,
    pub(super) src: UsmRef,
    pub(super) size: usize,
}

/// The bytes the cross-device copies of an executable graph move at each
/// execution ([`Graph::cross_device_traffic`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CrossDeviceTraffic {
    /// Copied peer to peer.
    pub peer_bytes: u64,
    /// Copied through host staging (each byte crosses into and out of the host).
    pub staged_bytes: u64,
}

/// Where the nodes of a graph run, where not on its first device.
#[derive(Default)]
pub(crate) struct Placement {
    pub(super) on: HashMap<u32, u16>,
    pub(super) cross: HashMap<u32, CrossCopy>,
}

// Collective nodes (behaviour: `collective.rs`).

/// A collective node as the graph keeps it: each rank's `(send, recv)`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CollectiveNode {
    pub(crate) op: CollectiveOp,
    pub(crate) dtype: DataType,
    pub(crate) buffers: Vec<(UsmPtr, UsmPtr)>,
}

/// A collective node of an executable graph: the communicator and a queue
/// per rank.
pub(crate) struct CollectiveRun {
    pub(crate) node: CollectiveNode,
    pub(crate) recorded: RecordedCollective,
    pub(super) queues: Vec<Queue>,
}

// An executable graph (behaviour: `executable/`).

/// A node of the finalized graph.
#[derive(Clone)]
pub(crate) enum FlatOp {
    Kernel {
        spec: KernelSpec,
        alternatives: Vec<Kernel>,
    },
    Command(Command),
    Host(HostFn),
    /// A native command: appended with `append_native_command`.
    Native(NativeFn),
    /// No command (lowered away or made a join).
    Empty,
    /// A no-op device command that orders many predecessors before many successors.
    Join,
    /// A cross-device copy between peers (`Queue::usm_copy_peer`), a
    /// partition of its own on the queue of the node's device.
    PeerCopy {
        dst: UsmPtr,
        src: UsmPtr,
        size: usize,
    },
    /// A collective over the graph's devices, a partition of its own
    /// (`graph/collective.rs`).
    Collective(Arc<CollectiveRun>),
}

#[derive(Clone)]
pub(crate) struct FlatNode {
    pub(crate) op: FlatOp,
    pub(crate) preds: Vec<u32>,
    /// The node of the source graph (`None` inside inlined sub-graphs).
    pub(crate) origin: Option<u32>,
    /// The device it runs on (an index of the graph's devices).
    pub(crate) device: u16,
}

/// What whole-graph update compares, per node of the source graph.
pub(crate) struct Signature {
    pub(super) ty: NodeType,
    pub(super) preds: Vec<u32>,
}

/// A partition of an executable graph.
pub(crate) struct Partition {
    pub(crate) host: bool,
    /// The device whose queue runs it (an index of the graph's devices).
    pub(crate) device: u16,
    pub(crate) members: Vec<u32>,
    pub(crate) preds: Vec<u32>,
    /// Whether no partition waits for it.
    pub(super) leaf: bool,
    pub(crate) in_order: bool,
    pub(crate) cb: Option<CommandBuffer>,
    /// The command handle of each member (updatable command buffers).
    pub(super) handles: Vec<Option<CommandHandle>>,
}

pub(crate) struct ExecInner {
    pub(super) id: u64,
    pub(crate) source: Arc<GraphShared>,
    pub(super) props: FinalizeProperties,
    pub(super) signatures: Vec<Signature>,
    pub(crate) has_allocations: bool,
    pub(super) memory: MemoryStats,
    /// What its cross-device copies move per execution.
    pub(crate) traffic: CrossDeviceTraffic,
    /// The host-side bridges an execution makes ([`Graph::host_bridges`]).
    pub(crate) host_bridges: usize,
    /// The pool's chunks: kernels reach graph-owned memory through plain pointers.
    pub(super) _chunks: Vec<Arc<UsmAllocation>>,
    /// With allocations: where the last execution's event is left for the
    /// next executable graph of the same memory.
    pub(super) runs: Option<super::memory::RunSlot>,
    pub(crate) state: Mutex<ExecState>,
    /// The accessors of its nodes, in the order their data is made current.
    pub(crate) buffers: Mutex<Vec<NodeUse>>,
    /// Whether `buffers` is non-empty, written under its lock: a submission
    /// without accessors reads this instead of taking a second lock.
    pub(crate) uses_buffers: AtomicBool,
}

pub(crate) struct ExecState {
    /// Nodes after lowering, numbered in execution order.
    pub(crate) nodes: Vec<FlatNode>,
    pub(crate) part_of: Vec<u32>,
    /// A node's position among its partition's members.
    pub(super) slot_of: Vec<u32>,
    pub(crate) parts: Vec<Partition>,
    /// The order partitions are submitted in (see `executable::run::submission_order`).
    pub(super) submit_order: Vec<u32>,
    /// The node standing for each source node, when one does.
    pub(super) by_origin: Vec<Option<u32>>,
    /// The previous submission, which the next one waits for: of a graph of
    /// several partitions, or, before a graph's first submission, the last
    /// one of the previous executable graph of its graph-owned memory. A
    /// one-partition graph keeps none of its own: its command buffer orders
    /// its submissions (see `run_single`).
    pub(super) last: Option<Event>,
    /// An out-of-order queue of the graph's context that runs the partitions
    /// of multi-partition graphs (`None`: the device has none; the submission
    /// queue runs them).
    pub(super) worker: Option<Queue>,
    /// The allocation join commands prefetch one byte of.
    pub(super) scratch: Option<UsmAllocation>,
    /// A queue of each other device of a multi-device graph that runs its
    /// partitions (index 0, the graph's own device, is `None`: see `worker`).
    pub(super) device_queues: Vec<Option<Queue>>,
    /// A multi-device graph whose partitions the adapter composed into one
    /// executable: each execution is one submission of it (see `compose`).
    pub(crate) composed: Option<ComposedCommandBuffer>,
}
