//! `cmdbuf-bench`: replay against eager submission, and the cost of building,
//! updating and replaying command buffers, on every selected device.
//!
//! Prints Markdown tables, writes every figure as JSON (`results.json`) and a
//! plot of time per node against node count (`perf_scaling.svg`) into the
//! output folder. Each figure is the median of repeated runs after warm-up,
//! with the 10th and 90th percentiles as the spread. Benchmarks are not tests:
//! nothing here asserts a timing.

mod alloc;
mod buffers;
mod collectives;
#[cfg(feature = "cuda")]
mod cuda_build;
mod figures;
mod flat_shapes;
mod goals;
mod graph;
mod host_copies;
mod kernels;
mod multi_device;
mod pipeline;
mod raw;
mod replay_flat;
#[cfg(feature = "opencl")]
mod replay_handover;
mod report;
mod soak;
mod stats;
mod suites;

// The raw baselines launch axpb over as many work-items as the bench does.
const _: () = assert!(raw::AXPB_ITEMS == flat_shapes::AXPB_ITEMS);

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use cmdbuf::{Backend, CommandBufferSupport, Device, UrError};
use stats::Repeats;
use suites::{Record, Target};

/// Benchmarks of the cmdbuf command-buffer API on every selected device
/// (UR_DEVICE_SELECTOR / ONEAPI_DEVICE_SELECTOR choose them).
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// Fewer repeats and sizes: a smoke run that still exercises everything.
    #[arg(long)]
    quick: bool,
    /// Where results.json and the plot go.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Only these benchmark groups (submission, raw, replay_flat, replay_handover, usm_submission, finalize, update,
    /// cpu_per_node, submit_graph, sin_kernel_graph, perf_scaling, graph, buffers, multi_device,
    /// collectives, soak, cuda_build); repeatable. submission measures the raw baselines
    /// too (raw adds the note naming them); soak and cuda_build run only when named.
    #[arg(long)]
    only: Vec<String>,
    /// Leave out the emulated (software command buffer) view of native devices.
    #[arg(long)]
    no_emulated: bool,
    /// Submissions of the soak group, which runs only when `--only soak` names it.
    #[arg(long, default_value_t = 1_000_000)]
    soak_submissions: u64,
    /// Node counts of the graph group's build and finalize figures (default
    /// 100, 1000, 10000, 100000), e.g. `--graph-build 100,1000`; `0` for none.
    #[arg(long, value_delimiter = ',')]
    graph_build: Option<Vec<usize>>,
    /// Node counts of the submission and usm_submission groups (default 1,
    /// 4, 10, 100, 1000; with --quick 1, 4, 10), e.g. `--submission-sizes 10`
    /// to sample one size alone.
    #[arg(long, value_delimiter = ',')]
    submission_sizes: Option<Vec<usize>>,
    /// Only these variants of the submission group (eager, replay,
    /// eager_axpb, raw, raw_eager, raw_eager_axpb, raw_eager_waits,
    /// raw_eager_batched), e.g. `--submission-variants replay,raw`; the
    /// rows and goals then show what was sampled.
    #[arg(long, value_delimiter = ',')]
    submission_variants: Option<Vec<String>>,
    /// Internal: measure the CPU adapter's per-node overhead in this process and
    /// print JSON records (used to run it with one worker).
    #[arg(long, hide = true)]
    child_per_node: Option<String>,
}

/// Every group `--only` accepts, space-separated.
const GROUPS: &str = "submission raw replay_flat replay_handover usm_submission finalize update cpu_per_node submit_graph sin_kernel_graph perf_scaling graph \
                      buffers multi_device collectives host_copies soak cuda_build";

