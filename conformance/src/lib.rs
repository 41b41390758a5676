//! # ur-conformance
//!
//! One suite, run against every present adapter and device: the scenario
//! groups of Unified Runtime's `exp_command_buffer` conformance tests, what
//! UR leaves out (append after finalize, out-of-bounds memory commands,
//! foreign sync points), a property test of random DAGs against a host
//! model, a multi-threaded stress test and a 10,000-command buffer.
//!
//! Every device whose command buffers are native is also tested through
//! ur-core's software command buffer, as an `emulated` view, so both paths
//! run on every run (set `UR_CONFORMANCE_EMULATED=none` to leave the views out).
//!
//! Run it with `cargo test -p ur-conformance` (one libtest trial per case
//! and device, named like `[cpu:0] update::kernel_args`) or with the
//! `ur-conformance` binary, which prints a matrix or JSON lines.

pub mod cases;
pub mod harness;
pub mod kernels;

pub use harness::{Case, CaseError, CaseResult, Env, Outcome, Requires, run_case};

use std::cell::Cell;

use ur::{CommandBufferSupport, Device, Loader};

/// Keeps panics of CPU-adapter workers and host tasks off stderr: they are
/// caught and reported through the failing command's event, which is what
/// the cases that provoke them check. So are panics inside
/// [`expecting_panics`]. Other panics print as usual.
pub fn quiet_adapter_worker_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let on_worker = std::thread::current().name().is_some_and(|n| n.starts_with("ur-cpu-") || n == "ur-host-task");
        if !on_worker && !PANICS_EXPECTED.with(Cell::get) {
            default(info);
        }
    }));
}

thread_local! {
    static PANICS_EXPECTED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, which provokes a panic on this thread that ur-core catches and
/// reports as an error (a panicking native-command callback run at its
/// enqueue), with the panic kept off stderr: the case checks the error.
pub fn expecting_panics<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            PANICS_EXPECTED.with(|e| e.set(self.0));
        }
    }
    let _reset = Reset(PANICS_EXPECTED.with(|e| e.replace(true)));
    f()
}

/// The variable that controls emulated views: `all` (the default) or `none`.
pub const EMULATED_ENV: &str = "UR_CONFORMANCE_EMULATED";

/// The devices the suite runs on: every selected device and, unless
/// `UR_CONFORMANCE_EMULATED=none`, the emulated view of each device whose
/// command buffers are native.
pub fn devices_under_test(loader: &Loader) -> Result<Vec<Device>, String> {
    let emulated = match std::env::var(EMULATED_ENV).as_deref() {
        Err(_) | Ok("all") | Ok("") => true,
        Ok("none") => false,
        Ok(other) => {
            return Err(format!("{EMULATED_ENV}={other:?}: expected `all` or `none`"));
        }
    };
    let mut devices = Vec::new();
    for device in loader.devices() {
        let native = device.info().command_buffer.support == CommandBufferSupport::Native;
        devices.push(device.clone());
        if emulated && native {
            devices.push(device.emulated());
        }
    }
    Ok(devices)
}
