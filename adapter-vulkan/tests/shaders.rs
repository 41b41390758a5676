//! The committed SPIR-V of the adapter's internal shaders is what
//! `shaders/regenerate.sh` makes of their GLSL, checked where the same
//! glslangValidator is installed (CI installs it). Elsewhere the test is
//! listed ignored with the reason, and fails when run anyway
//! (`--include-ignored`) or when `UR_RS_REQUIRE_TOOLS=1` (set by CI) rather
//! than passing without having checked.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let name = "internal_shaders_are_current";
    let trial = match why_not(&dir) {
        None => Trial::test(name, move || internal_shaders_are_current(&dir).map_err(Failed::from)),
        Some(why) => {
            // CI installs the tool (`UR_RS_REQUIRE_TOOLS=1`): there its absence fails.
            let required = std::env::var_os("UR_RS_REQUIRE_TOOLS").is_some_and(|v| v == "1");
            println!("ignored {name}: {why}");
            let prefix = if required { "UR_RS_REQUIRE_TOOLS=1 but " } else { "cannot run here: " };
            Trial::test(name, move || Err(Failed::from(format!("{prefix}{why}")))).with_ignored_flag(!required)
        }
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}

/// Why the shaders cannot be checked here: no glslangValidator, or another
/// version than the one that made them (outputs differ between versions).
fn why_not(dir: &Path) -> Option<String> {
    let version = match Command::new("glslangValidator").arg("--version").output() {
        Ok(out) if out.status.success() => {
            String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_string()
        }
        _ => return Some("glslangValidator is not installed (Debian: glslang-tools)".into()),
    };
    let recorded = match std::fs::read_to_string(dir.join("glslang-version.txt")) {
        Ok(recorded) => recorded,
        // Not a reason to skip: the file belongs to the repository.
        Err(_) => return None,
    };
    (version.trim() != recorded.trim()).then(|| {
        format!(
            "glslangValidator here is `{}`, the SPIR-V was generated with `{}` (outputs differ between versions)",
            version.trim(),
            recorded.trim()
        )
    })
}

fn internal_shaders_are_current(dir: &Path) -> Result<(), String> {
    std::fs::read_to_string(dir.join("glslang-version.txt")).map_err(|e| format!("glslang-version.txt: {e}"))?;
    for (file, committed) in ur_adapter_vulkan::internal_shaders() {
        let out: PathBuf = std::env::temp_dir().join(format!("ur-vulkan-{}-{file}.spv", std::process::id()));
        let status = Command::new("glslangValidator")
            .args(["-V", "--target-env", "vulkan1.2"])
            .arg(dir.join(file))
            .arg("-o")
            .arg(&out)
            .output()
            .map_err(|e| format!("glslangValidator does not run: {e}"))?;
        if !status.status.success() {
            return Err(format!("{file} does not compile: {}", String::from_utf8_lossy(&status.stdout)));
        }
        let fresh = std::fs::read(&out).map_err(|e| format!("the compiled SPIR-V of {file}: {e}"))?;
        let _ = std::fs::remove_file(&out);
        if fresh != committed {
            return Err(format!("{file}: the committed SPIR-V is stale; run shaders/regenerate.sh"));
        }
    }
    Ok(())
}
