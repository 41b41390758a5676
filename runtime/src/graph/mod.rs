//! Graphs: the `command_graph` model of SYCL's `sycl_ext_oneapi_graph`,
//! built on this crate's public command-buffer API so that it runs on every
//! adapter.
//!
//! A [`Graph<Modifiable>`] is built explicitly ([`Graph::add`] with a
//! command-group closure, [`Graph::add_empty`], [`Graph::make_edge`]) or by
//! recording queues ([`Graph::begin_recording`]: their submissions become
//! nodes). [`Graph::finalize`] makes a [`Graph<Executable>`], which
//! [`Queue::enqueue_graph`](crate::Queue::enqueue_graph) submits any number
//! of times; the modifiable graph can grow and be finalized again.
//!
//! UR's graph capture (`urQueueBeginGraphCaptureExp`: [`Queue::begin_capture`](cmdbuf_core::Queue::begin_capture),
//! [`CapturedGraph`](cmdbuf_core::CapturedGraph)) is not built on these graphs:
//! see [`cmdbuf_core::capture`].
//!
//! ```
//! use cmdbuf_core::*;
//! use cmdbuf_runtime::graph::*;
//! use cmdbuf_runtime::Queue;
//! # let device = cmdbuf_cpu::default_device();
//! let ctx = Context::new(&device)?;
//! let queue = Queue::new(&ctx, QueueProperties::default())?;
//! let (a, b) = (UsmAllocation::new(&ctx, UsmKind::Device, 16)?, UsmAllocation::new(&ctx, UsmKind::Device, 16)?);
//!
//! let graph = Graph::new(&ctx, &device, GraphProperties::default())?;
//! let fill = graph.add(|h| h.fill(a.ptr(), &[7], 16), NodeProperties::new())?;
//! graph.add(|h| h.memcpy(b.ptr(), a.ptr(), 16), NodeProperties::new().depends_on(&[&fill]))?;
//! let exec = graph.finalize(FinalizeProperties::default())?;
//! queue.enqueue_graph(&exec, &[])?.wait()?;
//!
//! let mut out = [0u8; 16];
//! queue.read_usm(b.ptr(), &mut out, &[])?;
//! assert_eq!(out, [7; 16]);
//! # Ok::<(), UrError>(())
//! ```
//!
//! # What finalize builds
//!
//! Finalize takes a snapshot of the graph: executable sub-graphs are
//! inlined (their commands become commands of the new graph, between an
//! entry and an exit), empty nodes, barriers and allocation nodes are lowered
//! (contracted, or kept as *join* no-op commands when that saves edges), and
//! the result is split into partitions at host tasks (see
//! [`partition`](self#partitions)). Each device partition becomes one
//! [`CommandBuffer`](cmdbuf_core::CommandBuffer) (updatable when the graph is and
//! the device can update, in-order when the partition is a chain and
//! profiling is off), appended in the chosen [`ExecutionOrder`]. A
//! submission enqueues the partitions with events between them only where
//! the graph has edges, so independent branches run concurrently; host
//! tasks run on host threads. The returned event completes when every
//! partition has, and reports a failing one.
//!
//! # Partitions
//!
//! Host tasks are partitions of their own. The other nodes are grouped by
//! the number of host tasks on their longest path from a root, split into
//! weakly connected components, and components with the same neighbours
//! merged again. A graph without host tasks is one command buffer.
//!
//! # Update
//!
//! Finalizing with [`FinalizeProperties::updatable`] allows
//! [`Graph::update`] (nodes), and [`Graph::update_from`] (a topologically
//! identical modifiable graph, checked). Kernel arguments change through
//! [`DynamicParameter`]s, ranges through [`Node::update_range`], kernels
//! and host tasks through [`DynamicCommandGroup`]s. An update becomes a
//! command-buffer update when the device can make it in place; otherwise
//! the partition's command buffer is recorded again.
//!
//! # Graph-owned memory
//!
//! [`Handler::async_malloc`] and [`Handler::async_free`] (and
//! [`Queue::async_malloc`](crate::Queue::async_malloc) while recording)
//! draw device memory from the graph's pool; memory freed by a node that
//! another allocation is ordered after is reused ([`MemoryStats`]).
//! [`Handler::async_malloc_from_pool`] takes the kind and `zero_init` of a
//! [`MemoryPool`](crate::MemoryPool): a `zero_init` allocation gets memory
//! of its own, zeroed at each finalize (not before each execution).
//!
//! # Native commands
//!
//! [`Handler::native_command`] (and [`Queue::enqueue_native_command`](crate::Queue::enqueue_native_command)
//! while recording) adds a native-command node (8.11.2 of the newer
//! revision), appended to its partition's command buffer with
//! [`CommandBuffer::append_native_command`](cmdbuf_core::CommandBuffer::append_native_command).
//!
//! # Device aspects
//!
//! Whether a device has `ext_oneapi_graph` or `ext_oneapi_limited_graph`
//! is [`crate::aspect::device_has`]; this layer runs every API, update
//! included, on both.
//!
//! # Multi-device graphs
//!
//! [`Graph::new_multi_device`] makes a graph over several devices (one
//! context each, the first the graph's own); a node is placed with
//! [`NodeProperties::on_device`], by the queue that recorded it (a queue of
//! any of the devices may record), or, for a sub-graph, on its executable
//! graph's device. Finalize makes one partition per device (and level), each
//! a command buffer of that device's context; partitions of different
//! devices wait for each other through host-side bridges, and one event of
//! the submitting queue's context spans the whole execution. A `memcpy`
//! between USM of two of the devices is a cross-device copy node (through
//! host staging). Updates and sub-graphs work on every device. See
//! `multi_device.rs` and `docs/graph.md`.
//!
//! # Errors
//!
//! | misuse | error |
//! |---|---|
//! | explicit add or `make_edge` while a queue records into the graph | `InvalidOperation` |
//! | an edge that closes a cycle, from a node to itself, or with a node of another graph | `InvalidGraph` |
//! | a cycle found at finalize (graphs made with `no_cycle_check`) | `InvalidGraph` |
//! | two commands in one command group; a barrier in the explicit API | `InvalidOperation` |
//! | a dynamic parameter on a node without a kernel, or of the wrong kind | `InvalidValue`, `InvalidKernelArgumentIndex`, `InvalidKernelArgumentSize` |
//! | a dynamic command group that is empty, mixes kernels and host tasks, or holds other commands; an index out of range | `InvalidValue` |
//! | a dynamic command group whose command groups have different dependencies | `InvalidGraph` |
//! | update of a graph not finalized updatable | `InvalidOperation` |
//! | update of a node of another graph, added after finalize, or not a kernel or host task | `InvalidCommandHandle` |
//! | `update_range` of a non-kernel node / of another dimension | `InvalidCommandHandle` / `InvalidWorkDimension` |
//! | whole-graph update from a graph that is not topologically identical | `InvalidGraph` |
//! | whole-graph update with other node types or graph-owned allocations | `InvalidOperation` |
//! | an allocation that is not of device memory, `async_free` of a pointer not allocated by the graph or freed twice | `InvalidValue` |
//! | finalize of a graph with allocations while its executable graph exists; such a graph as a sub-graph | `InvalidOperation` |
//! | `begin_recording` on a recording queue; `end_recording` of a queue recording into another graph | `InvalidOperation` |
//! | a `begin_recording` property other than `assume_data_outlives_buffer` | `InvalidValue` |
//! | a status or profiling query on a recorded event | `InvalidOperation` |
//! | `async_malloc_from_pool` of a pool of another context | `InvalidContext` |
//! | a recorded native command with memory buffers | `UnsupportedFeature` |
//! | a queue or sub-graph of another context or device | `InvalidQueue`, `InvalidContext` |
//! | a node placed on a device the graph was not made for; a sub-graph node placed on another device than its graph's; a multi-device graph given one device twice | `InvalidDevice` |
//! | a kernel given USM of another of the graph's devices without peer access enabled | `InvalidContext` |
//! | a multi-device `memcpy` whose address lies in allocations of several other devices (use `memcpy_across`) | `InvalidValue` |
//! | graph-owned allocations or a dynamic command group on another device than the graph's own; a multi-device executable graph as a sub-graph; cross-device staging on a device with neither host nor shared USM | `UnsupportedFeature` |
//! | a host wait on a recorded event or on a recording queue; a blocking transfer on a recording queue | `InvalidOperation` |
//! | a recorded event outside its graph's recording; an event of no graph in a recording queue's wait list | `InvalidEventWaitList` |
//! | `Node::from_event` of an event no recording queue returned | `InvalidEvent` |
//! | `print_graph` to a path not ending in `.dot`, or that cannot be written | `InvalidValue` |
//!
//! Every message names the graph (`graph #3`) and, where there is one, the node.
//!
//! # Thread safety
//!
//! Graphs, nodes, dynamic parameters and groups are `Send + Sync`; each
//! call is atomic with respect to the others on the same graph (one lock per
//! graph, one per executable graph). Submissions of one executable graph
//! never overlap, also from several threads. Whether a command submitted
//! while another thread ends recording is recorded is undefined, as in SYCL.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use cmdbuf_core::device::Device;

