//! # cmdbuf-abi-harness
//!
//! The ABI tests of the adapter libraries: C programs written against
//! `ur_api.h` and linked to Intel's UR loader (`abi/harness/c/`), and SYCL
//! programs compiled host-only with the system C++ compiler and linked to
//! DPC++'s `libsycl.so` (`abi/harness/sycl/`). Each library crate's
//! `tests/abi.rs` calls [`main`], which builds every program once (cached
//! by content under `target/ur-abi-programs/`), then runs each as one test
//! trial with `UR_ADAPTERS_FORCE_LOAD` naming the library and the loader's
//! full validation layer on.
//!
//! A program passes when it exits with 0 and the validation layer reported
//! no error and no leaked handle. It prints one line per check (`ok name` or
//! `not ok name: why`); exit code 77 means "skipped" with the reason on its
//! last line (`skip: ...`), for a capability the device lacks.
//!
//! A program that ran nothing is never reported as passed. What a program
//! needs of the device is declared in its source by `urt: needs ...` lines
//! (see [`Need`]), evaluated against the probe's answers before any trial
//! runs: a program whose needs are not met is listed ignored, the reason
//! printed. A program that still exits 77 fails (its declaration is
//! wrong), and so does an ignored trial run with `--include-ignored`.
//!
//! The loader and libsycl come from Intel's wheels (`scripts/oneapi-venv.sh`
//! installs them into `.oneapi/`; `UR_RS_ONEAPI` names another prefix).
//! Without them, or without a C/C++ compiler, the trials are reported
//! ignored with the reason, unless `UR_RS_REQUIRE_ONEAPI=1` (CI sets it),
//! which turns that into a failure. A library whose driver offers no device
//! (no CUDA on the machine) is ignored likewise, unless its backend is named
//! in `UR_RS_REQUIRE_DEVICES` (`cpu,opencl,vulkan` in CI).
//!
//! Where a library offers several devices (PoCL and Intel's OpenCL CPU
//! runtime beside it), every program runs on each, made the programs' first
//! device by `UR_DEVICE_SELECTOR=<backend>:<index>`, and the trials are
//! named `[opencl:0] ...`, `[opencl:1] ...`. An item `backend@text` of
//! `UR_RS_REQUIRE_DEVICES` (`opencl@Intel` in CI) fails the run unless one of
//! the library's devices is on a platform whose name contains `text`.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Failed, Trial};

/// Where Intel's UR headers, loader and SYCL runtime are.
#[derive(Clone, Debug)]
pub struct Oneapi {
    prefix: PathBuf,
}

impl Oneapi {
    /// Finds the wheels' prefix: `UR_RS_ONEAPI`, else `.oneapi/` at the
    /// repository root.
    pub fn find() -> Result<Oneapi, String> {
        let prefix = match std::env::var_os("UR_RS_ONEAPI") {
            Some(p) => PathBuf::from(p),
            None => repo_root().join(".oneapi"),
        };
        let oneapi = Oneapi { prefix };
        for needed in [
            oneapi.include().join("unified-runtime/ur_api.h"),
            oneapi.lib().join("libur_loader.so.0"),
            oneapi.lib().join("libsycl.so.9"),
        ] {
            if !needed.is_file() {
                return Err(format!(
                    "{} is missing (run scripts/oneapi-venv.sh, or set UR_RS_ONEAPI)",
                    needed.display()
                ));
            }
        }
        Ok(oneapi)
    }

    /// The headers.
    pub fn include(&self) -> PathBuf {
        self.prefix.join("include")
    }

