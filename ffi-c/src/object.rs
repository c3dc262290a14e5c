//! Objects: reference counting, type keys.

use crate::boundary::{guard, non_null, out_ptr, utf8};
use rffi_core::abi::{RFFIByteArray, RFFIObject, RFFIObjectHandle, RFFIVersion};
use rffi_core::{object, type_table, Error};

/// Reports the version of the C ABI this library implements.
///
/// # Safety
/// `out` must be NULL (ignored) or writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIGetVersion(out: *mut RFFIVersion) {
    if !out.is_null() {
        // SAFETY: checked non-null; the caller promises it is writable.
        unsafe { out.write(rffi_core::version()) };
    }
}

/// Adds a strong reference to an object. Returns -1 (ValueError) for a NULL handle.
///
/// # Safety
/// A non-null `obj` must be a live object following the rffi/tvm-ffi object protocol.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectIncRef(obj: RFFIObjectHandle) -> i32 {
    guard(|| {
        let p = non_null(obj.cast::<RFFIObject>(), "RFFIObjectIncRef", "obj")?;
        // SAFETY: a live object per the contract.
        unsafe { object::inc_ref(p.cast_mut()) };
        Ok(())
    })
}

/// Drops a strong reference; the object is destroyed when the last one goes. Returns -1
/// (ValueError) for a NULL handle.
///
/// # Safety
/// A non-null `obj` must be a live object on which the caller owns a reference.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectDecRef(obj: RFFIObjectHandle) -> i32 {
    guard(|| {
        let p = non_null(obj.cast::<RFFIObject>(), "RFFIObjectDecRef", "obj")?;
        // SAFETY: the caller gives up one reference it owns.
        unsafe { object::dec_ref(p.cast_mut()) };
        Ok(())
    })
}

/// Looks up the type index of a type key (`"ffi.Array"`, `"int"`, or a key registered at run
/// time). An unknown key is a KeyError.
///
/// # Safety
/// `type_key` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeKeyToIndex(type_key: *const RFFIByteArray, out: *mut i32) -> i32 {
    guard(|| {
        const F: &str = "RFFITypeKeyToIndex";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: a valid byte array per the contract.
        let key = unsafe { utf8(type_key, F, "type_key") }?;
        let index = type_table::type_key_to_index(key)
            .ok_or_else(|| Error::key_error(format!("{F}: unknown type key `{key}`")))?;
        // SAFETY: checked writable out-pointer.
        unsafe { out.write(index) };
        Ok(())
    })
}

/// Returns the index of a type key, registering it as a new object type (index >= 128) if it is
/// unknown. Types are never unregistered.
///
/// # Safety
/// `type_key` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeRegisterKey(type_key: *const RFFIByteArray, out: *mut i32) -> i32 {
    guard(|| {
        const F: &str = "RFFITypeRegisterKey";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: a valid byte array per the contract.
        let key = unsafe { utf8(type_key, F, "type_key") }?;
        if key.is_empty() {
            return Err(Error::value_error(format!("{F}: `type_key` is empty")));
        }
        // SAFETY: checked writable out-pointer.
        unsafe { out.write(type_table::get_or_alloc_type_index(key)) };
        Ok(())
    })
}

/// Wraps a foreign handle as an object (`kRFFIOpaquePyObject` for a Python object, or a type
/// registered with `RFFITypeRegisterKey`): the handle sits in an `RFFIOpaqueObjectCell` at offset
/// 24, and `deleter(handle)` runs once when the last reference goes. Static non-opaque indices
/// (below 128, other than `kRFFIOpaquePyObject`) are refused with a ValueError.
///
/// # Safety
/// `deleter`, if not NULL, must be callable on `handle` from any thread; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectCreateOpaque(
    handle: *mut std::ffi::c_void,
    type_index: i32,
    deleter: Option<unsafe extern "C" fn(*mut std::ffi::c_void)>,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIObjectCreateOpaque";
        let out = out_ptr(out, F, "out")?;
        use rffi_core::abi::{kRFFIDynObjectBegin, kRFFIOpaquePyObject};
        if type_index != kRFFIOpaquePyObject && type_index < kRFFIDynObjectBegin {
            return Err(Error::value_error(format!(
                "{F}: type index {type_index} is not an opaque type (use {kRFFIOpaquePyObject} or \
                 a registered index >= {kRFFIDynObjectBegin})"
            )));
        }
        // SAFETY: forwarded contract.
        let obj = unsafe { rffi_core::ObjectRef::new_opaque(type_index, handle, deleter) };
        // SAFETY: checked writable out-pointer; the new reference moves to the caller.
        unsafe { out.write(obj.into_raw().as_ptr().cast()) };
        Ok(())
    })
}
