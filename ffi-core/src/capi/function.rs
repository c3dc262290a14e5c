//! Functions and the global function registry.

use super::boundary::{bytes, guard, non_null, out_ptr};
use crate::abi::{
    kRFFIFunction, RFFIAny, RFFIByteArray, RFFIFunctionCell, RFFIObject, RFFIObjectHandle,
    RFFISafeCallType,
};
use crate::error::set_raised;
use crate::{function_registry, Error, Function, ObjectRef, ObjectType};
use std::ffi::c_void;
use std::ptr::NonNull;

/// Borrows a handle as a Function, checking its type.
///
/// # Safety
/// A non-null `h` must be a live object.
unsafe fn borrow_function(h: RFFIObjectHandle, func: &str, arg: &str) -> crate::Result<Function> {
    let p = non_null(h.cast::<RFFIObject>(), func, arg)?;
    // SAFETY: a live object per the contract; we take our own reference.
    let obj = unsafe { ObjectRef::from_borrowed(NonNull::new_unchecked(p.cast_mut())) };
    Function::from_object(obj).map_err(|o| {
        Error::type_error(format!(
            "{func}: `{arg}` must be a function (ffi.Function) but is {}",
            crate::type_registry::type_name(o.type_index())
        ))
    })
}

/// See `RFFIFunctionCreate` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIFunctionCreate(
    self_: *mut c_void,
    safe_call: RFFISafeCallType,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIFunctionCreate";
        let out = out_ptr(out, F, "out")?;
        let call =
            safe_call.ok_or_else(|| Error::value_error(format!("{F}: `safe_call` is NULL")))?;
        // SAFETY: forwarded contract.
        let f = unsafe { Function::from_safe_call(self_, call, deleter) };
        // SAFETY: checked writable out-pointer; the new reference moves to the caller.
        unsafe { out.write(f.into_object().into_raw().as_ptr().cast()) };
        Ok(())
    })
}

/// The slow path of `RFFIFunctionCall`: says what was wrong with the call. `extern "C"` (which
/// cannot unwind) so that `RFFIFunctionCall` can jump to it without a frame of its own.
#[cold]
#[inline(never)]
extern "C" fn reject_call(
    func: RFFIObjectHandle,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    const F: &str = "RFFIFunctionCall";
    let msg = if func.is_null() {
        format!("{F}: `func` is NULL")
    } else if result.is_null() {
        format!("{F}: `result` is NULL")
    } else if num_args < 0 {
        format!("{F}: `num_args` is negative ({num_args})")
    } else if args.is_null() {
        format!("{F}: `args` is NULL with num_args = {num_args}")
    } else {
        // SAFETY: non-null handle of a live object (caller contract); only the header is read.
        let index = unsafe { (*func.cast::<RFFIObject>()).type_index };
        let err = if index == kRFFIFunction {
            Error::runtime_error(format!("{F}: the function object has no safe_call"))
        } else {
            Error::type_error(format!(
                "{F}: `func` must be a function (ffi.Function) but is {}",
                crate::type_registry::type_name(index)
            ))
        };
        set_raised(err);
        return -1;
    };
    set_raised(Error::value_error(msg));
    -1
}

/// See `RFFIFunctionCall` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIFunctionCall(
    func: RFFIObjectHandle,
    args: *mut RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    let obj = func.cast::<RFFIObject>();
    let args_ok = num_args == 0 || (num_args > 0 && !args.is_null());
    let is_function = || {
        // SAFETY: a non-null handle is a live object (caller contract), so its header is readable.
        unsafe { (*obj).type_index == kRFFIFunction }
    };
    if !obj.is_null() && !result.is_null() && args_ok && is_function() {
        // SAFETY: a live Function: its cell is at offset 24.
        if let Some(call) = unsafe { (*obj.add(1).cast::<RFFIFunctionCell>()).safe_call } {
            // A tail jump, for every kind of function. A C callback's entry (`c_call`) guards the
            // call depth and checks the callee's status and result, which needs a stack frame
            // here if it were inlined: every Rust function's call would pay for it.
            // SAFETY: checked arguments; the function object itself is the handle.
            return unsafe { call(func, args, num_args, result) };
        }
    }
    reject_call(func, args, num_args, result)
}

/// See `RFFIFunctionGetGlobal` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIFunctionGetGlobal(
    name: *const RFFIByteArray,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIFunctionGetGlobal";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: a valid byte array per the contract.
        let name = unsafe { bytes(name, F, "name") }?;
        let found = function_registry::get_global_func(name).map_or(std::ptr::null_mut(), |f| {
            f.into_object().into_raw().as_ptr().cast()
        });
        // SAFETY: checked writable out-pointer.
        unsafe { out.write(found) };
        Ok(())
    })
}

/// See `RFFIFunctionSetGlobal` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIFunctionSetGlobal(
    name: *const RFFIByteArray,
    func: RFFIObjectHandle,
    allow_override: i32,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIFunctionSetGlobal";
        // SAFETY: forwarded contract.
        let f = unsafe { borrow_function(func, F, "func") }?;
        // SAFETY: a valid byte array per the contract.
        let name = unsafe { bytes(name, F, "name") }?;
        function_registry::register_global_func_bytes(name, f, allow_override != 0)
    })
}

/// See `RFFIFunctionRemoveGlobal` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIFunctionRemoveGlobal(name: *const RFFIByteArray) -> i32 {
    guard(|| {
        const F: &str = "RFFIFunctionRemoveGlobal";
        // SAFETY: a valid byte array per the contract.
        let name = unsafe { bytes(name, F, "name") }?;
        if function_registry::remove_global_func(name) {
            Ok(())
        } else {
            Err(Error::key_error(format!(
                "{F}: no global function named `{}`",
                String::from_utf8_lossy(name)
            )))
        }
    })
}

/// See `RFFIFunctionListGlobalNames` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIFunctionListGlobalNames(out: *mut RFFIObjectHandle) -> i32 {
    guard(|| {
        let out = out_ptr(out, "RFFIFunctionListGlobalNames", "out")?;
        let names = crate::Array::new(
            function_registry::list_global_func_names()
                .into_iter()
                .map(crate::Any::from)
                .collect(),
        );
        // SAFETY: checked writable out-pointer; the new reference moves to the caller.
        unsafe { out.write(names.into_object().into_raw().as_ptr().cast()) };
        Ok(())
    })
}

/// See `RFFISetMaxCallDepth` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFISetMaxCallDepth(max_depth: i32, opt_out_prev: *mut i32) -> i32 {
    guard(|| {
        let previous = crate::call_depth::set_max_call_depth(i64::from(max_depth))?;
        if !opt_out_prev.is_null() {
            // SAFETY: a non-NULL out-pointer is writable (contract); limits fit in int32.
            unsafe { opt_out_prev.write(previous as i32) };
        }
        Ok(())
    })
}
