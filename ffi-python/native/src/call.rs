//! The vectorcall entry of every `rffi.Function` instance: convert the arguments (`convert`),
//! call the function, convert the result; anything the native path leaves alone goes to the
//! package's Python call path.
//!
//! The GIL is released around the native function (see `gil`) unless the call keeps it: the
//! Function's `release_gil` is false (the package sets that for functions declared non-blocking
//! and for Functions made from Python callables), or it is declared non-blocking with its
//! arguments and every Function argument of this call keeps the GIL or is a Python callable.
//! Python code behind our callback trampoline needs the GIL at once and gives it up itself
//! wherever Python would, as when CPython's own C functions (`sorted`, `map`) call Python
//! callbacks with the GIL held.

use super::convert::{call2, pack, plain_to_python, Packed, MAX_ARGS};
use super::cpython::*;
use super::function_type::fields;
use super::tensors::Imports;
use super::{gil, object_type};
use super::{hooks, Hooks};
use rffi_core::abi::*;
use std::mem::MaybeUninit;

/// `f(*first, *args, **kwargs)` for vectorcall arguments (`n` positional ones, then the values
/// of `kwnames`): how the native entry points hand a call to the package's Python code.
///
/// # Safety
/// GIL held; the vectorcall arguments as received.
pub(super) unsafe fn forward(
    api: &Api,
    f: PyObj,
    first: Option<PyObj>,
    args: *const PyObj,
    n: usize,
    kwnames: PyObj,
) -> PyObj {
    // SAFETY: GIL held; `PyTuple_SetItem` steals the references we add; the keyword values follow
    // the positional ones in `args` (vectorcall contract).
    unsafe {
        let nkw = if kwnames.is_null() {
            0
        } else {
            (api.PyTuple_Size)(kwnames) as usize
        };
        let skip = first.is_some() as usize;
        let tuple = (api.PyTuple_New)((n + skip) as Py_ssize_t);
        if tuple.is_null() {
            return tuple;
        }
        if let Some(o) = first {
            (api.Py_IncRef)(o);
            (api.PyTuple_SetItem)(tuple, 0, o);
        }
        for k in 0..n {
            let a = *args.add(k);
            (api.Py_IncRef)(a);
            (api.PyTuple_SetItem)(tuple, (k + skip) as Py_ssize_t, a);
        }
        let mut kwargs = std::ptr::null_mut();
        if nkw > 0 {
            kwargs = (api.PyDict_New)();
            if kwargs.is_null() {
                (api.Py_DecRef)(tuple);
                return kwargs;
            }
            for k in 0..nkw {
                let key = (api.PyTuple_GetItem)(kwnames, k as isize);
                if (api.PyDict_SetItem)(kwargs, key, *args.add(n + k)) != 0 {
                    (api.Py_DecRef)(kwargs);
                    (api.Py_DecRef)(tuple);
                    return std::ptr::null_mut();
                }
            }
        }
        let r = (api.PyObject_Call)(f, tuple, kwargs);
        (api.Py_DecRef)(tuple);
        if !kwargs.is_null() {
            (api.Py_DecRef)(kwargs);
        }
        r
    }
}

/// Raises the exception for this thread's raised Error (built by the package, so it is the same
/// exception, with the same traceback, as on the Python path). Returns NULL.
///
/// # Safety
/// GIL held, on the thread whose call failed.
pub(super) unsafe fn raise_runtime_error(api: &Api, h: &Hooks) -> PyObj {
    // SAFETY: GIL held; `exc` and its type are new references, released here.
    unsafe {
        let exc =
            api.with_headroom(|| (api.PyObject_CallObject)(h.take_raised, std::ptr::null_mut()));
        if !exc.is_null() {
            let ty = (api.PyObject_Type)(exc);
            // PyErr_SetObject keeps the instance's __traceback__ (the native frames), as `raise`.
            (api.PyErr_SetObject)(ty, exc);
            (api.Py_DecRef)(ty);
            (api.Py_DecRef)(exc);
        }
    }
    std::ptr::null_mut()
}

/// The result as a Python object (a new reference), taking over an object result.
///
/// # Safety
/// GIL held; `r` an owned value just returned by a call.
unsafe fn unpack(api: &Api, h: &Hooks, r: &RFFIAny) -> PyObj {
    // SAFETY: GIL held; the payload is read per the type index.
    unsafe {
        if let Some(o) = plain_to_python(api, r) {
            return o;
        }
        match r.type_index {
            kRFFIStr => {
                let obj = r.v.v_obj;
                // A Str object: its cell (data, size) follows the 24-byte header.
                let cell = &*obj.cast::<u8>().add(24).cast::<RFFIStrCell>();
                let s = (api.PyUnicode_DecodeUTF8)(
                    cell.data,
                    cell.size as Py_ssize_t,
                    std::ptr::null(),
                );
                (h.rt.object_dec_ref)(obj.cast());
                s
            }
            ti if ti >= kRFFIStaticObjectBegin => match wrapper_class(api, h, ti) {
                Some(cls) => object_type::wrap(api, h.rt, cls, r.v.v_int64, ti),
                None => decode_python(api, h, r),
            },
            _ => decode_python(api, h, r),
        }
    }
}

