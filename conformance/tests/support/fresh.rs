//! Whether committed SPIR-V is current: what the repository's
//! `regenerate.sh` scripts make of its GLSL with the compiler recorded next
//! to it. The adapters' internal shaders, the conformance kernels and the
//! bench's kernel are committed as SPIR-V so that building needs no shader
//! compiler; their tests check them with these functions where the same
//! compiler is installed, and say why not elsewhere.
//!
//! Outputs differ between compiler versions, so a check runs only with the
//! version that made the files (first lines of the tools' version output,
//! recorded by the scripts).

use std::path::Path;
use std::process::Command;

use libtest_mimic::{Failed, Trial};

/// The first line of `tool arg`'s output, or `None` when it does not run.
pub fn tool_version(tool: &str, arg: &str) -> Option<String> {
    let out = Command::new(tool).arg(arg).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_string())
}

/// Why a check cannot run here: one of `tools` (name and version argument)
/// is missing (`install` says where from), or their versions, one per line,
/// are not the ones the file `recorded` names. A missing record is no
/// reason to skip: the file belongs to the repository, and the check fails
/// on it.
pub fn missing_tools(tools: &[(&str, &str)], recorded: &Path, install: &str) -> Option<String> {
    let mut found = Vec::new();
    for &(tool, arg) in tools {
        match tool_version(tool, arg) {
            Some(v) => found.push(v),
            None => return Some(format!("{tool} is not installed ({install})")),
        }
    }
    let recorded = std::fs::read_to_string(recorded).ok()?;
    let found = found.join("\n");
    (found.trim() != recorded.trim())
        .then(|| format!("the tools here are `{}`, the files were made with `{}`", found.trim(), recorded.trim()))
}

/// Whether `UR_RS_REQUIRE_TOOLS=1` (set by CI, which installs the tools)
/// says that a check's absent tools fail it rather than leave it ignored.
pub fn tools_required() -> bool {
    std::env::var_os("UR_RS_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// The trial `name` running `check`, or, when `missing` says why it cannot
/// run here, listed ignored with the reason (failing if run anyway), or
/// failing when `UR_RS_REQUIRE_TOOLS=1` (set by CI, which installs the
/// tools: glslangValidator, clang-15, llvm-spirv-15, of the versions that
/// made the committed files).
pub fn tool_trial(
    name: &str,
    missing: Option<String>,
    check: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Trial {
    match missing {
        None => Trial::test(name, move || check().map_err(Failed::from)),
        Some(why) if tools_required() => {
            Trial::test(name, move || Err(Failed::from(format!("UR_RS_REQUIRE_TOOLS=1 but {why}"))))
        }
        Some(why) => {
            eprintln!("{name}: ignored: {why}");
            Trial::test(name, move || Err(Failed::from(format!("ran nothing: {why}")))).with_ignored_flag(true)
        }
    }
}

/// The SPIR-V glslangValidator makes of the compute shader `source`, as the
/// `regenerate.sh` scripts call it, with `include` as an include directory.
pub fn compile_glsl(source: &Path, include: Option<&Path>) -> Result<Vec<u8>, String> {
    let name = source.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    // The process id keeps concurrent test binaries apart.
    let out = std::env::temp_dir().join(format!("ur-rs-{}-{name}.spv", std::process::id()));
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
    let fresh = std::fs::read(&out).map_err(|e| format!("the compiled SPIR-V of {name}: {e}"));
    let _ = std::fs::remove_file(&out);
    fresh
}

/// Checks that `committed` is what `source` compiles to (see
/// [`compile_glsl`]); the error names the file and `regenerate`, the
/// script that makes it.
pub fn spirv_is_current(
    source: &Path,
    include: Option<&Path>,
    committed: &[u8],
    regenerate: &str,
) -> Result<(), String> {
    if compile_glsl(source, include)? != committed {
        let name = source.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        return Err(format!("{name}: the committed SPIR-V is stale; run {regenerate}"));
    }
    Ok(())
}

/// One check of this module: `Err` says what went wrong.
pub type SelfCheck = fn() -> Result<(), String>;

/// The checks of this module itself, by name, for a test binary to run
/// (`kernels_current`).
pub const SELF_CHECKS: [(&str, SelfCheck); 2] = [
    ("fresh::a_tool_that_does_not_run_is_missing_and_named", a_tool_that_does_not_run_is_missing_and_named),
    ("fresh::a_missing_record_is_no_reason_to_skip", a_missing_record_is_no_reason_to_skip),
];

fn a_tool_that_does_not_run_is_missing_and_named() -> Result<(), String> {
    let why = missing_tools(&[("ur-rs-no-such-tool", "--version")], Path::new("/nonexistent"), "nowhere");
    if why.as_deref() != Some("ur-rs-no-such-tool is not installed (nowhere)") {
        return Err(format!("a tool that does not run: {why:?}"));
    }
    match tool_version("ur-rs-no-such-tool", "--version") {
        None => Ok(()),
        Some(v) => Err(format!("a tool that does not run has version {v:?}")),
    }
}

fn a_missing_record_is_no_reason_to_skip() -> Result<(), String> {
    // `true` runs everywhere this crate builds and prints nothing.
    match missing_tools(&[("true", "--version")], Path::new("/nonexistent/record.txt"), "") {
        None => Ok(()),
        Some(why) => Err(format!("skipped for a missing record: {why}")),
    }
}
