//! Values: strings, byte strings, data types, and borrowed-to-owned conversion.

use crate::boundary::{bytes, guard, non_null, out_ptr, utf8};
use rffi_core::abi::{DLDataType, RFFIAny, RFFIByteArray};
use rffi_core::{Any, AnyView, Bytes, DataType, Error, RString};

/// Writes an owned value to a caller's out-slot.
///
/// # Safety
/// `out` must be writable.
unsafe fn put(out: *mut RFFIAny, value: Any) {
    // SAFETY: forwarded contract; the value's ownership moves to the caller.
    unsafe { out.write(value.into_raw()) }
}

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
    guard(|| {
        const F: &str = "RFFIStringFromByteArray";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let s = unsafe { utf8(input, F, "input") }?;
        // SAFETY: checked out-pointer.
        unsafe { put(out, RString::new(s).into()) };
        Ok(())
    })
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
    guard(|| {
        const F: &str = "RFFIBytesFromByteArray";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let b = unsafe { bytes(input, F, "input") }?;
        // SAFETY: checked out-pointer.
        unsafe { put(out, Bytes::new(b).into()) };
        Ok(())
    })
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
    guard(|| {
        const F: &str = "RFFIDataTypeFromString";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let s = unsafe { utf8(input, F, "input") }?;
        let dt = DataType::parse(s).map_err(|e| Error::value_error(format!("{F}: {e}")))?;
        // SAFETY: checked out-pointer.
        unsafe { out.write(dt.raw()) };
        Ok(())
    })
}

/// Prints a dtype as a string value (owned, in `*out`). An invalid dtype is a ValueError.
///
/// # Safety
/// `dtype` must be readable; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIDataTypeToString(dtype: *const DLDataType, out: *mut RFFIAny) -> i32 {
    guard(|| {
        const F: &str = "RFFIDataTypeToString";
        let out = out_ptr(out, F, "out")?;
        let dtype = non_null(dtype, F, "dtype")?;
        // SAFETY: checked readable pointer.
        let dt = DataType::from_raw(unsafe { *dtype })
            .map_err(|e| Error::value_error(format!("{F}: {e}")))?;
        // SAFETY: checked out-pointer.
        unsafe { put(out, Any::from(dt.to_string())) };
        Ok(())
    })
}

/// Converts a borrowed value into an owned one: a raw C string becomes a String value, a byte
/// array pointer a Bytes value, an rvalue reference gives up its object, objects gain a reference.
///
/// # Safety
/// `view` must be a valid value; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIAnyViewToOwnedAny(view: *const RFFIAny, out: *mut RFFIAny) -> i32 {
    guard(|| {
        const F: &str = "RFFIAnyViewToOwnedAny";
        let out = out_ptr(out, F, "out")?;
        let view = non_null(view, F, "view")?;
        // SAFETY: a valid value per the contract, alive for this call.
        let owned = unsafe { AnyView::from_raw(*view) }.to_owned()?;
        // SAFETY: checked out-pointer.
        unsafe { put(out, owned) };
        Ok(())
    })
}
