//! UR's graph capture (`urQueueBeginGraphCaptureExp` and its family): a queue
//! that captures records what is enqueued on it into a [`CapturedGraph`]
//! instead of executing it; [`CapturedGraph::instantiate`] makes an
//! [`ExecutableGraph`](super::ExecutableGraph) that
//! [`Queue::enqueue_graph`] runs any number of times.
//!
//! Capture is built on the queue recording of this module's graphs (the hook
//! in every enqueue path, the dependency rules of in-order and out-of-order
//! queues, recorded events), with UR's rules on top:
//! - a capture belongs to the queue that began it (its *origin*). Another
//!   queue that waits on a captured event joins the capture (a *fork*); the
//!   capture ends only on the origin, and only when every fork was joined
//!   back (the origin waited, directly or not, on each fork's last commands),
//!   else `GraphUnjoinedForks`. Ending it ends the forks' capture too;
//! - what cannot be captured (host waits on a captured event or on the
//!   queue, blocking transfers, maps, `enqueue_host_task`, command-buffer
//!   enqueues) is `GraphCaptureUnsupported` and *invalidates* the capture:
//!   every later enqueue is `GraphCaptureInvalidated`, and so is the end,
//!   which returns no graph;
//! - a wait on an event of another capture still in progress is
//!   `GraphCaptureMergeAttempt`;
//! - a capture begins only into an empty graph (`InvalidArgument`) that no
//!   other queue captures into (`InvalidOperation`); ending a capture on a
//!   queue that does not capture is `CommandListNotCapturing`.
//!
//! Instantiation is the graph's finalize: each device partition becomes a
//! [`CommandBuffer`](crate::CommandBuffer) whose sync points are the captured
//! dependencies, so capture works the same way on every backend and is
//! native wherever command buffers are (CUDA graphs, `cl_khr_command_buffer`,
//! Vulkan command buffers, the CPU adapter's DAG).

use std::path::Path;

use crate::context::Context;
use crate::error::{Result, UrError};
use crate::event::Event;
use crate::queue::Queue;
use crate::{ensure, err};

use super::modifiable::GraphShared;
use super::record::{self, recorded, unjoined_fork};
use super::{Executable, FinalizeProperties, Graph, GraphProperties, Modifiable};

/// A UR capture in progress, as its graph keeps it.
pub(crate) struct CaptureSession {
    /// The identity of the queue that began it.
    pub(crate) origin: usize,
    /// What invalidated it, once something did.
    invalidated: Option<String>,
}

impl CaptureSession {
    /// `GraphCaptureInvalidated` once the capture was invalidated.
    pub(crate) fn check_valid(&self, graph: u64) -> Result<()> {
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
    pub(crate) fn refuse(&mut self, what: &str) -> UrError {
        if let Some(why) = &self.invalidated {
            return err!(GraphCaptureInvalidated, "{what} on a capture already invalidated by {why}");
        }
        self.invalidated = Some(what.to_owned());
        err!(
            GraphCaptureUnsupported,
            "{what} during a graph capture: nothing executes while capturing; the capture is now invalidated"
        )
    }
}

/// The error of an operation a recording queue cannot record: `what` names
/// it. `Ok` when the queue stopped recording meanwhile.
pub(crate) fn refuse_while_recording(queue: &Queue, what: &str) -> Result<()> {
    let Some(graph) = queue.recording_slot().graph() else { return Ok(()) };
    let mut state = graph.state.lock();
    match state.capture.as_mut() {
        Some(session) => Err(session.refuse(what)),
        None => Err(err!(
            InvalidOperation,
            "{what} on a queue recording into graph #{}: nothing executes while it records",
            graph.id
        )),
    }
}

/// `GraphCaptureMergeAttempt` when `wait` holds an event of another graph
/// still recording, and either graph is captured. Called before `graph`'s
/// lock is taken, so that no two graph locks are ever held together.
pub(crate) fn check_merge(graph: &GraphShared, wait: &[&Event]) -> Result<()> {
    for (i, event) in wait.iter().enumerate() {
        let Some(rec) = recorded(event) else { continue };
        if rec.graph.id == graph.id {
            continue;
        }
        let (theirs_active, theirs_captured) = {
            let state = rec.graph.state.lock();
            (!state.recording.is_empty(), state.capture.is_some())
        };
        let ours_captured = graph.state.lock().capture.is_some();
        ensure!(
            !(theirs_active && (theirs_captured || ours_captured)),
            GraphCaptureMergeAttempt,
            "event {i} of the wait list was captured into graph #{}, whose capture is still in progress, while the \
             queue captures into graph #{}: two captures cannot merge",
            rec.graph.id,
            graph.id
        );
    }
    Ok(())
}

/// A graph recorded by UR's graph capture (`ur_exp_graph_handle_t`): made
/// empty by [`CapturedGraph::new`] or by [`Queue::begin_capture`], filled by
/// one capture. Clones share the graph.
///
/// ```
/// use ur_core::*;
/// # let device = ur_adapter_cpu::default_device();
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
#[derive(Clone)]
pub struct CapturedGraph {
    graph: Graph<Modifiable>,
}

impl CapturedGraph {
    /// An empty graph of `context` (`urGraphCreateExp`), to capture into
    /// with [`Queue::begin_capture_into`].
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn new(context: &Context) -> Result<CapturedGraph> {
        Ok(CapturedGraph { graph: Graph::new(context, context.device(), GraphProperties::default())? })
    }

