//! How a device builds SPIR-V kernels (UR's IL).
//!
//! A device whose `CL_DEVICE_IL_VERSION` lists SPIR-V takes the module with
//! `clCreateProgramWithIL` (PoCL 5, NVIDIA, Intel). PoCL 3.1 (Debian 12)
//! reports no IL, but reads SPIR 1.2 (LLVM bitcode, `cl_khr_spir`) with the
//! LLVM it was built with. For such a device the adapter translates the
//! module back to LLVM bitcode with the Khronos translator `llvm-spirv -r`
//! of the same LLVM major version (Debian: `llvm-spirv-15` for PoCL's LLVM 15;
//! `UR_RS_LLVM_SPIRV` names another) and builds it with
//! `clCreateProgramWithBinary` and `-x spir`. Without either, the device does
//! not list `SourceForm::SpirvKernel` and such programs are `InvalidBinary`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use cl3::types::cl_device_id;
use cmdbuf_core::{Result, err};

/// The environment variable naming the translator to use.
pub const TRANSLATOR_ENV: &str = "UR_RS_LLVM_SPIRV";
/// `CL_DEVICE_PLATFORM`.
const CL_DEVICE_PLATFORM: u32 = 0x1031;
/// `CL_PLATFORM_VERSION`.
const CL_PLATFORM_VERSION: u32 = 0x0901;

/// How SPIR-V reaches the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IlPath {
    /// `clCreateProgramWithIL`.
    Native,
    /// `llvm-spirv -r` with this translator, then SPIR 1.2 bitcode.
    Translate(PathBuf),
}

/// Whether an IL version string lists SPIR-V.
pub(crate) fn lists_spirv(il_version: Option<&str>) -> bool {
    il_version.is_some_and(|il| il.split_whitespace().any(|v| v.starts_with("SPIR-V")))
}

/// The LLVM major version a platform version string names (PoCL's
/// "... LLVM 15.0.6, ...").
fn llvm_major(platform_version: &str) -> Option<u32> {
    let at = platform_version.find("LLVM ")?;
    let digits: String = platform_version[at + 5..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn platform_version(device: cl_device_id) -> Option<String> {
    let platform = match cl3::device::get_device_info(device, CL_DEVICE_PLATFORM).ok()? {
        cl3::info_type::InfoType::Ptr(p) => p as cl3::types::cl_platform_id,
        _ => return None,
    };
    let bytes = cl3::platform::get_platform_data(platform, CL_PLATFORM_VERSION).ok()?;
    Some(String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_string())
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// The translator for a driver built on LLVM `major`: `UR_RS_LLVM_SPIRV`, else
/// `llvm-spirv-<major>`, else `llvm-spirv` when the LLVM version is unknown.
fn translator(major: Option<u32>) -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os(TRANSLATOR_ENV) {
        let p = PathBuf::from(explicit);
        return p.is_file().then_some(p);
    }
    match major {
        Some(m) => on_path(&format!("llvm-spirv-{m}")),
        None => on_path("llvm-spirv"),
    }
}

/// How `device` builds SPIR-V kernels, if it can.
pub(crate) fn il_path(device: cl_device_id, il_version: Option<&str>, extensions: &[String]) -> Option<IlPath> {
    if lists_spirv(il_version) {
        return Some(IlPath::Native);
    }
    if !extensions.iter().any(|e| e == "cl_khr_spir") {
        return None;
    }
    let major = platform_version(device).as_deref().and_then(llvm_major);
    let found = translator(major);
    tracing::debug!(?major, translator = ?found, "device reads SPIR 1.2; SPIR-V goes through the translator");
    found.map(IlPath::Translate)
}

/// Translates a SPIR-V module to LLVM bitcode with `translator`.
pub(crate) fn to_bitcode(translator: &Path, il: &[u8]) -> Result<Vec<u8>> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let stem = format!("ur-rs-spirv-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let dir = std::env::temp_dir();
    let (input, output) = (dir.join(format!("{stem}.spv")), dir.join(format!("{stem}.bc")));
    let result = (|| {
        std::fs::write(&input, il).map_err(|e| err!(OutOfHostMemory, "writing {}: {e}", input.display()))?;
        let out = Command::new(translator)
            .arg("-r")
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .output()
            .map_err(|e| err!(ProgramBuildFailure, "running {}: {e}", translator.display()))?;
        if !out.status.success() {
            return Err(err!(
                InvalidBinary,
                "{} could not translate the SPIR-V: {}",
                translator.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        std::fs::read(&output).map_err(|e| err!(ProgramBuildFailure, "reading {}: {e}", output.display()))
    })();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_llvm_version_of_pocl() {
        let v = "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG";
        assert_eq!(llvm_major(v), Some(15));
        assert_eq!(llvm_major("OpenCL 3.0 CUDA 12.8"), None);
        assert!(lists_spirv(Some("SPIR-V_1.0 SPIR-V_1.2")));
        assert!(!lists_spirv(Some("")));
        assert!(!lists_spirv(None));
    }
}
