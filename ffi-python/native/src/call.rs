//! The Function type and its vectorcall entry.
//!
//! An instance is the package's Python Function layout (`fields` bytes) followed by
//! [`Fields`]. The `_h` and `_ti` members of the native type shadow the Python slots of the
//! same names, so Python code reads and writes the native fields.
#![allow(non_upper_case_globals)]

use super::callback;
use super::cpython::*;
use super::tensors::{self, ImportError, Imports};
use super::{hooks, publish_hooks, Hooks};
use rffi_core::abi::*;
use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The native part of an instance.
#[repr(C)]
struct Fields {
    vectorcall: VectorcallFunc,
    /// The Function object (owned; released by the Python base class's `__del__`), or 0.
    handle: i64,
    type_index: i32,
    /// Non-zero: the native call runs with the GIL released (the default).
    release_gil: u8,
    _pad: [u8; 3],
}

const _: () = assert!(core::mem::size_of::<Fields>() == 24);

/// The most arguments converted on the stack; longer calls take the Python path.
pub(super) const MAX_ARGS: usize = 8;

const fn member(
    name: &'static std::ffi::CStr,
    type_code: c_int,
    offset: isize,
    flags: c_int,
) -> PyMemberDef {
    PyMemberDef {
        name: name.as_ptr(),
        type_code,
        offset,
        flags,
        doc: std::ptr::null(),
    }
}

/// # Safety
/// GIL held; `bases` a tuple, `hooks` a 13-tuple as documented on `rffi_python_make_function_type`.
pub(super) unsafe fn make_function_type(
    api: &'static Api,
    rt: &'static RFFIHostApi,
    bases: PyObj,
    base_basicsize: i64,
    hooks_tuple: PyObj,
) -> PyObj {
    let fail = |msg: &std::ffi::CStr| {
        // SAFETY: GIL held; static message.
        unsafe { (api.PyErr_SetString)(api.PyExc_TypeError, msg.as_ptr()) };
        std::ptr::null_mut()
    };
    if bases.is_null() || hooks_tuple.is_null() {
        return fail(c"rffi: rffi_python_make_function_type needs bases and hooks");
    }
    if !(16..=1 << 20).contains(&base_basicsize) || base_basicsize % 8 != 0 {
        return fail(c"rffi: implausible base __basicsize__");
    }
    // SAFETY: GIL held; a live tuple per the contract.
    if unsafe { (api.PyTuple_Size)(hooks_tuple) } != 13 {
        // SAFETY: PyTuple_Size may have raised for a non-tuple; replace it with our message.
        unsafe { (api.PyErr_Clear)() };
        return fail(c"rffi: hooks must be a 13-tuple");
    }
    // SAFETY: GIL held; a 13-tuple (checked); borrowed items.
    let (handle_slot, tidx_slot) = unsafe {
        (
            (api.PyLong_AsLongLong)(tuple_get(api, hooks_tuple, 6)),
            (api.PyLong_AsLongLong)(tuple_get(api, hooks_tuple, 7)),
        )
    };
    let slot_ok = |o: i64| o >= 8 && o % 8 == 0 && o + 8 <= base_basicsize;
    if !slot_ok(handle_slot) || !slot_ok(tidx_slot) {
        // SAFETY: GIL held; a failed conversion may have raised.
        unsafe { (api.PyErr_Clear)() };
        return fail(c"rffi: implausible Object slot offsets");
    }
    let base = base_basicsize as usize;
    // The member table (offsets from the instance start): leaked, as the type may refer to it
    // for its whole life on some versions; built once per type (normally once per process).
    // `_h`/`_ti` are the package's own names for the fields; `_handle`/`_tidx`, what users
    // read, are read-only (a replaced handle would be released or passed without a reference).
    let members: &'static mut [PyMemberDef; 7] = Box::leak(Box::new([
        member(c"__vectorcalloffset__", T_PYSSIZET, base as isize, READONLY),
        member(c"_h", T_LONGLONG, (base + 8) as isize, 0),
        member(c"_ti", T_INT, (base + 16) as isize, 0),
        member(c"_handle", T_LONGLONG, (base + 8) as isize, READONLY),
        member(c"_tidx", T_INT, (base + 16) as isize, READONLY),
        member(c"release_gil", T_BOOL, (base + 20) as isize, 0),
        PyMemberDef {
            name: std::ptr::null(),
            type_code: 0,
            offset: 0,
            flags: 0,
            doc: std::ptr::null(),
        },
    ]));
    let members = members.as_mut_ptr();
    let mut slots = [
        PyType_Slot {
            slot: Py_tp_call,
            pfunc: api.PyVectorcall_Call as *mut c_void,
        },
        PyType_Slot {
            slot: Py_tp_new,
            pfunc: tp_new as *mut c_void,
        },
        PyType_Slot {
            slot: Py_tp_members,
            pfunc: members.cast(),
        },
        PyType_Slot {
            slot: Py_tp_doc,
            pfunc: c"A callable runtime function (native call path).".as_ptr() as *mut c_void,
        },
        PyType_Slot {
            slot: 0,
            pfunc: std::ptr::null_mut(),
        },
    ];
    let mut spec = PyType_Spec {
        name: c"rffi.Function".as_ptr(),
        basicsize: (base + core::mem::size_of::<Fields>()) as c_int,
        itemsize: 0,
        flags: Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL,
        slots: slots.as_mut_ptr(),
    };
    // SAFETY: GIL held; a complete spec whose arrays outlive the call.
    let ty = unsafe { (api.PyType_FromSpecWithBases)(&mut spec, bases) };
    if ty.is_null() {
        return ty;
    }
    // SAFETY: GIL held; `hooks_tuple` is a 13-tuple (checked); items are borrowed then kept with
    // our own references, which stay for the life of the process.
    unsafe {
        let item = |k: isize| {
            let o = tuple_get(api, hooks_tuple, k);
            (api.Py_IncRef)(o);
            o
        };
        let handle_name = (api.PyUnicode_InternFromString)(c"_handle".as_ptr());
        let tidx_name = (api.PyUnicode_InternFromString)(c"_tidx".as_ptr());
        let exchange_name = (api.PyUnicode_InternFromString)(c"__dlpack_c_exchange_api__".as_ptr());
        let dlpack_name = (api.PyUnicode_InternFromString)(c"__dlpack__".as_ptr());
        let dlpack_kwargs = dlpack_kwargs(api);
        let empty_tuple = (api.PyTuple_New)(0);
        let made = [
            handle_name,
            tidx_name,
            exchange_name,
            dlpack_name,
            dlpack_kwargs,
            empty_tuple,
        ];
        if made.iter().any(|o| o.is_null()) {
            (api.Py_DecRef)(ty);
            return std::ptr::null_mut();
        }
        (api.Py_IncRef)(ty);
        publish_hooks(Hooks {
            rt,
            func_type: ty,
            fallback: item(0),
            take_raised: item(1),
            decode: item(2),
            setters: item(3),
            set_object: item(4),
            object_type: item(5),
            dlpack_setter: item(8),
            decode_arg: item(9),
            write_owned: item(10),
            callback_failed: item(11),
            set_callable: item(12),
            handle_slot: handle_slot as usize,
            tidx_slot: tidx_slot as usize,
            handle_name,
            tidx_name,
            exchange_name,
            dlpack_name,
            dlpack_kwargs,
            empty_tuple,
            fields: base,
        });
    }
    ty
}

