//! UR's graph capture (`urQueueBeginGraphCaptureExp` and its family): a queue
//! that captures appends what is enqueued on it to a command buffer instead
//! of executing it; [`CapturedGraph::instantiate`] finalizes that buffer into
//! an [`InstantiatedGraph`], which [`Queue::enqueue_graph`] runs any number of
//! times.
//!
//! A queue has one capture slot, checked on the eager path with one atomic
//! flag. While it holds a graph, every enqueue of the queue appends its
//! command to the graph's [`CommandBuffer`] and returns a *captured event*
//! that stands for the command's sync points:
//! - the command runs after the captured events of its wait list (which must
//!   be events of the same capture: `InvalidEventWaitList` otherwise), after
//!   the previous command captured from an in-order queue, and after the last
//!   barrier captured from an out-of-order queue;
//! - a barrier with an empty wait list runs after the commands captured from
//!   the same queue that no later command of that queue depends on; barriers
//!   and event waits append nothing: their events stand for the sync points
//!   they wait on. The order rules of this item and the one above are
//!   [`QueueLane`]'s, which the `cmdbuf-runtime` crate's queue recording
//!   follows too;
//! - an executable graph enqueued while capturing is one captured command
//!   whose commands are appended again between its dependencies and its
//!   dependents;
//! - a native command ([`Queue::enqueue_native_command`]) is appended with
//!   [`CommandBuffer::append_native_command`]'s rules (on CUDA, stream capture
//!   records its work into the graph); its callback runs when the backend's
//!   command buffers call it, again at each instantiation after the first.
//!
//! UR's rules on top:
//! - a capture belongs to the queue that began it (its *origin*). Another
//!   queue that waits on a captured event joins the capture (a *fork*); the
//!   capture ends only on the origin, and only when every fork was joined
//!   back (the origin waited, directly or not, on each fork's last commands),
//!   else `GraphUnjoinedForks`. Ending it ends the forks' capture too;
//! - what cannot be captured (host waits on a captured event or on the
//!   queue, blocking transfers, maps, host tasks, command-buffer enqueues, a
//!   native command that must run before its enqueue returns) is
//!   `GraphCaptureUnsupported` and *invalidates* the capture: every later
//!   enqueue is `GraphCaptureInvalidated`, and so is the end, which returns
//!   no graph;
//! - a wait on an event of another capture still in progress is
//!   `GraphCaptureMergeAttempt`;
//! - a capture begins only into an empty graph (`InvalidArgument`) that no
//!   other queue captures into (`InvalidOperation`); ending a capture on a
//!   queue that does not capture is `CommandListNotCapturing`.
//!
//! Because the capture is a command buffer, it is native wherever command
//! buffers are (CUDA graphs, `cl_khr_command_buffer`, Vulkan command
//! buffers, the CPU adapter's DAG) and works the same way on every backend.
//!
//! [`Queue::enqueue_graph`]: crate::queue::Queue::enqueue_graph
//! [`Queue::enqueue_native_command`]: crate::queue::Queue::enqueue_native_command

use std::fmt::{self, Write as _};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::adapter::EventImpl;
use crate::api::queue_state::{
    CaptureSlot, ExecInner, GraphInner, GraphState, Node, Op, QueueCapture, QueueInner, QueueLane, Session, Syncs,
};
use crate::api::recorded::{AppendOptions, CommandBuffer, SyncPoint};
use crate::command_buffer::CommandBufferDesc;
use crate::context::Context;
use crate::error::{Result, UrError};
use crate::event::{Event, EventStatus, ProfilingInfo};
use crate::{ensure, err};

pub use crate::api::queue_state::InstantiatedGraph;

static NEXT_GRAPH_ID: AtomicU64 = AtomicU64::new(1);

impl Op {
    fn label(&self, verbose: bool) -> String {
        match self {
            Op::Command(command) if verbose => format!("{command:?}"),
            Op::Command(command) => command.kind().to_string(),
            Op::Kernel(k, _) if verbose => {
                format!(
                    "KernelLaunch {} global {:?} offset {:?}",
                    k.kernel.name(),
                    k.range.global_size,
                    k.range.global_offset
                )
            }
            Op::Kernel(k, _) => format!("KernelLaunch {}", k.kernel.name()),
            Op::Wait { barrier: true } => "Barrier".into(),
            Op::Wait { barrier: false } => "EventsWait".into(),
            Op::Graph(exec) => format!("Graph (an executable graph of graph #{})", exec.inner.graph),
        }
    }
}