    /// A process-unique identity, increasing with each graph (`urGraphGetIdExp`).
    pub fn id(&self) -> u64 {
        self.graph.id()
    }

    /// The graph's context.
    pub fn context(&self) -> &Context {
        self.graph.context()
    }

    /// Whether both handles are the same graph.
    pub fn same_graph(&self, other: &CapturedGraph) -> bool {
        self.id() == other.id()
    }

    /// Whether nothing was captured into it (`urGraphIsEmptyExp`).
    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    /// How many commands were captured (barriers and event waits included).
    pub fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    /// Whether a capture into it is in progress.
    pub fn is_capturing(&self) -> bool {
        self.graph.shared().state.lock().capture.is_some()
    }

    /// An executable graph of what was captured (`urGraphInstantiateGraphExp`);
    /// the graph stays as it is and may be instantiated again.
    /// `InvalidOperation` while a capture into it is in progress,
    /// `InvalidArgument` for a graph with nothing captured (as UR's
    /// conformance suite asks, `urGraphInstantiateGraphExpTest.InvalidEmptyGraph`).
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn instantiate(&self) -> Result<Graph<Executable>> {
        ensure!(
            !self.is_capturing(),
            InvalidOperation,
            "graph #{} is being captured: end the capture before instantiating it",
            self.id()
        );
        ensure!(!self.is_empty(), InvalidArgument, "graph #{} is empty: nothing to instantiate", self.id());
        self.graph.finalize(FinalizeProperties::default())
    }

    /// The captured commands and their dependencies in Graphviz DOT.
    pub fn to_dot(&self, verbose: bool) -> String {
        self.graph.to_dot(verbose)
    }

    /// Writes [`to_dot`](Self::to_dot) (verbose) to `path`
    /// (`urGraphDumpContentsExp`); `Unknown` when it cannot be written, as UR answers.
    pub fn dump(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.to_dot(true))
            .map_err(|e| err!(Unknown, "cannot write graph #{} to {}: {e}", self.id(), path.display()))
    }
}

impl std::fmt::Debug for CapturedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapturedGraph").field("id", &self.id()).field("nodes", &self.node_count()).finish()
    }
}

/// The queue methods of UR's graph capture.
impl Queue {
    /// Begins capturing into a new, empty graph (`urQueueBeginGraphCaptureExp`):
    /// until [`end_capture`](Self::end_capture), what is enqueued on the
    /// queue is recorded, not executed, and returns events that stand for
    /// the captured commands (usable in the wait lists of the capture only).
    /// `InvalidOperation` when the queue already captures or records.
    pub fn begin_capture(&self) -> Result<()> {
        self.begin_capture_into(&CapturedGraph::new(self.context())?)
    }