    /// The libraries.
    pub fn lib(&self) -> PathBuf {
        self.prefix.join("lib")
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Which runtime a test program is written against.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// C against `ur_api.h`, linked to `libur_loader.so`.
    CApi,
    /// C++ against `sycl/sycl.hpp`, linked to `libsycl.so`.
    Sycl,
}

/// One test program.
#[derive(Clone, Debug)]
pub struct Program {
    /// The trial's name: `c::usm`, `sycl::graph_explicit`.
    pub name: String,
    /// C or SYCL.
    pub kind: Kind,
    /// Its source file.
    pub source: PathBuf,
    /// Whether it also runs without the validation layer (its source holds
    /// the line `urt: also without layers`), so that calls the layer would
    /// answer itself reach the adapter.
    pub also_without_layers: bool,
    /// What it needs of the device: its `urt: needs` lines, each a list of
    /// needs that must all hold.
    pub needs: Vec<Need>,
}

/// One need of a program, from a `urt: needs <term> <term> ...` line of
/// its source; a term is a capability or several separated by `|`, any one
/// of which will do. Capabilities: a backend (`cpu`, `opencl`, `vulkan`,
/// `cuda`), `spirv` (the device lists an IL version) and `kernels` (the
/// device builds one of the forms of `urt_axpb_program`: every backend but
/// OpenCL without SPIR-V).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need(pub Vec<String>);

/// What the probe found out about a library's device, for [`Need`]s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The library's backend: `cpu`, `opencl`, `vulkan`, `cuda`.
    pub backend: String,
    /// Whether the device lists an IL version.
    pub spirv: bool,
}

impl Capabilities {
    fn has(&self, capability: &str) -> Result<bool, String> {
        match capability {
            "cpu" | "opencl" | "vulkan" | "cuda" => Ok(self.backend == capability),
            "spirv" => Ok(self.spirv),
            "kernels" => Ok(self.backend != "opencl" || self.spirv),
            other => Err(format!("unknown capability {other:?} in a `urt: needs` line")),
        }
    }
}

impl Program {
    /// Why this program cannot run on a device with `caps` (`None`: it can).
    /// An unknown capability is an error, not a reason to skip.
    pub fn unmet(&self, caps: &Capabilities) -> Result<Option<String>, String> {
        for Need(alternatives) in &self.needs {
            let mut met = false;
            for capability in alternatives {
                met |= caps.has(capability)?;
            }
            if !met {
                return Ok(Some(format!("needs {} (the {} device lacks it)", alternatives.join(" or "), caps.backend)));
            }
        }
        Ok(None)
    }
}

/// The needs declared in a program's source (up to a `*/` on the line).
pub fn parse_needs(source: &str) -> Vec<Need> {
    source
        .lines()
        .filter_map(|line| line.split_once("urt: needs ").map(|(_, rest)| rest))
        // A C comment may close on the same line.
        .map(|rest| rest.split("*/").next().unwrap_or_default())
        .flat_map(|rest| rest.split_whitespace().map(|term| Need(term.split('|').map(str::to_string).collect())))
        .collect()
}

/// Every test program, by kind then name.
pub fn programs() -> Vec<Program> {
    let mut out = Vec::new();
    for (kind, dir, ext, prefix) in [(Kind::CApi, "c", "c", "c"), (Kind::Sycl, "sycl", "cpp", "sycl")] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        sources.retain(|p| p.extension().is_some_and(|e| e == ext));
        sources.sort();
        for source in sources {
            let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let text = std::fs::read_to_string(&source).unwrap_or_default();
            let also_without_layers = text.contains("urt: also without layers");
            let needs = parse_needs(&text);
            out.push(Program { name: format!("{prefix}::{stem}"), kind, source, also_without_layers, needs });
        }
    }
    out
}

/// A timing program of `ur-abi-compare` (`abi/harness/bench/`), which
/// `ur-abi-run bundle` writes as `bench-<stem>`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bench {
    /// `graph_submit.cpp`: command-graph and eager submission through libsycl.
    GraphSubmit,
    /// `kernel_submit.c`: eager launches and command-buffer replay through the loader.
    KernelSubmit,
}

impl Bench {
    /// Every timing program.
    pub const ALL: [Bench; 2] = [Bench::GraphSubmit, Bench::KernelSubmit];

    /// Its file name in a bundle.
    pub fn file(self) -> &'static str {
        match self {
            Bench::GraphSubmit => "bench-graph_submit",
            Bench::KernelSubmit => "bench-kernel_submit",
        }
    }

    /// The program to build.
    pub fn program(self) -> Program {
        let (stem, kind, ext) = match self {
            Bench::GraphSubmit => ("graph_submit", Kind::Sycl, "cpp"),
            Bench::KernelSubmit => ("kernel_submit", Kind::CApi, "c"),
        };
        Program {
            name: format!("bench::{stem}"),
            kind,
            source: Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("bench/{stem}.{ext}")),
            also_without_layers: false,
            needs: Vec::new(),
        }
    }
}

