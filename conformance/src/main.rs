//! `cmdbuf-conformance`: runs the suite on every selected device and prints a
//! matrix (cases x devices) with skip reasons and failures, or JSON lines.
//! Exits with 1 when any case fails, 2 when nothing could be run (no
//! device, or a `--filter` that selects no case), 3 when a case runs past
//! `UR_CONFORMANCE_CASE_TIMEOUT` (a hang, named on stderr). While it runs,
//! one line per device and group goes to stderr when it is a terminal
//! (`--quiet` turns them off, `--progress` on).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use cmdbuf::{CommandBufferSupport, Device, Loader};
use cmdbuf_conformance::cases::buffers::CrossCase;
use cmdbuf_conformance::harness::flag_words;
use cmdbuf_conformance::{
    Case, Outcome, REQUIRE_DEVICES_ENV, cases, devices_under_test, run_case, unmet_device_requirements,
};
use serde::Serialize;

/// A case of a section and the devices it runs over.
type SectionCase = (CrossCase, Vec<Device>);

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A matrix of cases by device, then skip reasons and failures.
    Table,
    /// One JSON object per case and device: {"backend","device","case","status","reason"}.
    Json,
}

/// Runs the cmdbuf conformance suite on every present adapter and device.
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
    /// No progress lines on stderr (they are off anyway when stderr is not a terminal).
    #[arg(long, conflicts_with = "progress")]
    quiet: bool,
    /// Progress lines on stderr even when it is not a terminal (logs of CI runs).
    #[arg(long)]
    progress: bool,
}

/// The group of a case: its name up to `::` (`update` of `update::kernel_args`).
fn group(case: &str) -> &str {
    case.split_once("::").map_or(case, |(g, _)| g)
}

/// One progress line per device and group, on stderr, while the suite runs.
struct Progress {
    on: bool,
}

impl Progress {
    fn group_done(&self, device: &str, group: &str, outcomes: &[&Outcome]) {
        if !self.on || outcomes.is_empty() {
            return;
        }
        let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
        let failed = count(|o| matches!(o, Outcome::Fail(_)));
        let skipped = count(|o| matches!(o, Outcome::Skip(_)));
        let passed = outcomes.len() - failed - skipped;
        eprintln!("[{device}] {group}: {passed} passed, {failed} failed, {skipped} skipped");
    }
}

struct Row {
    device: String,
    case: String,
    outcome: Outcome,
}

/// One line of `--format json`, fields in the documented order.
#[derive(Serialize)]
struct JsonRow<'a> {
    backend: &'a str,
    device: &'a str,
    case: &'a str,
    status: &'a str,
    reason: Option<&'a str>,
}

/// Writes to stdout, stopping quietly when the reader has gone (`| head`).
fn emit(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Writes one JSON row for an outcome.
fn emit_json(backend: &str, device: &str, case: &str, outcome: &Outcome) {
    let (status, reason) = match outcome {
        Outcome::Pass => ("pass", None),
        Outcome::Skip(r) => ("skip", Some(r.as_str())),
        Outcome::Fail(m) => ("fail", Some(m.as_str())),
    };
    let row = JsonRow { backend, device, case, status, reason };
    emit(&(serde_json::to_string(&row).expect("a row of strings serializes") + "\n"));
}

/// Whether `--filter` selects the case `name`.
fn wanted(filter: &[String], name: &str) -> bool {
    filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()))
}

/// The cases `--filter` selects, or an error when it selects none (of the
/// cases or the sections), listing the groups: a filter that selects nothing
/// would run nothing and pass, so that a typo could look like a green run.
fn selected_cases(filter: &[String]) -> Result<Vec<Case>, String> {
    let all = cases::all();
    let section_names: Vec<&str> =
        cases::buffers::cross_cases().iter().chain(cases::multi_device::cases().iter()).map(|c| c.name).collect();
    if !all.iter().map(|c| c.name.as_str()).chain(section_names.iter().copied()).any(|n| wanted(filter, n)) {
        let mut groups: Vec<&str> =
            all.iter().map(|c| group(&c.name)).chain(section_names.iter().map(|n| group(n))).collect();
        groups.sort_unstable();
        groups.dedup();
        return Err(format!(
            "--filter {} selects no case; a filter is part of a case name (`--list` lists them), \
             e.g. one of the groups: {}",
            filter.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(" --filter "),
            groups.join(", ")
        ));
    }
    Ok(all.into_iter().filter(|c| wanted(filter, &c.name)).collect())
}

