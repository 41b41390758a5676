//! `ur-abi-compare stack`: the whole stack a user goes through, per device:
//! kernels submitted through Intel's UR loader from C (`bench/kernel_submit.c`)
//! on each of our libraries, beside the Rust API's figures for the same
//! operation (`cmdbuf-bench --only submission`'s `results.json`), and, where
//! libsycl takes kernels (OpenCL devices that build SPIR-V), through libsycl
//! (`bench/graph_submit.cpp kernel`) on our OpenCL library and on UR's own
//! OpenCL adapter. On OpenCL devices the C program also runs on UR's OpenCL
//! adapter (the loader's own, without `UR_ADAPTERS_FORCE_LOAD`): the same
//! calls through both libraries, without libsycl's own cost between them.
//!
//! ```sh
//! cmdbuf-bench --only submission --no-emulated --out target/stack-rust
//! ur-abi-compare stack [--libraries target/release] [--programs DIR] [--rust target/stack-rust/results.json]...
//!     [--rounds 3] [--sizes 1,10,100,1000] [--nodes 1,10,100] [--submissions 200]
//! ```
//!
//! Every figure is a median over `--rounds` runs, the runs of all devices
//! and both adapters taken in turn within each round so that the machine's
//! drift falls on all of them alike; `--rust` may be given once per
//! `cmdbuf-bench` run, the median over them taken likewise. Leave
//! `UR_DEVICE_SELECTOR` unset: each library's devices are counted and
//! picked by index here, and the Rust figures matched by device name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cmdbuf_abi_harness::{Bench, Layers, Oneapi, build, run};

/// What `stack` runs.
pub struct Options {
    /// Where `libur_adapter_rs_<backend>.so` are.
    libraries: PathBuf,
    /// Programs built by `ur-abi-run bundle`, else built here.
    programs: Option<PathBuf>,
    /// `results.json` files of `cmdbuf-bench --only submission`.
    rust: Vec<PathBuf>,
    rounds: usize,
    /// Kernel counts of the C program's chains.
    sizes: Vec<u32>,
    /// Node counts of the libsycl chains.
    nodes: Vec<u32>,
    /// Graph submissions (and eager chains) per libsycl run.
    submissions: u32,
}

fn list(value: &str, what: &str) -> Result<Vec<u32>, String> {
    value.split(',').map(|n| n.trim().parse().map_err(|e| format!("{what}: {e}"))).collect()
}

