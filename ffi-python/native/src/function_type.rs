//! The `rffi.Function` type of the native path: a heap type built through `PyType_FromSpec`,
//! whose instances are called through vectorcall (see `call`).
//!
//! An instance is the package's Python Function layout (`fields` bytes: the wrapper storage of
//! `object_type`, which holds the handle and type index, then the Python slots) followed by
//! [`Fields`].
#![allow(non_upper_case_globals)]

use super::call::vectorcall;
use super::cpython::*;
use super::{hooks, object_type, publish_hooks, Hooks};
use rffi_core::abi::*;
use std::ffi::{c_int, c_void, CStr};

/// The native part of an instance, after the Python Function class's layout.
#[repr(C)]
pub(super) struct Fields {
    pub vectorcall: VectorcallFunc,
    /// Non-zero: the native call runs with the GIL released (the default).
    pub release_gil: u8,
    /// Non-zero: the function is non-blocking when the Functions passed as its arguments are
    /// (declared `"nonblocking": "with_arguments"`): a call whose Function arguments all keep
    /// the GIL, or are Python callables, keeps it too.
    pub gil_with_arguments: u8,
    _pad: [u8; 6],
}

const _: () = assert!(core::mem::size_of::<Fields>() == 16);

/// The package's hooks (a dict, see `rffi/_native.py`): the borrowed value of `name`, or NULL
/// with a TypeError naming the missing key.
///
/// # Safety
/// GIL held; `hooks` a live dict.
unsafe fn hook(api: &Api, hooks: PyObj, name: &CStr) -> PyObj {
    // SAFETY: GIL held; a new interned key, released here; a borrowed lookup.
    unsafe {
        let key = (api.PyUnicode_InternFromString)(name.as_ptr());
        if key.is_null() {
            return key;
        }
        let v = (api.PyDict_GetItem)(hooks, key);
        (api.Py_DecRef)(key);
        if v.is_null() {
            let msg = format!("rffi: the native path's hooks lack {name:?}\0");
            (api.PyErr_SetString)(api.PyExc_TypeError, msg.as_ptr().cast());
        }
        v
    }
}

/// # Safety
/// GIL held; `bases` a tuple, `hooks` a dict as documented on `rffi_python_make_function_type`.
pub(super) unsafe fn make_function_type(
    api: &'static Api,
    rt: &'static RFFIHostApi,
    bases: PyObj,
    base_basicsize: i64,
    hooks_dict: PyObj,
) -> PyObj {
    let fail = |msg: &CStr| {
        // SAFETY: GIL held; static message.
        unsafe { (api.PyErr_SetString)(api.PyExc_TypeError, msg.as_ptr()) };
        std::ptr::null_mut()
    };
    if bases.is_null() || hooks_dict.is_null() {
        return fail(c"rffi: rffi_python_make_function_type needs bases and hooks");
    }
    if !(16..=1 << 20).contains(&base_basicsize) || base_basicsize % 8 != 0 {
        return fail(c"rffi: implausible base __basicsize__");
    }
    const NAMES: [&CStr; 10] = [
        c"fallback",
        c"take_raised",
        c"decode",
        c"table",
        c"resolve",
        c"decoders",
        c"decode_arg",
        c"write_owned",
        c"callback_failed",
        c"classes",
    ];
    let mut items = [std::ptr::null_mut(); NAMES.len()];
    for (item, name) in items.iter_mut().zip(NAMES) {
        // SAFETY: GIL held; the hooks are a dict per the contract (a lookup in anything else
        // fails with an error set).
        *item = unsafe { hook(api, hooks_dict, name) };
        if item.is_null() {
            return std::ptr::null_mut();
        }
    }
    // SAFETY: GIL held; `bases` is a tuple (checked by PyTuple_GetItem, which raises otherwise).
    let base_class = unsafe { (api.PyTuple_GetItem)(bases, 0) };
    // SAFETY: GIL held; a live type, or NULL with an error set.
    if base_class.is_null() || !unsafe { object_type::is_wrapper_type(api, base_class) } {
        // SAFETY: GIL held.
        unsafe { (api.PyErr_Clear)() };
        return fail(c"rffi: the Function base class does not use the native wrapper storage");
    }
    let base = base_basicsize as usize;
    // The member table (offsets from the instance start): leaked, as the type may refer to it
    // for its whole life on some versions; built once per type (normally once per process). The
    // handle and type index are the wrapper storage's members, inherited.
    let members: &'static mut [PyMemberDef; 4] = Box::leak(Box::new([
        PyMemberDef::new(c"__vectorcalloffset__", T_PYSSIZET, base, READONLY),
        PyMemberDef {
            doc: c"Whether a call releases the GIL while the native function runs (True unless \
                   the function is declared non-blocking; see rffi.get_global_func)."
                .as_ptr(),
            ..PyMemberDef::new(c"release_gil", T_BOOL, base + 8, 0)
        },
        PyMemberDef::new(c"_gil_with_arguments", T_BOOL, base + 9, 0),
        PyMemberDef::END,
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
    // SAFETY: GIL held; the hook items are borrowed, then kept with our own references, which
    // stay for the life of the process.
    unsafe {
        let keep = |o: PyObj| {
            (api.Py_IncRef)(o);
            o
        };
        let handle_name = (api.PyUnicode_InternFromString)(c"_handle".as_ptr());
        let tidx_name = (api.PyUnicode_InternFromString)(c"_tidx".as_ptr());
        let exchange_name = (api.PyUnicode_InternFromString)(c"__dlpack_c_exchange_api__".as_ptr());
        let dlpack_name = (api.PyUnicode_InternFromString)(c"__dlpack__".as_ptr());
        let (dlpack_version, dlpack_kwnames) = dlpack_call(api);
        let made = [
            handle_name,
            tidx_name,
            exchange_name,
            dlpack_name,
            dlpack_version,
            dlpack_kwnames,
        ];
        if made.iter().any(|o| o.is_null()) {
            (api.Py_DecRef)(ty);
            return std::ptr::null_mut();
        }
        (api.Py_IncRef)(ty);
        publish_hooks(Hooks {
            rt,
            func_type: ty,
            fallback: keep(items[0]),
            take_raised: keep(items[1]),
            decode: keep(items[2]),
            table: keep(items[3]),
            resolve: keep(items[4]),
            decoders: keep(items[5]),
            decode_arg: keep(items[6]),
            write_owned: keep(items[7]),
            callback_failed: keep(items[8]),
            classes: keep(items[9]),
            handle_name,
            tidx_name,
            exchange_name,
            dlpack_name,
            dlpack_version,
            dlpack_kwnames,
            fields: base,
        });
    }
    ty
}