/// The C and C++ compilers (`CC`, `CXX`, else `cc` and `c++`).
fn compiler(kind: Kind) -> String {
    match kind {
        Kind::CApi => std::env::var("CC").unwrap_or_else(|_| "cc".into()),
        Kind::Sycl => std::env::var("CXX").unwrap_or_else(|_| "c++".into()),
    }
}

/// The folder of `ur_rs_cpu.h`, the CPU adapter's kernel-table header,
/// which C programs include to hand the CPU adapter C kernels.
fn cpu_include() -> PathBuf {
    repo_root().join("adapter-cpu/include")
}

/// Builds `program`, reusing an earlier build of the same sources and flags.
pub fn build(oneapi: &Oneapi, program: &Program, cache: &Path) -> Result<PathBuf, String> {
    let dir = program.source.parent().unwrap_or(Path::new("."));
    let mut args: Vec<String> = match program.kind {
        Kind::CApi => vec!["-std=c11".into(), "-Wall".into(), "-Werror".into()],
        Kind::Sycl => vec!["-std=c++17".into(), "-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING".into(), "-Wall".into()],
    };
    args.extend([
        "-O1".into(),
        "-g".into(),
        format!("-I{}", dir.display()),
        format!("-I{}", oneapi.include().display()),
        format!("-I{}", cpu_include().display()),
        program.source.display().to_string(),
        format!("-L{}", oneapi.lib().display()),
        format!("-Wl,-rpath,{}", oneapi.lib().display()),
    ]);
    args.push(match program.kind {
        Kind::CApi => "-l:libur_loader.so.0".into(),
        Kind::Sycl => "-l:libsycl.so.9".into(),
    });
    args.push("-lpthread".into());
    // The cache key: the compiler, the flags, and every source and header
    // of the program's folder.
    let mut hasher = DefaultHasher::new();
    compiler(program.kind).hash(&mut hasher);
    args.hash(&mut hasher);
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    inputs.sort();
    inputs.push(cpu_include().join("ur_rs_cpu.h"));
    // The timing programs include the test programs' header from `c/`.
    inputs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("c/urt.h"));
    for input in inputs {
        std::fs::read(&input).map_err(|e| format!("{}: {e}", input.display()))?.hash(&mut hasher);
    }
    std::fs::create_dir_all(cache).map_err(|e| e.to_string())?;
    let stem = program.name.replace("::", "-");
    let exe = cache.join(format!("{stem}-{:016x}", hasher.finish()));
    if exe.is_file() {
        return Ok(exe);
    }
    // Trials of one program (with and without layers) build it on two
    // threads at once: each into a file of its own, renamed into place.
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let partial =
        exe.with_extension(format!("partial-{}-{}", std::process::id(), BUILDS.fetch_add(1, Ordering::Relaxed)));
    let output = Command::new(compiler(program.kind))
        .args(&args)
        .arg("-o")
        .arg(&partial)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", compiler(program.kind)))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed to build {}:\n{}",
            compiler(program.kind),
            program.source.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    std::fs::rename(&partial, &exe).map_err(|e| e.to_string())?;
    // Builds of earlier versions of the sources are of no further use.
    let current = exe.file_name().map(|n| n.to_os_string());
    for entry in std::fs::read_dir(cache).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let stale = name.to_string_lossy().strip_prefix(&format!("{stem}-")).is_some_and(|rest| !rest.contains('.'));
        if stale && Some(&name) != current.as_ref() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(exe)
}

/// What one run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// The exit code; `None` when it was killed (timeout, signal).
    pub exit: Option<i32>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// Whether it ran past its time.
    pub timed_out: bool,
}

/// How long one program may run.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Whether a run goes through the loader's validation layer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Layers {
    /// `UR_LAYER_FULL_VALIDATION`, its errors on standard error.
    FullValidation,
    /// No layer: every call reaches the adapter.
    None,
}

