//! Entering foreign code: the one place where the runtime calls a C callback, that is, a function
//! made with `RFFIFunctionCreate` / `Function::from_safe_call`. That covers C callbacks, every
//! Python callback and every `__rffi_<name>` function a plugin exports, whether the call comes
//! from C (`RFFIFunctionCall`, which jumps here directly), from Rust or from Python.
//!
//! `call_c` holds the callee to the calling convention's one failure contract: 0 on success, or
//! -1 with an error raised. A callee that returns any other status, or -1 without raising an
//! error, fails with a RuntimeError naming it and the status it returned; an error it did raise
//! is kept (a status other than -1 with an error raised, like tvm-ffi's -2 "environment error
//! already set", becomes -1 with that error).

use crate::abi::RFFIAny;
use crate::error::{has_raised, set_raised, Error};
use crate::function::c_target;
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
    // SAFETY: forwarded contract.
    let (target, context) = unsafe { c_target(handle) };
    // SAFETY: the creator promised `target` follows the calling convention with its context.
    let rc = unsafe { target(context, args, num_args, result) };
    if rc == 0 {
        return 0;
    }
    // SAFETY: forwarded contract.
    unsafe { failed(handle, rc) }
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
