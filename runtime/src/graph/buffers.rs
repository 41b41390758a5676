//! Buffers and accessors in graphs (docs/buffers.md, "Buffers in graphs").
//!
//! A node declares accessors in its command group ([`Handler::access`], or
//! a [`QueueGroup`](crate::QueueGroup) submitted to a recording queue). Each
//! accessor is checked against the earlier accessors of the graph on the same
//! buffer: when one of the two is not read-only and their page ranges
//! overlap, the new node depends on the earlier one (an edge, as the
//! specification asks). The graph keeps a handle of every buffer its nodes
//! use, so the buffer lives as long as the graph and the executable graphs
//! made from it. At each submission of an executable graph the accessors'
//! data is made current on the graph's device and the pages are marked as
//! their modes say ([`crate::buffer::graph::submit`]): data moves only when
//! it is outdated there.
//!
//! The specification's rules, each a typed error (`InvalidOperation`, the
//! variant the graph layer uses for SYCL's `errc::invalid`):
//! - a graph that uses buffers must be created with
//!   [`GraphProperties::assume_buffer_outlives_graph`](super::GraphProperties::assume_buffer_outlives_graph);
//! - a buffer that would write back to final data cannot be used in a graph;
//! - a host accessor of a buffer used by commands recorded into a graph that
//!   is still being recorded is refused.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use cmdbuf_core::{KernelArg, QueueProperties, Result, ensure, err};

use crate::buffer::deps::{DepTracker, UseKind};
use crate::buffer::graph::{self as bg, GraphAccess, Recorder};
use crate::buffer::{AccessMode, AccessRange, Accessor, Buffer};

use super::handler::Handler;
use super::partition::{ExecutionOrder, topological_order};
use super::state::{DynamicParameter, GraphBuffers, GraphShared, GraphState, NodeKind, NodeUse, PendingAccess};
use super::subgraph::check_property;
use super::{Executable, Graph, Modifiable, Node};

/// The kind of a graph accessor's use: the graph has one device, so reads
/// are all at one place.
fn use_kind(mode: AccessMode) -> UseKind {
    if mode.read_only() { UseKind::Read { loc: 0 } } else { UseKind::Write }
}

impl GraphBuffers {
    /// The earlier nodes the accessors conflict with.
    pub(crate) fn conflicts(&self, pending: &[PendingAccess]) -> Vec<u32> {
        let mut nodes = Vec::new();
        for p in pending {
            if let Some(t) = self.trackers.get(&p.access.buffer.shared.id) {
                nodes.extend(t.conflicts(&p.access.pages, use_kind(p.access.mode)).map(|u| u.token));
            }
        }
        nodes
    }

    /// Records the accessors of a new node (declared by command group `cg`
    /// of its dynamic command group, if it is made from one).
    pub(crate) fn register(&mut self, node: u32, pending: Vec<PendingAccess>, cg: Option<usize>) {
        for p in pending {
            let tracker = self
                .trackers
                .entry(p.access.buffer.shared.id)
                .or_insert_with(|| DepTracker::new(p.access.grid.pages()));
            tracker.record(p.access.pages, use_kind(p.access.mode), node);
            self.uses.push(NodeUse { node, access: p.access, param: p.param, cg });
        }
    }

    /// A queue of `graph`'s context.
    fn queue(&mut self, graph: &GraphShared) -> Result<cmdbuf_core::Queue> {
        if let Some(q) = &self.queue {
            return Ok(q.clone());
        }
        let q = cmdbuf_core::Queue::new(&graph.context, QueueProperties::default())?;
        self.queue = Some(q.clone());
        Ok(q)
    }
}

impl GraphState {
    /// The accessors of a new node holding `kind` (a sub-graph's included):
    /// the nodes it must depend on are added to the handler's dependencies,
    /// the accessors are kept for [`register_accesses`](Self::register_accesses).
    pub(crate) fn take_accesses(&self, handler: &mut Handler, kind: &NodeKind) -> Vec<PendingAccess> {
        let mut pending = std::mem::take(&mut handler.accesses);
        if let NodeKind::Subgraph(sub) = kind {
            pending.extend(subgraph_accesses(sub));
        }
        handler.deps.extend(self.buffers.conflicts(&pending));
        pending
    }

    /// Keeps the accessors of node `index`.
    pub(crate) fn register_accesses(&mut self, index: u32, pending: Vec<PendingAccess>) {
        self.buffers.register(index, pending, None);
    }