/// Runs `exe` with `args`, the UR loader forced onto `adapter` (or, with
/// `None`, left to find its adapters itself: UR's own OpenCL adapter).
pub fn run(
    exe: &Path,
    adapter: Option<&Path>,
    layers: Layers,
    args: &[&str],
    extra_env: &[(&str, &str)],
) -> Result<Run, String> {
    let mut command = Command::new(exe);
    command.args(args).env_remove("ONEAPI_DEVICE_SELECTOR").env_remove("UR_ENABLE_LAYERS");
    match adapter {
        Some(adapter) => command.env("UR_ADAPTERS_FORCE_LOAD", adapter),
        None => command.env_remove("UR_ADAPTERS_FORCE_LOAD"),
    };
    if layers == Layers::FullValidation {
        command
            .env("UR_ENABLE_LAYERS", "UR_LAYER_FULL_VALIDATION")
            .env("UR_LOG_VALIDATION", "level:error;output:stderr");
    }
    // The programs read kernels from the repository (their working directory
    // where the repository is not where this harness was built).
    if std::env::var_os("URT_REPO").is_none() && repo_root().join("abi").is_dir() {
        command.env("URT_REPO", repo_root());
    }
    let mut child = command
        .envs(extra_env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            timed_out = true;
            let _ = child.kill();
            break child.wait().map_err(|e| e.to_string())?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Run {
        exit: status.code(),
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
        timed_out,
    })
}

/// A run's outcome.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Exit 0, no validation error, no leak.
    Pass,
    /// Exit 77: the device lacks what the program needs.
    Skip(String),
    /// Anything else, with the evidence.
    Fail(String),
}

/// Validation-layer reports that are the layer's own mistakes, not the
/// adapter's: UR 0.12's lifetime validation checks optional handles
/// without a null test, so a null `pool` to `urUSM*Alloc` (which the spec
/// allows) is reported as "no valid references to handle 0".
const LAYER_FALSE_POSITIVES: [&str; 1] = ["There are no valid references to handle 0"];

/// The validation layer's error lines in `stderr`, less its false positives:
/// the null-handle reports above, and every report about a handle the
/// program declared untracked (`urt-untracked <handle>` on its standard
/// output). UR 0.12's leak checker does not register the events that
/// command-buffer appends and `urCommandBufferUpdateSignalEventExp` return,
/// the sub-buffers of `urMemBufferPartition`, nor the programs of
/// `urProgramLinkExp`, so using and releasing
/// them, as the spec asks, is reported as the use and release of a
/// nonexistent handle, with a negative count and the stack of the release.
pub fn validation_errors<'a>(stdout: &str, stderr: &'a str) -> Vec<&'a str> {
    let untracked: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("urt-untracked ")).map(str::trim).collect();
    let mut errors = Vec::new();
    let mut in_forgiven_stack = false;
    for line in stderr.lines().filter(|l| l.contains("<VALIDATION>[ERROR]")) {
        let frame = line.contains("[ERROR]: #");
        if frame && in_forgiven_stack {
            continue;
        }
        in_forgiven_stack = false;
        if LAYER_FALSE_POSITIVES.iter().any(|fp| line.contains(fp)) {
            continue;
        }
        if untracked.iter().any(|h| line.contains(&format!("handle {h}")) || line.contains(&format!("Handle {h} "))) {
            in_forgiven_stack = true;
            continue;
        }
        errors.push(line);
    }
    errors
}

/// Judges a run.
pub fn verdict(run: &Run) -> Verdict {
    let tail = |s: &str| s.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
    if run.timed_out {
        return Verdict::Fail(format!("timed out after {TIMEOUT:?}\n{}\n{}", tail(&run.stdout), tail(&run.stderr)));
    }
    let errors = validation_errors(&run.stdout, &run.stderr);
    if !errors.is_empty() {
        return Verdict::Fail(format!(
            "the validation layer reported {} error line(s):\n{}\n--- stdout:\n{}",
            errors.len(),
            errors.iter().take(30).copied().collect::<Vec<_>>().join("\n"),
            tail(&run.stdout)
        ));
    }
    match run.exit {
        Some(0) => Verdict::Pass,
        Some(77) => {
            let reason = run.stdout.lines().rev().find_map(|l| l.strip_prefix("skip: ")).unwrap_or("skipped");
            Verdict::Skip(reason.to_string())
        }
        code => Verdict::Fail(format!(
            "exit {code:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            tail(&run.stdout),
            tail(&run.stderr)
        )),
    }
}

