//! Exports of the `value` part of the C API (implemented in `rffi_core::capi::value`).
use rffi_core::abi::*;
use rffi_core::capi;

/// Makes a string value from bytes (which must be UTF-8): inline (`kRFFISmallStr`) up to 7 bytes,
/// else a `kRFFIStr` object. Embedded NULs are kept. `*out` receives an owned value.
///
/// # Safety
/// `input` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIStringFromByteArray(
    input: *const RFFIByteArray,
    out: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::value::RFFIStringFromByteArray(input, out) }
}

/// Makes a bytes value: inline (`kRFFISmallBytes`) up to 7 bytes, else a `kRFFIBytes` object.
///
/// # Safety
/// `input` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIBytesFromByteArray(
    input: *const RFFIByteArray,
    out: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::value::RFFIBytesFromByteArray(input, out) }
}

/// Parses a dtype string (`"float32"`, `"int8x4"`, `"bfloat16"`, `"float8_e4m3fn"`, ...). A bad
/// string is a ValueError that quotes it.
///
/// # Safety
/// `input` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIDataTypeFromString(
    input: *const RFFIByteArray,
    out: *mut DLDataType,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::value::RFFIDataTypeFromString(input, out) }
}

/// Prints a dtype as a string value (owned, in `*out`). An invalid dtype is a ValueError.
///
/// # Safety
/// `dtype` must be readable; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIDataTypeToString(dtype: *const DLDataType, out: *mut RFFIAny) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::value::RFFIDataTypeToString(dtype, out) }
}

/// Converts a borrowed value into an owned one: a raw C string becomes a String value, a byte
/// array pointer a Bytes value, an rvalue reference gives up its object, objects gain a reference.
///
/// # Safety
/// `view` must be a valid value; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIAnyViewToOwnedAny(view: *const RFFIAny, out: *mut RFFIAny) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::value::RFFIAnyViewToOwnedAny(view, out) }
}
