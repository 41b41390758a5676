//! # cmdbuf-conformance
//!
//! One suite, run against every present adapter and device: the scenario
//! groups of Unified Runtime's `exp_command_buffer` conformance tests, what
//! UR leaves out (append after finalize, out-of-bounds memory commands,
//! foreign sync points), a property test of random DAGs against a host
//! model, a multi-threaded stress test and a 10,000-command buffer.
//!
//! Every device whose command buffers are native is also tested through
//! cmdbuf-core's software command buffer, as an `emulated` view, so both paths
//! run on every run (set `UR_CONFORMANCE_EMULATED=none` to leave the views out).
//!
//! Run it with `cargo test -p cmdbuf-conformance` (one libtest trial per case
//! and device, named like `[cpu:0] update::kernel_args`) or with the
//! `cmdbuf-conformance` binary, which prints a matrix or JSON lines.

pub mod cases;
pub mod harness;
pub mod kernels;
pub mod watchdog;

pub use harness::{
    Case, CaseError, CaseResult, Env, Outcome, Requires, expecting_panics, quiet_adapter_worker_panics, run_case,
};

use cmdbuf::{CommandBufferSupport, Device, Loader};

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

/// The variable CI sets to make missing devices fail instead of skipping:
/// a comma-separated list of items, each a backend name (`opencl`: at least
/// one device of that backend) or `backend@text` (a device of that backend
/// on a platform whose name contains `text`, ignoring case:
/// `opencl@Intel` asks for Intel's OpenCL runtime beside PoCL). Tests that
/// only know backend names ignore the second form.
pub const REQUIRE_DEVICES_ENV: &str = "UR_RS_REQUIRE_DEVICES";

/// What `value` (of [`REQUIRE_DEVICES_ENV`]) asks for that `loader` lacks
/// among its selected devices: one message per unmet item. Items of
/// backends the device selector cannot select are not checked; an unknown
/// backend name is unmet.
pub fn unmet_device_requirements(loader: &Loader, value: &str) -> Vec<String> {
    let mut unmet = Vec::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, platform) = match item.split_once('@') {
            Some((name, text)) => (name.trim(), Some(text.trim().to_lowercase())),
            None => (item, None),
        };
        let Some(backend) = cmdbuf::Backend::ALL.into_iter().find(|b| b.name() == name) else {
            unmet.push(format!("{REQUIRE_DEVICES_ENV} item `{item}`: no backend is named `{name}`"));
            continue;
        };
        if !loader.selector().may_select_backend(backend) {
            continue;
        }
        let selected = loader.devices();
        let found = loader.platforms().iter().any(|p| {
            p.backend() == backend
                && platform.as_ref().is_none_or(|text| p.name().to_lowercase().contains(text.as_str()))
                && p.devices().iter().any(|d| selected.contains(d))
        });
        if !found {
            let platforms: Vec<String> = loader
                .platforms()
                .iter()
                .filter(|p| p.backend() == backend)
                .map(|p| format!("`{}`", p.name()))
                .collect();
            let absent = loader.absent().iter().find(|a| a.backend == backend).map(|a| a.reason.to_string());
            unmet.push(format!(
                "{REQUIRE_DEVICES_ENV} asks for `{item}`, but no selected device matches (platforms of {name}: {}{})",
                if platforms.is_empty() { "none".to_string() } else { platforms.join(", ") },
                absent.map(|r| format!("; {r}")).unwrap_or_default()
            ));
        }
    }
    unmet
}
