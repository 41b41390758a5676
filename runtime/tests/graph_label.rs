//! A graph's label is shown in the tracing spans of its creation, finalize
//! and submissions, and its executable graphs report it.

use std::io::Write;
use std::sync::Arc;

use cmdbuf_core::{Context, QueueProperties, UrError, UsmAllocation, UsmKind};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, NodeProperties};
use parking_lot::Mutex;
use tracing_subscriber::fmt::format::FmtSpan;

/// The formatted trace, shared with the test.
#[derive(Clone, Default)]
struct Trace(Arc<Mutex<Vec<u8>>>);

impl Write for Trace {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn graph_label_in_spans() -> Result<(), UrError> {
    let trace = Trace::default();
    let writer = trace.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_span_events(FmtSpan::NEW)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let context = Context::new(&cmdbuf_cpu::default_device())?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        let data = UsmAllocation::new(&context, UsmKind::Device, 16)?;
        let graph = Graph::new(&context, context.device(), GraphProperties::default().with_label("my-graph"))?;
        assert_eq!(graph.label(), Some("my-graph"));
        graph.add(|h| h.fill(data.ptr(), &[7], 16), NodeProperties::default())?;
        let exec = graph.finalize(FinalizeProperties::default())?;
        assert_eq!(exec.label(), Some("my-graph"));
        queue.enqueue_graph(&exec, &[])?.wait()?;
        let unlabelled = Graph::new(&context, context.device(), GraphProperties::default())?;
        assert_eq!(unlabelled.finalize(FinalizeProperties::default())?.label(), None);
        Ok::<(), UrError>(())
    })?;
    let text = String::from_utf8(trace.0.lock().clone()).expect("the trace is text");
    for span in ["new{", "finalize{", "submit_on{"] {
        assert!(
            text.lines().any(|l| l.contains(span) && l.contains("label=\"my-graph\"")),
            "no `{span}` span labelled in:\n{text}"
        );
    }
    assert_eq!(text.matches("label=").count(), text.matches("label=\"my-graph\"").count(), "{text}");
    Ok(())
}
