//! Objects: reference counting, type keys.

use super::boundary::{guard, non_null, out_ptr, utf8};
use crate::abi::{RFFIByteArray, RFFIObject, RFFIObjectHandle, RFFIVersion};
use crate::{object, type_registry, Error};

/// See `RFFIGetVersion` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIGetVersion(out: *mut RFFIVersion) {
    if !out.is_null() {
        // SAFETY: checked non-null; the caller promises it is writable.
        unsafe { out.write(crate::version()) };
    }
}

/// See `RFFIObjectIncRef` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIObjectIncRef(obj: RFFIObjectHandle) -> i32 {
    guard(|| {
        let p = non_null(obj.cast::<RFFIObject>(), "RFFIObjectIncRef", "obj")?;
        // SAFETY: a live object per the contract.
        unsafe { object::inc_ref(p.cast_mut()) };
        Ok(())
    })
}

/// See `RFFIObjectDecRef` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIObjectDecRef(obj: RFFIObjectHandle) -> i32 {
    guard(|| {
        let p = non_null(obj.cast::<RFFIObject>(), "RFFIObjectDecRef", "obj")?;
        // SAFETY: the caller gives up one reference it owns.
        unsafe { object::dec_ref(p.cast_mut()) };
        Ok(())
    })
}

/// See `RFFITypeKeyToIndex` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITypeKeyToIndex(type_key: *const RFFIByteArray, out: *mut i32) -> i32 {
    guard(|| {
        const F: &str = "RFFITypeKeyToIndex";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: a valid byte array per the contract.
        let key = unsafe { utf8(type_key, F, "type_key") }?;
        let index = type_registry::type_key_to_index(key)
            .ok_or_else(|| Error::key_error(format!("{F}: unknown type key `{key}`")))?;
        // SAFETY: checked writable out-pointer.
        unsafe { out.write(index) };
        Ok(())
    })
}

/// See `RFFITypeRegisterKey` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITypeRegisterKey(type_key: *const RFFIByteArray, out: *mut i32) -> i32 {
    guard(|| {
        const F: &str = "RFFITypeRegisterKey";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: a valid byte array per the contract.
        let key = unsafe { utf8(type_key, F, "type_key") }?;
        let index = type_registry::get_or_alloc_type_index(key)
            .map_err(|e| Error::value_error(format!("{F}: `type_key`: {}", e.message())))?;
        // SAFETY: checked writable out-pointer.
        unsafe { out.write(index) };
        Ok(())
    })
}

/// See `RFFIObjectCreateOpaque` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIObjectCreateOpaque(
    handle: *mut std::ffi::c_void,
    type_index: i32,
    deleter: Option<unsafe extern "C" fn(*mut std::ffi::c_void)>,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIObjectCreateOpaque";
        let out = out_ptr(out, F, "out")?;
        use crate::abi::{kRFFIDynObjectBegin, kRFFIOpaquePyObject};
        if type_index != kRFFIOpaquePyObject && type_index < kRFFIDynObjectBegin {
            return Err(Error::value_error(format!(
                "{F}: type index {type_index} is not an opaque type (use {kRFFIOpaquePyObject} or \
                 a registered index >= {kRFFIDynObjectBegin})"
            )));
        }
        if type_index != kRFFIOpaquePyObject
            && type_registry::type_index_to_key(type_index).is_none()
        {
            return Err(Error::key_error(format!(
                "{F}: type index {type_index} was never registered (register a type key with \
                 RFFITypeRegisterKey first)"
            )));
        }
        // SAFETY: forwarded contract.
        let obj = unsafe { crate::ObjectRef::new_opaque(type_index, handle, deleter) };
        // SAFETY: checked writable out-pointer; the new reference moves to the caller.
        unsafe { out.write(obj.into_raw().as_ptr().cast()) };
        Ok(())
    })
}

/// See `RFFITypeIndexToKey` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITypeIndexToKey(type_index: i32, out: *mut RFFIByteArray) -> i32 {
    guard(|| {
        const F: &str = "RFFITypeIndexToKey";
        let out = out_ptr(out, F, "out")?;
        let key = type_registry::type_index_to_key(type_index)
            .ok_or_else(|| Error::key_error(format!("{F}: unknown type index {type_index}")))?;
        // SAFETY: checked writable out-pointer; keys live as long as the process.
        unsafe { out.write(crate::host::byte_array(key.as_bytes())) };
        Ok(())
    })
}
