//! NCCL's entry points, opened at run time with libloading: `libnccl.so.2`
//! (the name NCCL's runtime packages install), else `libnccl.so`. Only the
//! calls the adapter's collectives (and cmdbuf-bench's direct-NCCL baseline)
//! make; every one is looked up when the library is opened, so a missing
//! library or symbol is an error with its reason, never a panic. Public so
//! that the benchmark's baseline calls the same library the same way.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use libloading::Library;

/// An NCCL communicator (`ncclComm_t`).
pub type Comm = *mut c_void;
/// A CUDA stream as NCCL takes it (`cudaStream_t`, the driver's `CUstream`).
pub type Stream = *mut c_void;

/// `ncclSuccess`.
pub const SUCCESS: c_int = 0;
/// `ncclInProgress`: a non-blocking communicator's call still running.
pub const IN_PROGRESS: c_int = 7;

/// `ncclDataType_t` values.
pub mod dtype {
    use std::ffi::c_int;
    /// `ncclInt8`.
    pub const INT8: c_int = 0;
    /// `ncclUint8`.
    pub const UINT8: c_int = 1;
    /// `ncclInt32`.
    pub const INT32: c_int = 2;
    /// `ncclUint32`.
    pub const UINT32: c_int = 3;
    /// `ncclInt64`.
    pub const INT64: c_int = 4;
    /// `ncclUint64`.
    pub const UINT64: c_int = 5;
    /// `ncclFloat16`.
    pub const FLOAT16: c_int = 6;
    /// `ncclFloat32`.
    pub const FLOAT32: c_int = 7;
    /// `ncclFloat64`.
    pub const FLOAT64: c_int = 8;
    /// `ncclBfloat16` (NCCL 2.10 and later).
    pub const BFLOAT16: c_int = 9;
}

/// `ncclRedOp_t` values.
pub mod op {
    use std::ffi::c_int;
    /// `ncclSum`.
    pub const SUM: c_int = 0;
    /// `ncclProd`.
    pub const PROD: c_int = 1;
    /// `ncclMax`.
    pub const MAX: c_int = 2;
    /// `ncclMin`.
    pub const MIN: c_int = 3;
}

type Reduce = unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int;

/// The NCCL calls, from the loaded library.
pub struct Nccl {
    /// `ncclGetVersion`.
    pub get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// `ncclGetErrorString`.
    pub get_error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    /// `ncclCommInitAll`.
    pub comm_init_all: unsafe extern "C" fn(*mut Comm, c_int, *const c_int) -> c_int,
    /// `ncclCommDestroy`.
    pub comm_destroy: unsafe extern "C" fn(Comm) -> c_int,
    /// `ncclGroupStart`.
    pub group_start: unsafe extern "C" fn() -> c_int,
    /// `ncclGroupEnd`.
    pub group_end: unsafe extern "C" fn() -> c_int,
    /// `ncclAllReduce(send, recv, count, type, op, comm, stream)`.
    pub all_reduce: Reduce,
    /// `ncclAllGather(send, recv, send count, type, comm, stream)`.
    pub all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, Stream) -> c_int,
    /// `ncclReduceScatter(send, recv, receive count, type, op, comm, stream)`.
    pub reduce_scatter: Reduce,
    /// `ncclBroadcast(send, recv, count, type, root, comm, stream)`.
    pub broadcast: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    /// The version, `major.minor.patch`.
    pub version: String,
    /// Keeps the entry points valid.
    _lib: Library,
}

/// The library names tried, in order.
const NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

/// NCCL, opened once; the reason it is unusable otherwise.
pub fn nccl() -> Result<&'static Nccl, String> {
    static NCCL: OnceLock<Result<Nccl, String>> = OnceLock::new();
    NCCL.get_or_init(open).as_ref().map_err(Clone::clone)
}

fn open() -> Result<Nccl, String> {
    let mut tried = Vec::new();
    let lib = NAMES
        .iter()
        .find_map(|name| {
            // SAFETY: NCCL's initializers have no preconditions; the library
            // is kept open for the process (the `OnceLock`).
            match unsafe { Library::new(*name) } {
                Ok(lib) => Some(lib),
                Err(e) => {
                    tried.push(format!("{name}: {e}"));
                    None
                }
            }
        })
        .ok_or_else(|| format!("NCCL is not installed: {}", tried.join("; ")))?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is NCCL's function of that name, whose C
            // signature the field's type spells (nccl.h); `lib` outlives
            // the pointer (both live in the returned struct).
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("the NCCL library found has no `{}`: {e}", $name))?
        };
    }
    let mut nccl = Nccl {
        get_version: sym!("ncclGetVersion"),
        get_error_string: sym!("ncclGetErrorString"),
        comm_init_all: sym!("ncclCommInitAll"),
        comm_destroy: sym!("ncclCommDestroy"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        all_reduce: sym!("ncclAllReduce"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        broadcast: sym!("ncclBroadcast"),
        version: String::new(),
        _lib: lib,
    };
    let mut code: c_int = 0;
    // SAFETY: writes the version code into `code`.
    let status = unsafe { (nccl.get_version)(&mut code) };
    if status != SUCCESS {
        return Err(format!("ncclGetVersion failed: {}", nccl.error_string(status)));
    }
    // NCCL 2.9 and later encode major * 10000 + minor * 100 + patch.
    nccl.version = format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
    Ok(nccl)
}

impl Nccl {
    /// NCCL's message for a result code.
    pub fn error_string(&self, status: c_int) -> String {
        // SAFETY: NCCL returns a static string for any code.
        let text = unsafe { (self.get_error_string)(status) };
        if text.is_null() {
            return format!("NCCL error {status}");
        }
        // SAFETY: a NUL-terminated static string.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_opens_or_says_why() {
        match nccl() {
            Ok(nccl) => {
                assert!(nccl.version.starts_with("2."), "{}", nccl.version);
                assert!(!nccl.error_string(4).is_empty());
            }
            Err(reason) => assert!(reason.contains("libnccl.so.2"), "{reason}"),
        }
    }
}