/// Whether a later command of its queue runs after captured command `n`:
/// what [`QueueLane`] asks.
fn depended_on(nodes: &[Node]) -> impl Fn(u32) -> bool + '_ {
    |n| nodes[n as usize].depended_on
}

/// Empties `slot` when it holds graph `graph`.
fn clear_slot(slot: &CaptureSlot, graph: u64) {
    let mut guard = slot.lock();
    if guard.occupant().is_some_and(|g| g.id == graph) {
        guard.take();
    }
}

impl Session {
    /// `GraphCaptureInvalidated` once the capture was invalidated.
    fn check_valid(&self, graph: u64) -> Result<()> {
        match &self.invalidated {
            None => Ok(()),
            Some(why) => Err(err!(
                GraphCaptureInvalidated,
                "the capture into graph #{graph} was invalidated by {why}; end the capture (it returns no graph)"
            )),
        }
    }

    /// The error for `what`, which a capture cannot record; it invalidates
    /// the capture (an invalidated one stays so, and says so).
    fn refuse(&mut self, what: &str) -> UrError {
        if let Some(why) = &self.invalidated {
            return err!(GraphCaptureInvalidated, "{what} on a capture already invalidated by {why}");
        }
        self.invalidated = Some(what.to_owned());
        err!(
            GraphCaptureUnsupported,
            "{what} during a graph capture: nothing executes while capturing; the capture is now invalidated"
        )
    }

    /// A command captured from a queue other than the origin that no
    /// command captured from the origin comes after: a fork never joined back.
    fn unjoined_fork(&mut self, nodes: &[Node]) -> Option<u32> {
        let origin = self.origin;
        let mut joined = vec![false; nodes.len()];
        let mut stack: Vec<u32> = self
            .queues
            .iter_mut()
            .filter(|q| q.lane.key() == origin)
            .flat_map(|q| q.lane.leaves(depended_on(nodes)).to_vec())
            .collect();
        while let Some(n) = stack.pop() {
            if !std::mem::replace(&mut joined[n as usize], true) {
                stack.extend_from_slice(&nodes[n as usize].preds);
            }
        }
        self.queues
            .iter_mut()
            .filter(|q| q.lane.key() != origin)
            .find_map(|q| q.lane.leaves(depended_on(nodes)).iter().copied().find(|leaf| !joined[*leaf as usize]))
    }
}

/// The event a capturing queue returns: it stands for a captured command and
/// never completes.
struct CapturedEvent {
    graph: Arc<GraphInner>,
    node: u32,
    /// The queue that captured it.
    queue: usize,
}

impl EventImpl for CapturedEvent {
    fn status(&self) -> EventStatus {
        EventStatus::Queued
    }

    fn wait(&self) -> Result<()> {
        if let Some(session) = self.graph.state.lock().session.as_mut() {
            return Err(session.refuse(&format!("a host wait on the event of captured command {}", self.node)));
        }
        Err(err!(
            InvalidOperation,
            "host wait on the event of command {} captured into graph #{}: captured commands do not execute",
            self.node,
            self.graph.id
        ))
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        None
    }
}

fn captured(event: &Event) -> Option<&CapturedEvent> {
    let any: &dyn std::any::Any = &**event.imp();
    any.downcast_ref::<CapturedEvent>()
}

fn union(nodes: impl IntoIterator<Item = u32>, syncs: &[Syncs]) -> Syncs {
    let mut out: Syncs = nodes.into_iter().flat_map(|n| syncs[n as usize].iter().copied()).collect();
    out.sort_unstable_by_key(|s| s.index());
    out.dedup();
    out
}

/// Appends `op` to `buffer` after `after`; returns the sync points it stands for.
fn lower(buffer: &CommandBuffer, op: &Op, after: &[SyncPoint]) -> Result<Syncs> {
    let opts = AppendOptions::new().after(after);
    Ok(match op {
        Op::Command(command) => smallvec::smallvec![buffer.append_command(command.clone(), opts)?.sync_point],
        Op::Kernel(kernel, origin) => {
            // SAFETY: the launch was validated for this context when it was
            // enqueued; `Queue::launch_kernel`'s caller keeps its memory valid
            // at every execution of graphs captured from it.
            let appended = unsafe { buffer.append_kernel_command(kernel.clone(), *origin, &[], opts)? };
            smallvec::smallvec![appended.sync_point]
        }
        Op::Wait { .. } => after.iter().copied().collect(),
        Op::Graph(exec) => {
            let nodes = &exec.inner.nodes;
            let syncs = lower_all(buffer, nodes, after)?;
            let mut has_succ = vec![false; nodes.len()];
            nodes.iter().flat_map(|n| &n.preds).for_each(|p| has_succ[*p as usize] = true);
            union((0..nodes.len() as u32).filter(|n| !has_succ[*n as usize]), &syncs)
        }
    })
}