    /// The edges and accessors of a node of dynamic command group `group`:
    /// every command group's accessors must make the same edges (the
    /// topology may not change with the active index: `InvalidGraph`
    /// otherwise), which are added to `deps`. Returns them, by command group,
    /// for [`register_group_accesses`](Self::register_group_accesses).
    pub(crate) fn group_accesses(&self, group: u32, deps: &mut Vec<u32>) -> Result<Vec<Vec<PendingAccess>>> {
        let per_cg = self.groups[group as usize].accesses.clone();
        let mut edges: Option<Vec<u32>> = None;
        for (cg, pending) in per_cg.iter().enumerate() {
            let mut mine = self.buffers.conflicts(pending);
            mine.sort_unstable();
            mine.dedup();
            match &edges {
                None => edges = Some(mine),
                Some(first) => ensure!(
                    *first == mine,
                    InvalidGraph,
                    "the accessors of command group {cg} of a dynamic command group make edges from nodes \
                     {mine:?}, those of command group 0 from {first:?}: the topology would change with the active index"
                ),
            }
        }
        deps.extend(edges.unwrap_or_default());
        Ok(per_cg)
    }

    /// Keeps the accessors of node `index` of a dynamic command group: all
    /// of them make edges for later nodes; those of the active command group
    /// move data.
    pub(crate) fn register_group_accesses(&mut self, index: u32, per_cg: Vec<Vec<PendingAccess>>) {
        for (cg, pending) in per_cg.into_iter().enumerate() {
            self.buffers.register(index, pending, Some(cg));
        }
    }

    /// Whether `u` moves data now: not an accessor of an inactive command
    /// group of a dynamic command group.
    fn is_active(&self, u: &NodeUse) -> bool {
        match (u.cg, &self.nodes[u.node as usize].kind) {
            (Some(cg), NodeKind::Dynamic(g)) => self.groups[*g as usize].active == cg,
            _ => true,
        }
    }

    /// The accessors that move data now, in the order nodes were added.
    pub(crate) fn active_uses(&self) -> Vec<NodeUse> {
        self.buffers.uses.iter().filter(|u| self.is_active(u)).cloned().collect()
    }

    /// The accessors that move data now, in a topological order of their
    /// nodes (the order a submission makes their data current in).
    pub(crate) fn accesses_in_order(&self) -> Vec<NodeUse> {
        if self.buffers.uses.is_empty() {
            return Vec::new();
        }
        let preds: Vec<Vec<u32>> = self.nodes.iter().map(|n| n.preds.clone()).collect();
        // A cycle (possible with no_cycle_check) fails finalize anyway.
        let order = topological_order(&preds, ExecutionOrder::BreadthFirst).unwrap_or_default();
        let mut rank = vec![0usize; self.nodes.len()];
        for (r, n) in order.iter().enumerate() {
            rank[*n as usize] = r;
        }
        let mut uses = self.active_uses();
        uses.sort_by_key(|u| rank[u.node as usize]);
        uses
    }
}

/// The buffer's note that `graph` recorded commands using it.
pub(crate) fn recorder(graph: &Arc<GraphShared>) -> Recorder {
    let weak = Arc::downgrade(graph);
    Recorder {
        graph: graph.id,
        recording: Arc::new(move || weak.upgrade().map(|g| !g.state.lock().recording.is_empty())),
    }
}

/// The checks and the allocation of an accessor of `graph`.
fn declare(
    graph: &GraphShared,
    buffer: &Buffer,
    mode: AccessMode,
    range: &AccessRange,
) -> Result<(GraphAccess, Accessor)> {
    check_property(graph)?;
    bg::check_no_write_back(buffer, graph.id)?;
    let queue = graph.state.lock().buffers.queue(graph)?;
    bg::declare(buffer, &queue, mode, range).map_err(|e| e.in_context(&format!("accessor in graph #{}", graph.id)))
}

impl Handler {
    /// Declares an accessor of `buffer` for this node (SYCL's
    /// `accessor{buffer, handler, mode}`), and gives its device pointer on
    /// the graph's device. The node will depend on the earlier nodes whose
    /// accessors of the buffer conflict with it (one of the two not
    /// read-only, overlapping page ranges). At each execution the range's
    /// outdated pages move to the graph's device first.
    ///
    /// `InvalidOperation` when the graph lacks
    /// [`assume_buffer_outlives_graph`](super::GraphProperties::assume_buffer_outlives_graph)
    /// or the buffer writes back; the range's errors as for any accessor.
    /// In a dynamic command group, every command group's accessors make the
    /// node's edges (they must make the same ones), and those of the active
    /// command group move data.
    pub fn access(&mut self, buffer: &Buffer, mode: AccessMode, range: AccessRange) -> Result<Accessor> {
        self.declare_access(buffer, mode, &range, None)
    }

