//! Programs (CUDA modules from PTX, or from CUDA C through NVRTC), kernels,
//! and the kernel ABI: how a launch's arguments become kernel parameters.
//!
//! # Kernel ABI
//!
//! A kernel declared with arguments `a0 .. an-1` is an `extern "C" __global__`
//! function with n + 1 parameters:
//! - a global argument (USM pointer or buffer) is an 8-byte device address;
//! - a value argument is its bytes (a parameter of exactly that size);
//! - a local argument is a `unsigned long long` whose low 32 bits are the
//!   argument's byte offset into the block's dynamic shared memory (one
//!   `extern __shared__` region) and whose high 32 bits are its size in bytes;
//!   offsets are 16-byte aligned;
//! - a last, hidden parameter `ur_launch { unsigned long long offset[3];
//!   unsigned int *status; }` (32 bytes) carries the global offset, which CUDA
//!   has no notion of, and a status word: a kernel that detects it cannot run
//!   correctly (too little local memory, say) stores a non-zero code there and
//!   returns, and the launch's event reports `AdapterSpecific` with that code,
//!   without the sticky context error a trap would cause.
//!
//! The local size is the block size, the global size divided by it the grid.
//!
//! # Plain kernels
//!
//! PTX given as a binary (`ProgramBundle::from_binary`, `urProgramCreateWithBinary`)
//! holds ordinary CUDA kernels: their parameters are exactly those read from
//! the PTX, without the hidden `ur_launch`. They cannot report a status. A
//! 32-bit integer parameter also takes a local-memory argument, as
//! DPC++'s CUDA kernels take a local accessor: its byte offset into the
//! block's dynamic shared memory. A
//! global offset reaches one the way DPC++'s CUDA binaries carry it: a
//! companion entry `<name>_with_offset` with the same parameters and a last
//! one of three `u32` offsets (12 bytes), which a launch with a non-zero
//! offset runs instead, as UR's CUDA adapter does. A plain kernel without
//! that companion takes no offset (`UnsupportedFeature`).
//!
//! # Build options
//!
//! The PTX JIT takes `-O0` to `-O4` (`CU_JIT_OPTIMIZATION_LEVEL`) and
//! `--maxrregcount=N` / `-maxrregcount=N` (`CU_JIT_MAX_REGISTERS`); other
//! options are ignored with a debug trace. The JIT's information and error
//! logs are the program's build log.

use std::any::Any;
use std::ffi::{CString, c_void};
use std::ptr;
use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::{AdoptedKernel, AdoptedProgram};
use cmdbuf_core::{ArgKind, CacheConfig, KernelSignature, NdRange, Ownership, ProgramSource};
use cudarc::driver::sys;

use crate::conv;
use crate::device::{DeviceShared, LAUNCH_INFO_SIZE, LAUNCH_STATUS_AT, Release};
use crate::driver::{self, cu, has_symbol};
use crate::memory::cuda_buffer;
use crate::nvrtc;
use crate::params::{Func, LaunchParams, ParamOffsets, ParamWords, StoredLaunchParams};

/// Alignment of each local argument in the dynamic shared memory.
const LOCAL_ALIGN: usize = 16;

/// The largest alignment of a plain kernel's local argument: that of the
/// largest vector type (16 doubles), to which an argument at least that
/// large is aligned; a smaller one to its size's power of two.
const PLAIN_LOCAL_ALIGN_MAX: usize = 128;

/// A loaded module, unloaded when its program and kernels are gone
/// (unless adopted without its ownership).
struct Module {
    dev: Arc<DeviceShared>,
    raw: sys::CUmodule,
    owned: bool,
}

// SAFETY: module handles may be used from any thread.
unsafe impl Send for Module {}
// SAFETY: as for Send.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        if self.owned {
            self.dev.release(Release::Module(self.raw));
        }
    }
}

/// A built program.
pub(crate) struct CudaProgram {
    module: Arc<Module>,
    /// The kernels take no hidden `ur_launch` parameter.
    plain: bool,
    /// The PTX it was loaded from; `None` for an adopted module.
    ptx: Option<Arc<CString>>,
    log: String,
}

/// The PTX JIT options a program's build options ask for, as
/// `(CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_MAX_REGISTERS)`.
fn jit_options(options: &str) -> (Option<u32>, Option<u32>) {
    let (mut level, mut registers) = (None, None);
    let mut words = options.split_whitespace();
    while let Some(word) = words.next() {
        if let Some(l) = word.strip_prefix("-O").and_then(|l| l.parse::<u32>().ok()).filter(|l| *l <= 4) {
            level = Some(l);
        } else if let Some(rest) = word.strip_prefix("--maxrregcount").or_else(|| word.strip_prefix("-maxrregcount")) {
            let value = match rest.strip_prefix('=') {
                Some(v) => Some(v),
                None if rest.is_empty() => words.next(),
                None => None,
            };
            match value.and_then(|v| v.parse().ok()) {
                Some(n) => registers = Some(n),
                None => tracing::debug!(word, "malformed register limit ignored"),
            }
        } else {
            tracing::debug!(option = word, "build option without a PTX JIT equivalent ignored");
        }
    }
    (level, registers)
}