struct Plan {
    repeats: Repeats,
    submission: Vec<usize>,
    replay_flat: Vec<usize>,
    replay_handover: Vec<usize>,
    finalize: Vec<usize>,
    update: Vec<usize>,
    per_node: usize,
    submit_graph: Vec<usize>,
    sin_kernel_graph: Vec<usize>,
    scaling: Vec<usize>,
    graph: graph::Sizes,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            return Plan {
                repeats: Repeats { warmup: 1, samples: 5 },
                submission: vec![1, 4, 10],
                replay_flat: vec![1, 10, 100],
                replay_handover: vec![10, 100],
                finalize: vec![10, 100],
                update: vec![10, 100],
                per_node: 64,
                submit_graph: vec![4],
                sin_kernel_graph: vec![5],
                scaling: vec![1, 8, 64],
                graph: graph::Sizes { build: vec![100, 1000], replay: vec![1, 10], replay_samples: 20 },
            };
        }
        Plan {
            repeats: Repeats { warmup: 5, samples: 50 },
            submission: vec![1, 4, 10, 100, 1000],
            replay_flat: vec![1, 10, 100, 1000],
            replay_handover: vec![10, 100, 1000],
            finalize: vec![100, 1000, 10000],
            update: vec![10, 100, 1000, 10000],
            per_node: 1024,
            submit_graph: vec![4, 10, 32],
            sin_kernel_graph: vec![5, 100],
            scaling: vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096],
            graph: graph::Sizes {
                build: vec![100, 1000, 10_000, 100_000],
                replay: vec![1, 10, 100, 1000],
                replay_samples: 200,
            },
        }
    }
}

