//! Exports of the type-registry and reflection part of the C API (implemented in
//! `rffi_core::capi::reflection`).
use rffi_core::abi::*;
use rffi_core::capi;

/// Returns the index of `type_key`, registering it as an object type whose parent is
/// `parent_type_index` (-1: `ffi.Object`) if it is unknown; -1 with an error raised on failure.
/// With `parent_type_index` -2 it only looks the key up and returns -2 if it is absent.
/// `static_type_index` is -1, or the index the key must already have; `type_depth` and the child
/// slot arguments are accepted for tvm-ffi compatibility and ignored (depth follows the parent).
/// Registering a known key with another parent is a ValueError.
///
/// # Safety
/// `type_key` must point to a valid byte array.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeGetOrAllocIndex(
    type_key: *const RFFIByteArray,
    static_type_index: i32,
    type_depth: i32,
    num_child_slots: i32,
    child_slots_can_overflow: i32,
    parent_type_index: i32,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe {
        capi::reflection::RFFITypeGetOrAllocIndex(
            type_key,
            static_type_index,
            type_depth,
            num_child_slots,
            child_slots_can_overflow,
            parent_type_index,
        )
    }
}

/// The type information of a type index (key, ancestors, own fields and methods, metadata), or
/// NULL for an unknown index (no error raised). The pointer stays valid for the life of the
/// process; the `fields` / `methods` arrays it points to may be replaced by later registrations
/// (the old ones stay readable).
#[no_mangle]
pub extern "C" fn RFFIGetTypeInfo(type_index: i32) -> *const RFFITypeInfo {
    capi::reflection::RFFIGetTypeInfo(type_index)
}

/// Registers a field of a type. Everything is copied; a default value gains a reference kept for
/// the life of the process. Without a getter the field must have a built-in accessor (see
/// `RFFIFieldInfo`) and lie after the header. A duplicate name is a ValueError, an unknown
/// type index a KeyError.
///
/// # Safety
/// `info` must be valid for the call; its getter and setter, if any, must follow their contracts
/// for objects of this type and its descendants.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeRegisterField(type_index: i32, info: *const RFFIFieldInfo) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFITypeRegisterField(type_index, info) }
}

/// Registers a method of a type: `info->method` must hold a Function (a TypeError otherwise),
/// which the type registry keeps for the life of the process. An instance method is called with the
/// object first. A duplicate name is a ValueError.
///
/// # Safety
/// `info` must be valid for the call.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeRegisterMethod(
    type_index: i32,
    info: *const RFFIMethodInfo,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFITypeRegisterMethod(type_index, info) }
}

/// Sets a type's metadata: docstring, creator (makes an object with default fields) and total
/// size (with no creator, `RFFIObjectCreate` allocates that many zeroed bytes when every field has
/// a built-in accessor).
///
/// # Safety
/// `metadata` must be valid for the call; its creator, if any, must follow its contract.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeRegisterMetadata(
    type_index: i32,
    metadata: *const RFFITypeMetadata,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFITypeRegisterMetadata(type_index, metadata) }
}

/// Reads the field `name` of an object (its type's or an ancestor's) into `*out` (owned). An
/// unknown field is an AttributeError.
///
/// # Safety
/// `obj` must be a live object, `name` a valid byte array, `out` writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectGetField(
    obj: RFFIObjectHandle,
    name: *const RFFIByteArray,
    out: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFIObjectGetField(obj, name, out) }
}

/// Writes the field `name` of an object from a borrowed value, checked against the field's type:
/// a value that does not fit is a TypeError naming the type, the field and both types; a frozen
/// field (no `kRFFIFieldFlagBitMaskWritable`) an AttributeError.
///
/// # Safety
/// `obj` must be a live object, `name` a valid byte array, `value` a valid value.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectSetField(
    obj: RFFIObjectHandle,
    name: *const RFFIByteArray,
    value: *const RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFIObjectSetField(obj, name, value) }
}

/// Calls the method `name` of an object (an instance method gets `obj` as its first argument).
/// An unknown method is an AttributeError.
///
/// # Safety
/// `obj` must be a live object, `name` a valid byte array, `args` `num_args` valid values, and
/// `result` a writable value holding no object.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectCallMethod(
    obj: RFFIObjectHandle,
    name: *const RFFIByteArray,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFIObjectCallMethod(obj, name, args, num_args, result) }
}

/// Makes a new object of a registered type with its fields at their defaults (see
/// `RFFITypeRegisterMetadata`); a type that cannot be made so is a TypeError.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectCreate(type_index: i32, out: *mut RFFIObjectHandle) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFIObjectCreate(type_index, out) }
}

/// 1 if the object's type is `type_index` or a descendant of it (one lookup), else 0 (also for a
/// NULL handle).
///
/// # Safety
/// A non-null `obj` must be a live object.
#[no_mangle]
pub unsafe extern "C" fn RFFIObjectIsInstance(obj: RFFIObjectHandle, type_index: i32) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFIObjectIsInstance(obj, type_index) }
}

/// Registers `info->method` (a Function) as the global function `info->name`, with its metadata
/// (`info->metadata`, a JSON object such as `{"type_schema": "<schema JSON>", "arg_names": [...]}`)
/// and docstring (`info->doc`), as tvm-ffi's function of the same name. An existing name is a
/// KeyError unless `allow_override`; invalid metadata is a ValueError and registers nothing.
///
/// # Safety
/// `info` must be valid for the call.
#[no_mangle]
pub unsafe extern "C" fn RFFIFunctionSetGlobalFromMethodInfo(
    info: *const RFFIMethodInfo,
    allow_override: i32,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFIFunctionSetGlobalFromMethodInfo(info, allow_override) }
}

/// Sets the attribute `attr_name` of a type (tvm-ffi's type attribute columns: per-type values
/// such as hooks, looked up by type index in one step). The value is copied (a string becomes an
/// owned string, an object gains a reference) and kept for the life of the process; a later call
/// for the same type and name replaces it. An entry is the type's own: it is not inherited.
/// Registering for type index 0 (None) only makes sure the column exists. An unknown type index
/// is a KeyError, a NULL value a ValueError.
///
/// # Safety
/// `attr_name` and `attr_value` must be valid for the call.
#[no_mangle]
pub unsafe extern "C" fn RFFITypeRegisterAttr(
    type_index: i32,
    attr_name: *const RFFIByteArray,
    attr_value: *const RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFITypeRegisterAttr(type_index, attr_name, attr_value) }
}

/// The column of the type attribute `attr_name`: entry `data[t - begin_index]` for type `t` when
/// `begin_index <= t < begin_index + size`, else absent (an entry holding None is absent too).
/// NULL if no type has registered that attribute (no error raised). The pointer stays valid for
/// the life of the process; a later registration may change what it holds, so registration must
/// not race with readers.
///
/// # Safety
/// `attr_name` must be valid for the call.
#[no_mangle]
pub unsafe extern "C" fn RFFIGetTypeAttrColumn(
    attr_name: *const RFFIByteArray,
) -> *const RFFITypeAttrColumn {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::reflection::RFFIGetTypeAttrColumn(attr_name) }
}