pub(crate) mod buffers;
mod collective;
mod dot;
mod dynamic;
mod executable;
mod handler;
mod label;
mod memory;
mod modifiable;
mod multi_device;
mod node;
mod partition;
mod props;
pub(crate) mod record;
mod state;
mod subgraph;
mod topo;

pub use dynamic::{CommandGroupFn, DynamicCommandGroup};
pub use executable::PartitionInfo;
pub use handler::Handler;
pub use memory::MemoryStats;
pub use node::Node;
pub use partition::ExecutionOrder;
pub use props::{GraphProperty, RecordingProperties};
pub use record::RecordedEvent;
pub use state::{CrossDeviceTraffic, DynamicParameter, NodeType};

static NEXT_EXEC_ID: AtomicU64 = AtomicU64::new(1);

/// A command graph in state `S`: [`Modifiable`] (being built) or
/// [`Executable`] (finalized, ready to submit). Clones share the graph.
#[derive(Clone)]
pub struct Graph<S = Modifiable>(pub(crate) S);

/// The state of a graph being built (`graph_state::modifiable`). When the
/// last copy of a modifiable graph drops, the queues recording into it stop.
#[derive(Clone)]
pub struct Modifiable {
    pub(crate) handle: Arc<state::ModifiableHandle>,
}

