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

#[test]
fn no_module_imports_a_module_of_a_higher_layer() {
    layering().assert_one_way();
}

#[test]
fn the_aspects_import_nothing_above_them() {
    layering().assert_bottom_imports_nothing_above();
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    layering().assert_no_circle();
}

#[test]
fn every_top_level_module_has_a_layer() {
    let mut expected: Vec<String> = LAYERS
        .iter()
        .map(|(m, _)| if *m == "buffer" || *m == "graph" { m.to_string() } else { format!("{m}.rs") })
        .chain(["lib.rs".to_string()])
        .collect();
    expected.sort();
    assert_eq!(layering().top_level(), expected, "runtime/src: lib.rs and the modules of LAYERS");
}