/// The PTX of a bundle's source of `form`.
fn ptx_of(dev: &DeviceShared, bundle: &ProgramBundle, form: SourceForm) -> Result<Arc<CString>> {
    match (form, bundle.source_of(form)) {
        (SourceForm::Ptx, Some(ProgramSource::Ptx(text))) => {
            Ok(Arc::new(CString::new(text.as_bytes()).map_err(|_| err!(InvalidBinary, "the PTX contains a NUL byte"))?))
        }
        (SourceForm::CudaC, Some(ProgramSource::CudaC(text))) => {
            let arch = dev.limits.compute_capability;
            let key = (text.to_string(), arch);
            if let Some(ptx) = dev.ptx_cache.lock().get(&key) {
                return Ok(ptx.clone());
            }
            let compiler = nvrtc::get()
                .map_err(|reason| err!(UnsupportedFeature, "CUDA C needs NVRTC, which is missing: {reason}"))?;
            tracing::debug!(version = ?compiler.version(), ?arch, "compiling CUDA C with NVRTC");
            let ptx = Arc::new(compiler.compile(text, arch).map_err(|log| err!(ProgramBuildFailure, "{log}"))?);
            dev.ptx_cache.lock().insert(key, ptx.clone());
            Ok(ptx)
        }
        _ => Err(err!(InvalidBinary, "the CUDA adapter builds PTX and CUDA C; the bundle has no {form} source")),
    }
}

/// The PTX JIT's two log buffers, which the driver fills during a load.
struct JitLogs {
    error: Vec<u8>,
    info: Vec<u8>,
}

impl JitLogs {
    fn new() -> JitLogs {
        JitLogs { error: vec![0u8; 8192], info: vec![0u8; 8192] }
    }

    /// The JIT options of a load, as the keys and values `cuModuleLoadDataEx`
    /// takes: the two log buffers, then what the build `options` ask for. The
    /// values point into the buffers, which must outlive the load.
    fn jit_options(&mut self, options: &str) -> (Vec<sys::CUjit_option>, Vec<*mut c_void>) {
        use sys::CUjit_option as J;
        let mut keys = vec![
            J::CU_JIT_ERROR_LOG_BUFFER,
            J::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            J::CU_JIT_INFO_LOG_BUFFER,
            J::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        ];
        // Option values are passed in the pointer-sized slots by value, as the driver expects.
        let mut values: Vec<*mut c_void> = vec![
            self.error.as_mut_ptr().cast(),
            self.error.len() as *mut c_void,
            self.info.as_mut_ptr().cast(),
            self.info.len() as *mut c_void,
        ];
        let (level, registers) = jit_options(options);
        if let Some(level) = level {
            keys.push(J::CU_JIT_OPTIMIZATION_LEVEL);
            values.push(level as usize as *mut c_void);
        }
        if let Some(registers) = registers {
            keys.push(J::CU_JIT_MAX_REGISTERS);
            values.push(registers as usize as *mut c_void);
        }
        (keys, values)
    }

    /// The error of a load that failed with `result`, with the JIT's error
    /// log where it wrote one.
    fn load_error(&self, result: sys::CUresult) -> cmdbuf_core::UrError {
        let log = log_text(&self.error);
        let mut e = driver::cu_error(result, "cuModuleLoadDataEx");
        if !log.is_empty() {
            let detail = e.detail().clone();
            e = conv::variant_for(result as u32)(cmdbuf_core::Detail {
                message: format!("{}: {log}", detail.message).into(),
                ..detail
            });
        }
        e
    }

