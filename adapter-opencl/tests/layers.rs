//! The OpenCL adapter's layers, kept one-way, and no import circle among its
//! modules: the driver's codes, extension entry points and what the device
//! reports below the device's definition (with a context's state), below
//! the plain objects, below execution (queues, command buffers), below
//! adoption and the context's behaviour, below the platform and the
//! device's behaviour. The checker is cmdbuf-core's
//! (`core/tests/layering/mod.rs`); docs/architecture.md says why a device's
//! and a context's definitions (`device.rs`) sit apart from their behaviour.

#[path = "../../core/tests/layering/mod.rs"]
mod layering;

use layering::Layering;

/// The layers, bottom first.
const LAYER_NAMES: &[&str] = &["driver", "device definition", "objects", "execution", "context", "platform"];

/// Each top-level module of `adapter-opencl/src` and its layer.
const LAYERS: &[(&str, usize)] = &[
    // Error codes, the extension entry points and the raw event handle,
    // extension versions, what a device reports and how it builds SPIR-V,
    // sub-devices, the device clock, the partition of a command buffer into
    // steps, PoCL's one-launch chain, the user-event gate, the queues'
    // deferred flushes and the replayer's thread: nothing of the adapter's
    // objects.
    ("conv", 0),
    ("ffi", 0),
    ("flush", 0),
    ("gate", 0),
    ("version", 0),
    ("info", 0),
    ("spir", 0),
    ("partition", 0),
    ("clock", 0),
    ("steps", 0),
    ("one_launch", 0),
    ("replayer", 0),
    // `DeviceShared`, the decisions made once per device, `ClDevice`, and
    // `Shared` (a context's state, with its helper kernels' definition and
    // internal queues): what every object names.
    ("device", 1),
    // Events, programs, launching a kernel and the arguments a kernel holds,
    // the helper kernels' launches, memory and native command-buffer
    // segments: objects that name only the device and a context's state.
    ("event", 2),
    ("program", 2),
    ("launch", 2),
    ("kernel_args", 2),
    ("helpers", 2),
    ("memory", 2),
    ("native_segment", 2),
    // Lowering commands, mutable dispatch, queues, pre-planned replay and
    // command buffers.
    ("exec", 3),
    ("mutable", 3),
    ("queue", 3),
    ("planned", 3),
    ("command_buffer", 3),
    // Adopting native queues, buffers, events, programs and kernels, and
    // `ContextImpl`, which makes queues, memory, programs and command
    // buffers (and `ClContext`'s constructors, adoption included).
    ("adopt", 4),
    ("context", 4),
    // The platform and `DeviceImpl` (it makes contexts and sub-devices).
    ("platform", 5),
];

fn layering() -> Layering {
    // No upward import remains (`known` stays empty).
    Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
}

// `spir/` holds the sources `spir.rs` includes, no module.
layering::layer_tests!(every_module_has_a_layer, except "spir");
