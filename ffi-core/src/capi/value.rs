//! Values: strings, byte strings, data types, and borrowed-to-owned conversion.

use super::boundary::{bytes, guard, non_null, out_ptr, utf8};
use crate::abi::{DLDataType, RFFIAny, RFFIByteArray};
use crate::{Any, AnyView, Bytes, DataType, Error, RString};

/// Writes an owned value to a caller's out-slot.
///
/// # Safety
/// `out` must be writable.
pub(crate) unsafe fn put(out: *mut RFFIAny, value: Any) {
    // SAFETY: forwarded contract; the value's ownership moves to the caller.
    unsafe { out.write(value.into_raw()) }
}

/// See `RFFIStringFromByteArray` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
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

/// See `RFFIBytesFromByteArray` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
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

/// See `RFFIDataTypeFromString` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
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

/// See `RFFIDataTypeToString` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
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

/// See `RFFIAnyViewToOwnedAny` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
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