/// The class (borrowed) whose instances objects of type `ti` become, when they are made here: the
/// class the package registered for the type index, if it does not define `__new__` and no
/// decoder turns the type into a plain Python value; None (nothing set) otherwise, when the
/// package's decoder makes the value.
///
/// # Safety
/// GIL held.
#[inline(always)]
pub(super) unsafe fn wrapper_class(api: &Api, h: &Hooks, ti: i32) -> Option<PyObj> {
    // SAFETY: GIL held; borrowed lookups with a key released here.
    unsafe {
        let key = (api.PyLong_FromLongLong)(ti as i64);
        if key.is_null() {
            (api.PyErr_Clear)();
            return None;
        }
        let cls = if (api.PyDict_GetItemWithError)(h.decoders, key).is_null() {
            (api.PyDict_GetItemWithError)(h.classes, key)
        } else {
            std::ptr::null_mut()
        };
        (api.Py_DecRef)(key);
        if cls.is_null()
            || !object_type::is_wrapper_type(api, cls)
            || !object_type::wraps_natively(api, cls)
        {
            return None;
        }
        Some(cls)
    }
}

/// A result the package's `decode(type_word, payload)` converts (taking over an object).
///
/// # Safety
/// GIL held; `r` an owned value just returned by a call.
unsafe fn decode_python(api: &Api, h: &Hooks, r: &RFFIAny) -> PyObj {
    // SAFETY: GIL held; the payload is read per the type index.
    unsafe {
        let word = (r.type_index as u32 as i64) | ((r.small_str_len as i64) << 32);
        let w = (api.PyLong_FromLongLong)(word);
        let p = (api.PyLong_FromLongLong)(r.v.v_int64);
        call2(api, h.decode, w, p).unwrap_or_else(|| {
            // Not handed over: the object result is still ours to release.
            if r.type_index >= kRFFIStaticObjectBegin {
                (h.rt.object_dec_ref)(r.v.v_obj.cast());
            }
            std::ptr::null_mut()
        })
    }
}

/// The vectorcall entry of every Function instance.
pub(super) unsafe extern "C" fn vectorcall(
    callable: PyObj,
    args: *const PyObj,
    nargsf: usize,
    kwnames: PyObj,
) -> PyObj {
    let r = crate::panics::catch(|| {
        let (Some(api), Some(h)) = (api(), hooks()) else {
            return std::ptr::null_mut();
        };
        let n = nargsf & !PY_VECTORCALL_ARGUMENTS_OFFSET;
        // SAFETY: the interpreter calls this with the GIL held and the vectorcall arguments of a
        // call of `callable`, an instance of the Function type.
        unsafe { call(api, h, callable, args, n, kwnames) }
    });
    match r {
        Ok(p) => p,
        Err(message) => {
            if let Some(api) = api() {
                let text = crate::panics::describe("the fast call path", &message);
                // SAFETY: GIL held; a NUL-terminated message.
                unsafe { (api.PyErr_SetString)(api.PyExc_RuntimeError, text.as_ptr()) };
            }
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// As for `vectorcall`.
#[inline(always)]
unsafe fn call(
    api: &Api,
    h: &Hooks,
    callable: PyObj,
    args: *const PyObj,
    n: usize,
    kwnames: PyObj,
) -> PyObj {
    // SAFETY: GIL held; `kwnames` is NULL or a tuple.
    let has_kw = !kwnames.is_null() && unsafe { (api.PyTuple_Size)(kwnames) } != 0;
    // SAFETY: instances of the Function type use the wrapper storage (checked when it was made).
    let handle = unsafe { object_type::fields(callable) }.handle;
    let policy = fields(h, callable);
    let mut release = policy.release_gil != 0;
    if has_kw || n > MAX_ARGS || handle == 0 {
        // SAFETY: forwarded.
        return unsafe { forward(api, h.fallback, Some(callable), args, n, kwnames) };
    }
    // Written by `pack` for the `n` arguments only.
    let mut packed = [const { MaybeUninit::<RFFIAny>::uninit() }; MAX_ARGS];
    let mut arrays = [const { MaybeUninit::<RFFIByteArray>::uninit() }; MAX_ARGS];
    let mut imports = Imports::new(h.rt);
    // SAFETY: GIL held; `n` live arguments.
    match unsafe { pack(api, h, args, n, &mut packed, &mut arrays, &mut imports) } {
        Packed::Ready { blocking_function } => {
            if policy.gil_with_arguments != 0 && !blocking_function {
                release = false;
            }
        }
        Packed::Python { error: true } => return std::ptr::null_mut(),
        // SAFETY: GIL held, the failing thread.
        Packed::Runtime => return unsafe { raise_runtime_error(api, h) },
        Packed::Python { error: false } => {
            imports.release(); // the Python path converts every argument again
                               // SAFETY: forwarded.
            return unsafe { forward(api, h.fallback, Some(callable), args, n, kwnames) };
        }
    }
    // SAFETY: all-zero is the None value the result slot must hold before the call.
    let mut result: RFFIAny = unsafe { std::mem::zeroed() };
    let func = handle as usize as RFFIObjectHandle;
    // SAFETY: GIL held; the call only reads the packed values, whose referents (the argument
    // objects) the caller keeps alive, and touches Python only through callbacks, which take the
    // GIL themselves. RFFIFunctionCall catches panics itself.
    let rc = unsafe {
        gil::call_from_python(api, release, || {
            // The first `n` entries, written by `pack`.
            (h.rt.function_call)(func, packed.as_mut_ptr().cast(), n as i32, &mut result)
        })
    };
    // Streams restored and tensors released with the GIL held: a producer's deleter may need it.
    imports.release();
    if rc != 0 {
        // SAFETY: GIL held, the failing thread.
        return unsafe { raise_runtime_error(api, h) };
    }
    // SAFETY: GIL held; an owned result.
    unsafe { unpack(api, h, &result) }
}
