//! The executable graph: what finalize builds (a snapshot with sub-graphs
//! inlined, empty nodes lowered, partitions, one command buffer per device
//! partition), its submission, and its update, one module each.

mod compose;
mod finalize;
mod run;
mod update;

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use parking_lot::Mutex;

use cmdbuf_core::command::Command;
use cmdbuf_core::command_buffer::{CommandBuffer, CommandHandle, ComposedCommandBuffer};
use cmdbuf_core::context::Context;
use cmdbuf_core::device::{CommandBufferSupport, Device};
use cmdbuf_core::ensure;
use cmdbuf_core::error::Result;
use cmdbuf_core::event::Event;
use cmdbuf_core::memory::{UsmAllocation, UsmPtr};
use cmdbuf_core::program::Kernel;
use cmdbuf_core::queue::Queue;

use super::memory::MemoryStats;
use super::modifiable::GraphShared;
use super::multi_device::CrossDeviceTraffic;
use super::node::{HostFn, KernelSpec, NativeFn, NodeType};
use super::{Executable, FinalizeProperties, Graph};

pub(crate) use finalize::finalize;

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
    Collective(Arc<super::collective::CollectiveRun>),
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
struct Signature {
    ty: NodeType,
    preds: Vec<u32>,
}

/// A partition of an executable graph.
pub(crate) struct Partition {
    pub(crate) host: bool,
    /// The device whose queue runs it (an index of the graph's devices).
    pub(crate) device: u16,
    pub(crate) members: Vec<u32>,
    pub(crate) preds: Vec<u32>,
    /// Whether no partition waits for it.
    leaf: bool,
    pub(crate) in_order: bool,
    pub(crate) cb: Option<CommandBuffer>,
    /// The command handle of each member (updatable command buffers).
    handles: Vec<Option<CommandHandle>>,
}

pub(crate) struct ExecInner {
    id: u64,
    pub(crate) source: Arc<GraphShared>,
    props: FinalizeProperties,
    signatures: Vec<Signature>,
    pub(crate) has_allocations: bool,
    memory: MemoryStats,
    /// What its cross-device copies move per execution.
    pub(crate) traffic: CrossDeviceTraffic,
    /// The host-side bridges an execution makes ([`Graph::host_bridges`]).
    pub(crate) host_bridges: usize,
    /// The pool's chunks: kernels reach graph-owned memory through plain pointers.
    _chunks: Vec<Arc<UsmAllocation>>,
    /// With allocations: where the last execution's event is left for the
    /// next executable graph of the same memory.
    runs: Option<super::memory::RunSlot>,
    pub(crate) state: Mutex<ExecState>,
    /// The accessors of its nodes, in the order their data is made current.
    pub(crate) buffers: Mutex<Vec<super::buffers::NodeUse>>,
    /// Whether `buffers` is non-empty, written under its lock: a submission
    /// without accessors reads this instead of taking a second lock.
    pub(crate) uses_buffers: AtomicBool,
}

pub(crate) struct ExecState {
    /// Nodes after lowering, numbered in execution order.
    pub(crate) nodes: Vec<FlatNode>,
    pub(crate) part_of: Vec<u32>,
    /// A node's position among its partition's members.
    slot_of: Vec<u32>,
    pub(crate) parts: Vec<Partition>,
    /// The order partitions are submitted in (see [`submission_order`]).
    submit_order: Vec<u32>,
    /// The node standing for each source node, when one does.
    by_origin: Vec<Option<u32>>,
    /// The previous submission, which the next one waits for: of a graph of
    /// several partitions, or, before a graph's first submission, the last
    /// one of the previous executable graph of its graph-owned memory. A
    /// one-partition graph keeps none of its own: its command buffer orders
    /// its submissions (see `run_single`).
    last: Option<Event>,
    /// An out-of-order queue of the graph's context that runs the partitions
    /// of multi-partition graphs (`None`: the device has none; the submission
    /// queue runs them).
    worker: Option<Queue>,
    /// The allocation join commands prefetch one byte of.
    scratch: Option<UsmAllocation>,
    /// A queue of each other device of a multi-device graph that runs its
    /// partitions (index 0, the graph's own device, is `None`: see `worker`).
    device_queues: Vec<Option<Queue>>,
    /// A multi-device graph whose partitions the adapter composed into one
    /// executable: each execution is one submission of it (see `compose`).
    pub(crate) composed: Option<ComposedCommandBuffer>,
}

impl ExecState {
    /// Whether the graph is one command-buffer partition of its own device.
    #[inline]
    pub(crate) fn is_single(&self) -> bool {
        self.parts.len() == 1 && !self.parts[0].host && self.parts[0].device == 0
    }
}

/// How one partition was built, for [`Graph::partitions`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionInfo {
    /// A host task (else a command buffer).
    pub host_task: bool,
    /// Its nodes (joins included), in execution order; for a command buffer,
    /// the commands appended.
    pub nodes: usize,
    /// The partitions it waits for.
    pub depends_on: Vec<usize>,
    /// Whether its command buffer was created in-order (the partition is a
    /// single chain and profiling is off).
    pub in_order: bool,
    /// Native or emulated command buffer; `None` for a host task.
    pub support: Option<CommandBufferSupport>,
    /// A peer-to-peer copy of a multi-device graph (not a host task, no command buffer).
    pub peer_copy: bool,
    /// The device it runs on: an index of the graph's devices, 0 for the
    /// graph's own (see [`Graph::devices`](super::Graph::devices)).
    pub device: usize,
}

