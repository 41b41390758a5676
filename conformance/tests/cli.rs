//! The `cmdbuf-conformance` binary's command line: a `--filter` that selects no
//! case is an error listing the groups; progress lines per device and group
//! go to stderr with `--progress`, never with `--quiet`, and not by default
//! when stderr is not a terminal (a pipe here).

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cmdbuf-conformance"))
        .args(args)
        .env("UR_DEVICE_SELECTOR", "cpu:0")
        .env("UR_CONFORMANCE_EMULATED", "none")
        .env_remove("UR_RS_REQUIRE_DEVICES")
        .output()
        .expect("cmdbuf-conformance starts")
}

#[test]
fn a_filter_selecting_nothing_is_an_error_listing_the_groups() {
    let out = run(&["--filter", "upadte"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for part in ["\"upadte\" selects no case", "update", "graph_build", "multi_device", "lifecycle"] {
        assert!(stderr.contains(part), "{part:?} missing from {stderr}");
    }
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[test]
fn progress_lines_per_device_and_group_on_stderr() {
    let out = run(&["--progress", "--filter", "device::", "--filter", "property::"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("[cpu:0] ")).collect();
    assert_eq!(lines.len(), 3, "device, graph_property, property: {stderr}");
    assert!(lines.iter().any(|l| l.starts_with("[cpu:0] device: 4 passed, 0 failed")), "{stderr}");
    // The matrix stays on stdout.
    assert!(String::from_utf8_lossy(&out.stdout).contains("device::"));

    for quiet in [&["--quiet", "--filter", "device::"][..], &["--filter", "device::"][..]] {
        let out = run(quiet);
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("[cpu:0] "), "{quiet:?}: {stderr}");
    }
}

#[test]
fn ur_log_diagnostics_have_no_colour_codes_when_redirected() {
    let out = Command::new(env!("CARGO_BIN_EXE_cmdbuf-conformance"))
        .args(["--filter", "device::"])
        .env("UR_DEVICE_SELECTOR", "cpu:0")
        .env("UR_CONFORMANCE_EMULATED", "none")
        .env("UR_LOG", "cmdbuf_core=info")
        .env_remove("UR_RS_REQUIRE_DEVICES")
        .output()
        .expect("cmdbuf-conformance starts");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("adapter present"), "UR_LOG is honoured: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "colour codes in redirected output: {stderr}");

    let out = Command::new(env!("CARGO_BIN_EXE_cmdbuf-conformance"))
        .args(["--list"])
        .env("UR_LOG", "cmdbuf_core=loud")
        .output()
        .expect("cmdbuf-conformance starts");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("UR_LOG="));
}
