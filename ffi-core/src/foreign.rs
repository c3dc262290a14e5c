//! Entering foreign code: the one place where the runtime calls a C callback, that is, a function
//! made with `RFFIFunctionCreate` / `Function::from_safe_call`. That covers C callbacks, every
//! Python callback and every `__rffi_<name>` function a plugin exports, whether the call comes
//! from C (`RFFIFunctionCall`), from Rust or from Python: their `safe_call` is `c_call`, whose
//! body this is.
//!
//! `call_c` first guards the call depth and the C stack left (`call_depth`), then holds the
//! callee to the calling convention's one failure contract: 0 on success, or
//! -1 with an error raised. A callee that returns any other status, or -1 without raising an
//! error, fails with a RuntimeError naming it and the status it returned; an error it did raise
//! is kept (a status other than -1 with an error raised, like tvm-ffi's -2 "environment error
//! already set", becomes -1 with that error).
//!
//! On success, the value the callee wrote is checked by `check_result` before anything reads it:
//! the one validator of values that enter the runtime from outside (the Python binding's decoder
//! calls it too).

use crate::abi::*;
use crate::call_depth::{fast_guard, with_guard};
use crate::error::{has_raised, set_raised, Error, Result};
use crate::function::c_target;
use crate::type_registry::type_index_to_key;
use core::ffi::c_void;

/// Calls the C callback behind the function object `handle` and normalizes its status.
///
/// # Safety
/// `handle` is a live function object made by `from_safe_call`; `args`/`result` follow the
/// calling convention.
#[inline(always)]
pub(crate) unsafe fn call_c(
    handle: *mut c_void,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    if let Some(guard) = fast_guard().filter(|g| g.admits()) {
        // SAFETY: forwarded contract.
        let (target, context) = unsafe { c_target(handle) };
        guard.push();
        // SAFETY: the creator promised `target` follows the calling convention with its
        // context.
        let rc = unsafe { target(context, args, num_args, result) };
        guard.pop();
        // SAFETY: forwarded contract.
        return unsafe { normalize(handle, rc, result) };
    }
    // SAFETY: forwarded contract.
    unsafe { call_c_checked(handle, args, num_args, result) }
}

/// `call_c` when the depth or stack check needs a closer look: a thread's first callback, the
/// limit reached, or the stack low.
///
/// # Safety
/// As `call_c`.
#[cold]
#[inline(never)]
unsafe fn call_c_checked(
    handle: *mut c_void,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    // SAFETY: forwarded contract.
    let (target, context) = unsafe { c_target(handle) };
    let entered = with_guard(|guard| {
        guard.enter(
            // SAFETY: forwarded contract.
            || unsafe { crate::function::c_name(handle) },
            // SAFETY: the creator promised `target` follows the calling convention with its
            // context.
            || unsafe { target(context, args, num_args, result) },
        )
    });
    match entered {
        // SAFETY: forwarded contract.
        Ok(rc) => unsafe { normalize(handle, rc, result) },
        Err(e) => {
            set_raised(e);
            -1
        }
    }
}

/// Holds a callee's status and result to the contract: 0 with a well-formed result, else -1
/// with an error raised.
///
/// # Safety
/// As `call_c`, after the call.
#[inline(always)]
unsafe fn normalize(handle: *mut c_void, rc: i32, result: *mut RFFIAny) -> i32 {
    if rc != 0 {
        // SAFETY: forwarded contract.
        return unsafe { failed(handle, rc) };
    }
    // SAFETY: on success a non-NULL `result` holds what the callee wrote.
    if result.is_null() || is_plain(unsafe { &*result }) {
        return 0;
    }
    // SAFETY: forwarded contract.
    unsafe { check_object_result(handle, result) }
}

/// A callee returned `rc != 0`: -1, with its error or one saying it broke the contract.
///
/// # Safety
/// `handle` is a live function object made by `from_safe_call`.
#[cold]
#[inline(never)]
unsafe fn failed(handle: *mut c_void, rc: i32) -> i32 {
    if has_raised() {
        return -1;
    }
    // SAFETY: forwarded contract.
    let name = unsafe { crate::function::c_name(handle) };
    let why = if rc == -1 {
        "returned -1 without raising an error".to_owned()
    } else {
        format!("returned status {rc} without raising an error (the calling convention allows 0, or -1 with an error raised)")
    };
    set_raised(Error::runtime_error(format!("{name} {why}")));
    -1
}

/// The common results, which need no further look: plain values and None.
#[inline(always)]
fn is_plain(value: &RFFIAny) -> bool {
    // One unsigned compare: a negative index wraps above the range.
    (value.type_index as u32) <= kRFFIDevice as u32
}

/// The rest of the check of a callee's result, out of line.
///
/// # Safety
/// `handle` is a live function object made by `from_safe_call`; `result` is non-NULL and
/// holds what the callee wrote.
#[cold]
#[inline(never)]
unsafe fn check_object_result(handle: *mut c_void, result: *mut RFFIAny) -> i32 {
    // SAFETY: forwarded contract.
    let value = unsafe { &mut *result };
    // SAFETY: an object the callee returned is at least readable, or nothing can be checked.
    if unsafe { check_value(value) }.is_ok() {
        return 0;
    }
    // SAFETY: forwarded contract.
    let name = unsafe { crate::function::c_name(handle) };
    // SAFETY: as above.
    match unsafe { check_result(value, &name) } {
        Ok(()) => 0,
        Err(e) => {
            set_raised(e);
            -1
        }
    }
}

