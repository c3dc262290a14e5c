//! Builtin functions for the package's own hot paths, made with `PyCFunction_NewEx` (no ctypes
//! call, no Python frame): releasing a reference (`dec_ref`, for the decoders), `rffi.from_dlpack`
//! (`from_dlpack`, which builds the Tensor wrapper itself), and `Object.__del__` (`release`, a
//! method descriptor made with `PyDescr_NewMethod`).

use super::call::raise_runtime_error;
use super::cpython::*;
use super::{hooks, tensors};
use rffi_core::abi::*;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `dec_ref(handle)`: releases one reference to the object at `handle` (an int; 0 is ignored),
/// with the GIL held (a deleter that needs it, such as numpy's, then does not wait for it).
unsafe extern "C" fn dec_ref(_module: PyObj, arg: PyObj) -> PyObj {
    guarded(|api| {
        // SAFETY: GIL held (a builtin's call); `arg` is a live object.
        unsafe {
            let h = (api.PyLong_AsLongLong)(arg);
            if h == -1 && !(api.PyErr_Occurred)().is_null() {
                return std::ptr::null_mut();
            }
            if h != 0 {
                let rt = super::runtime::host().expect("initialized before any builtin is made");
                (rt.object_dec_ref)(h as usize as RFFIObjectHandle);
            }
            api.none()
        }
    })
}

/// `from_dlpack(obj, cls)`: `obj` imported natively as a Tensor and wrapped in a new instance of
/// `cls` (a subclass of the package's Object), or None when the package's Python code must do it.
unsafe extern "C" fn from_dlpack(_module: PyObj, args: *const PyObj, nargs: isize) -> PyObj {
    guarded(|api| {
        let Some(h) = hooks() else {
            return api.none();
        };
        // SAFETY: GIL held; `nargs` borrowed arguments (the fastcall contract).
        unsafe {
            if nargs != 2 {
                (api.PyErr_SetString)(
                    api.PyExc_TypeError,
                    c"from_dlpack(obj, cls) takes 2 arguments".as_ptr(),
                );
                return std::ptr::null_mut();
            }
            let (obj, cls) = (*args, *args.add(1));
            if (api.PyType_IsSubtype)(api.type_of(cls), api.type_of(h.object_type)) == 0
                || (api.PyType_IsSubtype)(cls, h.object_type) == 0
            {
                (api.PyErr_SetString)(
                    api.PyExc_TypeError,
                    c"from_dlpack: cls must be a subclass of rffi.Object".as_ptr(),
                );
                return std::ptr::null_mut();
            }
            match tensors::from_dlpack(api, h, obj) {
                0 if !(api.PyErr_Occurred)().is_null() => std::ptr::null_mut(),
                0 => api.none(),
                -1 => raise_runtime_error(api, h),
                handle => wrap(api, h, cls, handle, kRFFITensor),
            }
        }
    })
}

/// A new `cls` instance taking over the reference `handle` (of type `type_index`), its `_h` and
/// `_ti` slots written in place; NULL with an error set (the reference released) on failure.
///
/// # Safety
/// GIL held; `cls` a subclass of the package's Object class.
unsafe fn wrap(api: &Api, h: &super::Hooks, cls: PyObj, handle: i64, type_index: i32) -> PyObj {
    // SAFETY: GIL held; a fresh instance's slots are NULL, and each takes the new reference made
    // for it (what assigning the attribute does).
    unsafe {
        let o = (api.PyType_GenericAlloc)(cls, 0);
        let hv = (api.PyLong_FromLongLong)(handle);
        let tv = (api.PyLong_FromLongLong)(type_index as i64);
        if o.is_null() || hv.is_null() || tv.is_null() {
            for x in [o, hv, tv] {
                if !x.is_null() {
                    (api.Py_DecRef)(x);
                }
            }
            (h.rt.object_dec_ref)(handle as usize as RFFIObjectHandle);
            return std::ptr::null_mut();
        }
        let base = o.cast::<u8>();
        *base.add(h.handle_slot).cast::<PyObj>() = hv;
        *base.add(h.tidx_slot).cast::<PyObj>() = tv;
        o
    }
}

