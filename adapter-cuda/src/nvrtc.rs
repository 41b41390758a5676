//! NVRTC, the CUDA C compiler library, loaded at run time.
//!
//! The adapter loads `libnvrtc` itself (with `libloading`) rather than through
//! cudarc: cudarc's candidate names follow its binding level (`.so.12` for the
//! 12.x bindings), while the GPU machines ship CUDA 13's `libnvrtc.so.13`.
//! The search covers the usual sonames, `UR_CUDA_NVRTC` (a path to the
//! library, or `none` to do without NVRTC), `CUDA_PATH`/`CUDA_HOME` and
//! `/usr/local/cuda*`. When none loads, programs are built from PTX, CUDA C
//! programs fail with the reason, and everything else works.

use std::ffi::{CStr, CString, c_char, c_int};
use std::path::PathBuf;
use std::ptr;
use std::sync::OnceLock;

/// The variable naming the NVRTC library to load (`none`: do without).
pub const NVRTC_ENV: &str = "UR_CUDA_NVRTC";

type Program = *mut std::ffi::c_void;
type CreateFn = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(Program, *mut usize) -> c_int;
type GetFn = unsafe extern "C" fn(Program, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut Program) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;

/// A loaded NVRTC.
pub(crate) struct Nvrtc {
    _lib: libloading::Library,
    path: String,
    version: (i32, i32),
    create: CreateFn,
    compile: CompileFn,
    log_size: SizeFn,
    log: GetFn,
    ptx_size: SizeFn,
    ptx: GetFn,
    destroy: DestroyFn,
}

fn candidates() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os(NVRTC_ENV) {
        out.push(path.into());
    }
    let names = ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"];
    out.extend(names.iter().map(PathBuf::from));
    let mut dirs: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .flat_map(|root| {
            let root = PathBuf::from(root);
            [root.join("lib64"), root.join("lib")]
        })
        .collect();
    if let Ok(entries) = std::fs::read_dir("/usr/local") {
        let mut roots: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cuda")))
            .collect();
        roots.sort();
        // `/usr/local/cuda` (the default toolkit) first, then versioned ones, newest first.
        roots.sort_by_key(|p| p.file_name().map(|n| n != "cuda"));
        let (first, rest) = roots.split_at(roots.len().min(1));
        for root in first.iter().chain(rest.iter().rev()) {
            dirs.push(root.join("lib64"));
            dirs.push(root.join("targets/x86_64-linux/lib"));
        }
    }
    for dir in dirs {
        for name in &names[1..] {
            out.push(dir.join(name));
        }
        out.push(dir.join(names[0]));
    }
    out
}

fn load() -> Result<Nvrtc, String> {
    if std::env::var_os(NVRTC_ENV).is_some_and(|v| v == "none") {
        return Err(format!("NVRTC is turned off ({NVRTC_ENV}=none)"));
    }
    let mut tried = Vec::new();
    for candidate in candidates() {
        // SAFETY: loading NVRTC runs its initialisers, which have no
        // preconditions; the library stays loaded for the process.
        let lib = match unsafe { libloading::Library::new(&candidate) } {
            Ok(lib) => lib,
            Err(_) => {
                tried.push(candidate.display().to_string());
                continue;
            }
        };
        // SAFETY: the symbols are NVRTC's public entry points with these C signatures.
        let loaded = unsafe {
            (|| -> Result<Nvrtc, libloading::Error> {
                Ok(Nvrtc {
                    create: *lib.get::<CreateFn>(b"nvrtcCreateProgram\0")?,
                    compile: *lib.get::<CompileFn>(b"nvrtcCompileProgram\0")?,
                    log_size: *lib.get::<SizeFn>(b"nvrtcGetProgramLogSize\0")?,
                    log: *lib.get::<GetFn>(b"nvrtcGetProgramLog\0")?,
                    ptx_size: *lib.get::<SizeFn>(b"nvrtcGetPTXSize\0")?,
                    ptx: *lib.get::<GetFn>(b"nvrtcGetPTX\0")?,
                    destroy: *lib.get::<DestroyFn>(b"nvrtcDestroyProgram\0")?,
                    version: {
                        let f = *lib.get::<VersionFn>(b"nvrtcVersion\0")?;
                        let (mut major, mut minor) = (0, 0);
                        f(&mut major, &mut minor);
                        (major, minor)
                    },
                    path: candidate.display().to_string(),
                    _lib: lib,
                })
            })()
        };
        match loaded {
            Ok(nvrtc) => {
                tracing::debug!(path = %nvrtc.path, version = ?nvrtc.version, "NVRTC loaded");
                return Ok(nvrtc);
            }
            Err(e) => tried.push(format!("{} ({e})", candidate.display())),
        }
    }
    Err(format!("NVRTC could not be loaded (set {NVRTC_ENV} to the library's path); tried {}", tried.join(", ")))
}

