//! Modules: loading plugin libraries and getting their functions.

use super::boundary::{guard, non_null, out_ptr, utf8};
use crate::abi::{RFFIByteArray, RFFIObject, RFFIObjectHandle};
use crate::{Error, Module, ObjectRef, ObjectType};
use std::ptr::NonNull;

/// Borrows a handle as a Module, checking its type.
///
/// # Safety
/// A non-null `h` must be a live object.
unsafe fn borrow_module(h: RFFIObjectHandle, func: &str) -> crate::Result<Module> {
    let p = non_null(h.cast::<RFFIObject>(), func, "module")?;
    // SAFETY: a live object per the contract; we take our own reference.
    let obj = unsafe { ObjectRef::from_borrowed(NonNull::new_unchecked(p.cast_mut())) };
    Module::from_object(obj).map_err(|o| {
        Error::type_error(format!(
            "{func}: `module` must be a module (ffi.Module) but is {}",
            crate::type_registry::type_name(o.type_index())
        ))
    })
}

/// See `RFFIModuleLoadFromFile` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIModuleLoadFromFile(
    path: *const RFFIByteArray,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIModuleLoadFromFile";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: a valid byte array per the contract.
        let path = unsafe { utf8(path, F, "path") }?;
        let module = Module::load(path)?;
        // SAFETY: checked writable out-pointer; the new reference moves to the caller.
        unsafe { out.write(module.into_object().into_raw().as_ptr().cast()) };
        Ok(())
    })
}

/// See `RFFIModuleGetFunction` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIModuleGetFunction(
    module: RFFIObjectHandle,
    name: *const RFFIByteArray,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIModuleGetFunction";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let module = unsafe { borrow_module(module, F) }?;
        // SAFETY: a valid byte array per the contract.
        let name = unsafe { utf8(name, F, "name") }?;
        let found = module
            .get_function(name)?
            .map_or(std::ptr::null_mut(), |f| {
                f.into_object().into_raw().as_ptr().cast()
            });
        // SAFETY: checked writable out-pointer.
        unsafe { out.write(found) };
        Ok(())
    })
}

/// See `RFFIModuleListFunctions` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIModuleListFunctions(
    module: RFFIObjectHandle,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIModuleListFunctions";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: forwarded contract.
        let module = unsafe { borrow_module(module, F) }?;
        let names = crate::Array::new(
            module
                .function_names()?
                .into_iter()
                .map(crate::Any::from)
                .collect(),
        );
        // SAFETY: checked writable out-pointer; the new reference moves to the caller.
        unsafe { out.write(names.into_object().into_raw().as_ptr().cast()) };
        Ok(())
    })
}