/// The state of a finalized graph (`graph_state::executable`).
#[derive(Clone)]
pub struct Executable {
    pub(crate) inner: Arc<state::ExecInner>,
}

/// A graph being built.
pub type ModifiableGraph = Graph<Modifiable>;

/// A finalized graph.
pub type ExecutableGraph = Graph<Executable>;

/// Properties given when a graph is created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GraphProperties {
    /// Skip the cycle check of `make_edge` (`property::graph::no_cycle_check`);
    /// a cycle is then found at finalize, as `InvalidGraph`.
    pub no_cycle_check: bool,
    /// The application keeps every buffer the graph uses alive while the
    /// graph lives (`property::graph::assume_buffer_outlives_graph`): a graph
    /// without it refuses accessors (`InvalidOperation`). The graph holds
    /// the buffers it uses anyway (see docs/buffers.md).
    pub assume_buffer_outlives_graph: bool,
    /// The host data of buffers outlives the graph
    /// (`property::graph::assume_data_outlives_buffer`). Buffers built from
    /// host data copy it in their constructor, so a graph never copies host
    /// data and this property changes nothing here.
    pub assume_data_outlives_buffer: bool,
    /// A name for diagnostics, shown in the tracing spans of the graph's
    /// creation, finalize and submissions ([`GraphProperties::with_label`]).
    pub label: Option<&'static str>,
}

/// Properties given to [`Graph::finalize`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FinalizeProperties {
    /// The executable graph can be updated (`property::graph::updatable`).
    pub updatable: bool,
    /// Submission events report profiling timestamps on profiling queues
    /// (`property::graph::enable_profiling`); without it they report none.
    /// Disables the in-order hint.
    pub enable_profiling: bool,
    /// The order of commands in command buffers and of partitions.
    pub order: ExecutionOrder,
}

/// Properties of an added node: its dependencies.
///
/// ```
/// # use cmdbuf_runtime::graph::*;
/// # use cmdbuf_runtime::Queue;
/// # fn demo(graph: &Graph, a: &Node, b: &Node) -> cmdbuf_core::Result<()> {
/// let join = graph.add_empty(NodeProperties::new().depends_on(&[a, b]))?;
/// let after_everything = graph.add_empty(NodeProperties::new().depends_on_all_leaves())?;
/// # Ok(()) }
/// ```
#[derive(Copy, Clone, Debug, Default)]
pub struct NodeProperties<'a> {
    /// Nodes to run after (`property::node::depends_on`).
    pub depends_on: &'a [&'a Node],
    /// Run after every current leaf of the graph (`property::node::depends_on_all_leaves`).
    pub depends_on_all_leaves: bool,
    /// The device the node runs on, one of a multi-device graph's; `None`:
    /// the graph's own (see [`multi-device graphs`](self#multi-device-graphs)).
    pub device: Option<&'a Device>,
}

impl<'a> NodeProperties<'a> {
    /// No dependencies.
    pub fn new() -> NodeProperties<'a> {
        NodeProperties::default()
    }

    /// Runs after these nodes.
    pub fn depends_on(mut self, nodes: &'a [&'a Node]) -> NodeProperties<'a> {
        self.depends_on = nodes;
        self
    }

    /// Runs on `device`, one of the graph's devices (`InvalidDevice` at
    /// `add` otherwise).
    pub fn on_device(mut self, device: &'a Device) -> NodeProperties<'a> {
        self.device = Some(device);
        self
    }

    /// Runs after every node that nothing depends on yet.
    pub fn depends_on_all_leaves(mut self) -> NodeProperties<'a> {
        self.depends_on_all_leaves = true;
        self
    }
}