fn required(var: &str, item: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1" || v.split(',').any(|x| x.trim() == item))
}

/// The test binary of an adapter library crate: one trial per program,
/// run on `library` (a file name such as `libur_adapter_rs_cpu.so`, found
/// next to the test executable) for `backend` (`cpu`, `opencl`, ...).
pub fn main(backend: &'static str, library: &'static str) {
    let args = Arguments::from_args();
    let setup = setup(backend, library);
    let targets = match &setup {
        Ok(ready) => ready.targets(backend),
        Err(_) => vec![Target::only(backend, false)],
    };
    let runs = programs().into_iter().flat_map(|p| {
        let without = p.also_without_layers.then(|| (p.clone(), Layers::None));
        std::iter::once((p, Layers::FullValidation)).chain(without)
    });
    let runs: Vec<(Program, Layers, Target)> =
        runs.flat_map(|(p, l)| targets.iter().map(move |t| (p.clone(), l, t.clone()))).collect();
    let trials = runs
        .into_iter()
        .map(|(program, layers, target)| {
            let suffix = if layers == Layers::None { " (no layers)" } else { "" };
            let name = format!("[{}] {}{suffix}", target.label, program.name);
            let cannot = match &setup {
                Err(reason) => Some(reason.clone()),
                Ok(_) => match program.unmet(&target.caps) {
                    Ok(unmet) => unmet,
                    Err(why) => return Trial::test(name, move || Err(why.into())),
                },
            };
            match (&setup, cannot) {
                (Ok(ready), None) => {
                    let ready = ready.clone();
                    Trial::test(name, move || ready.trial(&program, layers, &target))
                }
                (_, Some(reason)) => {
                    // A failed setup is said once, below.
                    if setup.is_ok() {
                        println!("ignored {name}: {reason}");
                    }
                    // Run anyway (`--include-ignored`), it fails: it ran nothing.
                    Trial::test(name, move || Err(format!("cannot run here: {reason}").into())).with_ignored_flag(true)
                }
                (Err(_), None) => unreachable!("a failed setup always has a reason"),
            }
        })
        .collect();
    if let Err(reason) = &setup {
        eprintln!("cmdbuf-abi tests of {backend} skipped: {reason}");
        let must = required("UR_RS_REQUIRE_ONEAPI", backend) && !reason.starts_with("no device");
        let must_device = required("UR_RS_REQUIRE_DEVICES", backend);
        if must || must_device {
            eprintln!("... but UR_RS_REQUIRE_ONEAPI / UR_RS_REQUIRE_DEVICES require them here");
            std::process::exit(1);
        }
    }
    if let (Ok(ready), Ok(required)) = (&setup, std::env::var("UR_RS_REQUIRE_DEVICES")) {
        let unmet = unmet_platforms(backend, &required, &ready.devices);
        if !unmet.is_empty() {
            eprintln!(
                "cmdbuf-abi tests of {backend}: UR_RS_REQUIRE_DEVICES asks for {}, but the library's devices are on {:?}",
                unmet.join(", "),
                ready.devices.iter().map(|d| d.platform.as_str()).collect::<Vec<_>>()
            );
            std::process::exit(1);
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// The items `backend@text` of `UR_RS_REQUIRE_DEVICES` (`value`) for
/// `backend` that no device in `devices` matches (its platform name
/// contains `text`, ignoring case).
fn unmet_platforms<'a>(backend: &str, value: &'a str, devices: &[ProbedDevice]) -> Vec<&'a str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| {
            item.split_once('@').is_some_and(|(b, text)| {
                let text = text.trim().to_lowercase();
                b.trim() == backend && !devices.iter().any(|d| d.platform.to_lowercase().contains(&text))
            })
        })
        .collect()
}

/// One device of a library, as the probe listed it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ProbedDevice {
    /// Its index among the library's devices (`UR_DEVICE_SELECTOR`'s).
    index: u32,
    /// Whether it lists an IL version.
    spirv: bool,
    /// Its platform's name.
    platform: String,
}

