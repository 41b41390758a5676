//! The committed PTX of the adapter's copy and fill kernels
//! (`kernels/memory.ptx`) is what `kernels/regenerate.sh` makes of
//! `kernels/memory.cl`, and so is the device test's
//! (`tests/kernels/dpcpp_form.ptx`), checked where the same clang is installed (CI
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("kernels");
    let tools = [("clang-15", "--version")];
    let missing = fresh::missing_tools(&tools, &dir.join("clang-version.txt"), "Debian: clang-15");
    let sources = [dir.join("memory.cl"), root.join("tests/kernels/dpcpp_form.cl")];
    let trial = fresh::tool_trial("internal_kernels_are_current", missing, move || {
        internal_kernels_are_current(&dir.join("regenerate.sh"), &sources)
    });
    libtest_mimic::run(&args, vec![trial]).exit();
}

/// Runs the script on copies of the sources in a directory of its own and
/// compares each PTX it makes with the committed one beside its source.
fn internal_kernels_are_current(script: &Path, sources: &[std::path::PathBuf]) -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!("ur-rs-cuda-kernels-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let result = (|| {
        std::fs::copy(script, scratch.join("regenerate.sh")).map_err(|e| format!("regenerate.sh: {e}"))?;
        let mut copies = Vec::new();
        for source in sources {
            let copy = scratch.join(source.file_name().ok_or("a source without a name")?);
            std::fs::copy(source, &copy).map_err(|e| format!("{}: {e}", source.display()))?;
            copies.push(copy);
        }
        let out = Command::new("bash")
            .arg(scratch.join("regenerate.sh"))
            .args(&copies)
            .output()
            .map_err(|e| format!("regenerate.sh does not run: {e}"))?;
        if !out.status.success() {
            return Err(format!("regenerate.sh failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        for (source, copy) in sources.iter().zip(&copies) {
            let (made, committed) = (copy.with_extension("ptx"), source.with_extension("ptx"));
            let made = std::fs::read_to_string(&made).map_err(|e| format!("made PTX: {e}"))?;
            let committed = std::fs::read_to_string(&committed).map_err(|e| format!("{}: {e}", committed.display()))?;
            if made != committed {
                return Err(format!(
                    "{} differs from what kernels/regenerate.sh makes of its source: run it",
                    source.with_extension("ptx").display()
                ));
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}