    /// Begins capturing into `graph` (`urQueueBeginCaptureIntoGraphExp`),
    /// which must be empty (`InvalidArgument`) and captured by no other
    /// queue (`InvalidOperation`); `InvalidQueue` for a graph of another
    /// context; `InvalidOperation` when the queue already captures or records.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = graph.id()))]
    pub fn begin_capture_into(&self, graph: &CapturedGraph) -> Result<()> {
        let shared = graph.graph.shared();
        record::check_can_begin(shared, self)?;
        {
            let mut state = shared.state.lock();
            ensure!(
                state.capture.is_none() && state.recording.is_empty(),
                InvalidOperation,
                "graph #{} is being captured by another queue",
                shared.id
            );
            ensure!(
                state.nodes.is_empty(),
                InvalidArgument,
                "graph #{} holds {} captured commands: a capture begins only into an empty graph",
                shared.id,
                state.nodes.len()
            );
            state.capture = Some(CaptureSession { origin: self.key(), invalidated: None });
        }
        if let Err(e) = record::begin(shared, self) {
            shared.state.lock().capture = None;
            return Err(e);
        }
        *self.recording_slot().capture_owner.lock() = Some(graph.graph.clone());
        Ok(())
    }

    /// Ends the capture begun on this queue and returns its graph
    /// (`urQueueEndGraphCaptureExp`), the one given to
    /// [`begin_capture_into`](Self::begin_capture_into) if that began it.
    /// Queues that joined the capture stop capturing too.
    ///
    /// `CommandListNotCapturing` when the queue does not capture;
    /// `InvalidOperation` on a queue that joined a capture begun elsewhere;
    /// `GraphCaptureInvalidated` (the capture ends, without a graph) after an
    /// operation invalidated it; `GraphUnjoinedForks` (the capture ends,
    /// without a graph) when a queue that joined was not joined back.
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn end_capture(&self) -> Result<CapturedGraph> {
        let slot = self.recording_slot();
        let graph = slot.graph().ok_or_else(|| err!(CommandListNotCapturing, "the queue does not capture"))?;
        let outcome = {
            let mut state = graph.state.lock();
            let Some(session) = &state.capture else {
                return Err(err!(
                    CommandListNotCapturing,
                    "the queue records into graph #{} (a SYCL-style recording, not a capture)",
                    graph.id
                ));
            };
            ensure!(
                session.origin == self.key(),
                InvalidOperation,
                "the capture into graph #{} began on another queue, which this one joined by waiting on a \
                 captured event: end it on the queue that began it",
                graph.id
            );
            let session = state.capture.take().expect("checked above");
            session.check_valid(graph.id).and_then(|()| match unjoined_fork(&state, session.origin) {
                None => Ok(()),
                Some(node) => Err(err!(
                    GraphUnjoinedForks,
                    "node {node} of graph #{} was captured on a queue that joined the capture and was never \
                     joined back: make the capturing queue wait on that queue's last event",
                    graph.id
                )),
            })
        };
        record::end_all(&graph);
        let owner = slot.capture_owner.lock().take();
        outcome?;
        let graph = owner.ok_or_else(|| err!(Unknown, "the capturing queue does not hold its graph"))?;
        Ok(CapturedGraph { graph })
    }

    /// Whether the queue captures (`urQueueIsGraphCaptureEnabledExp`), having
    /// begun a capture or joined one.
    pub fn is_capturing(&self) -> bool {
        self.recording_slot().is_active()
            && self.recording_slot().graph().is_some_and(|g| g.state.lock().capture.is_some())
    }

    /// The graph the queue captures into (`urQueueGetGraphExp`);
    /// `InvalidOperation` when it does not capture.
    pub fn capture_graph(&self) -> Result<CapturedGraph> {
        ensure!(self.is_capturing(), InvalidOperation, "the queue does not capture");
        let graph = self.recording_graph()?;
        Ok(CapturedGraph { graph })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_invalidates_once() {
        let mut s = CaptureSession { origin: 1, invalidated: None };
        assert!(s.check_valid(3).is_ok());
        assert!(matches!(s.refuse("a wait"), UrError::GraphCaptureUnsupported(_)));
        assert!(matches!(s.check_valid(3), Err(UrError::GraphCaptureInvalidated(_))));
        assert!(matches!(s.refuse("a finish"), UrError::GraphCaptureInvalidated(_)));
    }
}
