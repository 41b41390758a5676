//! The committed kernel binaries are what their sources compile to: the
//! Vulkan library's SPIR-V (`src/kernels/vulkan/regenerate.sh`), the
//! programs of `src/kernels/programs` (`regenerate.sh` there) and the bench's
//! own SPIR-V kernel (`bench/src/kernels/regenerate.sh`), checked where
//! the tools that made them are installed, of the same versions (outputs
//! differ between versions). Elsewhere each check is listed ignored with the
//! reason, and fails when run anyway (`--include-ignored`) or when
//! `UR_RS_REQUIRE_TOOLS=1` (set by CI, which installs the tools).

mod support;

use std::path::Path;
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};
use support::fresh::{missing_tools, spirv_is_current};

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernels");
    let vulkan = root.join("vulkan");
    let programs = root.join("programs");
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/src/kernels");
    let glslang = [("glslangValidator", "--version")];
    let library = vulkan.clone();
    let mut trials = vec![
        support::fresh::tool_trial(
            "vulkan_spirv_is_current",
            missing(&glslang, &vulkan.join("glslang-version.txt")),
            move || vulkan_spirv_is_current(&vulkan),
        ),
        support::fresh::tool_trial(
            "bench_spirv_is_current",
            missing(&glslang, &bench.join("glslang-version.txt")),
            move || bench_spirv_is_current(&bench, &library),
        ),
        support::fresh::tool_trial(
            "program_binaries_are_current",
            missing(
                &[("clang-15", "--version"), ("llvm-spirv-15", "--version"), ("glslangValidator", "--version")],
                &programs.join("tools.txt"),
            ),
            move || program_binaries_are_current(&programs),
        ),
    ];
    trials.extend(
        support::fresh::SELF_CHECKS.map(|(name, check)| Trial::test(name, move || check().map_err(Failed::from))),
    );
    libtest_mimic::run(&args, trials).exit();
}

/// Where the tools come from.
const INSTALL: &str = "Debian: glslang-tools, clang-15, llvm-spirv-15";

/// Why the check cannot run here (see [`missing_tools`]).
fn missing(tools: &[(&str, &str)], recorded: &Path) -> Option<String> {
    missing_tools(tools, recorded, INSTALL)
}

fn vulkan_spirv_is_current(dir: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("glslang-version.txt")).map_err(|e| format!("glslang-version.txt: {e}"))?;
    for (_, file, committed) in cmdbuf_conformance::kernels::vulkan::SOURCES {
        spirv_is_current(&dir.join(file), None, committed, "src/kernels/vulkan/regenerate.sh")?;
    }
    Ok(())
}

/// The bench's own kernel (`bench/src/kernels/sin_f32.comp`, which includes
/// the library's ABI header).
fn bench_spirv_is_current(dir: &Path, library: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("glslang-version.txt")).map_err(|e| format!("glslang-version.txt: {e}"))?;
    let committed = std::fs::read(dir.join("sin_f32.spv")).map_err(|e| format!("sin_f32.spv: {e}"))?;
    spirv_is_current(&dir.join("sin_f32.comp"), Some(library), &committed, "bench/src/kernels/regenerate.sh")
}

fn program_binaries_are_current(dir: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("tools.txt")).map_err(|e| format!("tools.txt: {e}"))?;
    let base = std::env::temp_dir().join(format!("cmdbuf-conformance-programs-{}", std::process::id()));
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
