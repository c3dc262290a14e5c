//! Exports of the `function` part of the C API (implemented in `rffi_core::capi::function`).
use rffi_core::abi::*;
use rffi_core::capi;
use std::ffi::c_void;

/// Makes a function from a C callback. Calls pass `self` as the callback's first argument;
/// `deleter(self)` runs once when the function is destroyed (if `deleter` is not NULL). On
/// failure nothing is taken over: the caller still owns `self`.
///
/// The callback returns 0, or -1 with an error raised. Any other outcome fails the call as -1
/// with an error: an error it raised is kept whatever non-zero status came with it, and a status
/// without an error raised becomes a RuntimeError naming the function and the status.
///
/// # Safety
/// `safe_call` must follow the calling convention; `self` must stay valid until `deleter` runs and
/// be usable from any thread; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIFunctionCreate(
    self_: *mut c_void,
    safe_call: RFFISafeCallType,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::function::RFFIFunctionCreate(self_, safe_call, deleter, out) }
}

/// Calls a function: `args` are borrowed, `result` must hold no object (zero it) and receives an
/// owned value. Returns 0, or -1 with the error raised: never any other value, whatever status
/// the callee returns (see `RFFIFunctionCreate`).
///
/// # Safety
/// `func` must be NULL or a live object; `args` must point to `num_args` valid values; `result`
/// must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIFunctionCall(
    func: RFFIObjectHandle,
    args: *mut RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::function::RFFIFunctionCall(func, args, num_args, result) }
}

/// Looks up a global function: `*out` receives a new reference to the registered function object,
/// or NULL when no function has that name (not an error).
///
/// # Safety
/// `name` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIFunctionGetGlobal(
    name: *const RFFIByteArray,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::function::RFFIFunctionGetGlobal(name, out) }
}

/// Registers `func` under `name` (the function registry takes its own reference). An existing name
/// is a KeyError unless `allow_override` is non-zero; a name that is empty, not UTF-8 or holds a
/// NUL byte is a ValueError.
///
/// # Safety
/// `name` must point to a valid byte array; `func` must be NULL or a live object.
#[no_mangle]
pub unsafe extern "C" fn RFFIFunctionSetGlobal(
    name: *const RFFIByteArray,
    func: RFFIObjectHandle,
    allow_override: i32,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::function::RFFIFunctionSetGlobal(name, func, allow_override) }
}

/// Removes a global function. A name that is not registered is a KeyError.
///
/// # Safety
/// `name` must point to a valid byte array.
#[no_mangle]
pub unsafe extern "C" fn RFFIFunctionRemoveGlobal(name: *const RFFIByteArray) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::function::RFFIFunctionRemoveGlobal(name) }
}

/// Lists the registered names: `*out` receives a new Array (`ffi.Array`) of strings, sorted.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIFunctionListGlobalNames(out: *mut RFFIObjectHandle) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::function::RFFIFunctionListGlobalNames(out) }
}

/// Sets the maximum call depth of C callbacks (callbacks entered and not yet returned on one
/// thread), for every thread; `*opt_out_prev` (if not NULL) receives the previous limit.
/// `max_depth` must be at least 1 (a ValueError otherwise). The default is
/// `RFFI_DEFAULT_MAX_CALL_DEPTH` (10000), or the value of the environment variable
/// `RFFI_MAX_CALL_DEPTH` when set; the global function `ffi.SetMaxCallDepth` does the same. Entering a callback deeper than the limit, or with too
/// little of the thread's C stack left, fails the call with a RecursionError.
///
/// # Safety
/// `opt_out_prev` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn RFFISetMaxCallDepth(max_depth: i32, opt_out_prev: *mut i32) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::function::RFFISetMaxCallDepth(max_depth, opt_out_prev) }
}