/// The adapters and the devices under test, or the message saying why
/// there are none to test: no device selected, or one that CI requires
/// missing (a backend, or a platform of one), which fails the run rather
/// than leaving it untested.
fn open_devices() -> Result<(Loader, Vec<Device>), String> {
    let loader = cmdbuf::load().map_err(|e| format!("cmdbuf-conformance: {e}"))?;
    let devices = match devices_under_test(&loader) {
        Ok(devices) if !devices.is_empty() => devices,
        Ok(_) => {
            let mut why = format!("cmdbuf-conformance: the selector `{}` selects no device", loader.selector());
            for absent in loader.absent() {
                let _ = write!(why, "\n  {}: {}", absent.backend, absent.reason);
            }
            return Err(why);
        }
        Err(e) => return Err(format!("cmdbuf-conformance: {e}")),
    };
    if let Ok(required) = std::env::var(REQUIRE_DEVICES_ENV) {
        let unmet = unmet_device_requirements(&loader, &required);
        if !unmet.is_empty() {
            return Err(unmet.iter().map(|why| format!("cmdbuf-conformance: {why}")).collect::<Vec<_>>().join("\n"));
        }
    }
    Ok((loader, devices))
}

/// Runs every case on every device, one row each.
fn run_per_device(cases: &[Case], devices: &[Device], format: Format, progress: &Progress) -> Vec<Row> {
    let mut rows = Vec::new();
    for device in devices {
        let name = device.to_string();
        let mut group_start = rows.len();
        for (i, case) in cases.iter().enumerate() {
            let outcome = run_case(case, device);
            if format == Format::Json {
                emit_json(device.backend().name(), &name, &case.name, &outcome);
            }
            rows.push(Row { device: name.clone(), case: case.name.clone(), outcome });
            if cases.get(i + 1).is_none_or(|next| group(&next.name) != group(&case.name)) {
                let outcomes: Vec<&Outcome> = rows[group_start..].iter().map(|r| &r.outcome).collect();
                progress.group_done(&name, group(&case.name), &outcomes);
                group_start = rows.len();
            }
        }
    }
    rows
}

/// The sections, run once over every selected device together, when there
/// are several: `cross` (one buffer on all of them) and `multi_device`
/// (every pair: buffer transfers, peer copies, concurrent work); and
/// `views`, over the two views of each selected device (two contexts of one
/// device, which the CPU adapter joins device-side).
fn sections(selected: &[Device]) -> Vec<(&'static str, Vec<SectionCase>)> {
    let mut sections: Vec<(&str, Vec<SectionCase>)> = Vec::new();
    if selected.len() > 1 {
        let over_all = |cases: Vec<CrossCase>| cases.into_iter().map(|c| (c, selected.to_vec())).collect();
        sections.push(("cross", over_all(cases::buffers::cross_cases())));
        sections.push(("multi_device", over_all(cases::multi_device::cases())));
    }
    let views = selected
        .iter()
        .flat_map(|d| cases::graph_multi_device::view_cases().into_iter().map(|c| (c, vec![d.clone(), d.emulated()])));
    sections.push(("views", views.collect()));
    sections
}

