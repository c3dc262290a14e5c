//! Types and reflection: registering object types with their fields, methods and metadata, and
//! reaching fields and methods of any object by name.

use super::boundary::{guard, non_null, out_ptr, utf8};
use crate::abi::*;
use crate::any::AnyView;
use crate::{reflection, type_registry, Error, ObjectRef};
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

/// A borrowed object from a handle (never released), or a ValueError naming the entry point.
///
/// # Safety
/// A non-null handle must be a live object the caller holds for the call.
unsafe fn object(obj: RFFIObjectHandle, f: &str) -> crate::Result<ManuallyDrop<ObjectRef>> {
    let p = non_null(obj.cast::<RFFIObject>(), f, "obj")?;
    // SAFETY: a live object (contract); ManuallyDrop keeps the borrowed reference from being
    // released.
    Ok(ManuallyDrop::new(unsafe {
        ObjectRef::from_raw(NonNull::new_unchecked(p.cast_mut()))
    }))
}

/// See `RFFITypeGetOrAllocIndex` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFITypeGetOrAllocIndex(
    type_key: *const RFFIByteArray,
    static_type_index: i32,
    _type_depth: i32,
    _num_child_slots: i32,
    _child_slots_can_overflow: i32,
    parent_type_index: i32,
) -> i32 {
    const F: &str = "RFFITypeGetOrAllocIndex";
    let mut index = -1;
    let rc = guard(|| {
        // SAFETY: a valid byte array per the contract.
        let key = unsafe { utf8(type_key, F, "type_key") }?;
        let known = type_registry::type_key_to_index(key);
        if parent_type_index == -2 {
            index = known.unwrap_or(-2);
            return Ok(());
        }
        if static_type_index >= 0 && known != Some(static_type_index) {
            return Err(Error::value_error(format!(
                "{F}: `{key}` is not the static type index {static_type_index}"
            )));
        }
        let parent = (parent_type_index >= 0).then_some(parent_type_index);
        index = type_registry::register_type(key, parent)
            .map_err(|e| Error::new(&e.kind(), format!("{F}: {}", e.message())))?;
        Ok(())
    });
    if rc == 0 {
        index
    } else {
        -1
    }
}

/// See `RFFIGetTypeInfo` in the C header (`include/rffi/c_api.h`).
pub extern "C" fn RFFIGetTypeInfo(type_index: i32) -> *const RFFITypeInfo {
    crate::error::catch_panic(|| type_registry::type_info(type_index))
        .ok()
        .flatten()
        .map_or(core::ptr::null(), |i| i as *const _)
}

/// See `RFFITypeRegisterField` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFITypeRegisterField(type_index: i32, info: *const RFFIFieldInfo) -> i32 {
    guard(|| {
        let info = non_null(info, "RFFITypeRegisterField", "info")?;
        // SAFETY: a valid field description for the call (contract).
        unsafe { reflection::register_field(type_index, &*info) }
    })
}

/// See `RFFITypeRegisterMethod` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFITypeRegisterMethod(
    type_index: i32,
    info: *const RFFIMethodInfo,
) -> i32 {
    guard(|| {
        let info = non_null(info, "RFFITypeRegisterMethod", "info")?;
        // SAFETY: a valid method description for the call (contract).
        unsafe { reflection::register_method(type_index, &*info) }
    })
}

/// See `RFFITypeRegisterMetadata` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFITypeRegisterMetadata(
    type_index: i32,
    metadata: *const RFFITypeMetadata,
) -> i32 {
    guard(|| {
        let m = non_null(metadata, "RFFITypeRegisterMetadata", "metadata")?;
        // SAFETY: a valid description for the call (contract).
        unsafe { reflection::register_metadata(type_index, &*m) }
    })
}

/// See `RFFITypeRegisterAttr` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFITypeRegisterAttr(
    type_index: i32,
    attr_name: *const RFFIByteArray,
    attr_value: *const RFFIAny,
) -> i32 {
    guard(|| {
        const F: &str = "RFFITypeRegisterAttr";
        // SAFETY: a valid name for the call (contract).
        let name = unsafe { utf8(attr_name, F, "attr_name") }?;
        let v = non_null(attr_value, F, "attr_value")?;
        // SAFETY: a valid value for the call (contract); owned here (strings copied, objects
        // gaining a reference).
        let value = unsafe { AnyView::from_raw(*v) }.to_owned()?;
        reflection::register_type_attr(type_index, name, value)
            .map_err(|e| Error::new(&e.kind(), format!("{F}: {}", e.message())))
    })
}

/// See `RFFIGetTypeAttrColumn` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIGetTypeAttrColumn(
    attr_name: *const RFFIByteArray,
) -> *const RFFITypeAttrColumn {
    crate::error::catch_panic(|| {
        // SAFETY: a valid name for the call (contract); a bad one finds no column.
        let name = unsafe { utf8(attr_name, "RFFIGetTypeAttrColumn", "attr_name") }.ok()?;
        reflection::type_attr::type_attr_column(name)
    })
    .ok()
    .flatten()
    .unwrap_or(core::ptr::null())
}

