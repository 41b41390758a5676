//! The executable graph: what finalize builds (a snapshot with sub-graphs
//! inlined, empty nodes lowered, partitions, one command buffer per device
//! partition), its submission, and its update, one module each.

mod compose;
mod finalize;
mod run;
mod update;

use std::fmt;
use std::path::Path;

use cmdbuf_core::command_buffer::CommandBuffer;
use cmdbuf_core::context::Context;
use cmdbuf_core::device::{CommandBufferSupport, Device};
use cmdbuf_core::ensure;
use cmdbuf_core::error::Result;
use cmdbuf_core::queue::Queue;

use super::memory::MemoryStats;
use super::state::{ExecInner, ExecState, FlatOp};
use super::{Executable, FinalizeProperties, Graph};

pub(crate) use finalize::finalize;

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
