//! The operations that join a [`Queue`] and a graph: making a graph for a
//! queue, recording a queue into a graph and ending that, the node of a
//! recorded event, and submitting an executable graph on a queue.
//!
//! The graph layer (`graph/`, recording itself included, in
//! `graph/record.rs`) sits below the queue and does not name it; the queue
//! records through that layer. What takes both a graph and a queue is here,
//! above both, as `impl` blocks of the graph's types, so every method keeps
//! its path (`Graph::begin_recording`, `Node::from_event`, ...).

use cmdbuf_core::{Result, err};

use crate::graph::record::{self, Recordable, WaitEvent};
use crate::graph::{Executable, Graph, GraphProperties, GraphProperty, Modifiable, Node, RecordingProperties};
use crate::queue::{Event, Queue, SubmitGraph};

impl Graph<Modifiable> {
    /// A graph for the queue's context and device (`command_graph(queue, properties)`).
    pub fn from_queue(queue: &Queue, props: GraphProperties) -> Result<Graph<Modifiable>> {
        Graph::new(queue.context(), queue.device(), props)
    }

    /// Starts recording `queue`'s submissions into this graph
    /// (`begin_recording`). `InvalidOperation` when the queue already records
    /// (into any graph), `InvalidQueue` for a queue of another context or device.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn begin_recording(&self, queue: &Queue) -> Result<()> {
        record::begin(self.shared(), queue.inner(), RecordingProperties::default())
    }

    /// `begin_recording(queue, propList)`: as [`begin_recording`](Self::begin_recording),
    /// with a property list checked by [`RecordingProperties::from_list`]
    /// (`InvalidValue` for a property that does not belong there, and then
    /// the queue does not record).
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn begin_recording_with(&self, queue: &Queue, props: &[GraphProperty]) -> Result<()> {
        record::begin(self.shared(), queue.inner(), RecordingProperties::from_list(props)?)
    }

    /// Starts recording several queues; checks them all first.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn begin_recording_all(&self, queues: &[&Queue]) -> Result<()> {
        self.begin_recording_all_with(queues, &[])
    }

    /// Starts recording several queues with one property list; checks the
    /// list and the queues first.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn begin_recording_all_with(&self, queues: &[&Queue], props: &[GraphProperty]) -> Result<()> {
        let props = RecordingProperties::from_list(props)?;
        for q in queues {
            record::check_can_begin(self.shared(), q.inner())?;
        }
        queues.iter().try_for_each(|q| record::begin(self.shared(), q.inner(), props))
    }

    /// Ends recording on `queue` (`end_recording(queue)`): nothing happens
    /// when it is not recording; `InvalidOperation` when it records into
    /// another graph.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn end_recording_queue(&self, queue: &Queue) -> Result<()> {
        record::end(self.shared(), queue.inner())
    }

    /// Ends recording on several queues; checks them all first.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn end_recording_queues(&self, queues: &[&Queue]) -> Result<()> {
        for q in queues {
            record::check_can_end(self.shared(), q.inner())?;
        }
        queues.iter().try_for_each(|q| record::end(self.shared(), q.inner()))
    }
}

impl Node {
    /// The node a recording queue created when it returned `event`
    /// (`node::get_node_from_event`); `InvalidEvent` for any other event.
    pub fn from_event(event: &Event) -> Result<Node> {
        let recorded = event
            .recorded()
            .ok_or_else(|| err!(InvalidEvent, "the event was not returned by a queue recording into a graph"))?;
        Ok(recorded.graph.node(recorded.node))
    }
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
/// [`FinalizeProperties::enable_profiling`](crate::graph::FinalizeProperties::enable_profiling).
impl SubmitGraph for Graph<Executable> {
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id(), label = self.label()))]
    fn submit_on(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        self.check_queue(queue.core())?;
        queue.submit(wait, || Ok(Recordable::Subgraph(self.clone())), |q, w| self.enqueue_checked(q, w))
    }
}
