//! Python callables as runtime Functions, called without ctypes' callback thunk.
//!
//! The Function's context is the callable itself (a reference the Function owns, released by
//! its deleter). A call takes the GIL (`gil::enter`: no hand-off when the thread holds it, the
//! recorded thread state when a call from Python on this thread released it, PyGILState
//! elsewhere), converts the plain argument kinds (None, bool, int, float, short str) and objects
//! of wrapper classes in Rust and hands every other kind to the package's decoder of borrowed
//! values, calls the callable
//! (vectorcall: no argument tuple), and stores a None/bool/int/float result in Rust or hands it
//! to the package's writer of owned results. A Python exception goes to the package's
//! `set_raised_from_python` rules, so the Error, its identity across nesting and the Python frames
//! in its backtrace are the same as with the ctypes trampoline.

use super::call::wrapper_class;
use super::convert::{call2, plain_to_python};
use super::cpython::*;
use super::{gil, hooks, object_type, Hooks};
use rffi_core::abi::*;
use std::ffi::{c_int, c_void};

/// A Function calling `callable` (a new handle), or NULL with an Error raised on this thread.
///
/// # Safety
/// GIL held; `callable` a live object.
pub(super) unsafe fn function_from_callable(
    api: &Api,
    h: &Hooks,
    callable: PyObj,
) -> RFFIObjectHandle {
    let mut out: RFFIObjectHandle = std::ptr::null_mut();
    // SAFETY: GIL held; the Function owns the reference taken here (released by `release`, or
    // below when creation fails).
    unsafe {
        (api.Py_IncRef)(callable);
        if (h.rt.function_create)(callable.cast(), Some(call), Some(release), &mut out) != 0 {
            (api.Py_DecRef)(callable);
            return std::ptr::null_mut();
        }
    }
    out
}

/// The deleter: drops the Function's reference to the callable (taking the GIL; nothing once
/// the interpreter is gone).
unsafe extern "C" fn release(ctx: *mut c_void) {
    let _ = crate::panics::catch(|| {
        let Some(api) = api() else { return };
        // SAFETY: a reference taken by `function_from_callable`; the GIL is taken around it.
        unsafe {
            if (api.Py_IsInitialized)() == 0 {
                return;
            }
            let entered = gil::enter(api);
            (api.Py_DecRef)(ctx.cast());
            gil::leave(api, entered);
        }
    });
}

/// The safe-call entry of every callback Function.
unsafe extern "C" fn call(
    ctx: *mut c_void,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    let r = crate::panics::catch(|| {
        let (Some(api), Some(h)) = (api(), hooks()) else {
            return fail(c"rffi: the Python fast path is not initialized");
        };
        // SAFETY: the GIL is taken for the whole body; `args` holds `num_args` borrowed values
        // and `result` is the caller's slot (the safe-call contract); `ctx` is the callable.
        unsafe {
            if (api.Py_IsInitialized)() == 0 {
                return fail(c"rffi: a Python callback was called after the interpreter exited");
            }
            let entered = gil::enter(api);
            let rc = call_with_gil(api, h, ctx.cast(), args, num_args.max(0) as usize, result);
            gil::leave(api, entered);
            rc
        }
    });
    r.unwrap_or_else(|message| {
        fail(&crate::panics::describe(
            "a Python callback's trampoline",
            &message,
        ))
    })
}

fn fail(message: &std::ffi::CStr) -> i32 {
    if let Some(rt) = crate::runtime::host() {
        // SAFETY: static NUL-terminated strings.
        unsafe { (rt.error_set_raised_from_cstr)(c"RuntimeError".as_ptr(), message.as_ptr()) };
    }
    -1
}

/// # Safety
/// GIL held; as for `call`.
unsafe fn call_with_gil(
    api: &Api,
    h: &Hooks,
    callable: PyObj,
    args: *const RFFIAny,
    n: usize,
    result: *mut RFFIAny,
) -> i32 {
    // SAFETY: GIL held; every argument made here is a new reference, released on all paths.
    unsafe {
        let mut stack = [std::ptr::null_mut(); 8];
        let mut heap;
        let argv: &mut [PyObj] = if n <= stack.len() {
            &mut stack[..n]
        } else {
            heap = vec![std::ptr::null_mut(); n];
            &mut heap
        };
        let release_all = |argv: &[PyObj]| {
            for &a in argv {
                (api.Py_DecRef)(a);
            }
        };
        for k in 0..n {
            let a = arg_to_python(api, h, &*args.add(k));
            if a.is_null() {
                release_all(&argv[..k]);
                return raise_python_error(api, h);
            }
            argv[k] = a;
        }
        let r = (api.PyObject_VectorcallDict)(callable, argv.as_ptr(), n, std::ptr::null_mut());
        release_all(argv);
        if r.is_null() {
            return raise_python_error(api, h);
        }
        let rc = store_result(api, h, r, result);
        (api.Py_DecRef)(r);
        rc
    }
}