    /// Declares an accessor of the buffer a buffer-valued dynamic parameter
    /// holds (SYCL's `handler::require(dynamic_parameter<accessor>)`); pass
    /// the parameter to [`set_arg`](Self::set_arg) for the kernel's argument.
    /// After [`DynamicParameter::update_buffer`] and an executable graph's
    /// update, the node uses the new buffer. `InvalidValue` for a parameter
    /// that holds no buffer, `InvalidGraph` for one of another graph.
    pub fn access_dynamic(
        &mut self,
        param: &DynamicParameter,
        mode: AccessMode,
        range: AccessRange,
    ) -> Result<Accessor> {
        ensure!(
            param.graph.id == self.graph.id,
            InvalidGraph,
            "dynamic parameter of graph #{} used in graph #{}",
            param.graph.id,
            self.graph.id
        );
        let buffer = param_buffer(&self.graph.state.lock(), param)?;
        self.declare_access(&buffer, mode, &range, Some(param.id))
    }

    fn declare_access(
        &mut self,
        buffer: &Buffer,
        mode: AccessMode,
        range: &AccessRange,
        param: Option<u32>,
    ) -> Result<Accessor> {
        let (access, accessor) = declare(&self.graph, buffer, mode, range)?;
        self.accesses.push(PendingAccess { access, param });
        Ok(accessor)
    }
}

/// The buffer `param` holds; `InvalidValue` when it holds none.
fn param_buffer(state: &GraphState, param: &DynamicParameter) -> Result<Buffer> {
    state.buffers.params.get(&param.id).cloned().ok_or_else(|| {
        err!(InvalidValue, "dynamic parameter {} of graph #{} does not hold a buffer", param.id, param.graph.id)
    })
}

impl DynamicParameter {
    /// A dynamic parameter holding `buffer` (SYCL's
    /// `dynamic_parameter<accessor>`): its kernel-argument value is the
    /// buffer's device pointer on the graph's device; nodes access it with
    /// [`Handler::access_dynamic`]. The graph's rules for buffers apply.
    pub fn with_buffer(graph: &Graph<Modifiable>, buffer: &Buffer) -> Result<DynamicParameter> {
        let shared = graph.shared();
        let (_, accessor) = declare(shared, buffer, AccessMode::Read, &AccessRange::all())?;
        let param = DynamicParameter::new(graph, KernelArg::Pointer(accessor.ptr()))?;
        shared.state.lock().buffers.params.insert(param.id, buffer.clone());
        Ok(param)
    }

    /// Replaces the parameter's buffer by `buffer`, of the same element
    /// size, range and page size (`InvalidBufferSize` otherwise): the
    /// registered kernel arguments take its device pointer and the nodes'
    /// accessors use it, in the modifiable graph now and in an executable
    /// graph at its next [`Graph::update`] of the nodes. The graph stops
    /// holding the old buffer once no executable graph uses it.
    /// `InvalidValue` for a parameter that holds no buffer.
    pub fn update_buffer(&self, buffer: &Buffer) -> Result<()> {
        let graph = &self.graph;
        let old = param_buffer(&graph.state.lock(), self)?;
        ensure!(
            bg::same_shape(&old, buffer),
            InvalidBufferSize,
            "dynamic parameter {} of graph #{} holds a buffer of {:?}; {:?} has another size or shape",
            self.id,
            graph.id,
            old.grid(),
            buffer.grid()
        );
        let (_, accessor) = declare(graph, buffer, AccessMode::Read, &AccessRange::all())?;
        // SAFETY: the new pointer is the first byte of an allocation of the
        // same size as the one the kernels were given (same shape), which the
        // graph keeps alive with the buffer.
        unsafe { self.update(KernelArg::Pointer(accessor.ptr()))? };
        let mut state = graph.state.lock();
        state.buffers.params.insert(self.id, buffer.clone());
        for u in state.buffers.uses.iter_mut().filter(|u| u.param == Some(self.id)) {
            u.access.buffer = buffer.clone();
        }
        Ok(())
    }
}

/// The accessors a sub-graph node brings: the executable graph's, in its
/// order (they run as if inlined where the node is).
fn subgraph_accesses(sub: &Graph<Executable>) -> Vec<PendingAccess> {
    sub.0.inner.buffers.lock().iter().map(|u| PendingAccess { access: u.access.clone(), param: None }).collect()
}

