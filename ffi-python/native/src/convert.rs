//! Python -> rffi on the native path: the package's conversion table, read from Rust.
//!
//! Exact `int`, `float`, `None`, `bool`, `str`, `bytes` and the Function type are recognised by
//! their type object first (the table's entries for them, without the lookup). Any other
//! argument's exact type is looked up in the package's table (`rffi._convert.TABLE`, type ->
//! kind; a type not in it is resolved once by the package's `kind_of`), and a kind with a native
//! code is converted here: subclasses of the plain types, runtime objects, DLPack producers,
//! Python callables. Kinds without one go back to the package's Python setters, so the rules and
//! their errors stay in one place.

use super::callback;
use super::cpython::*;
use super::function_type::fields;
use super::kinds::{kind_code, native};
use super::object_type;
use super::tensors::{self, ImportError, Imports};
use super::Hooks;
use rffi_core::abi::*;
use std::ffi::{c_char, c_int};
use std::mem::MaybeUninit;

/// The most arguments converted on the stack; longer calls take the Python path.
pub(super) const MAX_ARGS: usize = 8;

/// The outcome of converting the arguments.
pub(super) enum Packed {
    /// Converted; `blocking_function`: a Function argument may block (its wrapper releases the
    /// GIL, and it is not a Python callable).
    Ready { blocking_function: bool },
    /// A kind the native path leaves to Python, or a Python error already set (`error`).
    Python { error: bool },
    /// An rffi Error raised on this thread (a tensor argument the runtime refused).
    Runtime,
}

/// A str (or subclass) into `slot`: false when the Python rule must do it (an embedded NUL, or
/// text that is not valid UTF-8; no error is left set).
///
/// # Safety
/// GIL held; `a` a live str that the caller keeps alive for the call.
#[inline(always)]
unsafe fn pack_str(api: &Api, a: PyObj, slot: &mut RFFIAny) -> bool {
    let mut size: Py_ssize_t = 0;
    // SAFETY: a str; the UTF-8 buffer is cached in it (lives as long as `a`) and NUL-terminated.
    let p = unsafe { (api.PyUnicode_AsUTF8AndSize)(a, &mut size) };
    if p.is_null() {
        // SAFETY: GIL held. Lone surrogates: the Python rule raises the same error.
        unsafe { (api.PyErr_Clear)() };
        return false;
    }
    // SAFETY: `size` readable bytes at `p`.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size as usize) };
    if bytes.len() <= 7 {
        small(slot, kRFFISmallStr, bytes);
    } else if bytes.contains(&0) {
        return false; // a heap Str, made by the Python rule
    } else {
        slot.type_index = kRFFIRawStr;
        slot.small_str_len = 0;
        slot.v.v_c_str = p;
    }
    true
}

/// A bytes object (or subclass) into `slot` (longer ones through `array`).
///
/// # Safety
/// GIL held; `a` a live bytes object that the caller keeps alive for the call.
#[inline(always)]
unsafe fn pack_bytes(
    api: &Api,
    a: PyObj,
    slot: &mut RFFIAny,
    array: &mut MaybeUninit<RFFIByteArray>,
) {
    // SAFETY: a bytes object; its buffer lives as long as `a`.
    let (p, size) = unsafe { ((api.PyBytes_AsString)(a), (api.PyBytes_Size)(a)) };
    // SAFETY: `size` readable bytes at `p`.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size as usize) };
    if bytes.len() <= 7 {
        small(slot, kRFFISmallBytes, bytes);
    } else {
        let array = array.write(RFFIByteArray {
            data: p as *const c_char,
            size: size as usize,
        });
        slot.type_index = kRFFIByteArrayPtr;
        slot.small_str_len = 0;
        slot.v.v_ptr = (array as *mut RFFIByteArray).cast();
    }
}

/// An int (or subclass) into `slot`; false when it does not fit (the Python rule words the
/// OverflowError).
///
/// # Safety
/// GIL held; `a` a live int.
#[inline(always)]
unsafe fn pack_int(api: &Api, a: PyObj, slot: &mut RFFIAny) -> bool {
    let mut overflow: c_int = 0;
    // SAFETY: an int.
    let v = unsafe { (api.PyLong_AsLongLongAndOverflow)(a, &mut overflow) };
    if overflow != 0 {
        return false;
    }
    slot.type_index = kRFFIInt;
    slot.v.v_int64 = v;
    true
}