/// The checks of adding `sub` as a sub-graph of `parent`; gives the device
/// of `parent` it runs on.
pub(crate) fn check_subgraph(parent: &GraphShared, sub: &Graph<Executable>) -> Result<u16> {
    let inner = &sub.0.inner;
    ensure!(
        !inner.source.devices.is_multi(),
        UnsupportedFeature,
        "executable graph #{} is a multi-device graph and cannot be a sub-graph of graph #{}",
        inner.id,
        parent.id
    );
    let device = parent.devices.index_of_context(&inner.source.context);
    ensure!(
        device.is_some(),
        InvalidContext,
        "executable graph #{} belongs to another context than graph #{}",
        inner.id,
        parent.id
    );
    ensure!(
        !inner.has_allocations,
        InvalidOperation,
        "executable graph #{} holds graph-owned allocations and cannot be a sub-graph of graph #{}",
        inner.id,
        parent.id
    );
    super::buffers::check_subgraph(parent, sub)?;
    Ok(device.unwrap_or(0))
}

impl Graph<Executable> {
    fn inner(&self) -> &ExecInner {
        &self.0.inner
    }

    /// The executable graph's identity (distinct from its source graph's).
    pub fn id(&self) -> u64 {
        self.inner().id
    }

    /// The identity of the modifiable graph it was finalized from.
    pub fn source_id(&self) -> u64 {
        self.inner().source.id
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.inner().source.context
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.inner().source.device()
    }

    /// The properties it was finalized with.
    pub fn properties(&self) -> FinalizeProperties {
        self.inner().props
    }

    /// Number of nodes of the source graph when it was finalized.
    pub fn node_count(&self) -> usize {
        self.inner().signatures.len()
    }

    /// The memory its graph-owned allocations need, in bytes
    /// (`get_required_mem_size`): the pool after liveness-based reuse.
    pub fn required_mem_size(&self) -> usize {
        self.inner().memory.required_bytes
    }

    /// Figures of its graph-owned memory (see [`MemoryStats::saved_bytes`]).
    pub fn memory_stats(&self) -> MemoryStats {
        self.inner().memory
    }

    /// How finalize partitioned it, in submission order.
    pub fn partitions(&self) -> Vec<PartitionInfo> {
        let st = self.inner().state.lock();
        st.parts
            .iter()
            .map(|p| PartitionInfo {
                host_task: p.host
                    && !matches!(st.nodes[p.members[0] as usize].op, FlatOp::PeerCopy { .. } | FlatOp::Collective(_)),
                peer_copy: p.host && matches!(st.nodes[p.members[0] as usize].op, FlatOp::PeerCopy { .. }),
                nodes: p.members.len(),
                depends_on: p.preds.iter().map(|x| *x as usize).collect(),
                in_order: p.in_order,
                support: p.cb.as_ref().map(CommandBuffer::support),
                device: p.device as usize,
            })
            .collect()
    }

    /// How many submissions to its queues' adapter one execution makes: 1
    /// for a graph of one command-buffer partition on its own device, and for
    /// a multi-device graph whose partitions the adapter composed into one
    /// executable (command buffers, peer copies and captured collectives of
    /// devices of one adapter that composes them: CUDA, the CPU adapter);
    /// otherwise one per partition plus a start and an end marker.
    pub fn submissions_per_execution(&self) -> usize {
        let st = self.inner().state.lock();
        if st.composed.is_some() || st.is_single() { 1 } else { st.parts.len() + 2 }
    }

    /// The native object one execution of a composed multi-device graph
    /// submits (CUDA: the composition's `CUgraphExec`, see
    /// `ComposedCommandBuffer::native_handle`), for measuring the driver's
    /// own launch against the graph's submission; `UnsupportedFeature`
    /// where the graph is not composed or the adapter has none. Launching
    /// it outside the graph bypasses the graph's ordering and status
    /// bookkeeping (on CUDA, later executions' kernel status reports may be
    /// read from another launch's slot): only for baselines, with nothing of
    /// the graph running, and no execution of the graph after them.
    pub fn composed_native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        let st = self.inner().state.lock();
        match &st.composed {
            Some(composed) => composed.native_handle(),
            None => Err(cmdbuf_core::err!(UnsupportedFeature, "executable graph #{} is not composed", self.id())),
        }
    }

    /// `InvalidQueue` for a queue of another context. A context has one
    /// device, so the context decides the device too.
    pub(crate) fn check_queue(&self, queue: &Queue) -> Result<()> {
        ensure!(
            queue.context() == self.context(),
            InvalidQueue,
            "executable graph #{} of {} submitted to a queue of {}",
            self.id(),
            self.device(),
            queue.device()
        );
        Ok(())
    }

    /// The executable graph in Graphviz DOT, one cluster per partition.
    pub fn to_dot(&self, verbose: bool) -> String {
        let st = self.inner().state.lock();
        super::dot::executable(self.id(), self.source_id(), &st, verbose)
    }

    /// Writes [`to_dot`](Self::to_dot) to `path`, which must end in `.dot`.
    #[tracing::instrument(level = "debug", skip_all, fields(exec = self.id()))]
    pub fn print_graph(&self, path: impl AsRef<Path>, verbose: bool) -> Result<()> {
        super::dot::write(path.as_ref(), &self.to_dot(verbose), self.id())
    }
}

impl fmt::Debug for Graph<Executable> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner().state.lock();
        f.debug_struct("Graph<Executable>")
            .field("id", &self.id())
            .field("source", &self.source_id())
            .field("commands", &st.nodes.len())
            .field("partitions", &st.parts.len())
            .finish()
    }
}
