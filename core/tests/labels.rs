//! Labels of command buffers and programs appear in the tracing spans of
//! their operations; unlabelled objects' spans carry no label.

use std::sync::Arc;

use cmdbuf_core::{
    AppendOptions, ArgKind, CommandBuffer, CommandBufferDesc, Context, Kernel, KernelLaunchUpdate, KernelSignature,
    NativeKernel, Program, ProgramBundle, ProgramSource, Queue, QueueProperties, UsmAllocation, UsmKind, WorkGroup,
};
use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::subscriber::Subscriber;
use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt};

/// The (span name, label) of every new span that has a label.
#[derive(Clone, Default)]
struct Labels(Arc<Mutex<Vec<(String, String)>>>);

impl<S: Subscriber> Layer<S> for Labels {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: LayerContext<'_, S>) {
        struct Find(Option<String>);
        impl Visit for Find {
            fn record_str(&mut self, field: &Field, value: &str) {
                if field.name() == "label" {
                    self.0 = Some(value.to_string());
                }
            }
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                if field.name() == "label" {
                    self.0 = Some(format!("{value:?}"));
                }
            }
        }
        let mut find = Find(None);
        attrs.record(&mut find);
        if let Some(label) = find.0 {
            self.0.lock().push((attrs.metadata().name().to_string(), label));
        }
    }
}

impl Labels {
    fn spans_labelled(&self, label: &str) -> Vec<String> {
        self.0.lock().iter().filter(|(_, l)| l == label).map(|(name, _)| name.clone()).collect()
    }
}

fn nothing(_: &WorkGroup<'_>) {}

#[test]
fn labels_show_in_spans() {
    let labels = Labels::default();
    let subscriber = tracing_subscriber::registry().with(labels.clone());
    tracing::subscriber::with_default(subscriber, || {
        let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
        let queue = Queue::new(&context, QueueProperties::default()).unwrap();
        let bundle = ProgramBundle::new()
            .kernel(KernelSignature::new("nothing", [ArgKind::Global]))
            .source(ProgramSource::Native(vec![NativeKernel::new("nothing", nothing)]))
            .with_label("my-program");
        let program = Program::new(&context, &bundle).unwrap();
        assert_eq!(program.label(), Some("my-program"));
        Kernel::new(&program, "nothing").unwrap();

        let desc = CommandBufferDesc { updatable: true, ..CommandBufferDesc::default() }.with_label("my-buffer");
        let cb = CommandBuffer::new(&context, context.device(), desc).unwrap();
        assert_eq!(cb.label(), Some("my-buffer"));
        let usm = UsmAllocation::new(&context, UsmKind::Device, 64).unwrap();
        cb.append_usm_fill(usm.ptr(), &[1], 64, AppendOptions::new()).unwrap();
        cb.finalize().unwrap();
        queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap();
        let updates: &[KernelLaunchUpdate<'_>] = &[];
        // SAFETY: no update is applied: an empty list is an error.
        let update = unsafe { cb.update_kernel_launches(updates) };
        assert!(update.is_err());

        let plain = CommandBuffer::new(&context, context.device(), CommandBufferDesc::default()).unwrap();
        plain.finalize().unwrap();
    });
    let mut program_spans = labels.spans_labelled("my-program");
    program_spans.sort();
    assert_eq!(program_spans, ["new", "with_options"], "program spans: {:?}", labels.0.lock());
    let buffer_spans = labels.spans_labelled("my-buffer");
    for op in ["new", "append", "finalize", "enqueue_command_buffer", "update_kernel_launches"] {
        assert!(buffer_spans.iter().any(|s| s == op), "no `{op}` span labelled: {buffer_spans:?}");
    }
    // Only the labelled objects' spans have labels.
    assert!(labels.0.lock().iter().all(|(_, l)| l == "my-program" || l == "my-buffer"));
}