    /// The build log of a load that succeeded: the information log, then
    /// the error log, each where the JIT wrote one.
    fn build_log(&self) -> String {
        [log_text(&self.info), log_text(&self.error)]
            .into_iter()
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The NUL-terminated text of a JIT log buffer; empty when it has no NUL.
fn log_text(buffer: &[u8]) -> String {
    std::ffi::CStr::from_bytes_until_nul(buffer).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

impl CudaProgram {
    /// Builds the bundle's source of `form` with the build `options`: its
    /// PTX (compiled from CUDA C by NVRTC, cached per device), loaded by the
    /// PTX JIT with the options it takes ([`jit_options`]).
    pub(crate) fn new(
        dev: &Arc<DeviceShared>,
        bundle: &ProgramBundle,
        form: SourceForm,
        options: &str,
    ) -> Result<CudaProgram> {
        let ptx = ptx_of(dev, bundle, form)?;
        dev.bind()?;
        let mut logs = JitLogs::new();
        let (mut keys, mut values) = logs.jit_options(options);
        let mut raw: sys::CUmodule = ptr::null_mut();
        // Loading may wait for the device, which never waits for the host
        // (see `hold`).
        // SAFETY: `ptx` is NUL-terminated PTX; the options name writable log
        // buffers of the given sizes (`logs`, alive until the end of this
        // function) and plain values; both arrays have `keys.len()` entries.
        let result = unsafe {
            sys::cuModuleLoadDataEx(
                &mut raw,
                ptx.as_ptr().cast(),
                keys.len() as u32,
                keys.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if result != sys::CUresult::CUDA_SUCCESS {
            return Err(logs.load_error(result));
        }
        let module = Arc::new(Module { dev: dev.clone(), raw, owned: true });
        Ok(CudaProgram { module, plain: bundle.plain_abi(), ptx: Some(ptx), log: logs.build_log() })
    }

    /// A program over a loaded `CUmodule` of the primary context, whose
    /// kernels are plain; it unloads the module only when `owned`.
    fn adopted(dev: &Arc<DeviceShared>, raw: sys::CUmodule, owned: bool) -> CudaProgram {
        CudaProgram {
            module: Arc::new(Module { dev: dev.clone(), raw, owned }),
            plain: true,
            ptx: None,
            log: String::new(),
        }
    }
}

/// The driver entry points adoption needs (CUDA 12.4): to list a module's
/// kernels, name them and read their parameters.
const ADOPTION_SYMBOLS: [&str; 5] = [
    "cuModuleGetFunctionCount",
    "cuModuleEnumerateFunctions",
    "cuFuncGetName",
    "cuFuncGetParamInfo",
    "cuFuncGetModule",
];

/// `UnsupportedFeature` when the driver lacks what adoption needs.
fn check_adoption_symbols() -> Result<()> {
    match ADOPTION_SYMBOLS.iter().find(|s| !has_symbol(s)) {
        Some(missing) => Err(err!(
            UnsupportedFeature,
            "adopting CUDA modules and functions needs {missing} (CUDA 12.4 drivers): without it a kernel's \
             parameters cannot be known"
        )),
        None => Ok(()),
    }
}

/// The name of a function.
fn function_name(func: sys::CUfunction) -> Result<String> {
    let mut name: *const std::ffi::c_char = ptr::null();
    // SAFETY: a live function (the adoption contract); writes one pointer.
    unsafe { cu!(cuFuncGetName(&mut name, func))? };
    if name.is_null() {
        return Err(err!(Unknown, "cuFuncGetName returned no name"));
    }
    // SAFETY: the driver's NUL-terminated name, valid while the module is loaded.
    Ok(unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned())
}

/// The signature of a plain kernel, from its parameter sizes: a value of
/// each size (8-byte values take pointers and buffers, see
/// `cmdbuf_core::launch`).
fn derived_signature(func: sys::CUfunction) -> Result<KernelSignature> {
    let mut args = Vec::new();
    loop {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: a live function; an index past the last parameter is an error, not UB.
        match unsafe { sys::cuFuncGetParamInfo(func, args.len(), &mut offset, &mut size) } {
            sys::CUresult::CUDA_SUCCESS => args.push(ArgKind::Value(size)),
            sys::CUresult::CUDA_ERROR_INVALID_VALUE => break,
            other => return Err(driver::cu_error(other, "cuFuncGetParamInfo")),
        }
    }
    Ok(KernelSignature::new(function_name(func)?, args))
}

/// Adopts a loaded `CUmodule` of the device's primary context: its
/// functions, with signatures from their parameter sizes.
///
/// # Safety
/// `handle` is a `CUmodule` loaded in the device's primary context.
pub(crate) unsafe fn adopt_module(
    dev: &Arc<DeviceShared>,
    handle: NativeHandle,
    ownership: Ownership,
) -> Result<AdoptedProgram> {
    check_adoption_symbols()?;
    dev.bind()?;
    let raw = handle.0 as sys::CUmodule;
    let mut count = 0u32;
    // SAFETY: a loaded module (the contract); writes one count.
    unsafe { cu!(cuModuleGetFunctionCount(&mut count, raw))? };
    let mut functions: Vec<sys::CUfunction> = vec![ptr::null_mut(); count as usize];
    // SAFETY: room for `count` handles.
    unsafe { cu!(cuModuleEnumerateFunctions(functions.as_mut_ptr(), count, raw))? };
    let kernels = functions.iter().map(|f| derived_signature(*f)).collect::<Result<Vec<_>>>()?;
    let program = CudaProgram::adopted(dev, raw, ownership == Ownership::Transferred);
    Ok(AdoptedProgram { imp: Box::new(program), kernels, form: SourceForm::Ptx })
}

/// Adopts a `CUfunction` of a module of the device's primary context (a
/// function has no reference count: ownership changes nothing).
///
/// # Safety
/// `handle` is a function of a module loaded in the device's primary context.
pub(crate) unsafe fn adopt_function(dev: &Arc<DeviceShared>, handle: NativeHandle) -> Result<AdoptedKernel> {
    check_adoption_symbols()?;
    dev.bind()?;
    let func = handle.0 as sys::CUfunction;
    let mut module: sys::CUmodule = ptr::null_mut();
    // SAFETY: a live function (the contract); writes one handle.
    unsafe { cu!(cuFuncGetModule(&mut module, func))? };
    let signature = derived_signature(func)?;
    let program = CudaProgram::adopted(dev, module, false);
    // SAFETY: `signature` is the function's own, read from the module.
    let imp = unsafe { program.create_kernel(&signature)? };
    Ok(AdoptedKernel { program: NativeHandle(module as u64), signature, imp })
}

/// The parameter size each declared argument kind has in the ABI; `None`
/// for a kind the front end does not know exactly.
fn abi_size(kind: ArgKind) -> Option<usize> {
    match kind {
        ArgKind::Global | ArgKind::Local => Some(8),
        ArgKind::Value(n) => Some(n),
        ArgKind::AnyValue | ArgKind::Unknown => None,
    }
}

/// Checks the kernel's parameters against the ABI, where the driver can list
/// them (CUDA 12.4 and newer): a mismatch would make every launch read garbage.
fn check_parameters(func: sys::CUfunction, signature: &KernelSignature, plain: bool) -> Result<()> {
    if !has_symbol("cuFuncGetParamInfo") {
        return Ok(());
    }
    let hidden = (!plain).then_some(LAUNCH_INFO_SIZE);
    let expected: Vec<Option<usize>> = signature.args.iter().map(|k| abi_size(*k)).chain(hidden.map(Some)).collect();
    let mut found = Vec::with_capacity(expected.len());
    for index in 0..=expected.len() {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: `func` is a live function; an index past its last parameter is an error, not UB.
        match unsafe { sys::cuFuncGetParamInfo(func, index, &mut offset, &mut size) } {
            sys::CUresult::CUDA_SUCCESS => found.push(size),
            sys::CUresult::CUDA_ERROR_INVALID_VALUE => break,
            other => {
                tracing::debug!(error = %driver::error_name(other), "cuFuncGetParamInfo unavailable; ABI not checked");
                return Ok(());
            }
        }
    }
    let fits = found.len() == expected.len() && found.iter().zip(&expected).all(|(f, e)| e.is_none_or(|e| e == *f));
    if !fits {
        return Err(err!(
            InvalidValue,
            "kernel `{}` takes parameters of {found:?} bytes; its signature {:?} needs {expected:?} \
             (with the 32-byte ur_launch last, unless the kernel is plain)",
            signature.name,
            signature.args
        ));
    }
    Ok(())
}

impl CudaProgram {
    /// The module's function `name`, `None` where the module has none.
    fn function(&self, name: &CString) -> Result<Option<sys::CUfunction>> {
        let mut func: sys::CUfunction = ptr::null_mut();
        // SAFETY: the module is loaded; the name is NUL-terminated.
        match unsafe { sys::cuModuleGetFunction(&mut func, self.module.raw, name.as_ptr()) } {
            sys::CUresult::CUDA_SUCCESS => Ok(Some(func)),
            sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
            other => Err(driver::cu_error(other, "cuModuleGetFunction")),
        }
    }

    /// The companion `<name>_with_offset` of a plain kernel, as DPC++
    /// emits it for a kernel that reads its global offset: the kernel's
    /// parameters, then the offset as three `u32`. An entry of that name
    /// with other parameters is another kernel, not a companion.
    fn offset_companion(&self, signature: &KernelSignature) -> Result<Option<Func>> {
        let name = format!("{}{OFFSET_COMPANION_SUFFIX}", signature.name);
        let name_c = CString::new(name.as_bytes()).map_err(|_| err!(InvalidKernelName, "kernel name has a NUL"))?;
        let Some(func) = self.function(&name_c)? else {
            return Ok(None);
        };
        let args: Vec<ArgKind> =
            signature.args.iter().copied().chain([ArgKind::Value(OFFSET_COMPANION_PARAM_SIZE)]).collect();
        match check_parameters(func, &KernelSignature::new(name.clone(), args), true) {
            Ok(()) => Ok(Some(Func(func))),
            Err(e) => {
                tracing::debug!(error = %e, "`{name}` is not an offset companion of `{}`", signature.name);
                Ok(None)
            }
        }
    }
}

/// Lets `func` use the device's whole shared memory (`dynamic` bytes beside
/// its static share): the room for the alignment padding of local
/// arguments beyond the 48 KiB reported by default.
fn opt_into_shared_memory(func: sys::CUfunction, dynamic: u32) {
    let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    // SAFETY: sets an attribute of a live function to a value the device allows.
    let opted = unsafe { cu!(cuFuncSetAttribute(func, attribute, dynamic as i32)) };
    if let Err(e) = opted {
        tracing::debug!(error = %e, "kernel keeps the default dynamic shared memory limit");
    }
}

/// The suffix of a plain kernel's offset companion (DPC++'s, which UR's
/// CUDA adapter looks for too).
const OFFSET_COMPANION_SUFFIX: &str = "_with_offset";

/// The companion's last parameter: the global offset as three `u32`.
const OFFSET_COMPANION_PARAM_SIZE: usize = 12;

impl ProgramImpl for CudaProgram {
    unsafe fn create_kernel(&self, signature: &KernelSignature) -> Result<Box<dyn KernelImpl>> {
        let dev = &self.module.dev;
        dev.bind()?;
        let name =
            CString::new(signature.name.as_bytes()).map_err(|_| err!(InvalidKernelName, "kernel name has a NUL"))?;
        let Some(func) = self.function(&name)? else {
            return Err(err!(InvalidKernelName, "the program's module has no kernel `{}`", signature.name));
        };
        check_parameters(func, signature, self.plain)?;
        let with_offset = if self.plain { self.offset_companion(signature)? } else { None };
        let attribute = |a| -> Result<i32> {
            let mut v = 0;
            // SAFETY: reads one attribute of a live function.
            unsafe { cu!(cuFuncGetAttribute(&mut v, a, func))? };
            Ok(v)
        };
        use sys::CUfunction_attribute as F;
        let max_threads = attribute(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?.max(1) as usize;
        let static_shared = attribute(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?.max(0) as u32;
        let private = attribute(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?.max(0) as usize;
        let dynamic = dev.limits.shared_optin.saturating_sub(static_shared);
        for f in std::iter::once(func).chain(with_offset.map(|f| f.0)) {
            opt_into_shared_memory(f, dynamic);
        }
        let ptx = self.ptx.as_ref().and_then(|p| p.to_str().ok()).unwrap_or("");
        let reports = !self.plain && may_report(ptx, &signature.name);
        Ok(Box::new(CudaKernel {
            module: self.module.clone(),
            func: Func(func),
            with_offset,
            name: signature.name.to_string().into(),
            max_threads,
            plain: self.plain,
            reports,
            static_shared: static_shared as usize,
            private,
        }))
    }

    fn build_log(&self) -> String {
        self.log.clone()
    }

    fn binary(&self) -> Option<Vec<u8>> {
        self.ptx.as_ref().map(|p| p.as_bytes().to_vec())
    }

    /// The `CUmodule`.
    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.module.raw as u64))
    }
}

/// A kernel: a function of a loaded module.
pub(crate) struct CudaKernel {
    module: Arc<Module>,
    pub(crate) func: Func,
    /// A plain kernel's DPC++ companion taking the global offset (see the
    /// module documentation, "Plain kernels").
    with_offset: Option<Func>,
    pub(crate) name: Arc<str>,
    max_threads: usize,
    /// No hidden `ur_launch` parameter.
    plain: bool,
    /// May store a status (see [`may_report`]).
    reports: bool,
    static_shared: usize,
    private: usize,
}

impl CudaKernel {
    /// Whether a launch of `kernel` (of this adapter) may store a status.
    pub(crate) fn of_reports(kernel: &cmdbuf_core::Kernel) -> Result<bool> {
        Ok(downcast::<CudaKernel>(kernel.imp() as &dyn Any, "a kernel")?.reports)
    }
}

/// Whether the entry `name` of `ptx` may read the status pointer of its
/// last parameter (the hidden `ur_launch`: three u64 offsets, then the
/// status pointer at byte 24). It may unless every use of that parameter in
/// the body is an `ld.param` of its bytes below 24 at a constant offset:
/// such a kernel reads its global offset (as every kernel written with
/// global ids does) but cannot reach its status word, so it cannot report
/// a failure. Anything that does not parse as expected counts as reporting.
pub(crate) fn may_report(ptx: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let entry = ptx.match_indices(".entry").find_map(|(at, _)| {
        let rest = ptx[at + ".entry".len()..].trim_start();
        let after = rest.strip_prefix(name)?;
        after.trim_start().strip_prefix('(')
    });
    let Some(rest) = entry else { return true };
    let Some(close) = rest.find(')') else { return true };
    let Some(last) = rest[..close].rsplit(',').next() else { return true };
    // `.param .align 8 .b8 NAME[32]`: the parameter's name is the last word, before its size.
    let Some(param) = last.split('[').next().and_then(|d| d.split_whitespace().last()) else { return true };
    if param.is_empty() || !param.chars().all(ident) {
        return true;
    }
    let body = &rest[close + 1..];
    let Some(open) = body.find('{') else { return true };
    let mut depth = 0usize;
    let mut end = None;
    for (i, c) in body[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(end) = end else { return true };
    let body = &body[open..end];
    body.match_indices(param).any(|(at, _)| {
        let before = body[..at].chars().next_back().is_none_or(|c| !ident(c));
        let after = body[at + param.len()..].chars().next().is_none_or(|c| !ident(c));
        before && after && !reads_offsets_only(body, at, param.len())
    })
}

/// Whether the use of the launch parameter at `at` (its name `len` bytes
/// long) in `body` is an `ld.param` that reads only bytes of its offsets:
/// `[NAME]` or `[NAME+K]` with the load ending at or before the status
/// pointer ([`LAUNCH_STATUS_AT`]).
fn reads_offsets_only(body: &str, at: usize, len: usize) -> bool {
    let Some(offset) = constant_offset(&body[at + len..]) else { return false };
    if !body[..at].ends_with('[') {
        return false;
    }
    let start = body[..at].rfind(';').map_or(0, |i| i + 1);
    // The statement's opcode: after any scope braces, labels (`NAME:`) and
    // its guard (`@%p`).
    let Some(opcode) = body[start..at]
        .split_whitespace()
        .find(|t| !matches!(*t, "{" | "}") && !t.ends_with(':') && !t.starts_with('@'))
    else {
        return false;
    };
    let mut parts = opcode.split('.');
    if parts.next() != Some("ld") || parts.next() != Some("param") {
        return false;
    }
    let (mut lanes, mut size) = (1, None);
    for part in parts {
        match part {
            "v2" => lanes = 2,
            "v4" => lanes = 4,
            "b8" | "u8" | "s8" => size = Some(1),
            "b16" | "u16" | "s16" | "f16" => size = Some(2),
            "b32" | "u32" | "s32" | "f32" => size = Some(4),
            "b64" | "u64" | "s64" | "f64" => size = Some(8),
            _ => return false,
        }
    }
    size.is_some_and(|size| offset + lanes * size <= LAUNCH_STATUS_AT)
}

/// The constant byte offset of a parameter operand after its name: `]` is
/// 0, `+K]` is K (decimal); `None` for anything else.
fn constant_offset(rest: &str) -> Option<usize> {
    let inside = &rest[..rest.find(']')?];
    match inside.trim().strip_prefix('+') {
        None if inside.trim().is_empty() => Some(0),
        None => None,
        Some(k) => k.trim().parse().ok(),
    }
}

impl KernelImpl for CudaKernel {
    fn max_work_group_size(&self) -> usize {
        self.max_threads
    }

    /// The `CUfunction`.
    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.func.0 as u64))
    }

    fn local_mem_size(&self) -> usize {
        self.static_shared
    }

    fn private_mem_size(&self) -> usize {
        self.private
    }

    fn apply_cache_config(&self, config: CacheConfig) -> Result<bool> {
        use sys::CUfunc_cache as C;
        let cache = match config {
            CacheConfig::Default => C::CU_FUNC_CACHE_PREFER_NONE,
            CacheConfig::LargeLocalMemory => C::CU_FUNC_CACHE_PREFER_SHARED,
            CacheConfig::LargeData => C::CU_FUNC_CACHE_PREFER_L1,
        };
        self.module.dev.bind()?;
        // SAFETY: a live function of the bound context; the driver treats
        // the value as a preference.
        unsafe { cu!(cuFuncSetCacheConfig(self.func.0, cache))? };
        Ok(true)
    }
}

impl LaunchParams {
    /// The parameters of `launch`, with `status` as the status word's address.
    pub(crate) fn new(dev: &DeviceShared, launch: &KernelCommand, status: u64) -> Result<LaunchParams> {
        let kernel = downcast::<CudaKernel>(launch.kernel.imp() as &dyn Any, "a kernel")?;
        let range = launch.range;
        let empty = range.global_size.contains(&0);
        let (grid, block) = if empty { ([1; 3], [1; 3]) } else { grid_and_block(dev, kernel, &range)? };
        let mut values = ParamValues::default();
        let shared = values.push_args(&launch.args, kernel.plain)?;
        if shared > dev.limits.shared_optin as usize {
            return Err(err!(
                OutOfResources,
                "`{}` needs {shared} bytes of local memory with alignment; the device has {}",
                kernel.name,
                dev.limits.shared_optin
            ));
        }
        let (func, status_at) = values.push_launch_info(kernel, &range)?;
        let (storage, offsets) = values.into_parts()?;
        let mut params = LaunchParams {
            func,
            name: kernel.reports.then(|| kernel.name.clone()),
            grid,
            block,
            shared: shared as u32,
            empty,
            storage,
            offsets,
            status_at,
        };
        params.set_status(status);
        Ok(params)
    }

    /// The same parameters as a command buffer keeps them.
    pub(crate) fn into_stored(self) -> StoredLaunchParams {
        LaunchParams {
            func: self.func,
            name: self.name,
            grid: self.grid,
            block: self.block,
            shared: self.shared,
            empty: self.empty,
            storage: self.storage.into_vec().into_boxed_slice(),
            offsets: self.offsets,
            status_at: self.status_at,
        }
    }
}

/// The grid (work-groups) and block (the local size) of a launch of
/// `kernel` over `range`, a non-empty range; `UnsupportedFeature` beyond
/// the device's grid.
fn grid_and_block(dev: &DeviceShared, kernel: &CudaKernel, range: &NdRange) -> Result<([u32; 3], [u32; 3])> {
    let mut grid = [1u32; 3];
    let mut block = [1u32; 3];
    for d in 0..3 {
        let groups = range.global_size[d] / range.local_size[d];
        if groups > dev.limits.max_grid[d] as usize {
            return Err(err!(
                UnsupportedFeature,
                "`{}`: {groups} work-groups in dimension {d} exceed CUDA's grid limit of {}",
                kernel.name,
                dev.limits.max_grid[d]
            ));
        }
        grid[d] = groups as u32;
        block[d] = range.local_size[d] as u32;
    }
    Ok((grid, block))
}

/// A launch's parameter values as they are laid out, each at an 8-byte
/// aligned offset, inline up to 256 bytes (an eager launch allocates
/// nothing). Filled in the words [`LaunchParams`] keeps, so that handing
/// them over neither clears nor copies the inline buffer: an eager launch's
/// own share of its host time is a few hundred nanoseconds, and a cleared
/// 256-byte buffer and a copy of it were a quarter of the parameters' part
/// (issue 31, docs/performance.md).
#[derive(Default)]
struct ParamValues {
    words: ParamWords,
    /// Bytes used: the end of the last value.
    len: usize,
    /// Exact once [`into_parts`](Self::into_parts) has checked the size.
    offsets: ParamOffsets,
}

impl ParamValues {
    /// Appends `value` at the next 8-byte aligned offset; returns that offset.
    fn push(&mut self, value: &[u8]) -> usize {
        let at = self.len.next_multiple_of(8);
        self.len = at + value.len();
        self.words.resize(self.len.div_ceil(8), 0);
        // SAFETY: `words` now holds at least `len` bytes, so `value.len()`
        // bytes fit from `at`; a slice of the caller's does not overlap them.
        unsafe { ptr::copy_nonoverlapping(value.as_ptr(), self.words.as_mut_ptr().cast::<u8>().add(at), value.len()) };
        self.offsets.push(at as u16);
        at
    }

    /// Appends one parameter per argument, as the kernel ABI says (a plain
    /// kernel's local argument in DPC++'s form); returns the dynamic shared
    /// memory the local arguments take, with alignment.
    fn push_args(&mut self, args: &[ArgValue], plain: bool) -> Result<usize> {
        let mut shared = 0usize;
        for arg in args {
            match arg {
                ArgValue::Value(v) => self.push(v),
                ArgValue::Pointer(p) => self.push(&p.addr().to_le_bytes()),
                ArgValue::MemObj(b) => self.push(&(cuda_buffer(b)?.addr() + b.offset() as u64).to_le_bytes()),
                ArgValue::Local(size) if plain => {
                    // The offset alone, aligned for the argument's element
                    // type as UR's CUDA adapter aligns it for DPC++'s
                    // kernels; the 32-bit parameter reads its low bytes.
                    let align = (*size).min(PLAIN_LOCAL_ALIGN_MAX).next_power_of_two();
                    let offset = shared.next_multiple_of(align);
                    shared = offset + size;
                    self.push(&(offset as u64).to_le_bytes())
                }
                ArgValue::Local(size) => {
                    let offset = shared.next_multiple_of(LOCAL_ALIGN);
                    shared = offset + size;
                    let packed = (offset as u64) | ((*size as u64) << 32);
                    self.push(&packed.to_le_bytes())
                }
            };
        }
        Ok(shared)
    }

    /// Appends what carries the global offset of `range`: the hidden
    /// `ur_launch` parameter, or for a plain kernel with a non-zero offset
    /// its companion's three `u32`. Returns the function to launch and the
    /// byte offset of the status pointer (plain kernels have none). A plain
    /// kernel without a companion takes no offset, nor one beyond 32 bits
    /// (`UnsupportedFeature`).
    fn push_launch_info(&mut self, kernel: &CudaKernel, range: &NdRange) -> Result<(Func, Option<usize>)> {
        if kernel.plain {
            if range.global_offset == [0; 3] {
                return Ok((kernel.func, None));
            }
            let Some(with_offset) = kernel.with_offset else {
                return Err(err!(
                    UnsupportedFeature,
                    "`{}` is a plain CUDA kernel (PTX given as a binary) without a `{}{OFFSET_COMPANION_SUFFIX}` \
                     companion, so it cannot take the global offset {:?}",
                    kernel.name,
                    kernel.name,
                    range.global_offset
                ));
            };
            let mut offsets = [0u8; OFFSET_COMPANION_PARAM_SIZE];
            for (d, bytes) in offsets.chunks_exact_mut(4).enumerate() {
                let offset = u32::try_from(range.global_offset[d]).map_err(|_| {
                    err!(
                        UnsupportedFeature,
                        "`{}`: the global offset {:?} does not fit the 32 bits of DPC++'s offset parameter",
                        kernel.name,
                        range.global_offset
                    )
                })?;
                bytes.copy_from_slice(&offset.to_le_bytes());
            }
            self.push(&offsets);
            return Ok((with_offset, None));
        }
        let mut info = [0u8; LAUNCH_INFO_SIZE];
        for d in 0..3 {
            info[d * 8..d * 8 + 8].copy_from_slice(&(range.global_offset[d] as u64).to_le_bytes());
        }
        Ok((kernel.func, Some(self.push(&info) + LAUNCH_STATUS_AT)))
    }

    /// The values as 8-byte words and the parameters' byte offsets, as
    /// [`LaunchParams`] keeps them; `InvalidKernelArgumentSize` where the
    /// offsets do not fit (CUDA takes at most 32 KiB of parameters).
    fn into_parts(self) -> Result<(ParamWords, ParamOffsets)> {
        // Every offset lies below the size: a size that fits means each did.
        if self.len > usize::from(u16::MAX) {
            return Err(err!(InvalidKernelArgumentSize, "{} bytes of kernel parameters", self.len));
        }
        Ok((self.words, self.offsets))
    }
}

#[cfg(test)]
mod tests {
    use super::{ParamValues, jit_options, may_report};

    #[test]
    fn parameter_values_lie_at_aligned_offsets_with_zero_padding() {
        let mut values = ParamValues::default();
        assert_eq!(values.push(&[1, 2, 3, 4]), 0);
        assert_eq!(values.push(&u64::MAX.to_le_bytes()), 8);
        assert_eq!(values.push(&[9, 9, 9]), 16);
        assert_eq!(values.push(&[7; 20]), 24);
        let (words, offsets) = values.into_parts().unwrap();
        assert_eq!(offsets.as_slice(), &[0, 8, 16, 24]);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(bytes.len(), 48, "44 bytes used, whole words");
        assert_eq!(&bytes[..8], &[1, 2, 3, 4, 0, 0, 0, 0]);
        assert_eq!(&bytes[8..16], &[0xff; 8]);
        assert_eq!(&bytes[16..24], &[9, 9, 9, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[24..44], &[7; 20]);
        assert_eq!(&bytes[44..], &[0; 4]);

        let mut too_many = ParamValues::default();
        too_many.push(&vec![0; usize::from(u16::MAX) + 1]);
        assert!(too_many.into_parts().is_err());
    }

    #[test]
    fn kernels_that_never_name_their_launch_info_cannot_report() {
        let ptx = include_str!("../../conformance/src/kernels/library.ptx");
        assert!(!may_report(ptx, "empty"));
        let reporting = ".visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .align 8 .b8 k_param_1[32]\n)\n{\n\tmov.b64 %rd2, k_param_1;\n\tld.u64 %rd1, [%rd2+24];\n\tret;\n}\n";
        assert!(may_report(reporting, "k"));
        // A name that only extends the launch info's is not it.
        let other =
            ".entry k(.param .u64 k_param_0, .param .align 8 .b8 k_param_1[32])\n{ ld.param.u64 %rd1, [k_param_10]; }";
        assert!(!may_report(other, "k"));
        assert!(may_report(ptx, "no_such_kernel"));
        assert!(may_report(".entry k(.param .b8 p[32])", "k"), "no body");
    }

    #[test]
    fn kernels_that_read_only_their_offsets_cannot_report() {
        let ptx = include_str!("../../conformance/src/kernels/library.ptx");
        // Global ids with the offset: `ld.param.u64 %rd6, [axpb_param_3];`.
        assert!(!may_report(ptx, "axpb"));
        assert!(!may_report(ptx, "saxpy"));
        // It stores a status where its local memory is too small (`ur_fail`).
        assert!(may_report(ptx, "saxpy_local"));
        let entry = |body: &str| {
            format!(".visible .entry k(.param .u64 k_param_0, .param .align 8 .b8 k_param_1[32])\n{{\n{body}\n}}\n")
        };
        let cannot = [
            "ld.param.u64 %rd1, [k_param_1];",
            "ld.param.u64 %rd1, [k_param_1+8];\n\tld.param.u64 %rd2, [k_param_1+16];",
            "$L__BB0_1:\n\t@%p1 ld.param.u64 %rd1, [k_param_1 + 16];",
            "ld.param.v2.u64 {%rd1, %rd2}, [k_param_1];",
            "ld.param.u32 %r1, [k_param_1+20];",
        ];
        for body in cannot {
            assert!(!may_report(&entry(body), "k"), "{body}");
        }
        let may = [
            "ld.param.u64 %rd1, [k_param_1+24];",
            "ld.param.v2.u64 {%rd1, %rd2}, [k_param_1+16];",
            "ld.param.u32 %r1, [k_param_1+22];",
            "mov.b64 %rd2, k_param_1;\n\tld.u64 %rd1, [%rd2+24];",
            "mov.b64 %rd2, k_param_1;\n\tld.param.u64 %rd1, [%rd2];",
            "ld.param.u64 %rd1, [k_param_1+%r1];",
            "ld.param.u64 %rd1, [k_param_1-8];",
            "ld.param.b128 %rq1, [k_param_1];",
            "st.param.u64 [k_param_1], %rd1;",
        ];
        for body in may {
            assert!(may_report(&entry(body), "k"), "{body}");
        }
    }

    #[test]
    fn build_options_become_jit_options() {
        assert_eq!(jit_options(""), (None, None));
        assert_eq!(jit_options("-O2 --maxrregcount=32"), (Some(2), Some(32)));
        assert_eq!(jit_options("-maxrregcount 64 -O9 -cl-mad-enable"), (None, Some(64)));
        assert_eq!(jit_options("--maxrregcount=x -O0"), (Some(0), None));
    }
}
