//! `ur-conformance`: runs the suite on every selected device and prints a
//! matrix (cases x devices) with skip reasons and failures, or JSON lines.
//! Exits with 1 when any case fails.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use ur::Device;
use ur_conformance::{Case, Outcome, cases, devices_under_test, run_case};

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A matrix per run, then skip reasons and failures.
    Table,
    /// One JSON object per case and device: {"backend","device","case","status","reason"}.
    Json,
}

/// Runs the ur-rs conformance suite on every present adapter and device.
///
/// Devices are chosen with UR_DEVICE_SELECTOR (or ONEAPI_DEVICE_SELECTOR),
/// e.g. `UR_DEVICE_SELECTOR='opencl:*;cpu:*'`. Emulated views of devices with
/// native command buffers are included unless UR_CONFORMANCE_EMULATED=none.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Only run cases whose name contains this text (repeatable).
    #[arg(long)]
    filter: Vec<String>,
    /// List the cases and exit.
    #[arg(long)]
    list: bool,
}

struct Row {
    device: Device,
    case: String,
    outcome: Outcome,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("UR_LOG"))
        .with_writer(std::io::stderr)
        .init();
    ur_conformance::quiet_adapter_worker_panics();
    let cli = Cli::parse();
    let all: Vec<Case> = cases::all()
        .into_iter()
        .filter(|c| cli.filter.is_empty() || cli.filter.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    if cli.list {
        for case in &all {
            println!("{}", case.name);
        }
        return ExitCode::SUCCESS;
    }
    let loader = match ur::load() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ur-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let devices = match devices_under_test(&loader) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("ur-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.format == Format::Table {
        println!(
            "ur-conformance: {} cases, selector `{}`",
            all.len(),
            loader.selector()
        );
        for device in &devices {
            let info = device.info();
            let cb = info.command_buffer;
            println!(
                "  {device:<20} {} [{:?} command buffers, update {:?}, events {}]",
                info.name, cb.support, cb.update, cb.events
            );
        }
        for absent in loader.absent() {
            println!(
                "  {:<20} absent: {}",
                absent.backend.to_string(),
                absent.reason
            );
        }
        println!();
    } else {
        for absent in loader.absent() {
            eprintln!("adapter {} absent: {}", absent.backend, absent.reason);
        }
    }

    let mut rows = Vec::new();
    let stdout = std::io::stdout();
    for device in &devices {
        for case in &all {
            let outcome = run_case(case, device);
            if cli.format == Format::Json {
                let (status, reason) = match &outcome {
                    Outcome::Pass => ("pass", None),
                    Outcome::Skip(r) => ("skip", Some(r.as_str())),
                    Outcome::Fail(m) => ("fail", Some(m.as_str())),
                };
                let line = serde_json::json!({
                    "backend": device.backend().name(),
                    "device": device.to_string(),
                    "case": case.name,
                    "status": status,
                    "reason": reason,
                });
                let _ = writeln!(stdout.lock(), "{line}");
            }
            rows.push(Row {
                device: device.clone(),
                case: case.name.clone(),
                outcome,
            });
        }
    }
    if cli.format == Format::Table {
        print_matrix(&devices, &all, &rows);
    }
    let failed = rows.iter().any(|r| matches!(r.outcome, Outcome::Fail(_)));
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print_matrix(devices: &[Device], cases: &[Case], rows: &[Row]) {
    let names: Vec<String> = devices.iter().map(ToString::to_string).collect();
    let width = cases.iter().map(|c| c.name.len()).max().unwrap_or(4).max(4);
    let mut header = format!("{:<width$}", "case");
    for n in &names {
        header.push_str(&format!("  {n:^w$}", w = n.len().max(4)));
    }
    println!("{header}");
    let by_key: BTreeMap<(String, String), &Outcome> = rows
        .iter()
        .map(|r| ((r.device.to_string(), r.case.clone()), &r.outcome))
        .collect();
    for case in cases {
        let mut line = format!("{:<width$}", case.name);
        for n in &names {
            let cell = match by_key.get(&(n.clone(), case.name.clone())) {
                Some(Outcome::Pass) => "pass",
                Some(Outcome::Skip(_)) => "skip",
                Some(Outcome::Fail(_)) => "FAIL",
                None => "-",
            };
            line.push_str(&format!("  {cell:^w$}", w = n.len().max(4)));
        }
        println!("{line}");
    }
    println!();
    for device in devices {
        let own: Vec<&Row> = rows.iter().filter(|r| r.device == *device).collect();
        let count = |f: fn(&Outcome) -> bool| own.iter().filter(|r| f(&r.outcome)).count();
        println!(
            "{device}: {} passed, {} failed, {} skipped",
            count(|o| matches!(o, Outcome::Pass)),
            count(|o| matches!(o, Outcome::Fail(_))),
            count(|o| matches!(o, Outcome::Skip(_)))
        );
    }
    for row in rows {
        match &row.outcome {
            Outcome::Skip(reason) => println!("  skip [{}] {}: {reason}", row.device, row.case),
            Outcome::Fail(message) => println!("  FAIL [{}] {}: {message}", row.device, row.case),
            Outcome::Pass => {}
        }
    }
}
