//! Builtin functions for the package's own hot paths, made with `PyCFunction_NewEx` (no ctypes
//! call, no Python frame): releasing a reference (`dec_ref`, for the decoders),
//! `rffi.from_dlpack` itself (`from_dlpack`, which imports the producer and builds the Tensor
//! wrapper in one native call), and `forget_kinds` (the conversion table changed a kind).

use super::call::{forward, raise_runtime_error};
use super::cpython::*;
use super::{hooks, object_type, tensors};
use rffi_core::abi::*;
use std::ffi::{c_void, CStr};

/// `dec_ref(handle)`: releases one reference to the object at `handle` (an int; 0 is ignored),
/// with the GIL held (a deleter that needs it, such as numpy's, then does not wait for it).
unsafe extern "C" fn dec_ref(_context: PyObj, arg: PyObj) -> PyObj {
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

/// `rffi.from_dlpack(obj, *, require_alignment=0, require_contiguous=False)`. Its context is the
/// tuple `(Tensor, python_from_dlpack)`: a Tensor is returned as it is, a producer the call path
/// imports natively (a DLPack exchange API, a host-memory `__dlpack__` whose rule the conversion
/// table knows) becomes a new Tensor wrapper here, and everything else (keywords, capsules, new
/// types, every error to word) goes to `python_from_dlpack` with the same arguments.
unsafe extern "C" fn from_dlpack(
    context: PyObj,
    args: *const PyObj,
    nargsf: usize,
    kwnames: PyObj,
) -> PyObj {
    guarded(|api| {
        // SAFETY: GIL held; `nargs` borrowed arguments and the keyword names (the fastcall
        // contract); the context is the tuple the package bound (`make`).
        unsafe {
            let nargs = nargsf & !PY_VECTORCALL_ARGUMENTS_OFFSET;
            let tensor_cls = (api.PyTuple_GetItem)(context, 0);
            let python = (api.PyTuple_GetItem)(context, 1);
            if tensor_cls.is_null() || python.is_null() {
                return std::ptr::null_mut();
            }
            let plain = nargs == 1 && (kwnames.is_null() || (api.PyTuple_Size)(kwnames) == 0);
            if let (true, Some(h)) = (plain, hooks()) {
                let obj = *args;
                let t = api.type_of(obj);
                if t == tensor_cls || (api.PyType_IsSubtype)(t, tensor_cls) != 0 {
                    (api.Py_IncRef)(obj);
                    return obj;
                }
                match tensors::from_dlpack(api, h, obj) {
                    0 if !(api.PyErr_Occurred)().is_null() => return std::ptr::null_mut(),
                    0 => {}
                    -1 => return raise_runtime_error(api, h),
                    handle => return object_type::wrap(api, h.rt, tensor_cls, handle, kRFFITensor),
                }
            }
            forward(api, python, None, args, nargs, kwnames)
        }
    })
}

/// `testing_panic(message)`: panics with the text of `message` inside a builtin (what a bug here
/// would do), for the package's tests of the RuntimeError that results.
unsafe extern "C" fn testing_panic(_context: PyObj, arg: PyObj) -> PyObj {
    guarded(|api| {
        // SAFETY: GIL held (a builtin's call); `arg` is a live object.
        let text = unsafe { (api.PyUnicode_AsUTF8AndSize)(arg, std::ptr::null_mut()) };
        if text.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: a NUL-terminated UTF-8 string owned by `arg`, alive during the call.
        panic!("{}", unsafe { CStr::from_ptr(text) }.to_string_lossy())
    })
}

/// `forget_kinds()`: empties the call path's cache of the conversion table's kinds (see
/// `convert`); the package calls it whenever it changes the kind of a type.
unsafe extern "C" fn forget_kinds(_context: PyObj, _unused: PyObj) -> PyObj {
    guarded(|api| {
        // SAFETY: GIL held (a builtin's call).
        unsafe {
            super::kinds::forget_kinds(api);
            api.none()
        }
    })
}

/// Runs a builtin's body with the table, turning a panic into a RuntimeError.
fn guarded(body: impl FnOnce(&'static Api) -> PyObj) -> PyObj {
    let Some(api) = api() else {
        return std::ptr::null_mut();
    };
    crate::panics::catch(|| body(api)).unwrap_or_else(|message| {
        let text = crate::panics::describe("a native builtin", &message);
        // SAFETY: GIL held (a builtin's call); a NUL-terminated message.
        unsafe { (api.PyErr_SetString)(api.PyExc_RuntimeError, text.as_ptr()) };
        std::ptr::null_mut()
    })
}

/// Makes the builtin `name` bound to `context` (a new reference), or NULL with a Python error
/// set. `from_dlpack` needs the tuple `(Tensor, python_from_dlpack)`; `dec_ref` ignores it.
///
/// # Safety
/// GIL held; the table is initialized; `context` a live object.
pub(super) unsafe fn make(api: &Api, name: &CStr, context: PyObj) -> PyObj {
    let (meth, flags, doc): (*mut c_void, _, &CStr) = match name.to_bytes() {
        b"dec_ref" => (
            dec_ref as *mut c_void,
            METH_O,
            c"dec_ref(handle, /)\n--\n\nReleases one reference to the object at `handle`.",
        ),
        b"forget_kinds" => (
            forget_kinds as *mut c_void,
            METH_NOARGS,
            c"forget_kinds()\n--\n\nEmpties the native call path's cache of conversion kinds.",
        ),
        b"testing_panic" => (
            testing_panic as *mut c_void,
            METH_O,
            c"testing_panic(message, /)\n--\n\nPanics with `message`, for the tests of how this \
              library's panics become RuntimeErrors.",
        ),
        b"from_dlpack" => (
            from_dlpack as *mut c_void,
            METH_FASTCALL | METH_KEYWORDS,
            c"from_dlpack(obj, *, require_alignment=0, require_contiguous=False)\n--\n\n\
              A Tensor sharing the memory of `obj`: anything with `__dlpack__` (numpy, torch, \
              cupy, jax arrays, rffi Tensors) or a DLPack capsule. No copy is made.",
        ),
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
        doc: doc.as_ptr(),
    }));
    // SAFETY: GIL held; a complete, leaked definition; the function keeps its own reference to
    // `context`.
    unsafe { (api.PyCFunction_NewEx)(def, context, std::ptr::null_mut()) }
}
