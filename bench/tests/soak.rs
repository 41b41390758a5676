//! `cmdbuf-bench --only soak` prints its table, one row per tenth of the run,
//! and a verdict on the CPU device. Structure only: nothing here looks at a
//! timing or at whether the figures stayed flat.

use std::process::Command;

#[test]
fn soak_prints_its_table() {
    let out = std::env::temp_dir().join(format!("cmdbuf-bench-soak-{}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_cmdbuf-bench"))
        .args(["--only", "soak", "--soak-submissions", "2000", "--no-emulated", "--out"])
        .arg(&out)
        .env("UR_DEVICE_SELECTOR", "cpu:0")
        .output()
        .expect("cmdbuf-bench runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("### soak on `cpu:0`"), "{stdout}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && l.chars().nth(2).is_some_and(|c| c.is_ascii_digit()))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    let counts: Vec<u64> = rows.iter().map(|r| r[0].parse().expect("a submission count")).collect();
    assert_eq!(counts, (0..=10).map(|i| i * 200).collect::<Vec<u64>>(), "{stdout}");
    for row in &rows {
        assert_eq!(row.len(), 6, "{row:?}");
        // Live objects: the total and its seven kinds, which add up to it.
        let kinds: Vec<usize> = row[5].split('/').map(|n| n.parse().expect("a count")).collect();
        assert_eq!(kinds.len(), 7, "{row:?}");
        assert_eq!(kinds.iter().sum::<usize>(), row[4].parse::<usize>().unwrap(), "{row:?}");
        assert!(kinds[0] >= 1 && kinds[1] >= 1 && kinds[4] >= 1, "a context, a queue, a command buffer: {row:?}");
    }
    assert!(stdout.contains("2000 submissions in"), "{stdout}");
    assert!(stdout.contains("500 graph submissions, 500 host-task runs"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("soak verdict: ")), "{stdout}");
    let _ = std::fs::remove_dir_all(&out);
}
