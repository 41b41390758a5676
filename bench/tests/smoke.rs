//! `cmdbuf-bench --quick` runs every benchmark group on the CPU device and writes
//! well-formed results. Structure only: benchmarks are not tests, so nothing
//! here looks at a timing.

use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn quick_run_writes_every_group() {
    let out = std::env::temp_dir().join(format!("cmdbuf-bench-smoke-{}", std::process::id()));
    let status = Command::new(env!("CARGO_BIN_EXE_cmdbuf-bench"))
        .args(["--quick", "--out"])
        .arg(&out)
        .env("UR_DEVICE_SELECTOR", "cpu:*")
        .output()
        .expect("cmdbuf-bench runs");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let tables = String::from_utf8_lossy(&status.stdout);
    assert!(tables.contains("### `cpu:0`") && tables.contains("### `cpu:0 emulated`"), "{tables}");

    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let records: Vec<serde_json::Value> = serde_json::from_str(&json).expect("JSON array");
    let groups: BTreeSet<&str> = records.iter().filter_map(|r| r["benchmark"].as_str()).collect();
    for group in [
        "submission",
        "finalize",
        "update",
        "cpu_per_node",
        "submit_graph",
        "sin_kernel_graph",
        "perf_scaling",
        "buffers",
    ] {
        assert!(groups.contains(group), "no {group} records in {groups:?}");
    }
    let variants: BTreeSet<&str> = records
        .iter()
        .filter(|r| r["benchmark"] == "cpu_per_node" && r["device"] == "cpu:0")
        .filter_map(|r| r["variant"].as_str())
        .collect();
    assert!(variants.contains("1 worker"), "the one-worker child did not report: {variants:?}");
    for r in &records {
        let (p10, median, p90) =
            (r["p10"].as_f64().unwrap(), r["median"].as_f64().unwrap(), r["p90"].as_f64().unwrap());
        assert!(p10 <= median && median <= p90, "{r}");
        assert!(r["samples"].as_u64().unwrap() >= 1, "{r}");
    }
    let svg = std::fs::read_to_string(out.join("perf_scaling.svg")).expect("plot");
    assert!(svg.starts_with("<svg") && svg.contains("cpu:0 replay"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn submission_sizes_and_variants_choose_what_is_sampled() {
    let out = std::env::temp_dir().join(format!("cmdbuf-bench-sizes-{}", std::process::id()));
    let status = Command::new(env!("CARGO_BIN_EXE_cmdbuf-bench"))
        .args(["--quick", "--only", "submission", "--no-emulated", "--submission-sizes", "4,1"])
        .args(["--submission-variants", "replay", "--out"])
        .arg(&out)
        .env("UR_DEVICE_SELECTOR", "cpu:0")
        .output()
        .expect("cmdbuf-bench runs");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let records: Vec<serde_json::Value> = serde_json::from_str(&json).expect("JSON array");
    let sizes: BTreeSet<u64> = records.iter().filter_map(|r| r["n"].as_u64()).collect();
    assert_eq!(sizes, BTreeSet::from([1, 4]), "{json}");
    let variants: BTreeSet<&str> = records.iter().filter_map(|r| r["variant"].as_str()).collect();
    assert_eq!(variants, BTreeSet::from(["replay"]), "{json}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_unknown_submission_variant_is_an_error() {
    let status = Command::new(env!("CARGO_BIN_EXE_cmdbuf-bench"))
        .args(["--only", "submission", "--submission-variants", "replay,eagre"])
        .env("UR_DEVICE_SELECTOR", "cpu:0")
        .output()
        .expect("cmdbuf-bench runs");
    assert_eq!(status.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&status.stderr).contains("`--submission-variants eagre` names no variant"));
}