/// The device a trial runs its program on.
#[derive(Clone, Debug)]
struct Target {
    /// `opencl` where the library has one device, else `opencl:1`.
    label: String,
    /// `UR_DEVICE_SELECTOR` for the program, where the library has several.
    selector: Option<String>,
    caps: Capabilities,
}

impl Target {
    /// The library's only device.
    fn only(backend: &str, spirv: bool) -> Target {
        Target {
            label: backend.to_string(),
            selector: None,
            caps: Capabilities { backend: backend.to_string(), spirv },
        }
    }
}

/// The `device <index> spirv <0|1> <platform>` lines of the probe's output.
fn probed_devices(stdout: &str) -> Vec<ProbedDevice> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.trim().splitn(5, ' ');
            (words.next()? == "device").then_some(())?;
            let index = words.next()?.parse().ok()?;
            (words.next()? == "spirv").then_some(())?;
            let spirv = words.next()? == "1";
            Some(ProbedDevice { index, spirv, platform: words.next().unwrap_or("").to_string() })
        })
        .collect()
}

/// What every trial of one library needs.
#[derive(Clone, Debug)]
struct Ready {
    oneapi: Oneapi,
    library: PathBuf,
    cache: PathBuf,
    /// The first device's capabilities.
    caps: Capabilities,
    /// Every device of the library.
    devices: Vec<ProbedDevice>,
}

impl Ready {
    /// The devices the programs run on: the only one, or each of several.
    fn targets(&self, backend: &str) -> Vec<Target> {
        if self.devices.len() <= 1 {
            return vec![Target::only(backend, self.caps.spirv)];
        }
        self.devices
            .iter()
            .map(|d| Target {
                label: format!("{backend}:{}", d.index),
                selector: Some(format!("{backend}:{}", d.index)),
                caps: Capabilities { backend: backend.to_string(), spirv: d.spirv },
            })
            .collect()
    }

    fn trial(&self, program: &Program, layers: Layers, target: &Target) -> Result<(), Failed> {
        let exe = build(&self.oneapi, program, &self.cache)?;
        let env: Vec<(&str, &str)> = target.selector.iter().map(|s| ("UR_DEVICE_SELECTOR", s.as_str())).collect();
        let run = run(&exe, Some(&self.library), layers, &[], &env)?;
        let verdict = verdict(&run);
        if verdict == Verdict::Pass {
            print!("{}", run.stdout);
        }
        trial_result(verdict)
    }
}

/// A test trial's result from a run's verdict: only a pass passes. A skip
/// found at run time fails, since the program's `urt: needs` lines said it
/// could run here and it ran nothing.
pub fn trial_result(verdict: Verdict) -> Result<(), Failed> {
    match verdict {
        Verdict::Pass => Ok(()),
        Verdict::Skip(reason) => Err(format!(
            "exited 77 (skip: {reason}), though its `urt: needs` lines are met here: \
             a program that ran nothing does not pass; declare the need in its source"
        )
        .into()),
        Verdict::Fail(why) => Err(why.into()),
    }
}