/// Checks a value handed to the runtime from outside (the result of a foreign function, a value
/// a callback returned): `Err` says what is malformed. Accepted: None and the plain values,
/// a non-NULL borrowed `DLTensor*`, small strings and bytes of at most 7 bytes, and a non-NULL
/// object of a registered type whose header carries the value's type index. Refused: a type
/// index no type has, an object index with a NULL pointer or a header that disagrees, and the
/// argument-only indices (raw `const char*`, `RFFIByteArray*`, `ObjectRValueRef`), which borrow
/// what the callee is about to free.
///
/// # Safety
/// The value's object pointer, when non-NULL, must point to a readable object header. That is
/// the one thing that cannot be checked: this validator reads the header.
pub unsafe fn check_value(value: &RFFIAny) -> core::result::Result<(), String> {
    let index = value.type_index;
    match index {
        kRFFINone..=kRFFIDevice => Ok(()),
        // SAFETY: every value with this index has `v_ptr` live.
        kRFFIDLTensorPtr if unsafe { value.v.v_ptr }.is_null() => {
            Err("a NULL DLTensor* (type index 7)".to_owned())
        }
        kRFFIDLTensorPtr => Ok(()),
        kRFFIRawStr | kRFFIByteArrayPtr | kRFFIObjectRValueRef => Err(format!(
            "type index {index} ({}) is for arguments only: it borrows memory the callee owns",
            type_index_to_key(index).unwrap_or("?")
        )),
        kRFFISmallStr | kRFFISmallBytes if value.small_str_len as usize > RFFI_SMALL_STR_MAX => {
            Err(format!(
                "a small {} of length {} (at most {RFFI_SMALL_STR_MAX} bytes are stored inline)",
                if index == kRFFISmallStr {
                    "string"
                } else {
                    "bytes"
                },
                value.small_str_len
            ))
        }
        kRFFISmallStr | kRFFISmallBytes => Ok(()),
        _ if !is_object_index(index) => Err(format!("unknown type index {index}")),
        _ => {
            // SAFETY: object values have `v_obj` live.
            let obj = unsafe { value.v.v_obj };
            if obj.is_null() {
                return Err(format!(
                    "type index {index} ({}) with a NULL object pointer",
                    type_index_to_key(index).unwrap_or("?")
                ));
            }
            // SAFETY: a non-NULL object pointer points to a readable header (contract).
            let header = unsafe { (*obj).type_index };
            if header != index {
                return Err(format!(
                    "type index {index} ({}) for an object whose header says {header}",
                    type_index_to_key(index).unwrap_or("?")
                ));
            }
            Ok(())
        }
    }
}

/// Whether `index` is an object type: one of the ABI's (64..=76, no lookup needed) or one
/// registered at run time.
#[inline]
pub(crate) fn is_object_index(index: i32) -> bool {
    (kRFFIStaticObjectBegin..=crate::type_registry::LAST_STATIC_OBJECT).contains(&index)
        || (index >= kRFFIDynObjectBegin && type_index_to_key(index).is_some())
}

/// `check_value` for the result of the foreign function `function` (a description such as
/// "the C function `name`"). A malformed result becomes a RuntimeError naming the function and
/// what is wrong, and `value` is set to None without releasing anything: a malformed value
/// cannot be trusted to own a reference.
///
/// # Safety
/// As `check_value`.
pub unsafe fn check_result(value: &mut RFFIAny, function: &str) -> Result<()> {
    // SAFETY: forwarded contract.
    match unsafe { check_value(value) } {
        Ok(()) => Ok(()),
        Err(why) => {
            *value = crate::any::NONE_RAW;
            Err(Error::runtime_error(format!(
                "{function} returned a malformed value: {why}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Any;

    fn raw(type_index: i32, small_str_len: u32, ptr: *mut c_void) -> RFFIAny {
        RFFIAny {
            type_index,
            small_str_len,
            v: RFFIAnyValue { v_ptr: ptr },
        }
    }

    #[test]
    fn check_result_refuses_malformed_values_and_resets_them() {
        let mut v = raw(kRFFIStr, 0, core::ptr::null_mut());
        // SAFETY: no object pointer to read.
        let e = unsafe { check_result(&mut v, "`f`") }.unwrap_err();
        assert_eq!(e.kind(), "RuntimeError");
        assert_eq!(
            e.message(),
            "`f` returned a malformed value: type index 65 (ffi.String) with a NULL object pointer"
        );
        assert_eq!(v.type_index, kRFFINone);
        for (index, len, why) in [
            (kRFFIRawStr, 0, "is for arguments only"),
            (kRFFISmallBytes, 8, "small bytes of length 8"),
            (40, 0, "unknown type index 40"),
            (kRFFIDynObjectBegin + 100_000, 0, "unknown type index"),
        ] {
            let v = raw(index, len, 8 as *mut c_void);
            // SAFETY: none of these indices makes the validator read the pointer.
            let err = unsafe { check_value(&v) }.unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }

    #[test]
    fn check_value_accepts_what_the_runtime_makes() {
        let long = Any::from("a string longer than seven bytes");
        for v in [Any::from(1i64), Any::from("short"), Any::none(), long] {
            // SAFETY: values made by the runtime hold live objects.
            assert_eq!(unsafe { check_value(v.as_raw()) }, Ok(()));
        }
    }
}