/// Appends `nodes` to `buffer`, those without predecessors after `entry`.
fn lower_all(buffer: &CommandBuffer, nodes: &[Node], entry: &[SyncPoint]) -> Result<Vec<Syncs>> {
    let mut syncs: Vec<Syncs> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let after = if node.preds.is_empty() {
            entry.iter().copied().collect()
        } else {
            union(node.preds.iter().copied(), &syncs)
        };
        syncs.push(lower(buffer, &node.op, &after)?);
    }
    Ok(syncs)
}

/// A command buffer of `context` for its first device: a context over
/// several sub-devices need not hold the root it is made on.
fn new_buffer(context: &Context) -> Result<CommandBuffer> {
    CommandBuffer::new(context, &context.devices()[0], CommandBufferDesc::default())
}

/// Captures `op` from `queue`, whose capture slot was seen active; where
/// the queue no longer captures, hands `op` back to `resubmit`, the queue's
/// own submission, which executes it.
pub(crate) fn submit(
    queue: &QueueInner,
    op: Op,
    wait: &[&Event],
    resubmit: impl FnOnce(Op) -> Result<Event>,
) -> Result<Event> {
    let mut guard = queue.capture.lock();
    let Some(graph) = guard.occupant().cloned() else {
        // The capture ended since the caller looked: execute.
        drop(guard);
        return resubmit(op);
    };
    check_merge(&graph, wait)?;
    let mut state = graph.state.lock();
    let key = queue.key();
    let Some(qi) = state.session.as_ref().and_then(|s| s.queues.iter().position(|q| q.lane.key() == key)) else {
        // The queue that began the capture was dropped: this fork executes again.
        drop(state);
        guard.take();
        drop(guard);
        return resubmit(op);
    };
    let GraphState { nodes, lowered, session } = &mut *state;
    let session = session.as_mut().expect("checked above");
    session.check_valid(graph.id)?;
    let mut deps = Vec::with_capacity(wait.len() + 1);
    for (i, e) in wait.iter().enumerate() {
        let Some(c) = captured(e).filter(|c| c.graph.id == graph.id) else {
            return Err(err!(
                InvalidEventWaitList,
                "event {i} of the wait list was not captured into graph #{}: a capturing queue waits only for \
                 events of its capture",
                graph.id
            ));
        };
        deps.push(c.node);
    }
    let barrier = matches!(op, Op::Wait { barrier: true });
    let barrier_on_leaves = barrier && wait.is_empty();
    let lane = &mut session.queues[qi].lane;
    lane.order_deps(barrier_on_leaves, &mut deps, depended_on(nodes));
    deps.sort_unstable();
    deps.dedup();
    let (buffer, syncs) = lowered.as_mut().ok_or_else(|| err!(Unknown, "graph #{} has no command buffer", graph.id))?;
    let after = union(deps.iter().copied(), syncs);
    syncs.push(lower(buffer, &op, &after)?);
    let index = nodes.len() as u32;
    for d in &deps {
        let pred = &mut nodes[*d as usize];
        pred.depended_on |= pred.queue == key;
    }
    nodes.push(Node { op, preds: deps, queue: key, depended_on: false });
    lane.push(index, barrier_on_leaves, barrier, depended_on(nodes));
    let mut event =
        Event::from_imp(Arc::new(CapturedEvent { graph: graph.clone(), node: index, queue: key }), &graph.context);
    event.captured = Some((graph.id, index));
    Ok(event)
}

/// `GraphCaptureMergeAttempt` when `wait` holds an event of another capture
/// still in progress. Called before `graph`'s lock is taken, so that no two
/// graph locks are ever held together.
fn check_merge(graph: &GraphInner, wait: &[&Event]) -> Result<()> {
    for (i, event) in wait.iter().enumerate() {
        let Some(c) = captured(event) else { continue };
        ensure!(
            c.graph.id == graph.id || c.graph.state.lock().session.is_none(),
            GraphCaptureMergeAttempt,
            "event {i} of the wait list was captured into graph #{}, whose capture is still in progress, while the \
             queue captures into graph #{}: two captures cannot merge",
            c.graph.id,
            graph.id
        );
    }
    Ok(())
}

