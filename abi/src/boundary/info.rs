//! UR's info-query protocol, shared by every `urXGetInfo`.
//!
//! A query passes a buffer of `propSize` bytes (`pPropValue`, optional) and
//! an optional `pPropSizeRet`. The answer's size always goes to
//! `pPropSizeRet`; the answer goes to `pPropValue` when it is given, and a
//! buffer too small for it is `UR_RESULT_ERROR_INVALID_SIZE`. Both null, or
//! a zero size with a buffer, are the caller's errors.

use std::ffi::c_void;

use cmdbuf_core::ensure;

use crate::entry::{AbiResult, guard};
use crate::handle::{Handle, Object};
use crate::sys::ur_result_t;

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
            // SAFETY: non-null here, and `new`'s contract makes a non-null
            // `size_ret` writable.
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

/// Runs a `urXGetInfo` on a handle of kind `T`: resolves the handle, then
/// checks the caller's buffer description ([`InfoOut::new`]), then lets
/// `answer` write, all under [`guard`].
///
/// # Safety
/// `raw` is null or a handle of this adapter (as for [`Handle::get`]);
/// `value` is null or writable for `size` bytes; `size_ret` is null or
/// writable.
pub unsafe fn query<T: Object>(
    entry_point: &'static str,
    raw: T::Raw,
    (size, value, size_ret): (usize, *mut c_void, *mut usize),
    answer: impl FnOnce(&Handle<T>, InfoOut) -> AbiResult,
) -> ur_result_t {
    guard(entry_point, || {
        // SAFETY: `raw` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
        let handle = unsafe { Handle::<T>::get(raw)? };
        // SAFETY: `value` is null or writable for `size` bytes, `size_ret` null or writable (this function's
        // `# Safety`), all `InfoOut::new` needs.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        answer(handle, out)
    })
}

/// Reads a C string argument.
///
/// # Safety
/// `ptr` is null or a NUL-terminated string.
pub unsafe fn c_str<'a>(ptr: *const std::ffi::c_char, what: &str) -> AbiResult<&'a str> {
    ensure!(!ptr.is_null(), InvalidNullPointer, "{what} is null");
    // SAFETY: non-null and NUL-terminated per the contract.
    let s = unsafe { std::ffi::CStr::from_ptr(ptr) };
    s.to_str().map_err(|_| cmdbuf_core::err!(InvalidValue, "{what} is not UTF-8"))
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

/// Writes a required out-parameter. Every entry point that has one is
/// behind a generated check (`checks.rs`) that refuses it null with UR's
/// `INVALID_NULL_POINTER`, so no caller gets here with null.
///
/// # Safety
/// `ptr` is writable (and so not null).
pub unsafe fn write_out<T>(ptr: *mut T, value: T) {
    // SAFETY: `ptr` is writable for one `T` (this function's `# Safety`); `write_unaligned` needs no alignment.
    unsafe { ptr.write_unaligned(value) };
}

/// Borrows a C array argument: null with a zero count is empty; null with a
/// count, or a non-null pointer with zero, is `mismatch`.
///
/// # Safety
/// `ptr` is null or points to `count` readable elements.
pub unsafe fn slice<'a, T>(
    ptr: *const T,
    count: usize,
    mismatch: impl FnOnce() -> cmdbuf_core::UrError,
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
/// An array with 0 entries never gets here: the generated check of each
/// such entry point (`checks.rs`) refuses it with `INVALID_SIZE`.
///
/// # Safety
/// `out` is null or writable for `num_entries` handles; `count` is null or
/// writable.
pub unsafe fn enumerate<H: Copy>(items: &[H], num_entries: u32, out: *mut H, count: *mut u32) -> AbiResult {
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

/// The protocol's writes, into heap buffers sized exactly to what each call
/// may write: a byte past them is an invalid write that valgrind reports
/// (`scripts/memcheck.sh` runs these tests under memcheck).
#[cfg(test)]
mod tests {
    use std::ffi::c_void;

    use cmdbuf_core::UrError;

    use super::*;

    /// A buffer of exactly `n` bytes on the heap, filled with a marker.
    fn exact(n: usize) -> Box<[u8]> {
        vec![0xAB; n].into_boxed_slice()
    }

    #[test]
    fn size_only_writes_the_size() {
        let mut size = Box::new(0usize);
        // SAFETY: no value buffer; the size return is writable.
        let out = unsafe { InfoOut::new(0, std::ptr::null_mut(), &mut *size) }.unwrap();
        out.string("pocl").unwrap();
        assert_eq!(*size, 5);
    }

    #[test]
    fn an_exact_buffer_gets_the_whole_answer() {
        let mut value = exact(5);
        let mut size = Box::new(0usize);
        // SAFETY: both are writable for the sizes given.
        let out = unsafe { InfoOut::new(5, value.as_mut_ptr().cast::<c_void>(), &mut *size) }.unwrap();
        out.string("pocl").unwrap();
        assert_eq!((&*value, *size), (&b"pocl\0"[..], 5));

        let mut values = exact(3 * 8);
        // SAFETY: as above, without a size return.
        let out = unsafe { InfoOut::new(24, values.as_mut_ptr().cast::<c_void>(), std::ptr::null_mut()) }.unwrap();
        out.array(&[1u64, 2, 3]).unwrap();
        let got: Vec<u64> = values.chunks(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, [1, 2, 3]);
    }

    #[test]
    fn a_short_buffer_is_invalid_size_and_untouched() {
        let mut value = exact(4);
        let mut size = Box::new(0usize);
        // SAFETY: both are writable for the sizes given.
        let out = unsafe { InfoOut::new(4, value.as_mut_ptr().cast::<c_void>(), &mut *size) }.unwrap();
        assert!(matches!(out.string("pocl"), Err(UrError::InvalidSize(_))));
        assert_eq!((&*value, *size), (&[0xAB; 4][..], 5), "the size is still answered");
    }

    #[test]
    fn a_larger_buffer_keeps_its_tail() {
        let mut value = exact(8);
        // SAFETY: `value` is a live buffer of 8 writable bytes, and the size
        // return is null.
        let out = unsafe { InfoOut::new(8, value.as_mut_ptr().cast::<c_void>(), std::ptr::null_mut()) }.unwrap();
        out.value(7u32).unwrap();
        assert_eq!(&value[..4], 7u32.to_ne_bytes());
        assert_eq!(&value[4..], [0xAB; 4]);
    }

    #[test]
    fn out_parameters_and_enumerations_write_in_bounds() {
        // An unaligned out-parameter: one byte into a buffer.
        let mut raw = exact(1 + size_of::<u64>());
        // SAFETY: the 8 bytes after the first are writable.
        unsafe { write_out(raw.as_mut_ptr().add(1).cast::<u64>(), 0x0102_0304_0506_0708) };
        assert_eq!(raw[1..], 0x0102_0304_0506_0708u64.to_ne_bytes());

        let items = [10u32, 11, 12];
        let mut two = vec![0u32; 2].into_boxed_slice();
        let mut count = Box::new(0u32);
        // SAFETY: room for 2 handles and the count.
        unsafe { enumerate(&items, 2, two.as_mut_ptr(), &mut *count) }.unwrap();
        assert_eq!((&*two, *count), (&[10, 11][..], 3));

        // SAFETY: the list holds 3 readable elements.
        let list = unsafe { optional_list(items.as_ptr(), 3, "list") }.unwrap();
        assert_eq!(list, items);
        // SAFETY: a count of 0 reads nothing, whatever the pointer.
        assert!(unsafe { optional_list(8 as *const u32, 0, "list") }.unwrap().is_empty());
    }
}
