//! Exports of the `error` part of the C API (implemented in `rffi_core::capi::error`).
use rffi_core::abi::*;
use rffi_core::capi;
use std::ffi::c_char;

/// Makes `error` this thread's raised error; the runtime takes its own reference. A NULL handle or
/// a non-Error object raises a ValueError/TypeError describing the misuse instead.
///
/// # Safety
/// A non-null `error` must be a live object.
#[no_mangle]
pub unsafe extern "C" fn RFFIErrorSetRaised(error: RFFIObjectHandle) {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::error::RFFIErrorSetRaised(error) }
}

/// Raises a new error of `kind` with `message` (NUL-terminated; NULL reads as empty). The native
/// backtrace of the caller is captured.
///
/// # Safety
/// Non-null arguments must be NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn RFFIErrorSetRaisedFromCStr(kind: *const c_char, message: *const c_char) {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::error::RFFIErrorSetRaisedFromCStr(kind, message) }
}

/// Raises a new error whose message is the concatenation of `num_parts` strings (NULL parts are
/// skipped), for generated code that builds messages from pieces.
///
/// # Safety
/// `parts` must point to `num_parts` pointers, each NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn RFFIErrorSetRaisedFromCStrParts(
    kind: *const c_char,
    parts: *const *const c_char,
    num_parts: i32,
) {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::error::RFFIErrorSetRaisedFromCStrParts(kind, parts, num_parts) }
}

/// Moves this thread's raised error into `*out` (NULL if none) and clears the slot. The caller owns
/// the reference and must release it with `RFFIObjectDecRef`.
///
/// # Safety
/// `out` must be NULL (the error is then dropped) or writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIErrorMoveFromRaised(out: *mut RFFIObjectHandle) {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::error::RFFIErrorMoveFromRaised(out) }
}

/// Creates an Error object from kind, message and a traceback text (most recent call first, may
/// be NULL). Does not raise it. A kind that is empty, not UTF-8 or holds a NUL byte is a
/// ValueError.
///
/// # Safety
/// Non-null byte arrays must be valid; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIErrorCreate(
    kind: *const RFFIByteArray,
    message: *const RFFIByteArray,
    backtrace: *const RFFIByteArray,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::error::RFFIErrorCreate(kind, message, backtrace, out) }
}

/// The kind of an error (`"ValueError"`, ...), borrowed: valid while the error lives.
///
/// # Safety
/// `error` must be NULL or a live object; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIErrorGetKind(error: RFFIObjectHandle, out: *mut RFFIByteArray) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::error::RFFIErrorGetKind(error, out) }
}

/// The message of an error, borrowed: valid while the error lives.
///
/// # Safety
/// `error` must be NULL or a live object; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIErrorGetMessage(
    error: RFFIObjectHandle,
    out: *mut RFFIByteArray,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::error::RFFIErrorGetMessage(error, out) }
}

/// The traceback of an error, most recent call first, one `  File "<file>", line <n>, in <fn>`
/// line per frame. Native frames are symbolized on the first call (this can take a while once per
/// process). Borrowed: valid while the error lives and its traceback is not updated.
///
/// # Safety
/// `error` must be NULL or a live object; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIErrorGetBacktrace(
    error: RFFIObjectHandle,
    out: *mut RFFIByteArray,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::error::RFFIErrorGetBacktrace(error, out) }
}
