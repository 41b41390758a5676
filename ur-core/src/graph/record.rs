//! Queue recording ("record & replay"): the hook by which a queue's
//! submissions become nodes of a graph, and the queue methods of the graph
//! extension.
//!
//! A queue has a [`RecordingSlot`]. While it holds a graph, every submitting
//! method of the queue records a node instead of executing, and returns a
//! *recorded event* that stands for the node:
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
//! An executing queue that submits work waiting on a recorded event starts
//! recording into that event's graph (transitive recording), as if
//! `begin_recording` had been called for it, provided the queue that
//! recorded the event still records; otherwise the event is outside its
//! recording scope and the wait list is `InvalidEventWaitList`.
//!
//! The check costs the eager path one branch on an atomic flag; an event
//! of the wait list that turns out to be a recorded event is found when the
//! wait list is resolved, on the error path.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::adapter::EventImpl;
use crate::capture::Op;
use crate::command::Command;
use crate::error::{Result, UrError};
use crate::event::{Event, EventStatus, ProfilingInfo};
use crate::memory::{UsmKind, UsmPtr};
use crate::queue::{EnqueueGraph, Queue, WeakQueue};
use crate::{ensure, err};

use super::modifiable::{GraphShared, GraphState, is_ancestor};
use super::node::{HostFn, KernelSpec, NodeKind};
use super::{Executable, Graph, Modifiable};

/// Whether a queue executes its submissions or records them into a graph
/// (`queue_state`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueState {
    /// Submissions execute.
    Executing,
    /// Submissions become nodes of a graph.
    Recording,
}

/// The graph a queue records into, if any.
#[derive(Default)]
pub(crate) struct RecordingSlot {
    active: AtomicBool,
    graph: Mutex<Option<Arc<GraphShared>>>,
}

impl RecordingSlot {
    /// Whether the queue records: the one check of the eager path.
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    pub(crate) fn graph(&self) -> Option<Arc<GraphShared>> {
        self.graph.lock().clone()
    }
}

/// A queue recording into a graph, as the graph sees it.
pub(crate) struct QueueRecord {
    queue: WeakQueue,
    key: usize,
    in_order: bool,
    /// The newest node recorded from the queue.
    last: Option<u32>,
    /// The newest barrier recorded from the queue.
    barrier: Option<u32>,
    /// Nodes recorded from the queue that no later node of it depends on.
    leaves: Vec<u32>,
}

/// An operation a queue either executes or records: one of ur-core's, or
/// one only the graph layer has.
pub(crate) enum Recordable {
    Core(Op),
    HostTask(HostFn),
    Subgraph(Graph<Executable>),
    Malloc { kind: UsmKind, size: usize },
    Free(UsmPtr),
}

impl From<Op> for Recordable {
    fn from(op: Op) -> Recordable {
        Recordable::Core(op)
    }
}

impl Recordable {
    /// What a capture, which cannot hold it, calls it.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Recordable::Core(_) => "a command",
            Recordable::HostTask(_) => "a host task",
            Recordable::Subgraph(_) => "an executable graph of the graph layer",
            Recordable::Malloc { .. } | Recordable::Free(_) => "a graph-owned allocation",
        }
    }
}

/// The event a recording queue returns: it names a node and never completes.
pub(crate) struct RecordedEvent {
    pub(crate) graph: Arc<GraphShared>,
    pub(crate) node: u32,
    /// The queue that recorded it.
    queue: usize,
}

impl EventImpl for RecordedEvent {
    fn status(&self) -> EventStatus {
        EventStatus::Queued
    }

    fn wait(&self) -> Result<()> {
        Err(err!(
            InvalidOperation,
            "host wait on the event of node {} recorded into graph #{}: recorded commands do not execute",
            self.node,
            self.graph.id
        ))
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        None
    }
}

/// The recorded event behind `event`, if it is one.
pub(crate) fn recorded(event: &Event) -> Option<&RecordedEvent> {
    let any: &dyn Any = &**event.imp();
    any.downcast_ref::<RecordedEvent>()
}

/// Records `op` from `queue`, which records (or did, a moment ago).
pub(crate) fn submit(queue: &Queue, op: Recordable, wait: &[&Event]) -> Result<Event> {
    let slot = queue.recording_slot();
    let guard = slot.graph.lock();
    let Some(graph) = guard.clone() else {
        // Recording ended since the caller looked: execute.
        drop(guard);
        return queue.submit_op(op, wait);
    };
    let mut state = graph.state.lock();
    add(&graph, &mut state, queue, op, wait)
}