/// After an eager wait list failed with `error`: when it holds an event
/// captured by a queue that still captures, `queue` joins that capture and
/// `op` is captured (as [`submit`] does, with `resubmit`); otherwise the error
/// stands.
pub(crate) fn submit_joining(
    queue: &Arc<QueueInner>,
    op: Op,
    wait: &[&Event],
    error: UrError,
    resubmit: impl FnOnce(Op) -> Result<Event>,
) -> Result<Event> {
    let Some(c) = wait.iter().find_map(|e| captured(e)) else { return Err(error) };
    let graph = c.graph.clone();
    {
        let mut state = graph.state.lock();
        let Some(session) = state.session.as_mut().filter(|s| s.queues.iter().any(|q| q.lane.key() == c.queue)) else {
            return Err(err!(
                InvalidEventWaitList,
                "the wait list holds the event of command {} of graph #{}, whose capture ended: a captured event is \
                 only usable during its capture",
                c.node,
                graph.id
            ));
        };
        check_queue(&graph, queue)?;
        session.queues.push(QueueCapture::new(queue));
    }
    set_slot(&queue.capture, &graph)?;
    tracing::debug!(graph = graph.id, "queue joins the capture");
    submit(queue, op, wait, resubmit)
}

impl QueueCapture {
    fn new(queue: &Arc<QueueInner>) -> QueueCapture {
        QueueCapture { queue: Arc::downgrade(queue), lane: QueueLane::new(queue.key(), !queue.properties.out_of_order) }
    }
}

fn check_queue(graph: &GraphInner, queue: &QueueInner) -> Result<()> {
    ensure!(
        queue.context == graph.context,
        InvalidQueue,
        "a queue of another context cannot capture into graph #{} of {}",
        graph.id,
        graph.context.device()
    );
    Ok(())
}

fn set_slot(slot: &CaptureSlot, graph: &Arc<GraphInner>) -> Result<()> {
    let mut guard = slot.lock();
    if let Some(other) = guard.occupant() {
        return Err(err!(InvalidOperation, "the queue already captures into graph #{}", other.id));
    }
    guard.set(graph.clone());
    Ok(())
}

/// The error of an operation a capturing queue (whose capture slot is
/// `slot`) cannot capture: `what` names it; it invalidates the capture. `Ok`
/// when the queue stopped capturing meanwhile.
pub(crate) fn refuse(slot: &CaptureSlot, what: &str) -> Result<()> {
    let Some(graph) = slot.occupant() else { return Ok(()) };
    match graph.state.lock().session.as_mut() {
        Some(session) => Err(session.refuse(what)),
        None => Ok(()),
    }
}

/// Forgets a queue being dropped (`key` is its identity) in the capture it
/// takes part in: a capture it began ends, unfinished; the graph keeps what
/// was captured.
pub(crate) fn queue_dropped(slot: &CaptureSlot, key: usize) {
    let Some(graph) = slot.lock().take() else { return };
    let mut state = graph.state.lock();
    let Some(session) = state.session.as_mut() else { return };
    session.queues.retain(|q| q.lane.key() != key);
    if session.origin == key {
        state.session = None;
        tracing::debug!(graph = graph.id, "the capturing queue was dropped: capture abandoned");
    }
}

/// A graph recorded by UR's graph capture (`ur_exp_graph_handle_t`): made
/// empty by [`CapturedGraph::new`] or by [`Queue::begin_capture`], filled by
/// one capture. Clones share the graph.
///
/// ```
/// use cmdbuf::*;
/// # let device = cmdbuf_cpu::default_device();
/// let ctx = Context::new(&device)?;
/// let queue = Queue::new(&ctx, QueueProperties::default())?;
/// let (a, b) = (UsmAllocation::new(&ctx, UsmKind::Device, 16)?, UsmAllocation::new(&ctx, UsmKind::Device, 16)?);
///
/// queue.begin_capture()?;
/// queue.usm_fill(a.ptr(), &[7], 16, &[])?;
/// queue.usm_memcpy(b.ptr(), a.ptr(), 16, &[])?;
/// let graph = queue.end_capture()?;
/// let exec = graph.instantiate()?;
/// queue.enqueue_graph(&exec, &[])?;
/// queue.enqueue_graph(&exec, &[])?.wait()?;
///
/// let mut out = [0u8; 16];
/// queue.read_usm(b.ptr(), &mut out, &[])?;
/// assert_eq!(out, [7; 16]);
/// # Ok::<(), UrError>(())
/// ```
///
/// [`Queue::begin_capture`]: crate::queue::Queue::begin_capture
#[derive(Clone)]
pub struct CapturedGraph {
    inner: Arc<GraphInner>,
}

