//! cmdbuf-conformance's layers, kept one-way: the watchdog and the suite's
//! kernels below the harness (cases, outcomes, the `check!` macros), below
//! the cases, below the command line (`main.rs`, a crate of its own that
//! names the library by its name). Inside `cases/` the UR-level and the
//! runtime-level case modules name each other one way too: what cases over
//! several devices share is `cases/runtime/cross.rs`, below the buffer,
//! multi-device, graph and collective cases that use it. The checker is
//! cmdbuf-core's (`core/tests/layering/mod.rs`); docs/architecture.md says
//! the same.

#[path = "../../core/tests/layering/mod.rs"]
mod layering;

use layering::Layering;

/// The layers, bottom first.
const LAYER_NAMES: &[&str] = &["watchdog and kernels", "harness", "cases", "command line"];

/// Each top-level module of `conformance/src` and its layer.
const LAYERS: &[(&str, usize)] = &[
    // Ending a process whose case hangs; the suite's kernel sources and
    // binaries, per backend.
    ("watchdog", 0),
    ("kernels", 0),
    // A case, its requirements and outcome, running one on a device, and
    // the macros the cases check with.
    ("harness", 1),
    // The cases, one folder per crate they go through (`ur/`, `runtime/`).
    ("cases", 2),
    // The binary: sections, formats and the exit code.
    ("main", 3),
];

fn layering() -> Layering {
    // No upward import remains (`known` stays empty), and no circle inside
    // a folder (`circles_left` stays empty).
    Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
}

layering::layer_tests!(every_module_has_a_layer);