fn main() -> ExitCode {
    // Diagnostics (what an update re-recorded, ...) with UR_LOG, as for cmdbuf-conformance.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("UR_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let mut plan = Plan::new(cli.quick);
    if let Some(sizes) = &cli.graph_build {
        plan.graph.build = sizes.iter().copied().filter(|n| *n > 0).collect();
    }
    if let Some(sizes) = &cli.submission_sizes {
        plan.submission = sizes.iter().copied().filter(|n| *n > 0).collect();
    }
    if let Some(variant) = &cli.child_per_node {
        return child_per_node(&plan, variant);
    }
    if let Some(unknown) = cli.only.iter().find(|o| !GROUPS.split_whitespace().any(|g| g == o.as_str())) {
        let valid: Vec<&str> = GROUPS.split_whitespace().collect();
        eprintln!("cmdbuf-bench: `--only {unknown}` selects nothing; the groups are: {}", valid.join(", "));
        return ExitCode::from(2);
    }
    let variants = cli.submission_variants.as_deref().unwrap_or_default();
    if let Some(unknown) = variants.iter().find(|v| !suites::SUBMISSION_VARIANTS.contains(&v.as_str())) {
        eprintln!(
            "cmdbuf-bench: `--submission-variants {unknown}` names no variant; the variants are: {}",
            suites::SUBMISSION_VARIANTS.join(", ")
        );
        return ExitCode::from(2);
    }
    let wanted = |group: &str| cli.only.is_empty() || cli.only.iter().any(|o| o == group);
    let loader = match cmdbuf::load() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cmdbuf-bench: {e}");
            return ExitCode::from(2);
        }
    };
    let mut devices: Vec<Device> = Vec::new();
    for device in loader.devices() {
        let native = device.info().command_buffer.support == CommandBufferSupport::Native;
        devices.push(device.clone());
        if native && !cli.no_emulated {
            devices.push(device.emulated());
        }
    }
    if devices.is_empty() {
        eprintln!("cmdbuf-bench: the selector `{}` selects no device", loader.selector());
        for absent in loader.absent() {
            eprintln!("  {}: {}", absent.backend, absent.reason);
        }
        return ExitCode::from(2);
    }
    if let Err(e) = std::fs::create_dir_all(&cli.out) {
        eprintln!("cmdbuf-bench: cannot create {}: {e}", cli.out.display());
        return ExitCode::FAILURE;
    }
    let json = cli.out.join("results.json");
    // Whether the last write of results.json succeeded.
    let written = std::cell::Cell::new(false);
    let save_all = |records: &[Record]| match save(records, &json) {
        Ok(()) => written.set(true),
        Err(e) => {
            written.set(false);
            eprintln!("cmdbuf-bench: cannot write {}: {e}", json.display());
        }
    };
    // Tables go out as each group finishes and results.json is rewritten
    // after each group, so that a run cut short keeps what it measured.
    let emit = |text: &str| {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    };
    emit("## Results\n\n");
    let mut records: Vec<Record> = Vec::new();
    for device in &devices {
        // This device's records start here.
        let first = records.len();
        eprintln!("cmdbuf-bench: {device} ({})", device.info().name);
        emit(&report::device_heading(&device.to_string(), &device.info().name));
        let target = match Target::new(device) {
            Ok(t) => t,
            Err(e) => {
                emit(&format!("not measured: {e}\n\n"));
                continue;
            }
        };
        let mut skipped: Vec<(String, String)> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let r = plan.repeats;
        let name = device.to_string();
        // Runs one group, then prints its table and saves every record so far.
        let mut group = |group: &str, run: &mut GroupRun<'_>| {
            // `--only raw` measures the raw baseline within the submission group.
            let selected = wanted(group) || (group == "submission" && wanted("raw"));
            if !selected {
                return;
            }
            match run(&mut records) {
                Ok(note) => notes.extend(note),
                Err(why) => skipped.push((group.to_string(), why)),
            }
            let table = match group {
                // Its rows were printed as they were measured.
                "submission" | replay_flat::GROUP | "replay_handover" if records.len() > first => {
                    report::noisy_note(&records[first..], &name, group)
                }
                _ => report::group_table(&records[first..], &name, group),
            };
            emit(&table);
            save_all(&records);
        };
        let ok = |r: Result<(), UrError>| r.map(|()| None).map_err(|e| e.to_string());
        // The raw baseline is sampled with eager and replay in one loop (the
        // submission group); the raw group reports what it used or why none.
        let mut raw_outcome: Result<String, String> = Err("not measured".into());
        group("submission", &mut |out| {
            let mut raw = raw::open(device);
            let baseline = match raw.as_mut() {
                Ok(graph) => Some(&mut **graph),
                Err(_) => None,
            };
            let mut headed = false;
            let mut row = |records: &[Record], shape: suites::Shape, n: usize| {
                if !headed {
                    emit(&report::submission_header());
                    headed = true;
                }
                emit(&report::submission_row(records, &name, shape.name(), n));
            };
            let measured = suites::submission(
                &target,
                r,
                &plan.submission,
                cli.submission_variants.as_deref(),
                baseline,
                out,
                &mut row,
            );
            raw_outcome = match raw {
                Ok(graph) => {
                    let eager: Vec<String> =
                        graph.eager_variants().into_iter().map(|(v, what)| format!("{v}: {what}")).collect();
                    Ok(format!("{}; {}", graph.mechanism(), eager.join("; ")))
                }
                Err(why) => Err(why),
            };
            measured.map(|()| None)
        });
        group("raw", &mut |_| raw_outcome.clone().map(|m| Some(format!("raw baseline: {m}"))));
        group(replay_flat::GROUP, &mut |out| {
            let mut raw = raw::open(device).ok();
            let mut headed = false;
            let mut row = |records: &[Record], n: usize| {
                if !std::mem::replace(&mut headed, true) {
                    emit(&replay_flat::table_header());
                }
                emit(&replay_flat::table_row(records, &name, n));
            };
            replay_flat::run(&target, r, &plan.replay_flat, raw.as_deref_mut(), out, &mut row).map(|()| None)
        });
        #[cfg(feature = "opencl")]
        group(replay_handover::GROUP, &mut |out| {
            let mut headed = false;
            let mut row = |records: &[Record], n: usize| {
                if !std::mem::replace(&mut headed, true) {
                    emit(&replay_handover::table_header());
                }
                emit(&replay_handover::table_row(records, &name, n));
            };
            replay_handover::run(&target, r, &plan.replay_handover, out, &mut row).map(|()| None)
        });
        group("usm_submission", &mut |out| suites::usm_submission(&target, r, &plan.submission, out).map(|()| None));
        group("finalize", &mut |out| ok(suites::finalize(&target, r, &plan.finalize, out)));
        group("update", &mut |out| suites::update(&target, r, &plan.update, out).map(|()| None));
        if device.backend() == Backend::Cpu {
            let all = format!("{} workers", device.info().max_compute_units);
            group("cpu_per_node", &mut |out| {
                suites::per_node(&target, r, plan.per_node, &all, out).map_err(|e| e.to_string())?;
                if device.is_emulated() {
                    return Ok(None);
                }
                // Results of the one-worker child belong to the native view's table.
                single_worker(&cli, out).map(|()| None).map_err(|e| format!("1 worker: {e}"))
            });
        }
        group("submit_graph", &mut |out| ok(suites::submit_graph(&target, r, &plan.submit_graph, out)));
        group("sin_kernel_graph", &mut |out| {
            suites::sin_kernel_graph(&target, r, &plan.sin_kernel_graph, out).map(|()| None)
        });
        group("perf_scaling", &mut |out| ok(suites::perf_scaling(&target, r, &plan.scaling, out)));
        group("graph", &mut |out| ok(graph::run(&target, &plan.graph, out)));
        // Runs only when named: CUDA build and replay breakdowns (goals 2, 6).
        #[cfg(feature = "cuda")]
        if cli.only.iter().any(|o| o == "cuda_build") {
            group("cuda_build", &mut |out| cuda_build::run(&target, &plan.graph.build, out, &emit).map(|()| None));
        }
        // The soak runs only when named: it takes minutes and prints its own rows.
        if cli.only.iter().any(|o| o == "soak") {
            group("soak", &mut |_| soak::run(&target, cli.soak_submissions).map(|()| None));
        }
        emit(&report::device_notes(&notes, &skipped));
    }
    if wanted("buffers") {
        emit(&buffers::run(plan.repeats, cli.quick, &mut records));
        save_all(&records);
    }
    if wanted("multi_device") {
        emit(&multi_device::run(&loader.devices(), plan.repeats, cli.quick, &mut records));
        save_all(&records);
    }
    if wanted("collectives") {
        emit(&collectives::run(&loader.devices(), plan.repeats, cli.quick, &mut records));
        save_all(&records);
    }
    if wanted("host_copies") {
        emit(&host_copies::run(&loader.devices(), plan.repeats, cli.quick, &mut records));
        save_all(&records);
    }
    emit(&goals::summary(&records));
    if written.get() {
        eprintln!("cmdbuf-bench: wrote {}", json.display());
    }
    let svg = cli.out.join("perf_scaling.svg");
    match report::plot_scaling(&records, &svg) {
        Ok(()) => eprintln!("cmdbuf-bench: wrote {}", svg.display()),
        Err(e) => eprintln!("cmdbuf-bench: cannot plot {}: {e}", svg.display()),
    }
    ExitCode::SUCCESS
}

