//! Queue recording ("record & replay"): how a [`Queue`](crate::Queue)'s
//! submissions become nodes of a graph.
//!
//! A queue has a [`RecordingSlot`], in its [`QueueInner`], which the graph
//! layer defines (in `state.rs`, beside the graph the slot holds; this module
//! re-exports them) so that it reaches a recording queue's state without
//! naming the queue layer above it (docs/architecture.md); the operations
//! that take a [`Queue`](crate::Queue) are in `crate::recording`. While the
//! slot holds a graph, every submitting method of the queue records a node
//! instead of executing, and returns a *recorded event* that stands for the
//! node:
//! - the node depends on the recorded events of its wait list (which must be
//!   events of the same graph: `InvalidEventWaitList` otherwise), on the
//!   previous node recorded from an in-order queue, and on the last barrier
//!   recorded from an out-of-order queue;
//! - a barrier with an empty wait list depends on the nodes recorded from the
//!   same queue that no later node of that queue depends on;
//! - waiting on a recorded event, or on a recording queue (`finish`), and
//!   blocking transfers are `InvalidOperation`: nothing executes while
//!   recording.
//!
//! The slot is cmdbuf-core's [`QueueSlot`](cmdbuf_core::queue::QueueSlot)
//! and the order a queue adds is cmdbuf-core's [`QueueLane`], both shared
//! with UR's graph capture; the events, the node kinds and the error rules
//! are SYCL's own (docs/architecture.md says why they stay apart).
//!
//! An executing queue that submits work waiting on a recorded event starts
//! recording into that event's graph (transitive recording), as if
//! `begin_recording` had been called for it, provided the queue that
//! recorded the event still records; otherwise the event is outside its
//! recording scope and the wait list is `InvalidEventWaitList`.
//!
//! The check costs the eager path one branch on an atomic flag and a look at
//! each event of the wait list (which is either a cmdbuf-core event or a
//! recorded one).

use std::fmt;
use std::sync::{Arc, Weak};

use cmdbuf_core::queue::QueueLane;
use cmdbuf_core::{Command, KernelCommand, LocalSizeOrigin, Result, UrError, UsmKind, UsmPtr, ensure, err};

use crate::buffer::graph::{self as bg, GraphAccess};

use super::buffers::recorder;
use super::node::is_ancestor;
use super::props::RecordingProperties;
use super::state::{GraphShared, GraphState, KernelSpec, NativeFn, NodeData, NodeKind, PendingAccess, QueueRecord};
use super::subgraph::check_property;
use super::{Executable, Graph, Modifiable};

pub(crate) use super::state::{HostFn, QueueInner, RecordingSlot};

impl QueueInner {
    /// A queue over `core` that does not record.
    pub(crate) fn new(core: cmdbuf_core::Queue) -> Arc<QueueInner> {
        Arc::new(QueueInner { core, recording: RecordingSlot::default() })
    }

    /// The queue's identity while it lives (graphs key recording queues by it).
    pub(crate) fn key(&self) -> usize {
        self as *const QueueInner as usize
    }
}

impl Drop for QueueInner {
    /// Forgets the queue in the graph it records into.
    fn drop(&mut self) {
        let Some(graph) = self.recording.lock().take() else { return };
        let key = self.key();
        graph.state.lock().recording.retain(|r| r.key() != key);
    }
}

/// An entry of a wait list as recording reads it: the recorded event it is,
/// if it is one. [`Event`](crate::Event) is one; this layer, below the
/// queue, does not name it.
pub(crate) trait WaitEvent {
    /// The recorded event, if this is one.
    fn recorded(&self) -> Option<&RecordedEvent>;
}

impl QueueRecord {
    fn key(&self) -> usize {
        self.lane.key()
    }
}

/// Whether a later node recorded from queue `key` depends on node `n`: what
/// [`QueueLane`] asks. Read from the graph's edges, which also hold those
/// made explicitly between recorded nodes.
fn depended_on(nodes: &[NodeData], key: usize) -> impl Fn(u32) -> bool + '_ {
    move |n| nodes[n as usize].succs.iter().any(|s| nodes[*s as usize].queue == Some(key))
}

