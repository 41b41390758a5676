//! What every entry point shares: the conversion of cmdbuf-core's errors into
//! `ur_result_t`, the catching of panics at the boundary, and the last
//! error kept per thread for `urAdapterGetLastError`.

use std::cell::RefCell;
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};

use cmdbuf_core::error::{Detail, panic_message};
use cmdbuf_core::{UrError, err};

use crate::sys::ur_result_t;

/// What an entry point's body returns.
pub type AbiResult<T = ()> = Result<T, UrError>;

/// The last error of this thread: its message and the native code of the
/// driver call that failed, where there was one.
struct LastError {
    message: CString,
    native_code: i32,
}

thread_local! {
    static LAST_ERROR: RefCell<Option<LastError>> = const { RefCell::new(None) };
}

/// Runs an entry point's body: its error becomes the matching
/// `ur_result_t` and this thread's last error; a panic becomes
/// `UR_RESULT_ERROR_UNKNOWN`, never an unwind into C.
pub fn guard(entry_point: &'static str, body: impl FnOnce() -> AbiResult) -> ur_result_t {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(UrError::Unknown(Detail::msg(format!("{entry_point} panicked: {}", panic_message(&*payload)))))
    });
    match outcome {
        Ok(()) => ur_result_t::UR_RESULT_SUCCESS,
        Err(error) => {
            tracing::debug!(entry_point, %error, "entry point failed");
            remember(&error);
            ur_result_t(error.ur_code())
        }
    }
}

fn remember(error: &UrError) {
    let detail = error.detail();
    let message = CString::new(error.to_string().replace('\0', " ")).unwrap_or_default();
    let native_code = detail.native_code.map_or(error.ur_code() as i32, |c| c as i32);
    store(LastError { message, native_code });
}

/// Stores this thread's last error; on a thread whose locals are being
/// destroyed (a release from a C++ static destructor at exit) it is dropped,
/// as nothing on that thread can ask for it any more.
fn store(error: LastError) {
    let _ = LAST_ERROR.try_with(|last| *last.borrow_mut() = Some(error));
}

/// The message and code of this thread's last error, valid until the
/// thread's next failing call (`urAdapterGetLastError`'s contract).
pub(crate) fn last_error() -> Option<(*const std::ffi::c_char, i32)> {
    LAST_ERROR.try_with(|last| last.borrow().as_ref().map(|e| (e.message.as_ptr(), e.native_code))).ok().flatten()
}

/// The answer of a generated check (`checks.rs`): `code` for a call that
/// meets `condition` of `entry_point`'s `@returns` list, remembered as this
/// thread's last error like any other.
pub(crate) fn reject(entry_point: &'static str, code: ur_result_t, condition: &'static str) -> ur_result_t {
    tracing::debug!(entry_point, condition, code = code.0, "argument check failed");
    let message = CString::new(format!("{entry_point}: `{condition}`")).unwrap_or_default();
    store(LastError { message, native_code: code.0 as i32 });
    code
}

/// An entry point cmdbuf does not implement, for the table slots of
/// [`crate::tables`]. Listed in `docs/mapping.md`.
pub(crate) fn unsupported() -> ur_result_t {
    guard("unsupported entry point", || {
        Err(err!(UnsupportedFeature, "cmdbuf does not implement this entry point (see docs/mapping.md)"))
    })
}
