//! `ur-abi-compare`: the same SYCL programs on cmdbuf's OpenCL adapter and on
//! UR's own OpenCL adapter (linked into libsycl), on one OpenCL device.
//!
//! ```sh
//! cargo build --release -p cmdbuf-ur-adapter-opencl
//! cargo run --release -p cmdbuf-abi-harness --bin ur-abi-compare -- [--selector opencl:cpu] [--submissions 1000]
//! ur-abi-compare --programs DIR --library LIB   # programs built by `ur-abi-run bundle DIR`
//! ur-abi-compare stack ...                       # the whole stack per device: see `stack.rs`
//! ```
//!
//! Prints two tables: which test programs (`abi/harness/sycl/`) run on each
//! adapter and how the others fail, and the time per command-graph
//! submission (`abi/harness/bench/graph_submit.cpp`) for chains of kernel
//! launches, USM commands and buffer commands, beside the same chain
//! submitted eagerly (host time of the submit calls, and total with the
//! final wait).
//! cmdbuf's adapter is loaded with `UR_ADAPTERS_FORCE_LOAD`; UR's is what
//! libsycl finds by itself without it. `ONEAPI_DEVICE_SELECTOR` picks the
//! device in both (`opencl:cpu` selects PoCL and leaves NVIDIA's OpenCL out).

use std::path::{Path, PathBuf};

use cmdbuf_abi_harness::{Bench, Kind, Layers, Oneapi, Verdict, build, programs, run, verdict};

mod stack;

struct Options {
    library: PathBuf,
    /// Programs built elsewhere (`ur-abi-run bundle`), for machines that
    /// cannot build them.
    programs: Option<PathBuf>,
    selector: String,
    submissions: u32,
    nodes: Vec<u32>,
}