/// For a node recorded into `graph` holding `kind`: when it is a sub-graph
/// with accessors, the nodes they conflict with join `deps`, the buffers
/// note the recording graph, and the accessors are returned for
/// [`GraphState::register_accesses`].
pub(crate) fn recorded_subgraph(
    graph: &Arc<GraphShared>,
    state: &GraphState,
    kind: &NodeKind,
    deps: &mut Vec<u32>,
) -> Vec<PendingAccess> {
    let NodeKind::Subgraph(sub) = kind else { return Vec::new() };
    let accesses = subgraph_accesses(sub);
    deps.extend(state.buffers.conflicts(&accesses));
    for a in &accesses {
        bg::add_recorder(&a.access.buffer, recorder(graph));
    }
    accesses
}

/// The buffers a whole-graph update from `source` gives `exec`'s accessors,
/// in their order: every node must have as many accessors as in `exec`,
/// each of the same mode and pages on a buffer of the same shape (the
/// buffer may be another one), else `InvalidGraph` (not topologically
/// identical). Checked before anything changes.
pub(crate) fn match_whole_update(exec: &Graph<Executable>, source: &GraphShared) -> Result<Vec<Buffer>> {
    let theirs = source.state.lock().active_uses();
    let ours = exec.0.inner.buffers.lock().clone();
    ensure!(
        theirs.len() == ours.len(),
        InvalidGraph,
        "graph #{} has {} accessors, executable graph #{} {}: not topologically identical",
        source.id,
        theirs.len(),
        exec.id(),
        ours.len()
    );
    let mut seen: HashMap<u32, usize> = HashMap::new();
    let mut out = Vec::with_capacity(ours.len());
    for u in &ours {
        let k = seen.entry(u.node).or_insert(0);
        let t = theirs.iter().filter(|t| t.node == u.node).nth(*k);
        *k += 1;
        let same = t.is_some_and(|t| {
            t.access.mode == u.access.mode
                && t.access.pages == u.access.pages
                && bg::same_shape(&t.access.buffer, &u.access.buffer)
        });
        ensure!(
            same,
            InvalidGraph,
            "accessor {} of node {} differs between graph #{} and executable graph #{} (another mode, range or \
             buffer shape): not topologically identical",
            *k - 1,
            u.node,
            source.id,
            exec.id()
        );
        out.push(t.expect("checked above").access.buffer.clone());
    }
    Ok(out)
}

impl Graph<Executable> {
    /// One execution; with accessors, their data is made current first
    /// and the execution is recorded as their use.
    #[inline]
    pub(crate) fn run(&self, queue: &cmdbuf_core::Queue, wait: &[&cmdbuf_core::Event]) -> Result<cmdbuf_core::Event> {
        // The flag spares a graph without accessors this lock.
        if self.0.inner.uses_buffers.load(Ordering::Acquire) {
            self.run_with_buffers(queue, wait)
        } else {
            self.run_graph(queue, wait)
        }
    }

    /// [`run`](Self::run) of a graph with accessors.
    #[inline(never)]
    fn run_with_buffers(&self, queue: &cmdbuf_core::Queue, wait: &[&cmdbuf_core::Event]) -> Result<cmdbuf_core::Event> {
        let accesses: Vec<GraphAccess> = self.0.inner.buffers.lock().iter().map(|u| u.access.clone()).collect();
        if accesses.is_empty() {
            return self.run_graph(queue, wait);
        }
        bg::submit(&accesses, queue, wait, |w| self.run_graph(queue, w))
    }

    /// After a whole-graph update: the accessors take `buffers` (from
    /// [`match_whole_update`], in their order).
    pub(crate) fn replace_buffers(&self, buffers: Vec<Buffer>) {
        for (u, b) in self.0.inner.buffers.lock().iter_mut().zip(buffers) {
            u.access.buffer = b;
        }
    }

    /// After an update of `nodes`: their accessors take the buffers their
    /// source nodes now use (a dynamic parameter's new buffer).
    /// A node of a dynamic command group takes the accessors of the
    /// command group active now.
    pub(crate) fn refresh_accesses(&self, nodes: &[&Node]) {
        let source = self.0.inner.source.state.lock();
        let mut uses = self.0.inner.buffers.lock();
        for node in nodes {
            let new: Vec<NodeUse> = source.active_uses().into_iter().filter(|u| u.node == node.index).collect();
            let at = uses.iter().position(|u| u.node == node.index).unwrap_or(uses.len());
            uses.retain(|u| u.node != node.index);
            let at = at.min(uses.len());
            uses.splice(at..at, new);
        }
        self.0.inner.uses_buffers.store(!uses.is_empty(), Ordering::Release);
    }
}