impl CapturedGraph {
    /// An empty graph of `context` (`urGraphCreateExp`), to capture into
    /// with [`Queue::begin_capture_into`](crate::queue::Queue::begin_capture_into).
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn new(context: &Context) -> Result<CapturedGraph> {
        let id = NEXT_GRAPH_ID.fetch_add(1, Ordering::Relaxed);
        Ok(CapturedGraph { inner: Arc::new(GraphInner { id, context: context.clone(), state: Mutex::default() }) })
    }

    /// A process-unique identity, increasing with each graph (`urGraphGetIdExp`).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The graph's context.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// Whether both handles are the same graph.
    pub fn same_graph(&self, other: &CapturedGraph) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether nothing was captured into it (`urGraphIsEmptyExp`).
    pub fn is_empty(&self) -> bool {
        self.node_count() == 0
    }

    /// How many commands were captured (barriers, event waits and
    /// executable graphs count one each).
    pub fn node_count(&self) -> usize {
        self.inner.state.lock().nodes.len()
    }

    /// Whether a capture into it is in progress.
    pub fn is_capturing(&self) -> bool {
        self.inner.state.lock().session.is_some()
    }

    /// An executable graph of what was captured (`urGraphInstantiateGraphExp`):
    /// the capture's command buffer, finalized; the graph stays as it is and
    /// may be instantiated again (then its commands are appended to a new
    /// command buffer). `InvalidOperation` while a capture into it is in
    /// progress, `InvalidArgument` for a graph with nothing captured (as UR's
    /// conformance suite asks, `urGraphInstantiateGraphExpTest.InvalidEmptyGraph`).
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn instantiate(&self) -> Result<InstantiatedGraph> {
        let mut state = self.inner.state.lock();
        ensure!(
            state.session.is_none(),
            InvalidOperation,
            "graph #{} is being captured: end the capture before instantiating it",
            self.id()
        );
        ensure!(!state.nodes.is_empty(), InvalidArgument, "graph #{} is empty: nothing to instantiate", self.id());
        let buffer = match state.lowered.take() {
            Some((buffer, _)) => buffer,
            None => {
                let buffer = new_buffer(&self.inner.context)?;
                lower_all(&buffer, &state.nodes, &[])?;
                buffer
            }
        };
        buffer.finalize()?;
        let nodes = state.nodes.clone().into();
        Ok(InstantiatedGraph {
            inner: Arc::new(ExecInner { graph: self.id(), context: self.inner.context.clone(), buffer, nodes }),
        })
    }

    /// The captured commands and their dependencies in Graphviz DOT.
    pub fn to_dot(&self, verbose: bool) -> String {
        let state = self.inner.state.lock();
        let mut out = format!("digraph \"graph #{}\" {{\n", self.id());
        for (i, node) in state.nodes.iter().enumerate() {
            let label = node.op.label(verbose).replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(out, "  n{i} [label=\"{i}: {label}\"];");
            for p in &node.preds {
                let _ = writeln!(out, "  n{p} -> n{i};");
            }
        }
        out.push_str("}\n");
        out
    }

    /// Writes [`to_dot`](Self::to_dot) (verbose) to `path`
    /// (`urGraphDumpContentsExp`); `Unknown` when it cannot be written, as UR answers.
    pub fn dump(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.to_dot(true))
            .map_err(|e| err!(Unknown, "cannot write graph #{} to {}: {e}", self.id(), path.display()))
    }
}

impl fmt::Debug for CapturedGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CapturedGraph").field("id", &self.id()).field("nodes", &self.node_count()).finish()
    }
}

impl InstantiatedGraph {
    /// The context.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The identity of the [`CapturedGraph`] it was instantiated from.
    pub fn graph_id(&self) -> u64 {
        self.inner.graph
    }

    /// The finalized command buffer a submission enqueues.
    pub fn command_buffer(&self) -> &CommandBuffer {
        &self.inner.buffer
    }
}

