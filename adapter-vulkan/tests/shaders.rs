//! The committed SPIR-V of the adapter's internal shaders is what
//! `shaders/regenerate.sh` makes of their GLSL, checked where the same
//! glslangValidator is installed (CI installs it). Elsewhere the test is
//! listed ignored with the reason, and fails when run anyway
//! (`--include-ignored`) or when `UR_RS_REQUIRE_TOOLS=1` (set by CI) rather
//! than passing without having checked.

use std::path::Path;

use libtest_mimic::{Arguments, Failed, Trial};

// The repository's SPIR-V check, shared with the conformance suite's test
// of its kernels (which also runs the module's own checks).
#[allow(dead_code)]
#[path = "../../conformance/tests/support/fresh.rs"]
mod fresh;

fn main() {
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let name = "internal_shaders_are_current";
    let tools = [("glslangValidator", "--version")];
    let trial = match fresh::missing_tools(&tools, &dir.join("glslang-version.txt"), "Debian: glslang-tools") {
        None => Trial::test(name, move || internal_shaders_are_current(&dir).map_err(Failed::from)),
        Some(why) => {
            // CI installs the tool (`UR_RS_REQUIRE_TOOLS=1`): there its absence fails.
            let required = fresh::tools_required();
            println!("ignored {name}: {why}");
            let prefix = if required { "UR_RS_REQUIRE_TOOLS=1 but " } else { "cannot run here: " };
            Trial::test(name, move || Err(Failed::from(format!("{prefix}{why}")))).with_ignored_flag(!required)
        }
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}

fn internal_shaders_are_current(dir: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("glslang-version.txt")).map_err(|e| format!("glslang-version.txt: {e}"))?;
    for (file, committed) in cmdbuf_vulkan::internal_shaders() {
        fresh::spirv_is_current(&dir.join(file), None, committed, "shaders/regenerate.sh")?;
    }
    Ok(())
}