/// Converts `args` into the first `n` entries of `out` (and of `arrays` for bytes longer than 7,
/// `imports` for what a call makes for its arguments: tensors, callback Functions). Only the
/// entries converted are written, so a short call does not clear the whole arrays.
///
/// # Safety
/// GIL held; `args` are `n <= MAX_ARGS` live objects.
#[inline(always)]
pub(super) unsafe fn pack(
    api: &Api,
    h: &Hooks,
    args: *const PyObj,
    n: usize,
    out: &mut [MaybeUninit<RFFIAny>; MAX_ARGS],
    arrays: &mut [MaybeUninit<RFFIByteArray>; MAX_ARGS],
    imports: &mut Imports,
) -> Packed {
    let mut blocking_function = false;
    for k in 0..n {
        // All-zero (None, no small-string length): what each rule then fills in.
        // SAFETY: RFFIAny is plain data; all-zero is a valid value.
        let slot = out[k].write(unsafe { std::mem::zeroed() });
        // SAFETY: GIL held; `k < n` borrowed, live arguments (vectorcall contract), which the
        // caller keeps alive for the whole call.
        let done = unsafe { pack_one(api, h, *args.add(k), k, slot, &mut arrays[k], imports) };
        match done {
            Ok(true) => {
                // SAFETY: GIL held; argument `k` is live.
                blocking_function |=
                    slot.type_index == kRFFIFunction && unsafe { may_block(api, h, *args.add(k)) };
            }
            Ok(false) => return Packed::Python { error: false },
            Err(Failed::Python) => return Packed::Python { error: true },
            Err(Failed::Runtime) => return Packed::Runtime,
        }
    }
    Packed::Ready { blocking_function }
}

/// Whether the argument `a`, passed as a Function, may block: not when it is a Function wrapper
/// that keeps the GIL (declared non-blocking, made from a Python callable, or set so by the
/// user), nor a Python callable made into a Function for this call.
///
/// # Safety
/// GIL held; `a` live.
unsafe fn may_block(api: &Api, h: &Hooks, a: PyObj) -> bool {
    // SAFETY: GIL held; Function wrappers carry the native fields.
    unsafe {
        let t = api.type_of(a);
        if t == h.func_type || (api.PyType_IsSubtype)(t, h.func_type) != 0 {
            return fields(h, a).release_gil != 0;
        }
        // Anything else reaches a Function slot as a Python callable (made here) or as a
        // wrapper of another kind, whose function is unknown.
        kind_code(api, h, t) != Some(native::CALLABLE)
    }
}

/// Why an argument was not converted (`Ok(false)`: left to the Python rules, nothing set).
enum Failed {
    /// A Python error is set.
    Python,
    /// An rffi Error was raised on this thread.
    Runtime,
}

impl From<ImportError> for Failed {
    fn from(e: ImportError) -> Failed {
        match e {
            ImportError::Python => Failed::Python,
            ImportError::Runtime => Failed::Runtime,
        }
    }
}

/// Argument `k`, `a`, into `slot`.
///
/// # Safety
/// GIL held; `a` live and kept alive by the caller for the whole call.
#[inline(always)]
unsafe fn pack_one(
    api: &Api,
    h: &Hooks,
    a: PyObj,
    k: usize,
    slot: &mut RFFIAny,
    array: &mut MaybeUninit<RFFIByteArray>,
    imports: &mut Imports,
) -> Result<bool, Failed> {
    // SAFETY: GIL held; `a` is live, of type `t`, and outlives the call (contract); each branch
    // calls the CPython entry that applies to the type it checked.
    unsafe {
        let t = api.type_of(a);
        if t == api.PyLong_Type {
            return Ok(pack_int(api, a, slot));
        }
        if t == api.PyFloat_Type {
            slot.type_index = kRFFIFloat;
            slot.v.v_float64 = (api.PyFloat_AsDouble)(a); // an exact float: cannot fail
            return Ok(true);
        }
        if a == api._Py_NoneStruct {
            slot.type_index = kRFFINone;
            slot.v.v_int64 = 0;
            return Ok(true);
        }
        if a == api._Py_TrueStruct || a == api._Py_FalseStruct {
            slot.type_index = kRFFIBool;
            slot.v.v_int64 = (a == api._Py_TrueStruct) as i64;
            return Ok(true);
        }
        if t == api.PyUnicode_Type {
            return Ok(pack_str(api, a, slot));
        }
        if t == api.PyBytes_Type {
            pack_bytes(api, a, slot, array);
            return Ok(true);
        }
        if t == h.func_type {
            let f = object_type::fields(a);
            if f.handle == 0 {
                return Ok(false); // released: the Python path says so
            }
            slot.type_index = f.type_index;
            slot.small_str_len = 0;
            slot.v.v_int64 = f.handle;
            return Ok(true);
        }
        let code = kind_code(api, h, t).ok_or(Failed::Python)?;
        match code {
            native::INT => Ok(pack_int(api, a, slot)),
            native::FLOAT => {
                let v = (api.PyFloat_AsDouble)(a); // a float subclass
                if v == -1.0 && !(api.PyErr_Occurred)().is_null() {
                    return Err(Failed::Python);
                }
                slot.type_index = kRFFIFloat;
                slot.v.v_float64 = v;
                Ok(true)
            }
            native::STR => Ok(pack_str(api, a, slot)),
            native::BYTES => {
                pack_bytes(api, a, slot, array);
                Ok(true)
            }
            native::OBJECT => match object_fields(api, h, a, t) {
                Some((ti, handle)) if handle != 0 => {
                    slot.type_index = ti;
                    slot.small_str_len = 0;
                    slot.v.v_int64 = handle;
                    Ok(true)
                }
                Some(_) => Ok(false),
                None => Err(Failed::Python),
            },
            native::DLPACK => Ok(match tensors::api_of(api, h, t) {
                Some(x) => imports.import(api, x, a, k, slot).map(|()| true)?,
                None => imports.import_dlpack(api, h, a, t, slot)?,
            }),
            native::CALLABLE => {
                // Made here: no ctypes call, which would turn a RecursionError at the limit into
                // an ArgumentError.
                let f = callback::function_from_callable(api, h, a);
                if f.is_null() {
                    return Err(Failed::Runtime);
                }
                imports.keep_object(f, kRFFIFunction, slot);
                Ok(true)
            }
            // NONE and BOOL are the singletons, handled above; the other kinds are Python's.
            _ => Ok(false),
        }
    }
}