/// A borrowed argument as a new Python reference (NULL with a Python error set).
///
/// # Safety
/// GIL held; `a` a borrowed value.
unsafe fn arg_to_python(api: &Api, h: &Hooks, a: &RFFIAny) -> PyObj {
    // SAFETY: GIL held; a borrowed value (objects are decoded as borrowed by the package).
    unsafe {
        if let Some(o) = plain_to_python(api, a) {
            return o;
        }
        if a.type_index >= kRFFIStaticObjectBegin {
            if let Some(cls) = wrapper_class(api, h, a.type_index) {
                // The wrapper owns a reference of its own.
                (h.rt.object_inc_ref)(a.v.v_obj.cast());
                return object_type::wrap(api, h.rt, cls, a.v.v_int64, a.type_index);
            }
        }
        let word = (a.type_index as u32 as i64) | ((a.small_str_len as i64) << 32);
        let (w, p) = (
            (api.PyLong_FromLongLong)(word),
            (api.PyLong_FromLongLong)(a.v.v_int64),
        );
        call2(api, h.decode_arg, w, p).unwrap_or(std::ptr::null_mut())
    }
}

/// Stores the callable's result in `result`: plain kinds here, others through the package.
///
/// # Safety
/// GIL held; `r` live; `result` the caller's slot, holding None.
unsafe fn store_result(api: &Api, h: &Hooks, r: PyObj, result: *mut RFFIAny) -> i32 {
    // SAFETY: GIL held; `result` is writable (the safe-call contract).
    unsafe {
        let out = &mut *result;
        if r == api._Py_NoneStruct {
            return 0;
        }
        if r == api._Py_TrueStruct || r == api._Py_FalseStruct {
            out.type_index = kRFFIBool;
            out.v.v_int64 = (r == api._Py_TrueStruct) as i64;
            return 0;
        }
        let t = api.type_of(r);
        if t == api.PyFloat_Type {
            out.type_index = kRFFIFloat;
            out.v.v_float64 = (api.PyFloat_AsDouble)(r);
            return 0;
        }
        if t == api.PyLong_Type {
            let mut overflow: c_int = 0;
            let v = (api.PyLong_AsLongLongAndOverflow)(r, &mut overflow);
            if overflow == 0 {
                out.type_index = kRFFIInt;
                out.v.v_int64 = v;
                return 0;
            }
        }
        (api.Py_IncRef)(r);
        let address = (api.PyLong_FromLongLong)(result as usize as i64);
        let w = call2(api, h.write_owned, r, address).unwrap_or(std::ptr::null_mut());
        if w.is_null() {
            return raise_python_error(api, h);
        }
        (api.Py_DecRef)(w);
        0
    }
}

/// Turns the pending Python exception into this thread's raised Error (the package's rules).
/// Returns -1.
///
/// # Safety
/// GIL held, a Python error set.
unsafe fn raise_python_error(api: &Api, h: &Hooks) -> i32 {
    // SAFETY: GIL held; Fetch hands over new references (or NULLs), each released here.
    unsafe {
        let (mut ty, mut value, mut tb) = (
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        (api.PyErr_Fetch)(&mut ty, &mut value, &mut tb);
        if ty.is_null() {
            return fail(c"rffi: a Python callback failed without an exception");
        }
        (api.PyErr_NormalizeException)(&mut ty, &mut value, &mut tb);
        if !value.is_null() && !tb.is_null() {
            (api.PyException_SetTraceback)(value, tb);
        }
        let done = if value.is_null() {
            std::ptr::null_mut()
        } else {
            let args = (api.PyTuple_New)(1);
            if args.is_null() {
                args
            } else {
                (api.Py_IncRef)(value);
                (api.PyTuple_SetItem)(args, 0, value);
                let r = api.with_headroom(|| (api.PyObject_CallObject)(h.callback_failed, args));
                (api.Py_DecRef)(args);
                r
            }
        };
        for o in [ty, value, tb] {
            if !o.is_null() {
                (api.Py_DecRef)(o);
            }
        }
        if done.is_null() {
            (api.PyErr_Clear)();
            return fail(c"rffi: a Python callback failed");
        }
        (api.Py_DecRef)(done);
    }
    -1
}