/// An operation a recording queue records: a command validated as for a
/// command buffer, or one only graphs have.
pub(crate) enum Recordable {
    Command(Command),
    Kernel(KernelCommand, LocalSizeOrigin),
    Wait { barrier: bool },
    HostTask(HostFn),
    Subgraph(Graph<Executable>),
    Malloc { kind: UsmKind, size: usize, zero_init: bool },
    Free(UsmPtr),
    Native(NativeFn),
}

/// The event a recording queue returns: it names a node and never completes.
#[derive(Clone)]
pub struct RecordedEvent {
    pub(crate) graph: Arc<GraphShared>,
    pub(crate) node: u32,
    /// The queue that recorded it.
    queue: usize,
}

impl RecordedEvent {
    /// The event of `node` of `graph`, as recorded from the queue `queue` (its key).
    pub(crate) fn new(graph: Arc<GraphShared>, node: u32, queue: usize) -> RecordedEvent {
        RecordedEvent { graph, node, queue }
    }

    /// The error of a host wait on it.
    pub(crate) fn wait_error(&self) -> UrError {
        err!(
            InvalidOperation,
            "host wait on the event of node {} recorded into graph #{}: recorded commands do not execute",
            self.node,
            self.graph.id
        )
    }

    /// The error of a status or profiling query (`what`) on it.
    pub(crate) fn query_error(&self, what: &str) -> UrError {
        err!(
            InvalidOperation,
            "{what} on the event of node {} recorded into graph #{}: recorded commands do not execute",
            self.node,
            self.graph.id
        )
    }

    /// The error of it in the wait list of work that executes.
    pub(crate) fn outside_recording(&self) -> UrError {
        err!(
            InvalidEventWaitList,
            "the wait list holds the event of node {} recorded into graph #{}; it is usable only in that graph's \
             recording",
            self.node,
            self.graph.id
        )
    }

    /// The pointer of the allocation node it stands for, if it is one.
    pub(crate) fn allocation(&self) -> Option<UsmPtr> {
        match self.graph.state.lock().nodes[self.node as usize].kind {
            NodeKind::AsyncMalloc { ptr, .. } => Some(ptr),
            _ => None,
        }
    }
}

impl fmt::Debug for RecordedEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordedEvent").field("graph", &self.graph.id).field("node", &self.node).finish()
    }
}

/// Records what `op` builds from `queue`; gives `op` back when the queue
/// does not record (any more).
pub(crate) fn submit<F: FnOnce() -> Result<Recordable>>(
    queue: &QueueInner,
    op: F,
    wait: &[&impl WaitEvent],
) -> std::result::Result<Result<RecordedEvent>, F> {
    let guard = queue.recording.lock();
    let Some(graph) = guard.occupant().cloned() else { return Err(op) };
    Ok(op().and_then(|op| {
        let mut state = graph.state.lock();
        add(&graph, &mut state, queue, op, wait)
    }))
}

/// Before executable work waiting on `rec`: when the queue that recorded it
/// still records, `queue` starts recording into that graph (transitive
/// recording); otherwise `InvalidEventWaitList`.
pub(crate) fn begin_transitively(queue: &Arc<QueueInner>, rec: &RecordedEvent) -> Result<()> {
    let graph = rec.graph.clone();
    let props = {
        let state = graph.state.lock();
        let Some(from) = state.recording.iter().find(|r| r.key() == rec.queue) else {
            return Err(err!(
                InvalidEventWaitList,
                "the wait list holds the event of {}, whose queue no longer records: a recorded event is only \
                 usable while its queue records into its graph",
                state.describe(&graph, rec.node)
            ));
        };
        // 8.4.6: the queue inherits the recording properties of the queue
        // whose event made it record.
        from.props
    };
    begin(&graph, queue, props).map_err(|e| e.in_context("transitive recording"))?;
    tracing::debug!(graph = graph.id, "queue records transitively");
    Ok(())
}

