//! The boundary every C entry point goes through: panics and errors become `-1` with the error
//! in the thread-local slot, and pointers are checked before use.

use crate::abi::RFFIByteArray;
use crate::error::set_raised;
use crate::{Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`; 0 on success, -1 with the error raised on failure or panic. A plain
/// `catch_unwind`, which costs nothing: the panic hook knows a panic here is caught from the
/// exported entry point's frame on the stack (`panics`).
#[inline]
#[allow(clippy::disallowed_methods)]
pub fn guard(body: impl FnOnce() -> Result<()>) -> i32 {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            set_raised(e);
            -1
        }
        Err(payload) => {
            set_raised(Error::from_panic(payload));
            -1
        }
    }
}

/// A non-null pointer, or a ValueError naming the entry point and the argument.
#[inline]
pub fn non_null<T>(p: *const T, func: &str, arg: &str) -> Result<*const T> {
    if p.is_null() {
        Err(null_argument(func, arg))
    } else {
        Ok(p)
    }
}

/// Kept out of line so the checks above cost callers (every entry point) only a compare.
#[cold]
#[inline(never)]
fn null_argument(func: &str, arg: &str) -> Error {
    Error::value_error(format!("{func}: `{arg}` is NULL"))
}

/// A writable out-pointer, or a ValueError.
#[inline]
pub fn out_ptr<T>(p: *mut T, func: &str, arg: &str) -> Result<*mut T> {
    non_null(p, func, arg).map(|p| p.cast_mut())
}

/// The bytes of a borrowed byte array.
///
/// # Safety
/// A non-null `ba` must point to a byte array whose `data` has `size` readable bytes.
pub unsafe fn bytes<'a>(ba: *const RFFIByteArray, func: &str, arg: &str) -> Result<&'a [u8]> {
    let ba = non_null(ba, func, arg)?;
    // SAFETY: checked non-null; the caller promises a valid byte array.
    let ba = unsafe { &*ba };
    if ba.size == 0 {
        return Ok(&[]);
    }
    if ba.data.is_null() {
        return Err(Error::value_error(format!(
            "{func}: `{arg}` has NULL data and size {}",
            ba.size
        )));
    }
    if ba.size > isize::MAX as usize {
        return Err(Error::value_error(format!(
            "{func}: `{arg}` has an impossible size {}",
            ba.size
        )));
    }
    // SAFETY: non-null data of `size` bytes per the contract.
    Ok(unsafe { std::slice::from_raw_parts(ba.data.cast(), ba.size) })
}

/// A UTF-8 string from a borrowed byte array.
///
/// # Safety
/// As `bytes`.
pub unsafe fn utf8<'a>(ba: *const RFFIByteArray, func: &str, arg: &str) -> Result<&'a str> {
    // SAFETY: forwarded contract.
    let b = unsafe { bytes(ba, func, arg) }?;
    std::str::from_utf8(b)
        .map_err(|e| Error::value_error(format!("{func}: `{arg}` is not valid UTF-8 ({e})")))
}

/// A NUL-terminated C string as UTF-8 (invalid bytes replaced).
///
/// # Safety
/// A non-null `s` must be NUL-terminated.
pub unsafe fn c_str_lossy<'a>(s: *const std::ffi::c_char) -> std::borrow::Cow<'a, str> {
    if s.is_null() {
        return "".into();
    }
    // SAFETY: forwarded contract.
    unsafe { std::ffi::CStr::from_ptr(s) }.to_string_lossy()
}
