//! The committed PTX of the adapter's copy and fill kernels
//! (`kernels/memory.ptx`) is what `kernels/regenerate.sh` makes of
//! `kernels/memory.cl`, checked where the same clang is installed (CI
//! installs it). Elsewhere the test is listed ignored with the reason, and
//! fails when run anyway (`--include-ignored`) or when `UR_RS_REQUIRE_TOOLS=1`
//! (set by CI) rather than passing without having checked.

use std::path::Path;
use std::process::Command;

use libtest_mimic::Arguments;

// The repository's check of which compiler made committed files.
#[allow(dead_code)]
#[path = "../../conformance/tests/support/fresh.rs"]
mod fresh;

fn main() {
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let tools = [("clang-15", "--version")];
    let missing = fresh::missing_tools(&tools, &dir.join("clang-version.txt"), "Debian: clang-15");
    let trial = fresh::tool_trial("internal_kernels_are_current", missing, move || internal_kernels_are_current(&dir));
    libtest_mimic::run(&args, vec![trial]).exit();
}

/// Runs the script on copies of the source in a directory of its own and
/// compares its PTX with the committed one.
fn internal_kernels_are_current(dir: &Path) -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!("ur-rs-cuda-kernels-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let result = (|| {
        for file in ["memory.cl", "regenerate.sh"] {
            std::fs::copy(dir.join(file), scratch.join(file)).map_err(|e| format!("{file}: {e}"))?;
        }
        let out = Command::new("bash")
            .arg(scratch.join("regenerate.sh"))
            .output()
            .map_err(|e| format!("regenerate.sh does not run: {e}"))?;
        if !out.status.success() {
            return Err(format!("regenerate.sh failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let made = std::fs::read_to_string(scratch.join("memory.ptx")).map_err(|e| format!("made PTX: {e}"))?;
        let committed = std::fs::read_to_string(dir.join("memory.ptx")).map_err(|e| format!("memory.ptx: {e}"))?;
        if made != committed {
            return Err("kernels/memory.ptx differs from what kernels/regenerate.sh makes of memory.cl: run it".into());
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}