/// Adds the node of `op` recorded from `queue`: after the wait list's
/// nodes and what the queue's order adds (`queue_deps`), as the node
/// `node_kind` makes of `op`, then noted as the queue's latest
/// (`note_on_queue`).
fn add(
    graph: &Arc<GraphShared>,
    state: &mut GraphState,
    queue: &QueueInner,
    op: Recordable,
    wait: &[&impl WaitEvent],
) -> Result<RecordedEvent> {
    let key = queue.key();
    let Some(qi) = state.recording.iter().position(|r| r.key() == key) else {
        return Err(err!(Unknown, "the queue's recording slot names graph #{}, which does not list it", graph.id));
    };
    let mut deps = wait_deps(graph, wait)?;
    let barrier_on_leaves = matches!(op, Recordable::Wait { barrier: true }) && wait.is_empty();
    queue_deps(state, qi, barrier_on_leaves, &mut deps);
    let device = graph.devices.index_of_context(queue.core.context()).unwrap_or(0);
    let kind = node_kind(graph, state, queue, op, device, &deps)?;
    let barrier = matches!(kind, NodeKind::Barrier);
    let accesses = super::buffers::recorded_subgraph(graph, state, &kind, &mut deps);
    let index = state.commit(kind, deps, Some(key));
    state.register_accesses(index, accesses);
    state.placed.place(index, device);
    note_on_queue(state, qi, index, barrier_on_leaves, barrier);
    Ok(RecordedEvent { graph: graph.clone(), node: index, queue: key })
}

/// The nodes of a recording queue's wait list: events recorded into
/// `graph`, refused otherwise.
fn wait_deps(graph: &GraphShared, wait: &[&impl WaitEvent]) -> Result<Vec<u32>> {
    let mut deps = Vec::with_capacity(wait.len() + 1);
    for (i, e) in wait.iter().enumerate() {
        let Some(rec) = e.recorded() else {
            return Err(err!(
                InvalidEventWaitList,
                "event {i} of the wait list was not recorded into graph #{}: a queue recording into a graph waits \
                 only for events recorded into it",
                graph.id
            ));
        };
        ensure!(
            rec.graph.id == graph.id,
            InvalidEventWaitList,
            "event {i} of the wait list is the event of node {} of graph #{}, the queue records into graph #{}",
            rec.node,
            rec.graph.id,
            graph.id
        );
        deps.push(rec.node);
    }
    Ok(deps)
}

/// Adds what the order of recording queue `qi` adds to a new node's
/// dependencies: its leaves for a barrier over an empty wait list, its last
/// node (in order) or last barrier (out of order).
fn queue_deps(state: &mut GraphState, qi: usize, barrier_on_leaves: bool, deps: &mut Vec<u32>) {
    let GraphState { recording, nodes, .. } = &mut *state;
    let lane = &mut recording[qi].lane;
    let key = lane.key();
    lane.order_deps(barrier_on_leaves, deps, depended_on(nodes, key));
}

