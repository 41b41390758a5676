//! The committed kernel binaries are what their sources compile to: the
//! Vulkan library's SPIR-V (`src/kernels/vulkan/regenerate.sh`), the
//! programs of `src/kernels/programs` (`regenerate.sh` there) and the bench's
//! own SPIR-V kernel (`bench/src/kernels/regenerate.sh`), checked where
//! the tools that made them are installed, of the same versions (outputs
//! differ between versions). Elsewhere each check is listed ignored with the
//! reason, and fails when run anyway (`--include-ignored`) or when
//! `UR_RS_REQUIRE_TOOLS=1` (set by CI, which installs the tools).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::Arguments;

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernels");
    let vulkan = root.join("vulkan");
    let programs = root.join("programs");
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/src/kernels");
    let glslang = [("glslangValidator", "--version")];
    let library = vulkan.clone();
    let trials = vec![
        support::tool_trial(
            "vulkan_spirv_is_current",
            missing(&glslang, &vulkan.join("glslang-version.txt")),
            move || vulkan_spirv_is_current(&vulkan),
        ),
        support::tool_trial(
            "bench_spirv_is_current",
            missing(&glslang, &bench.join("glslang-version.txt")),
            move || bench_spirv_is_current(&bench, &library),
        ),
        support::tool_trial(
            "program_binaries_are_current",
            missing(
                &[("clang-15", "--version"), ("llvm-spirv-15", "--version"), ("glslangValidator", "--version")],
                &programs.join("tools.txt"),
            ),
            move || program_binaries_are_current(&programs),
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}

/// The first line of `tool arg`'s output, or `None` when it does not run.
fn version(tool: &str, arg: &str) -> Option<String> {
    let out = Command::new(tool).arg(arg).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_string())
}

/// Why the check cannot run here: a tool is missing, or the tools' versions
/// (first lines of their version output, one per line) are not the ones
/// `recorded` names.
fn missing(tools: &[(&str, &str)], recorded: &Path) -> Option<String> {
    let mut found = Vec::new();
    for &(tool, arg) in tools {
        match version(tool, arg) {
            Some(v) => found.push(v),
            None => return Some(format!("{tool} is not installed (Debian: glslang-tools, clang-15, llvm-spirv-15)")),
        }
    }
    // A missing record is not a reason to skip: the file belongs to the
    // repository, and the check fails on it.
    let recorded = std::fs::read_to_string(recorded).ok()?;
    let found = found.join("\n");
    (found.trim() != recorded.trim())
        .then(|| format!("the tools here are `{}`, the files were made with `{}`", found.trim(), recorded.trim()))
}

/// The SPIR-V glslangValidator makes of the compute shader `source`, as the
/// `regenerate.sh` scripts call it, with `include` as an include directory.
fn compile_glsl(source: &Path, include: Option<&Path>) -> Result<Vec<u8>, String> {
    let name = source.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let out: PathBuf = std::env::temp_dir().join(format!("ur-conformance-{}-{name}.spv", std::process::id()));
    let mut command = Command::new("glslangValidator");
    command.args(["-V", "--target-env", "vulkan1.2"]);
    if let Some(dir) = include {
        command.arg(format!("-I{}", dir.display()));
    }
    let status =
        command.arg(source).arg("-o").arg(&out).output().map_err(|e| format!("glslangValidator does not run: {e}"))?;
    if !status.status.success() {
        return Err(format!("{name} does not compile: {}", String::from_utf8_lossy(&status.stdout)));
    }
    let fresh = std::fs::read(&out).map_err(|e| format!("the compiled SPIR-V: {e}"));
    let _ = std::fs::remove_file(&out);
    fresh
}

fn vulkan_spirv_is_current(dir: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("glslang-version.txt")).map_err(|e| format!("glslang-version.txt: {e}"))?;
    for (_, file, committed) in ur_conformance::kernels::vulkan::SOURCES {
        if compile_glsl(&dir.join(file), None)? != committed {
            return Err(format!("{file}: the committed SPIR-V is stale; run src/kernels/vulkan/regenerate.sh"));
        }
    }
    Ok(())
}

/// The bench's own kernel (`bench/src/kernels/sin_f32.comp`, which includes
/// the library's ABI header).
fn bench_spirv_is_current(dir: &Path, library: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("glslang-version.txt")).map_err(|e| format!("glslang-version.txt: {e}"))?;
    let committed = std::fs::read(dir.join("sin_f32.spv")).map_err(|e| format!("sin_f32.spv: {e}"))?;
    if compile_glsl(&dir.join("sin_f32.comp"), Some(library))? != committed {
        return Err("bench/src/kernels/sin_f32.spv is stale: run bench/src/kernels/regenerate.sh".into());
    }
    Ok(())
}

fn program_binaries_are_current(dir: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("tools.txt")).map_err(|e| format!("tools.txt: {e}"))?;
    let base = std::env::temp_dir().join(format!("ur-conformance-programs-{}", std::process::id()));
    let copy = base.join("programs");
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    // The GLSL includes the Vulkan library's ABI header from ../vulkan.
    std::fs::create_dir_all(base.join("vulkan")).map_err(|e| io("a temporary directory", e))?;
    std::fs::copy(dir.join("../vulkan/ur_abi.glsl"), base.join("vulkan/ur_abi.glsl"))
        .map_err(|e| io("ur_abi.glsl", e))?;
    std::fs::create_dir_all(&copy).map_err(|e| io("a temporary directory", e))?;
    let mut files: Vec<_> =
        std::fs::read_dir(dir).map_err(|e| io("the directory", e))?.filter_map(|e| e.ok()).collect();
    files.sort_by_key(|e| e.file_name());
    for entry in &files {
        std::fs::copy(entry.path(), copy.join(entry.file_name())).map_err(|e| io("copying a kernel file", e))?;
    }
    let out = Command::new("bash").arg(copy.join("regenerate.sh")).output().map_err(|e| io("bash", e))?;
    let stale: Vec<String> = files
        .iter()
        .filter(|e| std::fs::read(e.path()).ok() != std::fs::read(copy.join(e.file_name())).ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let _ = std::fs::remove_dir_all(&base);
    if !out.status.success() {
        return Err(format!("regenerate.sh failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    if !stale.is_empty() {
        return Err(format!("stale committed files {stale:?}; run src/kernels/programs/regenerate.sh"));
    }
    Ok(())
}
