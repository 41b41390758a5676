//! The Vulkan adapter's layers, kept one-way, and no import circle among its
//! modules: the error mapping and the process's exit below what a device is
//! (the instance, discovery, the logical device), below the plain objects on
//! the logical device, below the device's shared state (lanes, events, eager
//! batches, submissions), below what runs work through that state, below
//! queues and command buffers, below the context's behaviour, below the
//! platform and the devices' behaviour; inside the shared state (`shared/`),
//! its submodules run one way too (`layer_tests!`'s check inside folders:
//! docs/architecture.md lists their order). The checker is cmdbuf-core's
//! (`core/tests/layering/mod.rs`).

#[path = "../../core/tests/layering/mod.rs"]
mod layering;

use layering::Layering;

/// The layers, bottom first.
const LAYER_NAMES: &[&str] =
    &["driver", "device definition", "objects", "device state", "device work", "execution", "context", "platform"];

/// Each top-level module (or folder) of `adapter-vulkan/src` and its layer.
const LAYERS: &[(&str, usize)] = &[
    // The mapping of Vulkan's codes, and whether the process is exiting
    // (`exit` stops the devices through a trait the shared state
    // implements): nothing of the adapter's.
    ("conv", 0),
    ("exit", 0),
    // The instance, discovery and what a device is (`device`), and the
    // logical device every Vulkan object holds (`gpu`).
    ("device", 1),
    ("gpu", 1),
    // Objects that name only the logical device: command pools and
    // recording, memory and the staging arena, timestamp queries, pipelines
    // and the internal shaders, and the device's info.
    ("cmd", 2),
    ("memory", 2),
    ("profiling", 2),
    ("program", 2),
    ("shaders", 2),
    ("info", 2),
    // `DeviceShared` and its lanes, with the events, eager batches and
    // submissions (`shared/`, whose submodules run one way).
    ("shared", 3),
    // Work run through the shared state: new memory's initial contents,
    // device timestamps, lowering commands; and the interface's event
    // objects over the shared state's event cores.
    ("init", 4),
    ("clock", 4),
    ("lower", 4),
    ("event", 4),
    // Queues and command buffers (a command buffer is enqueued on a queue).
    ("queue", 5),
    ("command_buffer", 5),
    // `ContextImpl`: it makes queues, memory, programs and command buffers.
    ("context", 6),
    // The platform and `DeviceImpl` (it makes contexts).
    ("platform", 7),
];

fn layering() -> Layering {
    // No upward import remains (`known` stays empty).
    Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
}

layering::layer_tests!(every_module_has_a_layer);