/// The node `op` becomes on `device` of `graph` after `deps`: kernels and
/// sub-graphs checked against the device, graph-owned allocations made
/// (reusing memory no ancestor still uses) or freed.
fn node_kind(
    graph: &GraphShared,
    state: &mut GraphState,
    queue: &QueueInner,
    op: Recordable,
    device: u16,
    deps: &[u32],
) -> Result<NodeKind> {
    let index = state.nodes.len() as u32;
    Ok(match op {
        Recordable::Command(command) => NodeKind::Memory(command),
        Recordable::Kernel(kernel, origin) => {
            let spec = KernelSpec::new(kernel, origin);
            graph.devices.check_kernel(graph.id, device, &spec)?;
            NodeKind::Kernel(spec)
        }
        Recordable::Wait { barrier: true } => NodeKind::Barrier,
        Recordable::Wait { barrier: false } => NodeKind::Empty,
        Recordable::HostTask(task) => NodeKind::HostTask(task),
        Recordable::Native(callback) => NodeKind::Native(callback),
        Recordable::Subgraph(sub) => {
            let on = super::subgraph::check_subgraph(graph, &sub)?;
            ensure!(
                on == device,
                InvalidQueue,
                "executable graph #{} runs on {}, recorded by a queue of {}",
                sub.id(),
                sub.device(),
                queue.core.device()
            );
            NodeKind::Subgraph(sub)
        }
        Recordable::Malloc { kind, size, zero_init } => {
            ensure!(
                device == 0,
                UnsupportedFeature,
                "graph-owned allocations of multi-device graph #{} are made on its own device only, not {}",
                graph.id,
                queue.core.device()
            );
            let prune = !graph.props.no_cycle_check;
            let GraphState { pool, nodes, topo, .. } = &mut *state;
            let (alloc, ptr) = pool
                .allocate(&graph.context, kind, size, zero_init, |free| is_ancestor(nodes, topo, free, deps, prune))?;
            NodeKind::AsyncMalloc { alloc, ptr, size }
        }
        Recordable::Free(ptr) => {
            let alloc = state.pool.find(ptr)?;
            state.pool.free(alloc, Some(index))?;
            NodeKind::AsyncFree { alloc, ptr }
        }
    })
}

/// Notes node `index` as recording queue `qi`'s latest: one of its leaves
/// (the only one after a barrier over its leaves), its last node, and its
/// last barrier where it is one.
fn note_on_queue(state: &mut GraphState, qi: usize, index: u32, barrier_on_leaves: bool, barrier: bool) {
    let GraphState { recording, nodes, .. } = &mut *state;
    let lane = &mut recording[qi].lane;
    let key = lane.key();
    lane.push(index, barrier_on_leaves, barrier, depended_on(nodes, key));
}

/// The error of an operation a recording queue cannot record: `what` names
/// it. `Ok` when the queue stopped recording meanwhile.
pub(crate) fn refuse_while_recording(queue: &QueueInner, what: &str) -> Result<()> {
    let Some(graph) = queue.recording.occupant() else { return Ok(()) };
    Err(err!(
        InvalidOperation,
        "{what} on a queue recording into graph #{}: nothing executes while it records",
        graph.id
    ))
}

/// The checks of `begin_recording` that do not change anything.
pub(crate) fn check_can_begin(graph: &GraphShared, queue: &QueueInner) -> Result<()> {
    ensure!(
        graph.devices.index_of_context(queue.core.context()).is_some(),
        InvalidQueue,
        "a queue of {} cannot record into graph #{} of {}",
        queue.core.device(),
        graph.id,
        graph.device()
    );
    if let Some(other) = queue.recording.occupant() {
        return Err(err!(
            InvalidOperation,
            "the queue already records into graph #{}; end that recording first",
            other.id
        ));
    }
    ensure!(
        !queue.core.is_capturing(),
        InvalidOperation,
        "the queue captures a UR graph; end the capture before recording"
    );
    Ok(())
}

/// Starts recording `queue` into `graph`.
pub(crate) fn begin(graph: &Arc<GraphShared>, queue: &Arc<QueueInner>, props: RecordingProperties) -> Result<()> {
    check_can_begin(graph, queue)?;
    let mut guard = queue.recording.lock();
    if let Some(other) = guard.occupant() {
        return Err(err!(InvalidOperation, "the queue already records into graph #{}", other.id));
    }
    graph.state.lock().recording.push(QueueRecord {
        queue: Arc::downgrade(queue),
        lane: QueueLane::new(queue.key(), !queue.core.properties().out_of_order),
        props,
    });
    guard.set(graph.clone());
    tracing::debug!(graph = graph.id, "queue records");
    Ok(())
}

