//! The adapter libraries' logging through Intel's UR loader, with the
//! `c_loader` example (built by `cargo test` beside this test) as the C
//! program: `UR_LOG_RS_CPU` in UR's syntax sends the CPU library's
//! diagnostics to a file; a value that does not parse, or an invalid
//! `UR_CPU_THREADS`, makes the library refuse to open. Skips with the reason
//! where the example skips (no loader, no library), unless
//! `UR_RS_REQUIRE_ONEAPI` is set, which the example turns into a failure.

use std::path::PathBuf;
use std::process::{Command, Output};

fn c_loader(env: &[(&str, &str)]) -> Option<Output> {
    // target/<profile>/deps/<this test> → target/<profile>/examples/c_loader
    let exe = std::env::current_exe().ok()?;
    let example = exe.parent()?.parent()?.join("examples/c_loader");
    if !example.is_file() {
        eprintln!("skipped: {} is not built", example.display());
        return None;
    }
    let mut command = Command::new(example);
    command.env_remove("UR_LOG").env_remove("UR_CPU_THREADS").env_remove("UR_DEVICE_SELECTOR");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("c_loader starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(why) = stdout.lines().find(|l| l.starts_with("skipped:")) {
        eprintln!("{why}");
        return None;
    }
    Some(out)
}

#[test]
fn ur_log_rs_cpu_in_urs_syntax_and_invalid_settings() {
    let log: PathBuf = std::env::temp_dir().join(format!("ur-rs-abi-logging-{}.log", std::process::id()));
    let spec = format!("level:info;flush:error;output:file,{}", log.display());
    let Some(out) = c_loader(&[("UR_LOG_RS_CPU", &spec)]) else { return };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read_to_string(&log).expect("the log file");
    let _ = std::fs::remove_file(&log);
    assert!(written.contains("adapter present"), "info events in the file: {written}");
    assert!(!written.contains("DEBUG"), "nothing below info: {written}");
    assert!(!written.contains('\u{1b}'), "no colour codes in a file");

    for (name, value) in [("UR_LOG_RS_CPU", "level:loud"), ("UR_CPU_THREADS", "0")] {
        let out = c_loader(&[(name, value)]).expect("ran above");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("urAdapterGet returned ur_result_t 4"), "{name}={value}: INVALID_VALUE, got {stderr}");
    }
}
