//! `cmdbuf-ls` lists every adapter (present with its platforms and devices,
//! absent with the reason), each device's command-buffer support and update
//! capabilities, as text or `--json`; an invalid setting or an empty
//! selection exits 2.

use std::process::{Command, Output};

use serde_json::Value;

fn cmdbuf_ls(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cmdbuf-ls"));
    command.args(args).env_remove("UR_DEVICE_SELECTOR").env_remove("ONEAPI_DEVICE_SELECTOR");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("cmdbuf-ls starts")
}

fn adapter<'a>(listing: &'a Value, backend: &str) -> &'a Value {
    listing["adapters"].as_array().unwrap().iter().find(|a| a["backend"] == backend).expect(backend)
}

#[test]
fn json_lists_every_adapter_with_devices_or_reasons() {
    let out = cmdbuf_ls(&["--json"], &[("UR_DEVICE_SELECTOR", "cpu:0")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listing: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(listing["selector"], "cpu:0");
    let adapters = listing["adapters"].as_array().unwrap();
    assert_eq!(adapters.len(), 4, "cpu, opencl, vulkan and cuda, present or absent");
    let cpu = adapter(&listing, "cpu");
    assert_eq!(cpu["present"], true);
    let device = &cpu["platforms"][0]["devices"][0];
    assert_eq!(device["id"], "cpu:0");
    assert_eq!(device["type"], "cpu");
    assert_eq!(device["command_buffer"]["support"], "native");
    let update: Vec<&str> =
        device["command_buffer"]["update"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for capability in ["kernel_arguments", "global_work_size", "kernel_handle", "events"] {
        assert!(update.contains(&capability), "{capability} missing from {update:?}");
    }
    for backend in ["opencl", "vulkan", "cuda"] {
        let absent = adapter(&listing, backend);
        assert_eq!(absent["present"], false, "{backend}");
        let reason = absent["reason"].as_str().unwrap();
        // CUDA may be missing before the selector is even consulted.
        assert!(reason.contains("excluded by the device selector `cpu:0`") || backend == "cuda", "{backend}: {reason}");
    }
}

#[test]
fn text_shows_devices_capabilities_and_absent_reasons() {
    let out = cmdbuf_ls(&["--verbose"], &[("UR_DEVICE_SELECTOR", "cpu:0")]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "cpu     present",
        "[cpu:0]",
        "command buffers: native",
        "updates: kernel_arguments",
        "compute units",
        "opencl  absent: excluded by the device selector",
    ] {
        assert!(text.contains(part), "{part:?} missing from\n{text}");
    }
}

#[test]
fn nothing_selected_or_an_invalid_setting_exits_2_with_the_reason() {
    let out = cmdbuf_ls(&[], &[("UR_DEVICE_SELECTOR", "cuda:99")]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cpu     absent: excluded by the device selector `cuda:99`"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no device is selected"));

    // `--all` ignores the selector.
    let out = cmdbuf_ls(&["--all"], &[("UR_DEVICE_SELECTOR", "cuda:99")]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("[cpu:0]"));

    let out = cmdbuf_ls(&[], &[("UR_CPU_THREADS", "0")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("UR_CPU_THREADS=\"0\""));
}