/// See `RFFIObjectGetField` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIObjectGetField(
    obj: RFFIObjectHandle,
    name: *const RFFIByteArray,
    out: *mut RFFIAny,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIObjectGetField";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: contract: a live object and a valid name.
        let (obj, name) = unsafe { (object(obj, F)?, utf8(name, F, "name")?) };
        let v = reflection::get_field(&obj, name)?;
        // SAFETY: checked writable out-pointer; the owned value moves to the caller.
        unsafe { out.write(v.into_raw()) };
        Ok(())
    })
}

/// See `RFFIObjectSetField` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIObjectSetField(
    obj: RFFIObjectHandle,
    name: *const RFFIByteArray,
    value: *const RFFIAny,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIObjectSetField";
        let value = non_null(value, F, "value")?;
        // SAFETY: contract: a live object, a valid name and value.
        let (obj, name, value) = unsafe {
            (
                object(obj, F)?,
                utf8(name, F, "name")?,
                AnyView::from_raw(*value),
            )
        };
        reflection::set_field(&obj, name, &value)
    })
}

/// See `RFFIObjectCallMethod` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIObjectCallMethod(
    obj: RFFIObjectHandle,
    name: *const RFFIByteArray,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIObjectCallMethod";
        let result = out_ptr(result, F, "result")?;
        if num_args < 0 || (num_args > 0 && args.is_null()) {
            return Err(Error::value_error(format!(
                "{F}: `args` is NULL or `num_args` ({num_args}) is negative"
            )));
        }
        // SAFETY: contract: a live object, a valid name, `num_args` valid values.
        let (obj, name, args) = unsafe {
            (
                object(obj, F)?,
                utf8(name, F, "name")?,
                AnyView::slice_from_raw(args, num_args as usize),
            )
        };
        let v = reflection::call_method(&obj, name, args)?;
        // SAFETY: checked writable out-pointer; the caller's result holds no object (contract).
        unsafe { result.write(v.into_raw()) };
        Ok(())
    })
}

/// See `RFFIObjectCreate` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIObjectCreate(type_index: i32, out: *mut RFFIObjectHandle) -> i32 {
    guard(|| {
        let out = out_ptr(out, "RFFIObjectCreate", "out")?;
        let obj = reflection::create_object(type_index)?;
        // SAFETY: checked writable out-pointer; the new reference moves to the caller.
        unsafe { out.write(obj.into_raw().as_ptr().cast()) };
        Ok(())
    })
}

/// See `RFFIObjectIsInstance` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIObjectIsInstance(obj: RFFIObjectHandle, type_index: i32) -> i32 {
    let Some(p) = NonNull::new(obj.cast::<RFFIObject>()) else {
        return 0;
    };
    // SAFETY: a non-null handle is a live object (contract).
    let index = unsafe { (*p.as_ptr()).type_index };
    type_registry::is_instance(index, type_index) as i32
}

/// See `RFFIFunctionSetGlobalFromMethodInfo` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
pub unsafe extern "C" fn RFFIFunctionSetGlobalFromMethodInfo(
    info: *const RFFIMethodInfo,
    allow_override: i32,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIFunctionSetGlobalFromMethodInfo";
        let info = non_null(info, F, "info")?;
        // SAFETY: a valid description for the call (contract).
        let info = unsafe { &*info };
        // SAFETY: the byte arrays are valid for the call (contract).
        let (name, doc, metadata) = unsafe {
            (
                utf8(&info.name, F, "info->name")?,
                utf8(&info.doc, F, "info->doc")?,
                utf8(&info.metadata, F, "info->metadata")?,
            )
        };
        // SAFETY: a valid value for the call (contract).
        let f: crate::Function = unsafe { AnyView::from_raw(info.method) }
            .try_as()
            .map_err(|e| Error::type_error(format!("{F}: `info->method`: {}", e.message())))?;
        // The metadata JSON object, with the docstring added when given apart.
        let mut meta = if metadata.is_empty() {
            "{}".to_owned()
        } else {
            metadata.to_owned()
        };
        if !doc.is_empty() {
            let body = meta.trim_end().trim_end_matches('}').trim_end().to_owned();
            let sep = if body.trim_end().ends_with('{') {
                ""
            } else {
                ","
            };
            meta = format!(r#"{body}{sep}"doc":{}}}"#, crate::schema::json_quote(doc));
        }
        crate::function_metadata::check_metadata(&meta)
            .map_err(|e| Error::value_error(format!("{F}: {}", e.message())))?;
        crate::function_registry::register_global_func(name, f, allow_override != 0)?;
        crate::function_metadata::set_global_func_metadata(name, &meta)
    })
}