/// One benchmark group: adds its records, returns a note for the device's
/// notes, or why it measured nothing.
type GroupRun<'a> = dyn FnMut(&mut Vec<Record>) -> Result<Option<String>, String> + 'a;

/// Writes every record so far, through a temporary file so that the file is
/// never half written.
fn save(records: &[Record], path: &Path) -> Result<(), String> {
    let body = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
    let partial = path.with_extension("json.partial");
    std::fs::write(&partial, body).map_err(|e| e.to_string())?;
    std::fs::rename(&partial, path).map_err(|e| e.to_string())
}

/// Runs the per-node measurement in a child process whose CPU adapter has one
/// worker (the pool size is fixed when the adapter opens).
fn single_worker(cli: &Cli, out: &mut Vec<Record>) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut command = Command::new(exe);
    command.env("UR_CPU_THREADS", "1").env("UR_DEVICE_SELECTOR", "cpu:0").args(["--child-per-node", "1 worker"]);
    if cli.quick {
        command.arg("--quick");
    }
    let output = command.output().map_err(|e| format!("cannot run the one-worker child: {e}"))?;
    if !output.status.success() {
        return Err(format!("the one-worker child failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    let records: Vec<Record> = serde_json::from_slice(&output.stdout).map_err(|e| format!("child output: {e}"))?;
    out.extend(records);
    Ok(())
}

fn child_per_node(plan: &Plan, variant: &str) -> ExitCode {
    let result = (|| -> Result<Vec<Record>, String> {
        let loader = cmdbuf::load().map_err(|e| e.to_string())?;
        let device = loader.devices().into_iter().next().ok_or("no device selected")?;
        let target = Target::new(&device).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        suites::per_node(&target, plan.repeats, plan.per_node, variant, &mut out).map_err(|e| e.to_string())?;
        Ok(out)
    })();
    match result.map(|r| serde_json::to_string(&r)) {
        Ok(Ok(json)) => {
            print!("{json}");
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