/// `{"max_version": (1, 1)}`, the keywords of the `__dlpack__` calls, or NULL with an error set.
///
/// # Safety
/// GIL held.
unsafe fn dlpack_kwargs(api: &Api) -> PyObj {
    // SAFETY: GIL held; PyTuple_SetItem steals the item references; everything made is released
    // on failure.
    unsafe {
        let version = (api.PyTuple_New)(2);
        if version.is_null() {
            return version;
        }
        for k in 0..2 {
            let v = (api.PyLong_FromLongLong)(1);
            if v.is_null() || (api.PyTuple_SetItem)(version, k, v) != 0 {
                (api.Py_DecRef)(version);
                return std::ptr::null_mut();
            }
        }
        let key = (api.PyUnicode_InternFromString)(c"max_version".as_ptr());
        let kwargs = (api.PyDict_New)();
        let ok =
            !key.is_null() && !kwargs.is_null() && (api.PyDict_SetItem)(kwargs, key, version) == 0;
        (api.Py_DecRef)(version);
        if !key.is_null() {
            (api.Py_DecRef)(key);
        }
        if !ok {
            if !kwargs.is_null() {
                (api.Py_DecRef)(kwargs);
            }
            return std::ptr::null_mut();
        }
        kwargs
    }
}

/// A borrowed tuple item (`PyTuple_GetItem`; the tuple layout itself is not relied on).
///
/// # Safety
/// GIL held; `t` a live tuple with more than `k` items.
unsafe fn tuple_get(api: &Api, t: PyObj, k: isize) -> PyObj {
    // SAFETY: GIL held; an index in range returns a borrowed reference without raising.
    unsafe { (api.PyTuple_GetItem)(t, k) }
}