/// After an eager wait list failed with `error`: when it holds an event
/// recorded by a queue that still records, `queue` starts recording into
/// that graph and `op` is recorded; otherwise the error stands.
pub(crate) fn submit_transitively(queue: &Queue, op: Recordable, wait: &[&Event], error: UrError) -> Result<Event> {
    let Some(rec) = wait.iter().find_map(|e| recorded(e)) else { return Err(error) };
    let graph = rec.graph.clone();
    {
        let state = graph.state.lock();
        ensure!(
            state.recording.iter().any(|r| r.key == rec.queue),
            InvalidEventWaitList,
            "the wait list holds the event of {}, whose queue no longer records: a recorded event is only usable \
             while its queue records into its graph",
            state.describe(&graph, rec.node)
        );
    }
    begin(&graph, queue).map_err(|e| e.in_context("transitive recording"))?;
    tracing::debug!(graph = graph.id, "queue records transitively");
    submit(queue, op, wait)
}

/// Executes `op` eagerly after the resolved wait list.
pub(crate) fn execute(queue: &Queue, op: Recordable, resolved: &[Arc<dyn EventImpl>]) -> Result<Event> {
    match op {
        Recordable::Core(op) => queue.execute_op(op, resolved),
        Recordable::HostTask(task) => {
            let events: Vec<Event> = resolved.iter().map(|e| Event::from_imp(e.clone(), queue.context())).collect();
            queue.enqueue_host_task(&events.iter().collect::<Vec<_>>(), move || task())
        }
        Recordable::Subgraph(graph) => {
            let events: Vec<Event> = resolved.iter().map(|e| Event::from_imp(e.clone(), queue.context())).collect();
            graph.run(queue, &events.iter().collect::<Vec<_>>())
        }
        Recordable::Malloc { .. } | Recordable::Free(_) => Err(err!(
            InvalidOperation,
            "async_malloc and async_free are only recorded: the queue does not record into a graph"
        )),
    }
}

