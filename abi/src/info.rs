//! UR's info-query protocol, shared by every `urXGetInfo`.
//!
//! A query passes a buffer of `propSize` bytes (`pPropValue`, optional) and
//! an optional `pPropSizeRet`. The answer's size always goes to
//! `pPropSizeRet`; the answer goes to `pPropValue` when it is given, and a
//! buffer too small for it is `UR_RESULT_ERROR_INVALID_SIZE`. Both null, or
//! a zero size with a buffer, are the caller's errors.

use std::ffi::c_void;

use ur_core::ensure;

use crate::entry::AbiResult;

/// Where one query's answer goes.
pub struct InfoOut {
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
}

impl InfoOut {
    /// Checks the caller's buffer description.
    ///
    /// # Safety
    /// `value` is null or writable for `size` bytes; `size_ret` is null or
    /// writable.
    pub unsafe fn new(size: usize, value: *mut c_void, size_ret: *mut usize) -> AbiResult<InfoOut> {
        ensure!(
            !value.is_null() || !size_ret.is_null(),
            InvalidNullPointer,
            "neither a value buffer nor a size return is given"
        );
        ensure!(size == 0 || !value.is_null(), InvalidNullPointer, "a size of {size} bytes without a value buffer");
        ensure!(size != 0 || value.is_null(), InvalidSize, "a value buffer of 0 bytes");
        Ok(InfoOut { size, value, size_ret })
    }

    /// Answers with raw bytes.
    pub fn bytes(self, bytes: &[u8]) -> AbiResult {
        if !self.size_ret.is_null() {
            // SAFETY: writable per `new`'s contract.
            unsafe { self.size_ret.write_unaligned(bytes.len()) };
        }
        if !self.value.is_null() {
            ensure!(
                self.size >= bytes.len(),
                InvalidSize,
                "the answer takes {} bytes, the buffer has {}",
                bytes.len(),
                self.size
            );
            // SAFETY: the buffer is writable for `size >= bytes.len()` bytes
            // and cannot overlap our answer.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.value.cast::<u8>(), bytes.len()) };
        }
        Ok(())
    }

    /// Answers with one value of a plain C type.
    pub fn value<T: Copy>(self, value: T) -> AbiResult {
        self.array(std::slice::from_ref(&value))
    }

    /// Answers with an array of a plain C type.
    pub fn array<T: Copy>(self, values: &[T]) -> AbiResult {
        // SAFETY: `T` is a plain C type of the UR headers (integers, enums as
        // newtypes, handles, structs of those) without padding we would leak
        // beyond what C itself would copy.
        let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) };
        self.bytes(bytes)
    }

    /// Answers with a `ur_bool_t`.
    pub fn bool(self, value: bool) -> AbiResult {
        self.value::<crate::sys::ur_bool_t>(value.into())
    }

    /// Answers with a NUL-terminated string.
    pub fn string(self, value: &str) -> AbiResult {
        let mut bytes = Vec::with_capacity(value.len() + 1);
        bytes.extend(value.bytes().filter(|b| *b != 0));
        bytes.push(0);
        self.bytes(&bytes)
    }
}

/// Reads a C string argument.
///
/// # Safety
/// `ptr` is null or a NUL-terminated string.
pub unsafe fn c_str<'a>(ptr: *const std::ffi::c_char, what: &str) -> AbiResult<&'a str> {
    ensure!(!ptr.is_null(), InvalidNullPointer, "{what} is null");
    // SAFETY: non-null and NUL-terminated per the contract.
    let s = unsafe { std::ffi::CStr::from_ptr(ptr) };
    s.to_str().map_err(|_| ur_core::err!(InvalidValue, "{what} is not UTF-8"))
}

/// Writes an optional out-parameter.
///
/// # Safety
/// `ptr` is null or writable.
pub unsafe fn write_opt<T>(ptr: *mut T, value: T) {
    if !ptr.is_null() {
        // SAFETY: non-null and writable per the contract.
        unsafe { ptr.write_unaligned(value) };
    }
}

/// Writes a required out-parameter.
///
/// # Safety
/// `ptr` is null or writable.
pub unsafe fn write_out<T>(ptr: *mut T, value: T, what: &str) -> AbiResult {
    ensure!(!ptr.is_null(), InvalidNullPointer, "{what} is null");
    // SAFETY: non-null and writable per the contract.
    unsafe { ptr.write_unaligned(value) };
    Ok(())
}

/// Borrows a C array argument: null with a zero count is empty; null with a
/// count, or a non-null pointer with zero, is `mismatch`.
///
/// # Safety
/// `ptr` is null or points to `count` readable elements.
pub unsafe fn slice<'a, T>(
    ptr: *const T,
    count: usize,
    mismatch: impl FnOnce() -> ur_core::UrError,
) -> AbiResult<&'a [T]> {
    match (ptr.is_null(), count) {
        (true, 0) => Ok(&[]),
        (true, _) | (false, 0) => Err(mismatch()),
        // SAFETY: non-null and `count` elements long per the contract.
        (false, n) => Ok(unsafe { std::slice::from_raw_parts(ptr, n) }),
    }
}

/// Borrows a C array that UR lets be anything when its count is 0 (argument
/// and update lists): null with a count is `INVALID_NULL_POINTER`.
///
/// # Safety
/// With a non-zero count, `ptr` is null or points to `count` readable elements.
pub unsafe fn optional_list<'a, T>(ptr: *const T, count: u32, what: &str) -> AbiResult<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    ensure!(!ptr.is_null(), InvalidNullPointer, "{what} is null with a count of {count}");
    // SAFETY: non-null and `count` elements long per the contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count as usize) })
}

/// Answers a `urXGet(NumEntries, phItems, pNumItems)` enumeration: up to
/// `num_entries` handles into `out`, and how many there are into `count`.
///
/// # Safety
/// `out` is null or writable for `num_entries` handles; `count` is null or
/// writable.
pub unsafe fn enumerate<H: Copy>(items: &[H], num_entries: u32, out: *mut H, count: *mut u32) -> AbiResult {
    ensure!(num_entries != 0 || out.is_null(), InvalidSize, "0 entries with an output array");
    ensure!(!out.is_null() || !count.is_null(), InvalidNullPointer, "neither an output array nor a count");
    if !out.is_null() {
        for (i, item) in items.iter().take(num_entries as usize).enumerate() {
            // SAFETY: the caller's array holds `num_entries` entries.
            unsafe { out.add(i).write(*item) };
        }
    }
    // SAFETY: null or writable per the contract.
    unsafe { write_opt(count, items.len() as u32) };
    Ok(())
}