/// The checks of `end_recording(queue)` that do not change anything.
pub(crate) fn check_can_end(graph: &GraphShared, queue: &QueueInner) -> Result<()> {
    match queue.recording.occupant() {
        Some(other) if other.id != graph.id => Err(err!(
            InvalidOperation,
            "end_recording of graph #{} on a queue that records into graph #{}",
            graph.id,
            other.id
        )),
        _ => Ok(()),
    }
}

/// Ends recording `queue` into `graph`; nothing when it does not record.
pub(crate) fn end(graph: &GraphShared, queue: &QueueInner) -> Result<()> {
    let mut guard = queue.recording.lock();
    match guard.occupant() {
        None => Ok(()),
        Some(other) if other.id != graph.id => Err(err!(
            InvalidOperation,
            "end_recording of graph #{} on a queue that records into graph #{}",
            graph.id,
            other.id
        )),
        Some(_) => {
            guard.take();
            let key = queue.key();
            graph.state.lock().recording.retain(|r| r.key() != key);
            tracing::debug!(graph = graph.id, "queue stops recording");
            Ok(())
        }
    }
}

/// Ends recording on every queue recording into `graph`.
pub(crate) fn end_all(graph: &GraphShared) {
    let queues: Vec<(Weak<QueueInner>, usize)> =
        graph.state.lock().recording.iter().map(|r| (r.queue.clone(), r.key())).collect();
    for (weak, key) in queues {
        match weak.upgrade() {
            Some(queue) => {
                let _ = end(graph, &queue);
            }
            None => graph.state.lock().recording.retain(|r| r.key() != key),
        }
    }
}

/// The graph `queue` records into (`ext_oneapi_get_graph`).
pub(crate) fn recording_graph(queue: &QueueInner) -> Result<Graph<Modifiable>> {
    let graph =
        queue.recording.occupant().ok_or_else(|| err!(InvalidOperation, "the queue does not record into a graph"))?;
    let handle =
        graph.handle.upgrade().ok_or_else(|| err!(InvalidOperation, "graph #{} is being dropped", graph.id))?;
    Ok(Graph(Modifiable { handle }))
}

/// The `begin_recording` properties `queue` records with, if it records.
pub(crate) fn recording_properties(queue: &QueueInner) -> Option<RecordingProperties> {
    let graph = queue.recording.occupant()?;
    let key = queue.key();
    graph.state.lock().recording.iter().find(|r| r.key() == key).map(|r| r.props)
}

impl fmt::Debug for QueueRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueRecord").field("lane", &self.lane).finish()
    }
}

/// A command group with accessors submitted to the queue `queue` (its key)
/// that records into `graph`: its edges come from the accessors (`launch`
/// is given the recorded events of the nodes they conflict with, to wait
/// for), the node it records keeps them.
pub(crate) fn with_accessors<E: WaitEvent>(
    graph: Arc<GraphShared>,
    queue: usize,
    declared: Vec<GraphAccess>,
    launch: impl FnOnce(Vec<RecordedEvent>) -> Result<E>,
) -> Result<E> {
    check_property(&graph)?;
    for a in &declared {
        bg::check_no_write_back(&a.buffer, graph.id)?;
    }
    let serial = graph.state.lock().buffers.serial.clone();
    let _one_at_a_time = serial.lock();
    let pending: Vec<PendingAccess> =
        declared.into_iter().map(|access| PendingAccess { access, param: None }).collect();
    let mut nodes = graph.state.lock().buffers.conflicts(&pending);
    nodes.sort_unstable();
    nodes.dedup();
    let conflicts = nodes.into_iter().map(|n| RecordedEvent::new(graph.clone(), n, queue)).collect();
    let event = launch(conflicts)?;
    let node = match event.recorded() {
        Some(r) if r.graph.id == graph.id => r.node,
        _ => {
            return Err(err!(
                InvalidOperation,
                "a command group with accessors submitted to a queue recording into graph #{} recorded no command \
                 into it",
                graph.id
            ));
        }
    };
    for p in &pending {
        bg::add_recorder(&p.access.buffer, recorder(&graph));
    }
    graph.state.lock().buffers.register(node, pending, None);
    Ok(event)
}