/// The options after `stack`.
pub fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut options = Options {
        libraries: root.join("target/release"),
        programs: None,
        rust: Vec::new(),
        rounds: 3,
        sizes: vec![1, 10, 100, 1000],
        nodes: vec![1, 10, 100],
        submissions: 200,
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--libraries" => options.libraries = PathBuf::from(value()?),
            "--programs" => options.programs = Some(PathBuf::from(value()?)),
            "--rust" => options.rust.push(PathBuf::from(value()?)),
            "--rounds" => options.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--sizes" => options.sizes = list(&value()?, "--sizes")?,
            "--nodes" => options.nodes = list(&value()?, "--nodes")?,
            "--submissions" => options.submissions = value()?.parse().map_err(|e| format!("--submissions: {e}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    options.rounds = options.rounds.max(1);
    Ok(options)
}

/// One device of one of our libraries.
struct Target {
    backend: &'static str,
    library: PathBuf,
    /// `UR_DEVICE_SELECTOR` / `ONEAPI_DEVICE_SELECTOR` index where the
    /// library has several devices.
    index: Option<u32>,
    /// The device's name, from the first run.
    name: String,
}

impl Target {
    fn label(&self) -> String {
        match self.index {
            Some(i) => format!("{}:{i}", self.backend),
            None => self.backend.to_string(),
        }
    }

    fn ur_selector(&self) -> Vec<(&'static str, String)> {
        self.index.map(|i| ("UR_DEVICE_SELECTOR", format!("{}:{i}", self.backend))).into_iter().collect()
    }
}

/// The figures of one `kernel_submit` row, ns per kernel: eager host and
/// wall without events, with events, replay host and wall.
type Row = [f64; 6];

/// `kernel_submit run`'s output: the device's name and its rows by N.
pub fn parse_kernel_submit(stdout: &str) -> (Option<String>, Vec<(u32, Row)>) {
    let mut name = None;
    let mut rows = Vec::new();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("device ") {
            name = rest.split_once(' ').map(|(_, n)| n.trim().to_string());
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let ["row", n, figures @ ..] = fields.as_slice()
            && figures.len() == 6
        {
            let parsed: Result<Vec<f64>, _> = figures.iter().map(|f| f.parse::<f64>()).collect();
            if let (Ok(n), Ok(v)) = (n.parse(), parsed) {
                rows.push((n, [v[0], v[1], v[2], v[3], v[4], v[5]]));
            }
        }
    }
    (name, rows)
}

/// `graph_submit`'s output: the device line and the four figures (µs per
/// chain: graph host, graph total, eager host, eager total), or why not.
pub fn parse_graph_submit(stdout: &str) -> (Option<String>, Result<[f64; 4], String>) {
    let device = stdout.lines().find_map(|l| l.strip_prefix("device ")).map(|d| d.trim().to_string());
    let last = stdout.lines().last().unwrap_or("").trim();
    let fields: Vec<&str> = last.split_whitespace().collect();
    let figures = match fields.as_slice() {
        ["ok", _, _, _, rest @ ..] if rest.len() == 4 => {
            let v: Result<Vec<f64>, _> = rest.iter().map(|f| f.parse::<f64>()).collect();
            v.map(|v| [v[0], v[1], v[2], v[3]]).map_err(|e| e.to_string())
        }
        _ => Err(if last.is_empty() { "no output".into() } else { last.to_string() }),
    };
    (device, figures)
}

fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
}

fn cell(value: Option<f64>) -> String {
    match value {
        None => "—".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// The Rust API's figures: (device name, variant, metric, n) -> medians of
/// each `results.json` given.
#[derive(Default)]
pub struct RustFigures(BTreeMap<(String, String, String, String, u32), Vec<f64>>);

impl RustFigures {
    /// Adds the `submission` chain figures of one `results.json` (native
    /// views only: the emulated ones are another path).
    pub fn add(&mut self, json: &str) -> Result<(), String> {
        let records: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        for r in records.as_array().ok_or("results.json is no array")? {
            let text = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("");
            if text("benchmark") != "submission" || text("shape") != "chain" || text("device").contains("emulated") {
                continue;
            }
            let (Some(n), Some(median)) =
                (r.get("n").and_then(|v| v.as_u64()), r.get("median").and_then(|v| v.as_f64()))
            else {
                continue;
            };
            // By backend too: one GPU is a device of the CUDA, Vulkan and
            // OpenCL libraries alike, under one name.
            let key = (
                text("backend").to_string(),
                text("device_name").to_string(),
                text("variant").to_string(),
                text("metric").to_string(),
                n as u32,
            );
            self.0.entry(key).or_default().push(median);
        }
        Ok(())
    }

    /// The median of `variant`'s `metric` (`host` or `wall`) per node for
    /// `n` kernels on `backend`'s device named `name`.
    pub fn get(&self, backend: &str, name: &str, variant: &str, metric: &str, n: u32) -> Option<f64> {
        let key = (backend.to_string(), name.to_string(), variant.to_string(), format!("{metric}_ns_per_node"), n);
        self.0.get(&key).and_then(|v| median(v))
    }
}

/// libsycl's runs: (target, ours?, nodes) -> figures per round.
type SyclRuns = BTreeMap<(usize, bool, u32), Vec<[f64; 4]>>;

fn executables(options: &Options) -> Result<(PathBuf, PathBuf), String> {
    if let Some(dir) = &options.programs {
        return Ok((dir.join(Bench::KernelSubmit.file()), dir.join(Bench::GraphSubmit.file())));
    }
    let oneapi = Oneapi::find()?;
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ur-abi-programs");
    Ok((
        build(&oneapi, &Bench::KernelSubmit.program(), &cache)?,
        build(&oneapi, &Bench::GraphSubmit.program(), &cache)?,
    ))
}

/// Our libraries' devices, each found by `kernel_submit devices`.
fn targets(options: &Options, kernel_submit: &Path) -> Vec<Target> {
    let mut out = Vec::new();
    for backend in ["cpu", "opencl", "vulkan", "cuda"] {
        let library = options.libraries.join(format!("libur_adapter_rs_{backend}.so"));
        if !library.is_file() {
            continue;
        }
        let count = run(kernel_submit, Some(&library), Layers::None, &["devices"], &[]).ok().and_then(|r| {
            r.stdout.lines().find_map(|l| l.strip_prefix("devices ").and_then(|n| n.trim().parse::<u32>().ok()))
        });
        match count {
            None | Some(0) => eprintln!("ur-abi-compare: no {backend} device ({})", library.display()),
            Some(1) => out.push(Target { backend, library, index: None, name: String::new() }),
            Some(k) => out.extend((0..k).map(|i| Target {
                backend,
                library: library.clone(),
                index: Some(i),
                name: String::new(),
            })),
        }
    }
    out
}

/// Runs `stack` and prints its tables.
pub fn main(options: Options) -> Result<(), String> {
    let (kernel_submit, graph_submit) = executables(&options)?;
    let mut rust = RustFigures::default();
    for file in &options.rust {
        rust.add(&std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?)?;
    }
    let mut targets = targets(&options, &kernel_submit);
    let sizes = options.sizes.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    // (target, n) -> rows per round.
    let mut c_runs: BTreeMap<(usize, u32), Vec<Row>> = BTreeMap::new();
    let mut c_notes: BTreeMap<usize, String> = BTreeMap::new();
    // The same on UR's OpenCL adapter, for OpenCL targets.
    let mut c_theirs: BTreeMap<(usize, u32), Vec<Row>> = BTreeMap::new();
    let mut c_theirs_notes: BTreeMap<usize, String> = BTreeMap::new();
    // The platform under which UR's adapter lists each OpenCL target's
    // device, found by name.
    let mut ur_platform: BTreeMap<usize, Option<u32>> = BTreeMap::new();
    let mut sycl: SyclRuns = BTreeMap::new();
    // (target, ours?) -> the device libsycl reported, or why it failed.
    let mut sycl_devices: BTreeMap<(usize, bool), String> = BTreeMap::new();
    for round in 0..options.rounds {
        eprintln!("ur-abi-compare stack: round {} of {}", round + 1, options.rounds);
        for (t, target) in targets.iter_mut().enumerate() {
            let env: Vec<(&str, String)> = target.ur_selector();
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let ours = run(&kernel_submit, Some(&target.library), Layers::None, &["run", &sizes], &env);
            if let Some(name) = collect_kernel_submit(ours, t, &mut c_runs, &mut c_notes) {
                target.name = name;
            }
            if target.backend != "opencl" {
                continue;
            }
            let selector = format!("opencl:{}", target.index.unwrap_or(0));
            match *ur_platform.entry(t).or_insert_with(|| ur_opencl_platform(&kernel_submit, &target.name)) {
                Some(i) => {
                    let env = [("URT_PLATFORM", i.to_string())];
                    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
                    let theirs = run(&kernel_submit, None, Layers::None, &["run", &sizes], &env);
                    collect_kernel_submit(theirs, t, &mut c_theirs, &mut c_theirs_notes);
                }
                None => {
                    c_theirs_notes.insert(t, "UR's OpenCL adapter lists no device of this name".into());
                }
            }
            for &nodes in &options.nodes {
                for ours in [true, false] {
                    let adapter = ours.then_some(target.library.as_path());
                    let (nodes_s, subs) = (nodes.to_string(), options.submissions.to_string());
                    let args = ["kernel", nodes_s.as_str(), subs.as_str()];
                    let env = [("ONEAPI_DEVICE_SELECTOR", selector.as_str())];
                    let (device, figures) = match run(&graph_submit, adapter, Layers::None, &args, &env) {
                        Ok(r) => parse_graph_submit(&r.stdout),
                        Err(e) => (None, Err(e)),
                    };
                    match figures {
                        Ok(f) => {
                            sycl.entry((t, ours, nodes)).or_default().push(f);
                            if let Some(d) = device {
                                sycl_devices.insert((t, ours), d);
                            }
                        }
                        Err(why) => {
                            sycl_devices.entry((t, ours)).or_insert(format!("fails: {why}"));
                        }
                    }
                }
            }
        }
    }
    print_tables(&options, &targets, &c_runs, &c_notes, &rust, &sycl, &sycl_devices);
    print_against_ur(&options, &targets, (&c_runs, &c_notes), (&c_theirs, &c_theirs_notes));
    Ok(())
}

/// The platform under which UR's OpenCL adapter (the loader's own) lists
/// the device named `name` (`URT_PLATFORM` of the C programs): it lists each
/// OpenCL platform apart, with one device each here, and its own order.
fn ur_opencl_platform(kernel_submit: &Path, name: &str) -> Option<u32> {
    let count = run(kernel_submit, None, Layers::None, &["devices"], &[]).ok().and_then(|r| {
        r.stdout.lines().find_map(|l| l.strip_prefix("devices ").and_then(|n| n.trim().parse::<u32>().ok()))
    })?;
    (0..count).find(|i| {
        let platform = i.to_string();
        let probe = run(kernel_submit, None, Layers::None, &["run", "1", "1"], &[("URT_PLATFORM", &platform)]);
        probe.is_ok_and(|r| parse_kernel_submit(&r.stdout).0.as_deref() == Some(name))
    })
}

/// Files one `kernel_submit run`'s rows under target `t`, or why it gave
/// none; returns the device's name.
fn collect_kernel_submit(
    result: Result<cmdbuf_abi_harness::Run, String>,
    t: usize,
    runs: &mut BTreeMap<(usize, u32), Vec<Row>>,
    notes: &mut BTreeMap<usize, String>,
) -> Option<String> {
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            notes.insert(t, e);
            return None;
        }
    };
    let (name, rows) = parse_kernel_submit(&r.stdout);
    if r.exit != Some(0) {
        let why = r.stdout.lines().chain(r.stderr.lines()).find(|l| l.starts_with("not ok") || l.starts_with("skip"));
        notes.insert(t, format!("exit {:?}: {}", r.exit, why.unwrap_or("")));
    }
    for (n, row) in rows {
        runs.entry((t, n)).or_default().push(row);
    }
    name
}

/// The C program on our OpenCL library against UR's OpenCL adapter, per
/// OpenCL device: `ours` and `theirs` are the runs and notes of each.
type CRuns<'a> = (&'a BTreeMap<(usize, u32), Vec<Row>>, &'a BTreeMap<usize, String>);

fn print_against_ur(options: &Options, targets: &[Target], ours: CRuns<'_>, theirs: CRuns<'_>) {
    let opencl: Vec<usize> = (0..targets.len()).filter(|&t| targets[t].backend == "opencl").collect();
    if opencl.is_empty() {
        return;
    }
    println!(
        "\n## Through the loader from C: our OpenCL library against UR's OpenCL adapter (ns per kernel, medians of {} \
         rounds)\n",
        options.rounds
    );
    println!(
        "The same `kernel_submit` calls on each library, in turn within each round. ours / UR's: below 1 ours is \
         faster.\n"
    );
    println!(
        "| device | N | eager host ours | eager host UR's | eager+event host ours | eager+event host UR's | ours / UR's \
         | replay host ours | replay host UR's | ours / UR's | replay wall ours | replay wall UR's | ours / UR's |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let c = |runs: &BTreeMap<(usize, u32), Vec<Row>>, t: usize, n: u32, i: usize| {
        runs.get(&(t, n)).and_then(|rows| median(&rows.iter().map(|r| r[i]).collect::<Vec<_>>()))
    };
    let ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map_or("—".into(), |(a, b)| format!("{:.2}x", a / b));
    for &t in &opencl {
        let device = format!("`{}` {}", targets[t].label(), targets[t].name);
        for (who, (_, notes)) in [("ours", ours), ("UR's", theirs)] {
            if let Some(note) = notes.get(&t) {
                println!("| {device} | | {who}: {note} | | | | | | | | | | |");
            }
        }
        for &n in &options.sizes {
            let (o, u) = (|i| c(ours.0, t, n, i), |i| c(theirs.0, t, n, i));
            let cells = [
                cell(o(0)),
                cell(u(0)),
                cell(o(2)),
                cell(u(2)),
                ratio(o(2), u(2)),
                cell(o(4)),
                cell(u(4)),
                ratio(o(4), u(4)),
                cell(o(5)),
                cell(u(5)),
                ratio(o(5), u(5)),
            ];
            println!("| {device} | {n} | {} |", cells.join(" | "));
        }
    }
}

fn print_tables(
    options: &Options,
    targets: &[Target],
    c_runs: &BTreeMap<(usize, u32), Vec<Row>>,
    c_notes: &BTreeMap<usize, String>,
    rust: &RustFigures,
    sycl: &SyclRuns,
    sycl_devices: &BTreeMap<(usize, bool), String>,
) {
    let c = |t: usize, n: u32, i: usize| {
        c_runs.get(&(t, n)).and_then(|rows| median(&rows.iter().map(|r| r[i]).collect::<Vec<_>>()))
    };
    println!(
        "## Through the loader from C against the Rust API (ns per kernel, medians of {} rounds)\n",
        options.rounds
    );
    println!(
        "C: `kernel_submit` (axpb over 256 work-items, arguments with each launch); Rust: `cmdbuf-bench --only \
         submission`, chain (an empty kernel, one event per launch; `eager axpb`: the chain as launches of the C \
         program's axpb with its three arguments, one event per launch). ABI cost: C with events minus Rust eager \
         axpb (host; the launches alike), C replay minus Rust replay (host; an empty kernel on the Rust side, so an \
         upper bound), per kernel.\n"
    );
    println!(
        "| device | N | C eager host | C eager wall | C eager+event host | C eager+event wall | C replay host | C replay \
         wall | Rust eager host | Rust eager wall | Rust eager axpb host | Rust eager axpb wall | Rust replay host | \
         Rust replay wall | ABI cost eager host | ABI cost replay host |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (t, target) in targets.iter().enumerate() {
        let device = format!("`{}` {}", target.label(), target.name);
        if let Some(note) = c_notes.get(&t) {
            println!("| {device} | | {note} | | | | | | | | | | | | | |");
        }
        for &n in &options.sizes {
            let r = |variant: &str, metric: &str| rust.get(target.backend, &target.name, variant, metric, n);
            let cost = |c: Option<f64>, r: Option<f64>| c.zip(r).map(|(c, r)| c - r);
            let cells = [
                c(t, n, 0),
                c(t, n, 1),
                c(t, n, 2),
                c(t, n, 3),
                c(t, n, 4),
                c(t, n, 5),
                r("eager", "host"),
                r("eager", "wall"),
                r("eager_axpb", "host"),
                r("eager_axpb", "wall"),
                r("replay", "host"),
                r("replay", "wall"),
                cost(c(t, n, 2), r("eager_axpb", "host")),
                cost(c(t, n, 4), r("replay", "host")),
            ];
            let cells: Vec<String> = cells.into_iter().map(cell).collect();
            println!("| {device} | {n} | {} |", cells.join(" | "));
        }
    }
    let opencl: Vec<usize> = (0..targets.len()).filter(|&t| targets[t].backend == "opencl").collect();
    if opencl.is_empty() {
        return;
    }
    println!(
        "\n## Through libsycl: `graph_submit kernel` on our OpenCL library and on UR's OpenCL adapter ({} \
         submissions a run, medians of {} rounds)\n",
        options.submissions, options.rounds
    );
    println!(
        "Per kernel in ns (the chain's figure over its nodes); graph host per submission in µs. Eager: the chain as \
         queue submissions; host: the submit calls; total: with the final wait.\n"
    );
    for &t in &opencl {
        for ours in [true, false] {
            let who = if ours { "ours" } else { "UR's" };
            let device = sycl_devices.get(&(t, ours)).map(String::as_str).unwrap_or("not run");
            println!("- `{}` {who}: {device}", targets[t].label());
        }
    }
    println!(
        "\n| device | nodes | adapter | eager host / kernel | eager total / kernel | graph host / submission (µs) | graph \
         total / kernel | eager host − Rust eager host |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let s = |t: usize, ours: bool, nodes: u32, i: usize| {
        sycl.get(&(t, ours, nodes)).and_then(|runs| median(&runs.iter().map(|f| f[i]).collect::<Vec<_>>()))
    };
    for &t in &opencl {
        for &nodes in &options.nodes {
            for ours in [true, false] {
                let per_kernel = |i: usize| s(t, ours, nodes, i).map(|us| us * 1000.0 / f64::from(nodes));
                let over_rust = per_kernel(2)
                    .zip(rust.get(targets[t].backend, &targets[t].name, "eager", "host", nodes))
                    .map(|(a, b)| a - b);
                let cells = [per_kernel(2), per_kernel(3), s(t, ours, nodes, 0), per_kernel(1), over_rust];
                let cells: Vec<String> = cells.into_iter().map(cell).collect();
                let who = if ours { "ours" } else { "UR's" };
                println!("| `{}` {} | {nodes} | {who} | {} |", targets[t].label(), targets[t].name, cells.join(" | "));
            }
        }
    }
    // The issue's flatness goal: a graph's submission host time from the
    // fewest nodes to the most.
    if let (Some(&few), Some(&most)) = (options.nodes.iter().min(), options.nodes.iter().max()) {
        println!("\nGraph submission host time, {most} nodes over {few} (goal: ≤ 1.5x):\n");
        for &t in &opencl {
            for ours in [true, false] {
                let ratio = s(t, ours, most, 0).zip(s(t, ours, few, 0)).map(|(m, f)| m / f);
                let who = if ours { "ours" } else { "UR's" };
                println!("- `{}` {who}: {}", targets[t].label(), ratio.map_or("—".into(), |r| format!("{r:.2}x")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_submit_rows() {
        let out = "devices 1\ndevice opencl pthread-skylake-avx512-AMD EPYC\nrow 1 1.0 2.0 3.0 4.0 5.0 6.0\n\
                   row 10 1 2 3\nnot ok x\nrow 100 10 20 30 40 50 60.5\nok kernel_submit\n";
        let (name, rows) = parse_kernel_submit(out);
        assert_eq!(name.as_deref(), Some("pthread-skylake-avx512-AMD EPYC"));
        assert_eq!(rows, vec![(1, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), (100, [10.0, 20.0, 30.0, 40.0, 50.0, 60.5])]);
    }

    #[test]
    fn graph_submit_lines() {
        let (device, figures) = parse_graph_submit("device Intel(R) OpenCL / CPU\nok kernel 10 200 1.5 2 30 40\n");
        assert_eq!(device.as_deref(), Some("Intel(R) OpenCL / CPU"));
        assert_eq!(figures, Ok([1.5, 2.0, 30.0, 40.0]));
        assert_eq!(parse_graph_submit("error no USM").1, Err("error no USM".into()));
        assert_eq!(parse_graph_submit("").1, Err("no output".into()));
    }

    #[test]
    fn rust_figures_are_medians_of_the_native_chain_records() {
        let record = |device: &str, shape: &str, median: f64| {
            let backend = device.split(':').next().unwrap_or("");
            format!(
                r#"{{"device":"{device}","backend":"{backend}","device_name":"PoCL","benchmark":"submission","shape":"{shape}","variant":"eager","metric":"host_ns_per_node","n":10,"median":{median}}}"#
            )
        };
        let mut rust = RustFigures::default();
        for m in [1.0, 5.0, 3.0] {
            let json = format!(
                "[{},{},{},{}]",
                record("opencl:0", "chain", m),
                record("opencl:0 emulated", "chain", 99.0),
                record("opencl:0", "fork_join", 77.0),
                record("vulkan:0", "chain", 55.0)
            );
            rust.add(&json).unwrap();
        }
        assert_eq!(rust.get("opencl", "PoCL", "eager", "host", 10), Some(3.0));
        assert_eq!(rust.get("vulkan", "PoCL", "eager", "host", 10), Some(55.0));
        assert_eq!(rust.get("opencl", "PoCL", "eager", "wall", 10), None);
        assert!(rust.add("{}").is_err());
    }

    #[test]
    fn medians_and_cells() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(cell(Some(1234.4)), "1234");
        assert_eq!(cell(Some(12.34)), "12.3");
        assert_eq!(cell(None), "—");
    }
}