fn parse() -> Result<Options, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut options = Options {
        library: root.join("target/release/libur_adapter_rs_opencl.so"),
        programs: None,
        selector: "opencl:cpu".into(),
        submissions: 1000,
        nodes: vec![1, 10, 100],
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--library" => options.library = PathBuf::from(value()?),
            "--programs" => options.programs = Some(PathBuf::from(value()?)),
            "--selector" => options.selector = value()?,
            "--submissions" => options.submissions = value()?.parse().map_err(|e| format!("--submissions: {e}"))?,
            "--nodes" => {
                options.nodes = value()?
                    .split(',')
                    .map(|n| n.parse().map_err(|e| format!("--nodes: {e}")))
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if !options.library.is_file() {
        return Err(format!(
            "{} is missing: cargo build --release -p cmdbuf-ur-adapter-opencl (or --library PATH)",
            options.library.display()
        ));
    }
    Ok(options)
}

/// The two adapters compared.
#[derive(Copy, Clone)]
enum Side {
    Ours,
    Theirs,
}

fn run_on(exe: &Path, side: Side, options: &Options, args: &[&str]) -> Result<cmdbuf_abi_harness::Run, String> {
    let selector = [("ONEAPI_DEVICE_SELECTOR", options.selector.as_str())];
    let adapter = match side {
        Side::Ours => Some(options.library.as_path()),
        Side::Theirs => None,
    };
    run(exe, adapter, Layers::None, args, &selector)
}

fn describe(v: &Verdict) -> String {
    match v {
        Verdict::Pass => "runs".into(),
        Verdict::Skip(why) => format!("skipped: {why}"),
        Verdict::Fail(why) => {
            let first = why
                .lines()
                .find(|l| l.starts_with("not ok") || l.contains("exception") || l.contains("failed with"))
                .or_else(|| why.lines().next())
                .unwrap_or("")
                .trim();
            format!("fails: {first}")
        }
    }
}

/// The SYCL test programs and the timing program: built here, or taken
/// from a bundle.
fn executables(options: &Options) -> Result<(Vec<(String, PathBuf)>, PathBuf), String> {
    if let Some(dir) = &options.programs {
        let manifest = std::fs::read_to_string(dir.join("manifest.tsv")).map_err(|e| format!("manifest: {e}"))?;
        let sycl = manifest
            .lines()
            .filter_map(|l| {
                let mut f = l.split('\t');
                Some((f.next()?, f.next()?))
            })
            .filter(|(_, name)| name.starts_with("sycl::"))
            .map(|(file, name)| (name.to_string(), dir.join(file)))
            .collect();
        return Ok((sycl, dir.join(Bench::GraphSubmit.file())));
    }
    let oneapi = Oneapi::find()?;
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ur-abi-programs");
    let mut sycl = Vec::new();
    for program in programs().into_iter().filter(|p| p.kind == Kind::Sycl) {
        sycl.push((program.name.clone(), build(&oneapi, &program, &cache)?));
    }
    Ok((sycl, build(&oneapi, &Bench::GraphSubmit.program(), &cache)?))
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("stack") {
        if let Err(e) = stack::parse(std::env::args().skip(2)).and_then(stack::main) {
            eprintln!("ur-abi-compare stack: {e}");
            std::process::exit(2);
        }
        return;
    }
    let options = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ur-abi-compare: {e}");
            std::process::exit(2);
        }
    };
    let (sycl, bench) = executables(&options).unwrap_or_else(|e| {
        eprintln!("ur-abi-compare: {e}");
        std::process::exit(2);
    });

    println!("## SYCL programs (ONEAPI_DEVICE_SELECTOR={})\n", options.selector);
    println!("| program | cmdbuf OpenCL adapter | UR's OpenCL adapter |");
    println!("|---|---|---|");
    for (name, exe) in &sycl {
        let cells: Vec<String> = [Side::Ours, Side::Theirs]
            .into_iter()
            .map(|side| match run_on(exe, side, &options, &[]) {
                Ok(r) => describe(&verdict(&r)),
                Err(e) => format!("cannot run: {e}"),
            })
            .collect();
        println!("| {name} | {} | {} |", cells[0], cells[1]);
    }

    println!(
        "\n## Time per chain, {} submissions (us; graph: one submission of the recorded chain; eager: the \
         chain as plain queue commands; host: the submit calls; total: with the final wait)\n",
        options.submissions
    );
    println!("| chain | adapter | graph host | graph total | eager host | eager total |");
    println!("|---|---|---|---|---|---|");
    for shape in ["kernel", "usm", "buffer"] {
        for nodes in &options.nodes {
            for (side, name) in [(Side::Ours, "cmdbuf"), (Side::Theirs, "UR")] {
                let (nodes_s, subs) = (nodes.to_string(), options.submissions.to_string());
                let line = match run_on(&bench, side, &options, &[shape, &nodes_s, &subs]) {
                    Ok(r) => r.stdout.lines().last().unwrap_or("").to_string(),
                    Err(e) => format!("error {e}"),
                };
                println!("{}", chain_row(&format!("{nodes} {shape}"), name, &line));
            }
        }
    }
}

/// One table row from `graph_submit`'s output line.
fn chain_row(chain: &str, adapter: &str, line: &str) -> String {
    match line.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["ok", _, _, _, host, total, eager_host, eager] => {
            format!("| {chain} | {adapter} | {host} | {total} | {eager_host} | {eager} |")
        }
        _ => format!("| {chain} | {adapter} | {} | | | |", line.trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::chain_row;

    #[test]
    fn rows_from_the_bench_lines() {
        assert_eq!(
            chain_row("10 kernel", "cmdbuf", "ok kernel 10 1000 12.50 20.00 30.25 41.00"),
            "| 10 kernel | cmdbuf | 12.50 | 20.00 | 30.25 | 41.00 |"
        );
        assert_eq!(
            chain_row("1 usm", "UR", "error no USM device allocations"),
            "| 1 usm | UR | error no USM device allocations | | | |"
        );
    }
}