fn setup(backend: &str, library: &str) -> Result<Ready, String> {
    let oneapi = Oneapi::find()?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let deps = exe.parent().ok_or("test executable has no folder")?;
    let library = deps.join(library);
    if !library.is_file() {
        return Err(format!("{} was not built", library.display()));
    }
    // target/<profile>/deps/.. /.. = target/
    let cache = deps.join("../../ur-abi-programs");
    for kind in [Kind::CApi, Kind::Sycl] {
        let cc = compiler(kind);
        if Command::new(&cc).arg("--version").output().is_err() {
            return Err(format!("no {cc} compiler"));
        }
    }
    let probe = Program {
        name: "probe".into(),
        kind: Kind::CApi,
        source: Path::new(env!("CARGO_MANIFEST_DIR")).join("probe/probe.c"),
        also_without_layers: false,
        needs: Vec::new(),
    };
    let exe = build(&oneapi, &probe, &cache)?;
    let run = run(&exe, Some(&library), Layers::None, &[], &[])?;
    let devices = run.stdout.lines().next().and_then(|l| l.trim().parse::<u32>().ok());
    match (run.exit, devices) {
        (Some(0), Some(0)) => return Err(format!("no device: the {backend} adapter found none")),
        (Some(0), Some(_)) => {}
        _ => return Err(format!("the probe failed: {}\n{}", run.stdout, run.stderr)),
    }
    let spirv = run.stdout.lines().any(|l| l.trim() == "spirv 1");
    let devices = probed_devices(&run.stdout);
    Ok(Ready { oneapi, library, cache, caps: Capabilities { backend: backend.to_string(), spirv }, devices })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 16: a program that exits 77 ran nothing, and its trial must
    /// not pass.
    #[test]
    fn a_program_exiting_77_is_not_a_pass() {
        let sh = Path::new("/bin/sh");
        let skip = run(sh, None, Layers::None, &["-c", "echo 'ok probe'; echo 'skip: no widget'; exit 77"], &[])
            .expect("/bin/sh runs");
        let skipped = verdict(&skip);
        assert_eq!(skipped, Verdict::Skip("no widget".into()));
        let failed = trial_result(skipped).expect_err("a skip at run time must fail the trial");
        assert!(format!("{failed:?}").contains("no widget"), "{failed:?}");
        let passed = run(sh, None, Layers::None, &["-c", "exit 0"], &[]).expect("/bin/sh runs");
        assert!(trial_result(verdict(&passed)).is_ok());
    }

    fn program(source: &str) -> Program {
        Program {
            name: "c::x".into(),
            kind: Kind::CApi,
            source: PathBuf::new(),
            also_without_layers: false,
            needs: parse_needs(source),
        }
    }

    fn caps(backend: &str, spirv: bool) -> Capabilities {
        Capabilities { backend: backend.into(), spirv }
    }

    #[test]
    fn needs_are_evaluated_before_running() {
        let p = program("/* urt: needs opencl|cpu spirv */\n// urt: needs kernels\nint main(void) {}");
        assert_eq!(p.needs.len(), 3);
        assert_eq!(p.unmet(&caps("opencl", true)), Ok(None));
        assert_eq!(p.unmet(&caps("cpu", true)), Ok(None));
        let vulkan = p.unmet(&caps("vulkan", true)).unwrap().expect("vulkan is neither opencl nor cpu");
        assert!(vulkan.contains("opencl or cpu"), "{vulkan}");
        let no_il = p.unmet(&caps("opencl", false)).unwrap().expect("no SPIR-V");
        assert!(no_il.contains("spirv"), "{no_il}");
        let kernels = program("urt: needs kernels");
        assert_eq!(kernels.unmet(&caps("vulkan", false)), Ok(None));
        assert!(kernels.unmet(&caps("opencl", false)).unwrap().is_some());
        assert!(program("int main(void) {}").unmet(&caps("cuda", false)).unwrap().is_none());
        assert!(program("urt: needs widgets").unmet(&caps("cpu", true)).is_err(), "an unknown need is an error");
    }

    #[test]
    fn probed_devices_and_required_platforms() {
        let out = "2\nspirv 0\ndevice 0 spirv 0 Portable Computing Language\ndevice 1 spirv 1 Intel(R) OpenCL\n";
        let devices = probed_devices(out);
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[1], ProbedDevice { index: 1, spirv: true, platform: "Intel(R) OpenCL".into() });
        assert!(unmet_platforms("opencl", "cpu,opencl,opencl@intel", &devices).is_empty());
        assert_eq!(unmet_platforms("opencl", "opencl@NVIDIA,vulkan@lavapipe", &devices), ["opencl@NVIDIA"]);
        assert!(unmet_platforms("vulkan", "opencl@NVIDIA", &devices).is_empty());
        assert!(unmet_platforms("opencl", "opencl@Intel", &devices[..1]).len() == 1);
    }

    /// Every program's declared needs are ones the harness knows.
    #[test]
    fn every_declared_need_is_known() {
        for p in programs() {
            for backend in ["cpu", "opencl", "vulkan", "cuda"] {
                for spirv in [false, true] {
                    assert!(p.unmet(&caps(backend, spirv)).is_ok(), "{}: {:?}", p.name, p.needs);
                }
            }
        }
    }
}