#[inline(always)]
fn small(slot: &mut RFFIAny, ti: i32, bytes: &[u8]) {
    let mut word = [0u8; 8];
    word[..bytes.len()].copy_from_slice(bytes);
    slot.type_index = ti;
    slot.small_str_len = bytes.len() as u32;
    slot.v.v_int64 = i64::from_le_bytes(word);
}

/// `(a._tidx, a._handle)` of a runtime object wrapper (`t` its type), or None with a Python
/// error set. Wrappers (the package's Object and its subclasses) hold both in the native
/// storage, read in place; anything else the table sends here is read through attribute
/// lookups.
///
/// # Safety
/// GIL held; `a` live, `t` its type.
unsafe fn object_fields(api: &Api, h: &Hooks, a: PyObj, t: PyObj) -> Option<(i32, i64)> {
    // SAFETY: GIL held; `a` is an instance of `t`.
    unsafe {
        if object_type::is_wrapper_type(api, t) {
            let f = object_type::fields(a);
            return Some((f.type_index, f.handle));
        }
    }
    // SAFETY: GIL held; new references, released here.
    unsafe {
        let read = |name: PyObj| -> Option<i64> {
            let v = (api.PyObject_GetAttr)(a, name);
            if v.is_null() {
                return None;
            }
            let x = (api.PyLong_AsLongLong)(v);
            (api.Py_DecRef)(v);
            if x == -1 && !(api.PyErr_Occurred)().is_null() {
                return None;
            }
            Some(x)
        };
        let handle = read(h.handle_name)?;
        let ti = read(h.tidx_name)?;
        Some((ti as i32, handle))
    }
}

/// A value of a plain kind (None, int, bool, float, short str) as a new Python reference (NULL
/// with a Python error set when making it failed); None for other kinds.
///
/// # Safety
/// GIL held.
pub(super) unsafe fn plain_to_python(api: &Api, v: &RFFIAny) -> Option<PyObj> {
    // SAFETY: GIL held; the payload is read per the type index.
    unsafe {
        Some(match v.type_index {
            kRFFINone => api.none(),
            kRFFIInt => (api.PyLong_FromLongLong)(v.v.v_int64),
            kRFFIBool => (api.PyBool_FromLong)((v.v.v_int64 != 0) as _),
            kRFFIFloat => (api.PyFloat_FromDouble)(v.v.v_float64),
            kRFFISmallStr => {
                let bytes = v.v.v_int64.to_le_bytes();
                let n = (v.small_str_len as usize).min(7);
                (api.PyUnicode_DecodeUTF8)(bytes.as_ptr().cast(), n as Py_ssize_t, std::ptr::null())
            }
            _ => return None,
        })
    }
}

/// `f(x, y)`, stealing `x` and `y`: `Some` of the call's result (NULL when it raised), or `None`
/// when `f` was not called (a NULL argument from a failed conversion: a Python error is set).
///
/// # Safety
/// GIL held.
pub(super) unsafe fn call2(api: &Api, f: PyObj, x: PyObj, y: PyObj) -> Option<PyObj> {
    // SAFETY: GIL held; both references are ours and released here.
    unsafe {
        let r = if x.is_null() || y.is_null() {
            None
        } else {
            let argv = [x, y];
            Some((api.PyObject_VectorcallDict)(
                f,
                argv.as_ptr(),
                2,
                std::ptr::null_mut(),
            ))
        };
        for o in [x, y] {
            if !o.is_null() {
                (api.Py_DecRef)(o);
            }
        }
        r
    }
}
