//! cmdbuf-runtime's layers, kept one-way: device aspects and buffers (with
//! their accessors) below the recording queue, graphs and memory pools,
//! below the queue group. The queue, graphs and pools form one layer: a
//! queue records into a graph and a graph replays on queues, with pool
//! allocations on both sides. The checker is cmdbuf-core's
//! (`core/tests/layering/mod.rs`); docs/architecture.md draws the table.

#[path = "../../core/tests/layering/mod.rs"]
mod layering;

use layering::Layering;

/// The layers, bottom first.
const LAYER_NAMES: &[&str] = &["aspects and buffers", "queue and graphs", "queue groups"];

/// Each top-level module of `runtime/src` and its layer.
const LAYERS: &[(&str, usize)] =
    &[("aspect", 0), ("buffer", 0), ("graph", 1), ("pool", 1), ("queue", 1), ("queue_group", 2)];

fn layering() -> Layering {
    // No upward import remains (`known` stays empty).
    Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
}

#[test]
fn no_module_imports_a_module_of_a_higher_layer() {
    layering().assert_one_way();
}

#[test]
fn aspects_and_buffers_import_no_queue_or_graph() {
    layering().assert_bottom_imports_nothing_above();
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