/// NVRTC, or why it could not be loaded.
pub(crate) fn get() -> Result<&'static Nvrtc, &'static str> {
    static NVRTC: OnceLock<Result<Nvrtc, String>> = OnceLock::new();
    NVRTC.get_or_init(load).as_ref().map_err(|e| e.as_str())
}

/// Whether NVRTC can be loaded.
pub(crate) fn available() -> bool {
    get().is_ok()
}

/// Frees an NVRTC program on every path out of `compile`.
struct ProgramGuard<'a>(&'a Nvrtc, Program);

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once.
        unsafe { (self.0.destroy)(&mut self.1) };
    }
}

impl Nvrtc {
    /// NVRTC's version.
    pub(crate) fn version(&self) -> (i32, i32) {
        self.version
    }

    /// Compiles CUDA C to PTX for compute capability `arch`; `Err` holds the
    /// compiler's log.
    pub(crate) fn compile(&self, source: &str, arch: (i32, i32)) -> Result<CString, String> {
        let source = CString::new(source).map_err(|_| "the CUDA C source contains a NUL byte".to_string())?;
        let name = c"ur_program.cu";
        let mut program: Program = ptr::null_mut();
        // SAFETY: source and name are NUL-terminated; no headers are passed.
        let rc = unsafe { (self.create)(&mut program, source.as_ptr(), name.as_ptr(), 0, ptr::null(), ptr::null()) };
        if rc != 0 {
            return Err(format!("nvrtcCreateProgram failed with NVRTC error {rc}"));
        }
        let guard = ProgramGuard(self, program);
        let arch_option = CString::new(format!("--gpu-architecture=compute_{}{}", arch.0, arch.1)).expect("no NUL");
        let options = [arch_option.as_ptr(), c"--std=c++17".as_ptr()];
        // SAFETY: the program is alive; the options are NUL-terminated strings.
        let rc = unsafe { (self.compile)(guard.1, options.len() as c_int, options.as_ptr()) };
        if rc != 0 {
            return Err(format!("NVRTC error {rc} compiling for compute_{}{}:\n{}", arch.0, arch.1, self.log(&guard)));
        }
        let mut size = 0usize;
        // SAFETY: the program compiled; writes the PTX size (NUL included).
        unsafe { (self.ptx_size)(guard.1, &mut size) };
        let mut ptx = vec![0u8; size.max(1)];
        // SAFETY: `ptx` holds `size` bytes, as NVRTC asked for.
        unsafe { (self.ptx)(guard.1, ptx.as_mut_ptr().cast()) };
        let text = CStr::from_bytes_until_nul(&ptx).map_err(|_| "NVRTC returned PTX without a NUL".to_string())?;
        Ok(text.to_owned())
    }

    fn log(&self, guard: &ProgramGuard<'_>) -> String {
        let mut size = 0usize;
        // SAFETY: the program is alive; writes the log size (NUL included).
        unsafe { (self.log_size)(guard.1, &mut size) };
        let mut log = vec![0u8; size.max(1)];
        // SAFETY: `log` holds `size` bytes.
        unsafe { (self.log)(guard.1, log.as_mut_ptr().cast()) };
        CStr::from_bytes_until_nul(&log).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_start_with_sonames_and_cover_cuda_13() {
        let c = candidates();
        assert!(c.iter().any(|p| p.as_os_str() == "libnvrtc.so.13"));
        assert!(c.iter().any(|p| p.as_os_str() == "libnvrtc.so.12"));
    }
}
