//! Exports of the `object` part of the C API (implemented in `rffi_core::capi::object`).
use rffi_core::abi::*;
use rffi_core::capi;

/// Reports the version of the C ABI this library implements.
///
/// # Safety
/// `out` must be NULL (ignored) or writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIGetVersion(out: *mut RFFIVersion) {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::object::RFFIGetVersion(out) }
}

/// Adds a strong reference to an object. Returns -1 (ValueError) for a NULL handle.
///
/// # Safety
/// A non-null `obj` must be a live object following the rffi/tvm-ffi object protocol.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectIncRef(obj: RFFIObjectHandle) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::object::RFFIObjectIncRef(obj) }
}

/// Drops a strong reference; the object is destroyed when the last one goes. Returns -1
/// (ValueError) for a NULL handle.
///
/// # Safety
/// A non-null `obj` must be a live object on which the caller owns a reference.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectDecRef(obj: RFFIObjectHandle) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::object::RFFIObjectDecRef(obj) }
}

/// Looks up the type index of a type key (`"ffi.Array"`, `"int"`, or a key registered at run
/// time). An unknown key is a KeyError.
///
/// # Safety
/// `type_key` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeKeyToIndex(type_key: *const RFFIByteArray, out: *mut i32) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::object::RFFITypeKeyToIndex(type_key, out) }
}

/// Returns the index of a type key, registering it as a new object type (index >= 128) if it is
/// unknown. Types are never unregistered. A key that is empty, not UTF-8 or holds a NUL byte is a
/// ValueError.
///
/// # Safety
/// `type_key` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeRegisterKey(type_key: *const RFFIByteArray, out: *mut i32) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::object::RFFITypeRegisterKey(type_key, out) }
}

/// Wraps a foreign handle as an object (`kRFFIOpaquePyObject` for a Python object, or a type
/// registered with `RFFITypeRegisterKey`): the handle sits in an `RFFIOpaqueObjectCell` at offset
/// 24, and `deleter(handle)` runs once when the last reference goes. Static non-opaque indices
/// (below 128, other than `kRFFIOpaquePyObject`) are refused with a ValueError, and an index
/// that was never registered with a KeyError. On failure the caller keeps `handle`.
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
    // SAFETY: the same contract, forwarded.
    unsafe { capi::object::RFFIObjectCreateOpaque(handle, type_index, deleter, out) }
}

/// The type key of a type index (`"ffi.Array"`, `"int"`, or a key registered at run time),
/// borrowed: keys live as long as the process. An unknown index is a KeyError.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeIndexToKey(type_index: i32, out: *mut RFFIByteArray) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::object::RFFITypeIndexToKey(type_index, out) }
}