/// Adds the node of `op` recorded from `queue`.
fn add(
    graph: &Arc<GraphShared>,
    state: &mut GraphState,
    queue: &Queue,
    op: Recordable,
    wait: &[&Event],
) -> Result<Event> {
    let key = queue.key();
    let Some(qi) = state.recording.iter().position(|r| r.key == key) else {
        return Err(err!(Unknown, "the queue's recording slot names graph #{}, which does not list it", graph.id));
    };
    let mut deps = Vec::with_capacity(wait.len() + 1);
    for (i, e) in wait.iter().enumerate() {
        let Some(rec) = recorded(e) else {
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
    let qrec = &state.recording[qi];
    if matches!(op, Recordable::Core(Op::Wait { barrier: true })) && wait.is_empty() {
        deps.extend_from_slice(&qrec.leaves);
    }
    if qrec.in_order {
        deps.extend(qrec.last);
    } else {
        deps.extend(qrec.barrier);
    }
    let index = state.nodes.len() as u32;
    let kind = match op {
        Recordable::Core(Op::Command(Command::Native(_))) => {
            return Err(err!(
                InvalidOperation,
                "a native command on a queue recording into graph #{}: graphs have no native-command node",
                graph.id
            ));
        }
        Recordable::Core(Op::Graph(_)) => {
            return Err(err!(
                InvalidOperation,
                "an executable graph of UR's capture on a queue recording into graph #{}: record the commands \
                 instead",
                graph.id
            ));
        }
        Recordable::Core(Op::Command(command)) => NodeKind::Memory(command),
        Recordable::Core(Op::Kernel(kernel, origin)) => NodeKind::Kernel(KernelSpec::new(kernel, origin)),
        Recordable::Core(Op::Wait { barrier: true }) => NodeKind::Barrier,
        Recordable::Core(Op::Wait { barrier: false }) => NodeKind::Empty,
        Recordable::HostTask(task) => NodeKind::HostTask(task),
        Recordable::Subgraph(sub) => {
            super::executable::check_subgraph(graph, &sub)?;
            NodeKind::Subgraph(sub)
        }
        Recordable::Malloc { kind, size } => {
            let prune = !graph.props.no_cycle_check;
            let GraphState { pool, nodes, topo, .. } = &mut *state;
            let (alloc, ptr) =
                pool.allocate(&graph.context, kind, size, |free| is_ancestor(nodes, topo, free, &deps, prune))?;
            NodeKind::AsyncMalloc { alloc, ptr, size }
        }
        Recordable::Free(ptr) => {
            let alloc = state.pool.find(ptr)?;
            state.pool.free(alloc, Some(index))?;
            NodeKind::AsyncFree { alloc, ptr }
        }
    };
    let barrier = matches!(kind, NodeKind::Barrier);
    let index = state.commit(kind, deps, Some(key));
    let GraphState { recording, nodes, .. } = &mut *state;
    let qrec = &mut recording[qi];
    let preds = &nodes[index as usize].preds;
    if preds.len() > 16 {
        let preds: std::collections::HashSet<u32> = preds.iter().copied().collect();
        qrec.leaves.retain(|l| !preds.contains(l));
    } else {
        qrec.leaves.retain(|l| !preds.contains(l));
    }
    qrec.leaves.push(index);
    qrec.last = Some(index);
    if barrier {
        qrec.barrier = Some(index);
    }
    Ok(Event::from_imp(Arc::new(RecordedEvent { graph: graph.clone(), node: index, queue: key }), &graph.context))
}

/// The error of an operation a recording queue cannot record: `what` names
/// it. `Ok` when the queue stopped recording meanwhile.
pub(crate) fn refuse_while_recording(queue: &Queue, what: &str) -> Result<()> {
    let Some(graph) = queue.recording_slot().graph() else { return Ok(()) };
    Err(err!(
        InvalidOperation,
        "{what} on a queue recording into graph #{}: nothing executes while it records",
        graph.id
    ))
}

/// The checks of `begin_recording` that do not change anything.
pub(crate) fn check_can_begin(graph: &GraphShared, queue: &Queue) -> Result<()> {
    ensure!(
        queue.context() == &graph.context && queue.device() == graph.device(),
        InvalidQueue,
        "a queue of {} cannot record into graph #{} of {}",
        queue.device(),
        graph.id,
        graph.device()
    );
    if let Some(other) = queue.recording_slot().graph() {
        return Err(err!(
            InvalidOperation,
            "the queue already records into graph #{}; end that recording first",
            other.id
        ));
    }
    ensure!(!queue.is_capturing(), InvalidOperation, "the queue captures a UR graph; end the capture before recording");
    Ok(())
}

/// Starts recording `queue` into `graph`.
pub(crate) fn begin(graph: &Arc<GraphShared>, queue: &Queue) -> Result<()> {
    check_can_begin(graph, queue)?;
    let slot = queue.recording_slot();
    let mut guard = slot.graph.lock();
    if let Some(other) = &*guard {
        return Err(err!(InvalidOperation, "the queue already records into graph #{}", other.id));
    }
    graph.state.lock().recording.push(QueueRecord {
        queue: queue.downgrade(),
        key: queue.key(),
        in_order: !queue.properties().out_of_order,
        last: None,
        barrier: None,
        leaves: Vec::new(),
    });
    *guard = Some(graph.clone());
    slot.active.store(true, Ordering::Release);
    tracing::debug!(graph = graph.id, "queue records");
    Ok(())
}

/// The checks of `end_recording(queue)` that do not change anything.
pub(crate) fn check_can_end(graph: &GraphShared, queue: &Queue) -> Result<()> {
    match queue.recording_slot().graph() {
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
pub(crate) fn end(graph: &GraphShared, queue: &Queue) -> Result<()> {
    let slot = queue.recording_slot();
    let mut guard = slot.graph.lock();
    match &*guard {
        None => Ok(()),
        Some(other) if other.id != graph.id => Err(err!(
            InvalidOperation,
            "end_recording of graph #{} on a queue that records into graph #{}",
            graph.id,
            other.id
        )),
        Some(_) => {
            slot.active.store(false, Ordering::Release);
            *guard = None;
            let key = queue.key();
            graph.state.lock().recording.retain(|r| r.key != key);
            tracing::debug!(graph = graph.id, "queue stops recording");
            Ok(())
        }
    }
}

/// Ends recording on every queue recording into `graph`.
pub(crate) fn end_all(graph: &GraphShared) {
    let queues: Vec<(WeakQueue, usize)> =
        graph.state.lock().recording.iter().map(|r| (r.queue.clone(), r.key)).collect();
    for (weak, key) in queues {
        match weak.upgrade() {
            Some(queue) => {
                let _ = end(graph, &queue);
            }
            None => graph.state.lock().recording.retain(|r| r.key != key),
        }
    }
}

/// The queue methods of the graph extension.
impl Queue {
    /// Whether the queue records into a graph (`ext_oneapi_get_state`). In
    /// multi-threaded code the answer may be stale at once.
    pub fn recording_state(&self) -> QueueState {
        if self.recording_slot().is_active() { QueueState::Recording } else { QueueState::Executing }
    }

    /// The graph the queue records into (`ext_oneapi_get_graph`): a copy of
    /// the application's graph; `InvalidOperation` when it does not record.
    pub fn recording_graph(&self) -> Result<Graph<Modifiable>> {
        let graph = self
            .recording_slot()
            .graph()
            .ok_or_else(|| err!(InvalidOperation, "the queue does not record into a graph"))?;
        let handle =
            graph.handle.upgrade().ok_or_else(|| err!(InvalidOperation, "graph #{} is being dropped", graph.id))?;
        Ok(Graph(Modifiable { handle }))
    }

    /// Runs `task` on a host thread after `wait` (and, on an in-order queue,
    /// after everything before), like [`enqueue_host_task`](Self::enqueue_host_task);
    /// since `task` can run more than once, a recording queue records it as
    /// a host-task node.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use ur_core::*;
    /// use ur_core::graph::*;
    /// # let device = ur_adapter_cpu::default_device();
    /// # let ctx = Context::new(&device)?;
    /// let queue = Queue::new(&ctx, QueueProperties::default())?;
    /// let graph = Graph::from_queue(&queue, GraphProperties::default())?;
    /// let runs = Arc::new(AtomicU32::new(0));
    /// graph.begin_recording(&queue)?;
    /// let counter = runs.clone();
    /// queue.enqueue_host_fn(&[], move || {
    ///     counter.fetch_add(1, Ordering::SeqCst);
    /// })?;
    /// graph.end_recording();
    /// let exec = graph.finalize(FinalizeProperties::default())?;
    /// queue.enqueue_graph(&exec, &[])?;
    /// queue.enqueue_graph(&exec, &[])?.wait()?;
    /// assert_eq!(runs.load(Ordering::SeqCst), 2);
    /// # Ok::<(), UrError>(())
    /// ```
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn enqueue_host_fn(&self, wait: &[&Event], task: impl Fn() + Send + Sync + 'static) -> Result<Event> {
        self.submit_op(Recordable::HostTask(Arc::new(task)), wait)
    }

    /// Records a graph-owned allocation (`async_malloc(queue, ...)`) and
    /// returns its pointer and the node's event. Only while recording
    /// (`InvalidOperation` otherwise); see [`Handler::async_malloc`](super::Handler::async_malloc).
    pub fn async_malloc(&self, kind: UsmKind, size: usize, wait: &[&Event]) -> Result<(UsmPtr, Event)> {
        let event = self.submit_op(Recordable::Malloc { kind, size }, wait)?;
        let ptr = recorded(&event)
            .and_then(|r| match r.graph.state.lock().nodes[r.node as usize].kind {
                NodeKind::AsyncMalloc { ptr, .. } => Some(ptr),
                _ => None,
            })
            .ok_or_else(|| err!(Unknown, "async_malloc recorded no allocation"))?;
        Ok((ptr, event))
    }

    /// Records the release of a graph-owned allocation (`async_free(queue, ...)`).
    /// Only while recording; see [`Handler::async_free`](super::Handler::async_free).
    pub fn async_free(&self, ptr: UsmPtr, wait: &[&Event]) -> Result<Event> {
        self.submit_op(Recordable::Free(ptr), wait)
    }
}

/// Forgets a queue being dropped (`key` is its identity) in the graph it
/// records into.
pub(crate) fn queue_dropped(slot: &RecordingSlot, key: usize) {
    let Some(graph) = slot.graph.lock().take() else { return };
    graph.state.lock().recording.retain(|r| r.key != key);
}

/// `queue::ext_oneapi_graph`: executions of one graph never overlap: each
/// starts after the previous one ended. On an in-order queue the graph runs
/// after what was submitted before and before what is submitted after, but
/// its nodes keep their own order. A recording queue records the graph as a
/// sub-graph node (`InvalidOperation` for a graph with graph-owned
/// allocations); a capturing queue refuses it (`GraphCaptureUnsupported`).
/// `InvalidQueue` for a queue of another context or device.
///
/// The returned event completes when every partition of the graph has;
/// it reports the first failure of a partition (a panicking kernel or
/// host task), and profiling timestamps only for graphs finalized with
/// [`FinalizeProperties::enable_profiling`](super::FinalizeProperties::enable_profiling).
impl EnqueueGraph for Graph<Executable> {
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    fn enqueue_on(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        self.check_queue(queue)?;
        queue.submit_op(Recordable::Subgraph(self.clone()), wait)
    }
}

impl fmt::Debug for QueueRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueRecord").field("in_order", &self.in_order).field("last", &self.last).finish()
    }
}
