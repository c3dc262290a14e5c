//! Structural operations: equality and hashing, the first mismatch, recursive comparison, deep
//! copy, repr and JSON graphs.

use super::boundary::{guard, non_null, out_ptr, utf8};
use super::value::put;
use crate::abi::*;
use crate::structural::{self, Compared, Options};
use crate::{Any, AnyView, Error};

/// A borrowed value from a caller's pointer.
///
/// # Safety
/// A non-null `p` must point to a valid value for the call.
unsafe fn arg<'a>(p: *const RFFIAny, f: &str, name: &str) -> crate::Result<AnyView<'a>> {
    let p = non_null(p, f, name)?;
    // SAFETY: a valid value for the call (contract).
    Ok(unsafe { AnyView::from_raw(*p) })
}

fn options(flags: i32, f: &str) -> crate::Result<Options> {
    let known = kRFFIStructuralMapFreeVars | kRFFIStructuralSkipTensorContent;
    if flags & !known != 0 {
        return Err(Error::value_error(format!(
            "{f}: unknown flags {:#x} (kRFFIStructural* only)",
            flags & !known
        )));
    }
    Ok(Options {
        map_free_vars: flags & kRFFIStructuralMapFreeVars != 0,
        skip_tensor_content: flags & kRFFIStructuralSkipTensorContent != 0,
    })
}

/// See `RFFIStructuralEqual` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIStructuralEqual(
    lhs: *const RFFIAny,
    rhs: *const RFFIAny,
    flags: i32,
    out: *mut i32,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIStructuralEqual";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let (l, r) = unsafe { (arg(lhs, F, "lhs")?, arg(rhs, F, "rhs")?) };
        let equal = structural::structural_equal(&l, &r, options(flags, F)?)?;
        // SAFETY: checked out-pointer.
        unsafe { out.write(equal as i32) };
        Ok(())
    })
}

/// See `RFFIStructuralHash` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIStructuralHash(
    value: *const RFFIAny,
    flags: i32,
    out: *mut u64,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIStructuralHash";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let v = unsafe { arg(value, F, "value")? };
        let h = structural::structural_hash(&v, options(flags, F)?)?;
        // SAFETY: checked out-pointer.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// See `RFFIStructuralGetFirstMismatch` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIStructuralGetFirstMismatch(
    lhs: *const RFFIAny,
    rhs: *const RFFIAny,
    flags: i32,
    lhs_path: *mut RFFIAny,
    rhs_path: *mut RFFIAny,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIStructuralGetFirstMismatch";
        let (lo, ro) = (
            out_ptr(lhs_path, F, "lhs_path")?,
            out_ptr(rhs_path, F, "rhs_path")?,
        );
        // SAFETY: forwarded contract.
        let (l, r) = unsafe { (arg(lhs, F, "lhs")?, arg(rhs, F, "rhs")?) };
        let (a, b) = match structural::first_mismatch(&l, &r, options(flags, F)?)? {
            Some((a, b)) => (a.into(), b.into()),
            None => (Any::none(), Any::none()),
        };
        // SAFETY: checked out-pointers.
        unsafe {
            put(lo, a);
            put(ro, b);
        }
        Ok(())
    })
}

/// See `RFFIRecursiveCompare` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIRecursiveCompare(
    lhs: *const RFFIAny,
    rhs: *const RFFIAny,
    ordering: i32,
    out: *mut i32,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIRecursiveCompare";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let (l, r) = unsafe { (arg(lhs, F, "lhs")?, arg(rhs, F, "rhs")?) };
        let c = match structural::recursive_compare(&l, &r, ordering != 0)? {
            Compared::Less => -1,
            Compared::Equal => 0,
            Compared::Greater => 1,
            Compared::Different => 2,
        };
        // SAFETY: checked out-pointer.
        unsafe { out.write(c) };
        Ok(())
    })
}

/// See `RFFIRecursiveHash` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIRecursiveHash(value: *const RFFIAny, out: *mut u64) -> i32 {
    guard(|| {
        const F: &str = "RFFIRecursiveHash";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let v = unsafe { arg(value, F, "value")? };
        let h = structural::recursive_hash(&v)?;
        // SAFETY: checked out-pointer.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// See `RFFIDeepCopy` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIDeepCopy(value: *const RFFIAny, out: *mut RFFIAny) -> i32 {
    guard(|| {
        const F: &str = "RFFIDeepCopy";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let v = unsafe { arg(value, F, "value")? };
        let copy = structural::deep_copy(&v)?;
        // SAFETY: checked out-pointer.
        unsafe { put(out, copy) };
        Ok(())
    })
}

/// See `RFFIReprPrint` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIReprPrint(
    value: *const RFFIAny,
    width: i32,
    out: *mut RFFIAny,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIReprPrint";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let v = unsafe { arg(value, F, "value")? };
        let width = usize::try_from(width)
            .map_err(|_| Error::value_error(format!("{F}: width {width} is negative")))?;
        let text = structural::repr_print(&v, width)?;
        // SAFETY: checked out-pointer.
        unsafe { put(out, text.into()) };
        Ok(())
    })
}

/// See `RFFIToJSONGraphString` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIToJSONGraphString(
    value: *const RFFIAny,
    metadata: *const RFFIAny,
    out: *mut RFFIAny,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIToJSONGraphString";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let v = unsafe { arg(value, F, "value")? };
        // SAFETY: as above; NULL means no metadata.
        let meta = (!metadata.is_null())
            .then(|| unsafe { arg(metadata, F, "metadata") })
            .transpose()?;
        let text = structural::to_json_graph(&v, meta.as_ref())?;
        // SAFETY: checked out-pointer.
        unsafe { put(out, text.into()) };
        Ok(())
    })
}

/// See `RFFIFromJSONGraphString` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIFromJSONGraphString(
    json: *const RFFIByteArray,
    out: *mut RFFIAny,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIFromJSONGraphString";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let text = unsafe { utf8(json, F, "json") }?;
        let v = structural::from_json_graph(text)?;
        // SAFETY: checked out-pointer.
        unsafe { put(out, v) };
        Ok(())
    })
}
