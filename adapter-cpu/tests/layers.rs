//! The CPU adapter's layers, kept one-way, and no import circle among its
//! modules: the worker threads below the machine's description and the
//! plain objects, below execution (queues and command buffers), below the
//! device's definition, below the context, below the device's behaviour
//! and the platform. The checker is cmdbuf-core's
//! (`core/tests/layering/mod.rs`); docs/architecture.md says why the
//! device's definition (`units.rs`) sits apart from its behaviour.

#[path = "../../core/tests/layering/mod.rs"]
mod layering;

use layering::Layering;

/// The layers, bottom first.
const LAYER_NAMES: &[&str] = &["workers", "machine and objects", "execution", "device definition", "context", "device"];

/// Each top-level module of `adapter-cpu/src` and its layer.
const LAYERS: &[(&str, usize)] = &[
    // The worker pool and where idle workers park.
    ("sleep", 0),
    ("pool", 0),
    // The machine's topology and what the host reports; events, memory
    // and programs, which name only the workers.
    ("topology", 1),
    ("host", 1),
    ("event", 1),
    ("memory", 1),
    ("program", 1),
    // Running commands, queues and command buffers.
    ("exec", 2),
    ("queue", 2),
    ("command_buffer", 2),
    // `CpuDevice`: the compute units and their workers, which the
    // contexts reach for a sub-device's queues.
    ("units", 3),
    ("context", 4),
    // `DeviceImpl` (it makes contexts) and the platform.
    ("device", 5),
];

fn layering() -> Layering {
    // No upward import remains (`known` stays empty).
    Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
}

layering::layer_tests!(every_module_has_a_layer);
