//! The CUDA adapter's layers, kept one-way, and no import circle among its
//! modules: the driver, the libraries opened at run time and the launcher
//! thread below the device's definition, below the plain objects, below
//! execution (queues, command buffers, collectives), below the context's
//! behaviour, below the platform and the device's behaviour. The checker is cmdbuf-core's
//! (`core/tests/layering/mod.rs`); docs/architecture.md says why a device's
//! and a context's definitions (`device/`) sit apart from their behaviour.

#[path = "../../core/tests/layering/mod.rs"]
mod layering;

use layering::Layering;

/// The layers, bottom first.
const LAYER_NAMES: &[&str] = &["driver", "device definition", "objects", "execution", "context", "platform"];

/// Each top-level module (or folder) of `adapter-cuda/src` and its layer.
const LAYERS: &[(&str, usize)] = &[
    // The CUDA driver, NVRTC and NCCL opened at run time, the mapping of
    // their codes, the lanes of wide graphs, a launch's parameters as the
    // driver takes them, and the launcher thread that makes launches:
    // nothing of the adapter's objects.
    ("conv", 0),
    ("driver", 0),
    ("nvrtc", 0),
    ("nccl_lib", 0),
    ("lanes", 0),
    ("params", 0),
    ("launcher", 0),
    // `DeviceShared`, what a device is and can do, peer access, and
    // `CudaContext` (a context's state is its device's): what every object
    // names.
    ("device", 1),
    // Events, memory, programs, work held on the host, lowering plans and
    // executable graphs: objects that name only the device.
    ("hold", 2),
    ("event", 2),
    ("memory", 2),
    ("lower", 2),
    ("program", 2),
    ("graph", 2),
    // Issuing commands, queues (with the user events' completion, which
    // releases held work), NCCL collectives and command buffers.
    ("exec", 3),
    ("queue", 3),
    ("nccl", 3),
    ("command_buffer", 3),
    // `ContextImpl`: it makes queues, memory, programs and command buffers.
    ("context", 4),
    // The platform and `DeviceImpl` (it makes contexts and NCCL groups).
    ("platform", 5),
];

fn layering() -> Layering {
    // No upward import remains (`known` stays empty).
    Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
}

layering::layer_tests!(every_module_has_a_layer);
