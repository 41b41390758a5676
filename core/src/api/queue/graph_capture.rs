//! The queue methods of UR's graph capture: their contracts are here, what
//! they do is in [`crate::capture`], below `queue`, which takes the queue's
//! state and names no `Queue`.

use super::Queue;
use crate::capture::{self, CapturedGraph};
use crate::error::Result;

impl Queue {
    /// Begins capturing into a new, empty graph (`urQueueBeginGraphCaptureExp`):
    /// until [`end_capture`](Self::end_capture), what is enqueued on the
    /// queue is captured, not executed, and returns events that stand for
    /// the captured commands (usable in the wait lists of the capture only).
    /// `InvalidOperation` when the queue already captures.
    pub fn begin_capture(&self) -> Result<()> {
        self.begin_capture_into(&CapturedGraph::new(self.context())?)
    }

    /// Begins capturing into `graph` (`urQueueBeginCaptureIntoGraphExp`),
    /// which must be empty (`InvalidArgument`) and captured by no other
    /// queue (`InvalidOperation`); `InvalidQueue` for a graph of another
    /// context; `InvalidOperation` when the queue already captures.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = graph.id()))]
    pub fn begin_capture_into(&self, graph: &CapturedGraph) -> Result<()> {
        capture::begin(&self.inner, graph)
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
        capture::end(&self.inner)
    }

    /// The error of `what`, an operation of a layer above cmdbuf-core that a
    /// capture cannot hold (a host task of the SYCL runtime, say):
    /// `GraphCaptureUnsupported`, which invalidates the capture, or
    /// `GraphCaptureInvalidated` when it already was; `Ok` when the queue
    /// does not capture.
    pub fn refuse_capture(&self, what: &str) -> Result<()> {
        self.check_not_capturing(what)
    }

    /// Whether the queue captures (`urQueueIsGraphCaptureEnabledExp`), having
    /// begun a capture or joined one.
    pub fn is_capturing(&self) -> bool {
        capture::is_capturing(&self.inner)
    }

    /// The graph the queue captures into (`urQueueGetGraphExp`);
    /// `InvalidOperation` when it does not capture.
    pub fn capture_graph(&self) -> Result<CapturedGraph> {
        capture::graph_of(&self.inner)
    }
}