/// `Object.__del__`: releases the wrapper's reference once (its handle becomes 0), with the GIL
/// held. Function instances of the native type keep the handle in their native fields.
unsafe extern "C" fn release(obj: PyObj, _unused: PyObj) -> PyObj {
    guarded(|api| {
        let Some(h) = hooks() else {
            return api.none();
        };
        // SAFETY: GIL held (a finalizer's call); `obj` is an instance of the package's Object
        // class (the descriptor is only installed there), whose `_h` slot is at `handle_slot`.
        unsafe {
            let handle = if (api.PyType_IsSubtype)(api.type_of(obj), h.func_type) != 0 {
                let f = super::function_type::fields(h, obj);
                std::mem::replace(&mut f.handle, 0)
            } else {
                let slot = obj.cast::<u8>().add(h.handle_slot).cast::<PyObj>();
                let v = *slot;
                if v.is_null() {
                    return api.none();
                }
                let handle = (api.PyLong_AsLongLong)(v);
                if handle == -1 && !(api.PyErr_Occurred)().is_null() {
                    (api.PyErr_Clear)(); // not a handle: nothing to release
                    return api.none();
                }
                if handle != 0 {
                    let zero = (api.PyLong_FromLongLong)(0);
                    if zero.is_null() {
                        return std::ptr::null_mut();
                    }
                    *slot = zero;
                    (api.Py_DecRef)(v);
                }
                handle
            };
            if handle != 0 {
                (h.rt.object_dec_ref)(handle as usize as RFFIObjectHandle);
            }
            api.none()
        }
    })
}

/// `Object.__del__` for the class `cls` (a method descriptor, new reference), or NULL with an
/// error set.
///
/// # Safety
/// GIL held; `cls` the package's Object class.
pub(super) unsafe fn make_release(api: &Api, cls: PyObj) -> PyObj {
    let def = Box::leak(Box::new(PyMethodDef {
        name: c"__del__".as_ptr(),
        meth: release as *mut c_void,
        flags: METH_NOARGS,
        doc: c"Releases the wrapper's reference to its object (once).".as_ptr(),
    }));
    // SAFETY: GIL held; a complete, leaked definition; `cls` a type (contract).
    unsafe { (api.PyDescr_NewMethod)(cls, def) }
}

/// Runs a builtin's body with the table, turning a panic into a RuntimeError.
fn guarded(body: impl FnOnce(&'static Api) -> PyObj) -> PyObj {
    let Some(api) = api() else {
        return std::ptr::null_mut();
    };
    catch_unwind(AssertUnwindSafe(|| body(api))).unwrap_or_else(|_| {
        // SAFETY: GIL held (a builtin's call); static message.
        unsafe {
            (api.PyErr_SetString)(
                api.PyExc_RuntimeError,
                c"rffi: panic in a native builtin".as_ptr(),
            )
        };
        std::ptr::null_mut()
    })
}

/// Makes the builtin `name` (a new reference), or NULL with a Python error set.
///
/// # Safety
/// GIL held; the table is initialized.
pub(super) unsafe fn make(api: &Api, name: &CStr) -> PyObj {
    let (meth, flags): (*mut c_void, _) = match name.to_bytes() {
        b"dec_ref" => (dec_ref as *mut c_void, METH_O),
        b"from_dlpack" => (from_dlpack as *mut c_void, METH_FASTCALL),
        _ => {
            // SAFETY: GIL held; static message.
            unsafe {
                (api.PyErr_SetString)(
                    api.PyExc_RuntimeError,
                    c"rffi: no such native builtin".as_ptr(),
                )
            };
            return std::ptr::null_mut();
        }
    };
    // The definition must outlive the function object: leaked (a few per process).
    let def = Box::leak(Box::new(PyMethodDef {
        name: Box::leak(name.to_owned().into_boxed_c_str()).as_ptr(),
        meth,
        flags,
        doc: std::ptr::null::<c_char>(),
    }));
    // SAFETY: GIL held; a complete, leaked definition; no self, no module.
    unsafe { (api.PyCFunction_NewEx)(def, std::ptr::null_mut(), std::ptr::null_mut()) }
}