/// Runs the sections' cases `--filter` selects, adding their rows to
/// `rows`; returns each section's (name, passed, failed, skipped).
fn run_sections(
    sections: &[(&'static str, Vec<SectionCase>)],
    cli: &Cli,
    progress: &Progress,
    rows: &mut Vec<Row>,
) -> Vec<(&'static str, usize, usize, usize)> {
    let mut section_rows = Vec::new();
    for (section, section_cases) in sections {
        let (mut pass, mut fail, mut skip) = (0, 0, 0);
        let section_start = rows.len();
        for (case, on) in section_cases {
            if !wanted(&cli.filter, case.name) {
                continue;
            }
            let outcome = case.run(on);
            // A views case runs once per device: the row names it.
            let label = if *section == "views" { format!("{} ({})", case.name, on[0]) } else { case.name.into() };
            match &outcome {
                Outcome::Pass => pass += 1,
                Outcome::Fail(_) => fail += 1,
                Outcome::Skip(_) => skip += 1,
            }
            if cli.format == Format::Json {
                emit_json(section, section, &label, &outcome);
            }
            rows.push(Row { device: (*section).into(), case: label, outcome });
        }
        let outcomes: Vec<&Outcome> = rows[section_start..].iter().map(|r| &r.outcome).collect();
        let over = if *section == "views" { "each device's two views" } else { "all selected devices" };
        progress.group_done(over, section, &outcomes);
        if pass + fail + skip > 0 {
            section_rows.push((*section, pass, fail, skip));
        }
    }
    section_rows
}

/// Selects the cases, opens the devices, runs the cases on each device and
/// then the sections, and prints the matrix (or JSON rows as they come).
fn main() -> ExitCode {
    if let Err(e) = cmdbuf::init_logging() {
        eprintln!("cmdbuf-conformance: {e}");
        return ExitCode::from(2);
    }
    cmdbuf_conformance::quiet_adapter_worker_panics();
    let cli = Cli::parse();
    let cases = match selected_cases(&cli.filter) {
        Ok(cases) => cases,
        Err(e) => {
            eprintln!("cmdbuf-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let progress = Progress { on: cli.progress || (!cli.quiet && std::io::stderr().is_terminal()) };
    if cli.list {
        emit(&cases.iter().map(|c| format!("{}\n", c.name)).collect::<String>());
        return ExitCode::SUCCESS;
    }
    let (loader, devices) = match open_devices() {
        Ok(opened) => opened,
        Err(why) => {
            eprintln!("{why}");
            return ExitCode::from(2);
        }
    };
    match cli.format {
        Format::Table => emit(&header(&loader, &devices, cases.len())),
        Format::Json => {
            for absent in loader.absent() {
                eprintln!("adapter {} absent: {}", absent.backend, absent.reason);
            }
        }
    }
    let mut rows = run_per_device(&cases, &devices, cli.format, &progress);
    let selected = loader.devices();
    let section_rows = run_sections(&sections(&selected), &cli, &progress, &mut rows);
    if cli.format == Format::Table {
        emit(&matrix(&devices, &cases, &rows));
        let names: Vec<String> = selected.iter().map(ToString::to_string).collect();
        for (section, pass, fail, skip) in section_rows {
            let over = if section == "views" { "native and emulated view of each of" } else { "all selected devices:" };
            emit(&format!("{section} ({over} {}): {pass} passed, {fail} failed, {skip} skipped\n", names.join(", ")));
        }
    }
    if rows.iter().any(|r| matches!(r.outcome, Outcome::Fail(_))) { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn header(loader: &Loader, devices: &[Device], cases: usize) -> String {
    let mut out = format!("cmdbuf-conformance: {cases} cases, selector `{}`\n", loader.selector());
    for device in devices {
        let info = device.info();
        let cb = info.command_buffer;
        let update = if cb.update.is_empty() { "none".to_string() } else { flag_words(cb.update.iter_names()) };
        let events = if cb.events { "yes" } else { "no" };
        let support = match cb.support {
            CommandBufferSupport::Native => "native",
            CommandBufferSupport::Emulated => "software",
        };
        let _ = writeln!(
            out,
            "  {:<20} {} [{support} command buffers; updates: {update}; events: {events}]",
            device.to_string(),
            info.name,
        );
    }
    for absent in loader.absent() {
        let _ = writeln!(out, "  {:<20} absent: {}", absent.backend.to_string(), absent.reason);
    }
    out.push('\n');
    out
}

fn matrix(devices: &[Device], cases: &[Case], rows: &[Row]) -> String {
    let names: Vec<String> = devices.iter().map(ToString::to_string).collect();
    let width = cases.iter().map(|c| c.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!("{:<width$}", "case");
    for name in &names {
        let _ = write!(out, "  {name:^w$}", w = name.len().max(4));
    }
    out.push('\n');
    let by_key: BTreeMap<(&str, &str), &Outcome> =
        rows.iter().map(|r| ((r.device.as_str(), r.case.as_str()), &r.outcome)).collect();
    for case in cases {
        let _ = write!(out, "{:<width$}", case.name);
        for name in &names {
            let cell = match by_key.get(&(name.as_str(), case.name.as_str())) {
                Some(Outcome::Pass) => "pass",
                Some(Outcome::Skip(_)) => "skip",
                Some(Outcome::Fail(_)) => "FAIL",
                None => "-",
            };
            let _ = write!(out, "  {cell:^w$}", w = name.len().max(4));
        }
        out.push('\n');
    }
    out.push('\n');
    for name in &names {
        let own = rows.iter().filter(|r| &r.device == name);
        let (mut pass, mut fail, mut skip) = (0, 0, 0);
        for row in own {
            match row.outcome {
                Outcome::Pass => pass += 1,
                Outcome::Fail(_) => fail += 1,
                Outcome::Skip(_) => skip += 1,
            }
        }
        let _ = writeln!(out, "{name}: {pass} passed, {fail} failed, {skip} skipped");
    }
    for row in rows {
        match &row.outcome {
            Outcome::Skip(reason) => {
                let _ = writeln!(out, "  skip [{}] {}: {reason}", row.device, row.case);
            }
            Outcome::Fail(message) => {
                let _ = writeln!(out, "  FAIL [{}] {}: {message}", row.device, row.case);
            }
            Outcome::Pass => {}
        }
    }
    out
}
