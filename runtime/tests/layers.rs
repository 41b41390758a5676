//! cmdbuf-runtime's layers, kept one-way, one top-level module per layer:
//! device aspects, buffers (with their accessors), memory pools, graphs
//! (recording itself included: a queue's recording state and the nodes its
//! submissions add), the queue and its events, the operations that join a
//! queue and a graph (`recording`: `Graph::begin_recording`,
//! `Node::from_event`, submitting an executable graph), and the queue
//! group. The checker is cmdbuf-core's (`core/tests/layering/mod.rs`);
//! docs/architecture.md draws the table.

#[path = "../../core/tests/layering/mod.rs"]
mod layering;

use layering::Layering;

/// The layers, bottom first.
const LAYER_NAMES: &[&str] =
    &["device aspects", "buffers", "memory pools", "graphs", "queues", "queue-graph joins", "queue groups"];

/// Each top-level module of `runtime/src` and its layer.
const LAYERS: &[(&str, usize)] =
    &[("aspect", 0), ("buffer", 1), ("pool", 2), ("graph", 3), ("queue", 4), ("recording", 5), ("queue_group", 6)];

fn layering() -> Layering {
    // No upward import remains (`known` stays empty).
    Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
}

layering::layer_tests!(every_module_has_a_layer);
