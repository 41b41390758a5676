//! The committed SPIR-V of the adapter's internal shaders is what
//! `shaders/regenerate.sh` makes of their GLSL, checked where the same
//! glslangValidator is installed (CI installs it). Elsewhere the test is
//! listed ignored with the reason, and fails when run anyway
//! (`--include-ignored`) or when `UR_RS_REQUIRE_TOOLS=1` (set by CI) rather
//! than passing without having checked.

use std::path::Path;

use libtest_mimic::Arguments;

// The repository's SPIR-V check, shared with the conformance suite's test
// of its kernels (which also runs the module's own checks).
#[allow(dead_code)]
#[path = "../../conformance/tests/support/fresh.rs"]
mod fresh;

fn main() {
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let tools = [("glslangValidator", "--version")];
    let missing = fresh::missing_tools(&tools, &dir.join("glslang-version.txt"), "Debian: glslang-tools");
    let trial = fresh::tool_trial("internal_shaders_are_current", missing, move || internal_shaders_are_current(&dir));
    libtest_mimic::run(&args, vec![trial]).exit();
}

fn internal_shaders_are_current(dir: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("glslang-version.txt")).map_err(|e| format!("glslang-version.txt: {e}"))?;
    for (file, committed) in cmdbuf_vulkan::internal_shaders() {
        fresh::spirv_is_current(&dir.join(file), None, committed, "shaders/regenerate.sh")?;
    }
    Ok(())
}