impl fmt::Debug for InstantiatedGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstantiatedGraph").field("graph", &self.inner.graph).finish()
    }
}

// What the queue methods of UR's graph capture do (`queue/graph_capture.rs`
// holds the methods and their contracts).

/// `queue` begins capturing into `graph`
/// ([`Queue::begin_capture_into`](crate::queue::Queue::begin_capture_into)).
pub(crate) fn begin(queue: &Arc<QueueInner>, graph: &CapturedGraph) -> Result<()> {
    let inner = &graph.inner;
    check_queue(inner, queue)?;
    if let Some(other) = queue.capture.occupant() {
        return Err(err!(InvalidOperation, "the queue already captures into graph #{}", other.id));
    }
    {
        let mut state = inner.state.lock();
        ensure!(state.session.is_none(), InvalidOperation, "graph #{} is being captured by another queue", inner.id);
        ensure!(
            state.nodes.is_empty(),
            InvalidArgument,
            "graph #{} holds {} captured commands: a capture begins only into an empty graph",
            inner.id,
            state.nodes.len()
        );
        state.lowered = Some((new_buffer(&inner.context)?, Vec::new()));
        state.session =
            Some(Session { origin: queue.key(), invalidated: None, queues: vec![QueueCapture::new(queue)] });
    }
    if let Err(e) = set_slot(&queue.capture, inner) {
        inner.state.lock().session = None;
        return Err(e);
    }
    tracing::debug!(graph = inner.id, "queue captures");
    Ok(())
}

/// Ends the capture `queue` began and returns its graph
/// ([`Queue::end_capture`](crate::queue::Queue::end_capture)); the queues
/// that joined it stop capturing too.
pub(crate) fn end(queue: &QueueInner) -> Result<CapturedGraph> {
    let slot = &queue.capture;
    let graph = slot.occupant().ok_or_else(|| err!(CommandListNotCapturing, "the queue does not capture"))?;
    let (outcome, queues) = {
        let mut state = graph.state.lock();
        let Some(session) = &state.session else {
            drop(state);
            clear_slot(slot, graph.id);
            return Err(err!(CommandListNotCapturing, "the capture into graph #{} was abandoned", graph.id));
        };
        ensure!(
            session.origin == queue.key(),
            InvalidOperation,
            "the capture into graph #{} began on another queue, which this one joined by waiting on a \
             captured event: end it on the queue that began it",
            graph.id
        );
        let mut session = state.session.take().expect("checked above");
        let outcome = session.check_valid(graph.id).and_then(|()| match session.unjoined_fork(&state.nodes) {
            None => Ok(()),
            Some(node) => Err(err!(
                GraphUnjoinedForks,
                "command {node} of graph #{} was captured on a queue that joined the capture and was never \
                 joined back: make the capturing queue wait on that queue's last event",
                graph.id
            )),
        });
        (outcome, session.queues)
    };
    for q in queues {
        if let Some(member) = q.queue.upgrade() {
            clear_slot(&member.capture, graph.id);
        }
    }
    outcome?;
    Ok(CapturedGraph { inner: graph })
}

/// Whether `queue` captures, having begun a capture or joined one
/// ([`Queue::is_capturing`](crate::queue::Queue::is_capturing)).
pub(crate) fn is_capturing(queue: &QueueInner) -> bool {
    queue.capture.is_active()
        && queue.capture.occupant().is_some_and(|g| {
            g.state.lock().session.as_ref().is_some_and(|s| s.queues.iter().any(|q| q.lane.key() == queue.key()))
        })
}

/// The graph `queue` captures into
/// ([`Queue::capture_graph`](crate::queue::Queue::capture_graph)).
pub(crate) fn graph_of(queue: &QueueInner) -> Result<CapturedGraph> {
    ensure!(is_capturing(queue), InvalidOperation, "the queue does not capture");
    let inner = queue.capture.occupant().ok_or_else(|| err!(InvalidOperation, "the queue does not capture"))?;
    Ok(CapturedGraph { inner })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_invalidates_once() {
        let mut s = Session { origin: 1, invalidated: None, queues: Vec::new() };
        assert!(s.check_valid(3).is_ok());
        assert!(matches!(s.refuse("a wait"), UrError::GraphCaptureUnsupported(_)));
        assert!(matches!(s.check_valid(3), Err(UrError::GraphCaptureInvalidated(_))));
        assert!(matches!(s.refuse("a finish"), UrError::GraphCaptureInvalidated(_)));
    }
}