/// `((1, 1), ("max_version",))`: the keyword value and names of the `__dlpack__` calls
/// (vectorcall form), or NULLs with an error set.
///
/// # Safety
/// GIL held.
unsafe fn dlpack_call(api: &Api) -> (PyObj, PyObj) {
    // SAFETY: GIL held; PyTuple_SetItem steals the item references; everything made is released
    // on failure.
    unsafe {
        let version = (api.PyTuple_New)(2);
        let names = (api.PyTuple_New)(1);
        let key = (api.PyUnicode_InternFromString)(c"max_version".as_ptr());
        let mut ok = !version.is_null() && !names.is_null() && !key.is_null();
        if ok {
            (api.PyTuple_SetItem)(names, 0, key);
            for k in 0..2 {
                let v = (api.PyLong_FromLongLong)(1);
                ok = ok && !v.is_null() && (api.PyTuple_SetItem)(version, k, v) == 0;
            }
        } else if !key.is_null() {
            (api.Py_DecRef)(key);
        }
        if !ok {
            for o in [version, names] {
                if !o.is_null() {
                    (api.Py_DecRef)(o);
                }
            }
            return (std::ptr::null_mut(), std::ptr::null_mut());
        }
        (version, names)
    }
}

#[inline(always)]
pub(super) fn fields<'a>(h: &Hooks, o: PyObj) -> &'a mut Fields {
    // SAFETY: callers pass instances of the Function type (or subclasses), whose native fields
    // start at `h.fields`.
    unsafe { &mut *o.cast::<u8>().add(h.fields).cast::<Fields>() }
}

/// `tp_new`: a zeroed instance with the vectorcall entry set and the GIL released by default
/// (the base class's `__init__` fills the rest).
unsafe extern "C" fn tp_new(ty: PyObj, _args: PyObj, _kwds: PyObj) -> PyObj {
    let r = crate::panics::catch(|| {
        let (Some(api), Some(h)) = (api(), hooks()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: GIL held (a type slot); `ty` is the Function type or a subclass.
        let o = unsafe { (api.PyType_GenericAlloc)(ty, 0) };
        if !o.is_null() {
            let f = fields(h, o);
            f.vectorcall = vectorcall;
            f.release_gil = 1;
            // SAFETY: an instance of a subclass of the wrapper storage (checked at make time).
            unsafe { object_type::fields(o) }.type_index = kRFFIFunction;
        }
        o
    });
    r.unwrap_or_else(|message| {
        if let Some(api) = api() {
            let text = crate::panics::describe("Function.__new__", &message);
            // SAFETY: GIL held (a type slot); a NUL-terminated message.
            unsafe { (api.PyErr_SetString)(api.PyExc_RuntimeError, text.as_ptr()) };
        }
        std::ptr::null_mut()
    })
}