#[inline(always)]
fn fields<'a>(h: &Hooks, o: PyObj) -> &'a mut Fields {
    // SAFETY: callers pass instances of the Function type (or subclasses), whose native fields
    // start at `h.fields`.
    unsafe { &mut *o.cast::<u8>().add(h.fields).cast::<Fields>() }
}

/// `tp_new`: a zeroed instance with the vectorcall entry set (the base class's `__init__` fills
/// the rest).
unsafe extern "C" fn tp_new(ty: PyObj, _args: PyObj, _kwds: PyObj) -> PyObj {
    let r = catch_unwind(|| {
        let (Some(api), Some(h)) = (api(), hooks()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: GIL held (a type slot); `ty` is the Function type or a subclass.
        let o = unsafe { (api.PyType_GenericAlloc)(ty, 0) };
        if !o.is_null() {
            let f = fields(h, o);
            f.vectorcall = vectorcall;
            f.handle = 0;
            f.type_index = kRFFIFunction;
            f.release_gil = 1;
        }
        o
    });
    r.unwrap_or(std::ptr::null_mut())
}

/// The outcome of converting the arguments.
enum Packed {
    Ready,
    /// A kind the fast path leaves to Python, or a Python error already set (`error`).
    Python {
        error: bool,
    },
    /// An rffi Error raised on this thread (a tensor argument the runtime refused).
    Runtime,
}

/// Converts `args` into `out` (and `arrays` for bytes longer than 7, `imports` for tensors of
/// types with a DLPack exchange API).
///
/// # Safety
/// GIL held; `args` are `n <= MAX_ARGS` live objects.
#[inline(always)]
unsafe fn pack(
    api: &Api,
    h: &Hooks,
    args: *const PyObj,
    n: usize,
    out: &mut [RFFIAny; MAX_ARGS],
    arrays: &mut [RFFIByteArray; MAX_ARGS],
    imports: &mut Imports,
) -> Packed {
    for k in 0..n {
        // SAFETY: `k < n` borrowed, live arguments (vectorcall contract).
        let a = unsafe { *args.add(k) };
        let slot = &mut out[k];
        // SAFETY: a live object.
        let t = unsafe { api.type_of(a) };
        if t == api.PyLong_Type {
            let mut overflow: c_int = 0;
            // SAFETY: an exact int.
            let v = unsafe { (api.PyLong_AsLongLongAndOverflow)(a, &mut overflow) };
            if overflow != 0 {
                return Packed::Python { error: false }; // the Python path words the OverflowError
            }
            slot.type_index = kRFFIInt;
            slot.v.v_int64 = v;
        } else if t == api.PyFloat_Type {
            slot.type_index = kRFFIFloat;
            // SAFETY: an exact float (cannot fail).
            slot.v.v_float64 = unsafe { (api.PyFloat_AsDouble)(a) };
        } else if a == api._Py_NoneStruct {
            slot.type_index = kRFFINone;
            slot.v.v_int64 = 0;
        } else if a == api._Py_TrueStruct || a == api._Py_FalseStruct {
            slot.type_index = kRFFIBool;
            slot.v.v_int64 = (a == api._Py_TrueStruct) as i64;
        } else if t == api.PyUnicode_Type {
            let mut size: Py_ssize_t = 0;
            // SAFETY: an exact str; the UTF-8 buffer is cached in it (lives as long as `a`, which
            // the caller holds for the whole call) and NUL-terminated.
            let p = unsafe { (api.PyUnicode_AsUTF8AndSize)(a, &mut size) };
            if p.is_null() {
                // SAFETY: GIL held. Lone surrogates: the Python path raises the same error.
                unsafe { (api.PyErr_Clear)() };
                return Packed::Python { error: false };
            }
            // SAFETY: `size` readable bytes at `p`.
            let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size as usize) };
            if bytes.len() <= 7 {
                small(slot, kRFFISmallStr, bytes);
            } else if bytes.contains(&0) {
                return Packed::Python { error: false }; // embedded NUL: a heap Str, made in Python
            } else {
                slot.type_index = kRFFIRawStr;
                slot.small_str_len = 0;
                slot.v.v_c_str = p;
            }
        } else if t == api.PyBytes_Type {
            // SAFETY: an exact bytes object; its buffer lives as long as `a`.
            let (p, size) = unsafe { ((api.PyBytes_AsString)(a), (api.PyBytes_Size)(a)) };
            // SAFETY: `size` readable bytes at `p`.
            let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size as usize) };
            if bytes.len() <= 7 {
                small(slot, kRFFISmallBytes, bytes);
            } else {
                arrays[k] = RFFIByteArray {
                    data: p as *const c_char,
                    size: size as usize,
                };
                slot.type_index = kRFFIByteArrayPtr;
                slot.small_str_len = 0;
                slot.v.v_ptr = (&raw mut arrays[k]).cast();
            }
        } else if t == h.func_type {
            let f = fields(h, a);
            if f.handle == 0 {
                return Packed::Python { error: false }; // released: the Python path says so
            }
            slot.type_index = f.type_index;
            slot.small_str_len = 0;
            slot.v.v_int64 = f.handle;
        } else {
            // SAFETY: GIL held; a borrowed lookup of the exact type in the setters dict.
            let setter = unsafe { (api.PyDict_GetItem)(h.setters, t) };
            if setter != h.set_object {
                // SAFETY: GIL held; `t` is the argument's type, `a` one of its instances.
                let done = unsafe {
                    if let Some(x) = tensors::api_of(api, h, t) {
                        imports.import(api, x, a, k, slot).map(|()| true)
                    } else if !setter.is_null() && setter == h.dlpack_setter(api) {
                        imports.import_dlpack(api, h, a, t, slot)
                    } else if !setter.is_null() && setter == h.set_callable {
                        // A Python callable, made a Function here (no ctypes call, which would
                        // turn a RecursionError at the limit into an ArgumentError).
                        let f = callback::function_from_callable(api, h, a);
                        if f.is_null() {
                            Err(ImportError::Runtime)
                        } else {
                            imports.keep_object(f, kRFFIFunction, slot);
                            Ok(true)
                        }
                    } else {
                        Ok(false)
                    }
                };
                match done {
                    Ok(true) => continue,
                    Ok(false) => return Packed::Python { error: false },
                    Err(ImportError::Python) => return Packed::Python { error: true },
                    Err(ImportError::Runtime) => return Packed::Runtime,
                }
            }
            // SAFETY: GIL held; a runtime object wrapper (its setter says so).
            match unsafe { object_fields(api, h, a, t) } {
                Some((ti, handle)) if handle != 0 => {
                    slot.type_index = ti;
                    slot.small_str_len = 0;
                    slot.v.v_int64 = handle;
                }
                Some(_) => return Packed::Python { error: false },
                None => return Packed::Python { error: true },
            }
        }
    }
    Packed::Ready
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
/// error set. Instances of the package's Object class hold both in its slots, read in place;
/// Function subclasses in the native fields; anything else through attribute lookups.
///
/// # Safety
/// GIL held; `a` live, `t` its type.
unsafe fn object_fields(api: &Api, h: &Hooks, a: PyObj, t: PyObj) -> Option<(i32, i64)> {
    // SAFETY: GIL held; `a` is an instance of `t`.
    unsafe {
        if (api.PyType_IsSubtype)(t, h.func_type) != 0 {
            let f = fields(h, a);
            return Some((f.type_index, f.handle));
        }
        if (api.PyType_IsSubtype)(t, h.object_type) != 0 {
            // The Object class's slots (offsets probed by the package): borrowed ints, or NULL
            // when unset (then the Python path raises its AttributeError).
            let base = a.cast::<u8>();
            let hv = *base.add(h.handle_slot).cast::<PyObj>();
            let tv = *base.add(h.tidx_slot).cast::<PyObj>();
            if !hv.is_null() && !tv.is_null() {
                let handle = (api.PyLong_AsLongLong)(hv);
                let ti = (api.PyLong_AsLongLong)(tv);
                if (handle == -1 || ti == -1) && !(api.PyErr_Occurred)().is_null() {
                    return None;
                }
                return Some((ti as i32, handle));
            }
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

/// The Python path: `fallback(callable, *args, **kwargs)`.
///
/// # Safety
/// GIL held; the vectorcall arguments as received.
unsafe fn call_python(
    api: &Api,
    h: &Hooks,
    callable: PyObj,
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
        let tuple = (api.PyTuple_New)((n + 1) as Py_ssize_t);
        if tuple.is_null() {
            return tuple;
        }
        (api.Py_IncRef)(callable);
        (api.PyTuple_SetItem)(tuple, 0, callable);
        for k in 0..n {
            let a = *args.add(k);
            (api.Py_IncRef)(a);
            (api.PyTuple_SetItem)(tuple, (k + 1) as Py_ssize_t, a);
        }
        let mut kwargs = std::ptr::null_mut();
        if nkw > 0 {
            kwargs = (api.PyDict_New)();
            if kwargs.is_null() {
                (api.Py_DecRef)(tuple);
                return kwargs;
            }
            for k in 0..nkw {
                let key = tuple_get(api, kwnames, k as isize);
                if (api.PyDict_SetItem)(kwargs, key, *args.add(n + k)) != 0 {
                    (api.Py_DecRef)(kwargs);
                    (api.Py_DecRef)(tuple);
                    return std::ptr::null_mut();
                }
            }
        }
        let r = (api.PyObject_Call)(h.fallback, tuple, kwargs);
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
unsafe fn raise_runtime_error(api: &Api, h: &Hooks) -> PyObj {
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
/// when `f` was not called (a NULL argument from a failed conversion, or no tuple: a Python
/// error is set).
///
/// # Safety
/// GIL held.
pub(super) unsafe fn call2(api: &Api, f: PyObj, x: PyObj, y: PyObj) -> Option<PyObj> {
    // SAFETY: GIL held; the tuple steals both references.
    unsafe {
        let tuple = if x.is_null() || y.is_null() {
            std::ptr::null_mut()
        } else {
            (api.PyTuple_New)(2)
        };
        if tuple.is_null() {
            for o in [x, y] {
                if !o.is_null() {
                    (api.Py_DecRef)(o);
                }
            }
            return None;
        }
        (api.PyTuple_SetItem)(tuple, 0, x);
        (api.PyTuple_SetItem)(tuple, 1, y);
        let r = (api.PyObject_CallObject)(f, tuple);
        (api.Py_DecRef)(tuple);
        Some(r)
    }
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
            _ => {
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
    }
}

/// The vectorcall entry of every Function instance.
unsafe extern "C" fn vectorcall(
    callable: PyObj,
    args: *const PyObj,
    nargsf: usize,
    kwnames: PyObj,
) -> PyObj {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let (Some(api), Some(h)) = (api(), hooks()) else {
            return std::ptr::null_mut();
        };
        let n = nargsf & !PY_VECTORCALL_ARGUMENTS_OFFSET;
        // SAFETY: the interpreter calls this with the GIL held and the vectorcall arguments of a
        // call of `callable`, an instance of the Function type.
        unsafe { call(api, h, callable, args, n, kwnames) }
    }));
    match r {
        Ok(p) => p,
        Err(_) => {
            if let Some(api) = api() {
                // SAFETY: GIL held; static message.
                unsafe {
                    (api.PyErr_SetString)(
                        api.PyExc_RuntimeError,
                        c"rffi: panic in the fast call path".as_ptr(),
                    )
                };
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
    let f = fields(h, callable);
    let handle = f.handle;
    let release = f.release_gil != 0;
    if has_kw || n > MAX_ARGS || handle == 0 {
        // SAFETY: forwarded.
        return unsafe { call_python(api, h, callable, args, n, kwnames) };
    }
    // SAFETY: RFFIAny and RFFIByteArray are plain data; all-zero is None / an empty array.
    let mut packed: [RFFIAny; MAX_ARGS] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut arrays: [RFFIByteArray; MAX_ARGS] = unsafe { std::mem::zeroed() };
    let mut imports = Imports::new(h.rt);
    // SAFETY: GIL held; `n` live arguments.
    match unsafe { pack(api, h, args, n, &mut packed, &mut arrays, &mut imports) } {
        Packed::Ready => {}
        Packed::Python { error: true } => return std::ptr::null_mut(),
        // SAFETY: GIL held, the failing thread.
        Packed::Runtime => return unsafe { raise_runtime_error(api, h) },
        Packed::Python { error: false } => {
            imports.release(); // the Python path converts every argument again
                               // SAFETY: forwarded.
            return unsafe { call_python(api, h, callable, args, n, kwnames) };
        }
    }
    // SAFETY: all-zero is the None value the result slot must hold before the call.
    let mut result: RFFIAny = unsafe { std::mem::zeroed() };
    let func = handle as usize as RFFIObjectHandle;
    let rc = if release {
        // SAFETY: the GIL is held here and re-taken before anything touches Python again; the
        // call itself only reads the packed values, whose referents (the argument objects) the
        // caller keeps alive. RFFIFunctionCall catches panics itself.
        unsafe {
            let ts = (api.PyEval_SaveThread)();
            let rc = (h.rt.function_call)(func, packed.as_mut_ptr(), n as i32, &mut result);
            (api.PyEval_RestoreThread)(ts);
            rc
        }
    } else {
        // SAFETY: as above, with the GIL kept.
        unsafe { (h.rt.function_call)(func, packed.as_mut_ptr(), n as i32, &mut result) }
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
