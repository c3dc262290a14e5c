//! Errors: raising, taking the raised error, creating errors and reading them.

use super::boundary::{bytes, c_str_lossy, guard, non_null, out_ptr, utf8};
use crate::abi::{RFFIByteArray, RFFIErrorCell, RFFIObject, RFFIObjectHandle};
use crate::error::{set_raised, take_raised};
use crate::{Error, ObjectRef, ObjectType};
use std::ffi::c_char;
use std::ptr::NonNull;

/// Borrows a handle as an Error, checking its type.
///
/// # Safety
/// A non-null `h` must be a live object.
unsafe fn borrow_error(h: RFFIObjectHandle, func: &str) -> crate::Result<Error> {
    let p = non_null(h.cast::<RFFIObject>(), func, "error")?;
    // SAFETY: a live object per the contract; we take our own reference.
    let obj = unsafe { ObjectRef::from_borrowed(NonNull::new_unchecked(p.cast_mut())) };
    Error::from_object(obj).map_err(|o| {
        Error::type_error(format!(
            "{func}: `error` must be an Error (ffi.Error) but is {}",
            crate::type_registry::type_name(o.type_index())
        ))
    })
}

/// See `RFFIErrorSetRaised` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIErrorSetRaised(error: RFFIObjectHandle) {
    // SAFETY: forwarded contract.
    match unsafe { borrow_error(error, "RFFIErrorSetRaised") } {
        Ok(e) | Err(e) => set_raised(e),
    }
}

/// See `RFFIErrorSetRaisedFromCStr` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIErrorSetRaisedFromCStr(kind: *const c_char, message: *const c_char) {
    let _ = guard(|| {
        // SAFETY: forwarded contract.
        let (kind, message) = unsafe { (c_str_lossy(kind), c_str_lossy(message)) };
        let kind = if kind.is_empty() {
            "RuntimeError".into()
        } else {
            kind
        };
        set_raised(Error::new_foreign(&kind, message.into_owned()));
        Ok(())
    });
}

/// See `RFFIErrorSetRaisedFromCStrParts` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIErrorSetRaisedFromCStrParts(
    kind: *const c_char,
    parts: *const *const c_char,
    num_parts: i32,
) {
    let _ = guard(|| {
        let mut message = String::new();
        if !parts.is_null() {
            for i in 0..num_parts.max(0) as usize {
                // SAFETY: `num_parts` readable pointers per the contract.
                message.push_str(&unsafe { c_str_lossy(*parts.add(i)) });
            }
        }
        // SAFETY: forwarded contract.
        let kind = unsafe { c_str_lossy(kind) };
        let kind = if kind.is_empty() {
            "RuntimeError".into()
        } else {
            kind
        };
        set_raised(Error::new_foreign(&kind, message));
        Ok(())
    });
}

/// See `RFFIErrorMoveFromRaised` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIErrorMoveFromRaised(out: *mut RFFIObjectHandle) {
    let err = take_raised();
    if !out.is_null() {
        let h = err.map_or(std::ptr::null_mut(), |e| {
            e.into_object().into_raw().as_ptr().cast()
        });
        // SAFETY: checked non-null; the caller promises it is writable.
        unsafe { out.write(h) };
    }
}

/// See `RFFIErrorCreate` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIErrorCreate(
    kind: *const RFFIByteArray,
    message: *const RFFIByteArray,
    backtrace: *const RFFIByteArray,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIErrorCreate";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: valid byte arrays per the contract.
        let (kind, message) = unsafe { (utf8(kind, F, "kind")?, bytes(message, F, "message")?) };
        crate::function_registry::check_name("an error kind", kind)
            .map_err(|e| Error::value_error(format!("{F}: `kind`: {}", e.message())))?;
        let backtrace = if backtrace.is_null() {
            ""
        } else {
            // SAFETY: as above.
            unsafe { utf8(backtrace, F, "backtrace") }?
        };
        let err = Error::with_backtrace(kind, String::from_utf8_lossy(message), backtrace);
        // SAFETY: checked writable out-pointer; the new reference moves to the caller.
        unsafe { out.write(err.into_object().into_raw().as_ptr().cast()) };
        Ok(())
    })
}

/// Reads one byte-array field of an error's cell into `*out` (borrowed from the error).
unsafe fn cell_field(
    error: RFFIObjectHandle,
    out: *mut RFFIByteArray,
    func: &str,
    field: fn(&RFFIErrorCell) -> RFFIByteArray,
    render: bool,
) -> i32 {
    guard(|| {
        let out = out_ptr(out, func, "out")?;
        // SAFETY: forwarded contract.
        let err = unsafe { borrow_error(error, func) }?;
        if render {
            // Symbolizes pending native frames and points the cell at the full text.
            err.backtrace();
        }
        // SAFETY: a live Error (type checked): the cell is at offset 24, and its byte arrays
        // point into the object.
        let ba = unsafe { field(&*err.as_raw().add(1).cast::<RFFIErrorCell>()) };
        // SAFETY: checked writable out-pointer.
        unsafe { out.write(ba) };
        Ok(())
    })
}

/// See `RFFIErrorGetKind` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIErrorGetKind(error: RFFIObjectHandle, out: *mut RFFIByteArray) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { cell_field(error, out, "RFFIErrorGetKind", |c| c.kind, false) }
}

/// See `RFFIErrorGetMessage` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIErrorGetMessage(
    error: RFFIObjectHandle,
    out: *mut RFFIByteArray,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { cell_field(error, out, "RFFIErrorGetMessage", |c| c.message, false) }
}

/// See `RFFIErrorGetBacktrace` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIErrorGetBacktrace(
    error: RFFIObjectHandle,
    out: *mut RFFIByteArray,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { cell_field(error, out, "RFFIErrorGetBacktrace", |c| c.backtrace, true) }
}
