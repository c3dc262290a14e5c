//! `librffi_python_native.so`: the native call path of the `rffi` Python package, vectorcall
//! callables for rffi Functions built through CPython's stable ABI without linking libpython.
//!
//! It belongs to the package, not to the C ABI: `pip install ./ffi-python` builds it next to
//! `librffi.so`, and the package loads it *as a plugin of the runtime* (`rffi.load_module`), so
//! it reaches the one runtime of the process through the loader's `RFFIHostApi` table (see
//! [`runtime`]) and links neither libpython nor a runtime of its own.
//!
//! At import the package resolves the CPython entry points named by `rffi_python_symbol_names`
//! from `ctypes.pythonapi` and hands them over once with `rffi_python_init`; then
//! `rffi_python_make_object_storage` makes the storage base of every wrapper class (the object's
//! address and type index as machine words, released natively) and
//! `rffi_python_make_function_type` builds the package's `rffi.Function` class as a heap type
//! whose instances are called through vectorcall. A call converts the common argument kinds
//! (None, bool, int, float, str, bytes, runtime objects the package wraps) by exact type into
//! `RFFIAny` values on the stack, calls the function, and converts the result back: plain kinds
//! and str here, objects into new wrappers of their registered class. Every other kind, and every
//! argument it cannot convert, goes to Python callables the package registered, so the
//! conversion rules (and their error messages) stay in one place.
//!
//! Everything here runs with the GIL held (the entry points are called from the interpreter or
//! through `ctypes.PyDLL`), except the native call itself, which releases it unless the Function
//! keeps it (see `gil` and `call`), and the callbacks, which take it back (`gil`).
#![allow(clippy::missing_safety_doc, non_snake_case, non_upper_case_globals)]
// Plain `catch_unwind` at the entries (in `panics`): see the note there and at `panics`' use below.
#![allow(clippy::disallowed_methods)]

mod builtins;
mod call;
mod callback;
mod convert;
mod cpython;
mod function_type;
mod gil;
mod kinds;
mod object_type;
mod panics;
pub mod runtime;
mod tensors;

use cpython::*;
use rffi_core::abi::RFFIHostApi;
use std::ffi::{c_char, c_void};
// `panics::catch` (a plain `catch_unwind`) at every entry, not `rffi_core::error::catch_panic`:
// this library links no runtime of its own (errors are the host's, made through its table), and a
// panic here becomes a Python RuntimeError or a host error naming the entry, the panic's message
// and its site.
use panics::{catch, describe};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The Python objects a Function type calls back into (the package's `rffi/_native.py` hands
/// them over by name), and its field offsets.
pub(crate) struct Hooks {
    /// The runtime's entry points (the loader's table).
    pub rt: &'static RFFIHostApi,
    /// The type made by `rffi_python_make_function_type`.
    pub func_type: PyObj,
    /// `fallback(self, *args, **kwargs)`: the package's full call path.
    pub fallback: PyObj,
    /// `take_raised()`: the exception for this thread's raised Error.
    pub take_raised: PyObj,
    /// `decode(type_word, payload)`: a result value the native path does not convert; takes over
    /// an object result's reference.
    pub decode: PyObj,
    /// The conversion table (exact type -> kind, an int whose value is the native code), and
    /// `resolve(type)`: the kind of a type not in it yet.
    pub table: PyObj,
    pub resolve: PyObj,
    /// Results of an object type: `decoders` (type index -> the package's decoder, for types that
    /// become plain Python values) and `classes` (type index -> wrapper class); a class that
    /// does not define `__new__` is instantiated here, anything else goes to `decode`.
    pub decoders: PyObj,
    pub classes: PyObj,
    /// Callback Functions (`callback`): `decode_arg(type_word, payload)` makes a borrowed
    /// argument a Python value, `write_owned(value, result_address)` stores a result,
    /// `callback_failed(exc)` raises an exception as the thread's Error.
    pub decode_arg: PyObj,
    pub write_owned: PyObj,
    pub callback_failed: PyObj,
    /// Interned `"_handle"` and `"_tidx"` (read from duck-typed wrappers).
    pub handle_name: PyObj,
    pub tidx_name: PyObj,
    /// Interned `"__dlpack_c_exchange_api__"` and `"__dlpack__"`.
    pub exchange_name: PyObj,
    pub dlpack_name: PyObj,
    /// `(1, 1)` and `("max_version",)`: the keyword argument of a `__dlpack__` call.
    pub dlpack_version: PyObj,
    pub dlpack_kwnames: PyObj,
    /// Byte offset of the native fields in an instance (the base class's basic size).
    pub fields: usize,
}

// SAFETY: the hooks are only touched with the GIL held; the struct is immutable once published.
unsafe impl Sync for Hooks {}
// SAFETY: as above.
unsafe impl Send for Hooks {}

static HOOKS: AtomicPtr<Hooks> = AtomicPtr::new(std::ptr::null_mut());

#[inline(always)]
pub(crate) fn hooks() -> Option<&'static Hooks> {
    let p = HOOKS.load(Ordering::Acquire);
    // SAFETY: a published Hooks is leaked, so it lives for the rest of the process.
    unsafe { p.as_ref() }
}

/// The CPython entry points the native path needs, as space-separated `kind:name` entries in the
/// order `rffi_python_init` expects them. `kind` is `f` (a function: its address), `o` (a static
/// object such as `_Py_NoneStruct`: its address) or `p` (a `PyObject*` variable such as
/// `PyExc_TypeError`: the pointer it holds). The string is static and NUL-terminated.
#[no_mangle]
pub extern "C" fn rffi_python_symbol_names() -> *const c_char {
    SYMBOL_NAMES.as_ptr().cast()
}

/// Hands the native path the CPython entry points: `table` holds `n` addresses in the order of
/// `rffi_python_symbol_names`, `object_basicsize` is `object.__basicsize__` of the running
/// interpreter (its object header size). Returns 0; -1 when the count is wrong, an entry is NULL
/// or the header size is implausible; -2 when the library was not loaded as a plugin of the
/// runtime (no host table). Nothing is stored and no error is raised on failure. Call it once per
/// process, from Python through `ctypes.PyDLL`; later calls keep the first table.
///
/// # Safety
/// `table` must be NULL or point to `n` readable pointers that are the named CPython entries of
/// the interpreter this process runs.
#[no_mangle]
pub unsafe extern "C" fn rffi_python_init(
    table: *const *const c_void,
    n: i32,
    object_basicsize: i64,
) -> i32 {
    if runtime::host().is_none() {
        return -2;
    }
    // SAFETY: the same contract, forwarded; `init` only reads the table.
    let ok = catch(|| unsafe { cpython::init(table, n, object_basicsize) });
    if matches!(ok, Ok(true)) {
        0
    } else {
        -1
    }
}

/// The storage base of the package's `rffi.Object` (see `object_type`): a new reference to the
/// type (made once per process), or NULL with a Python exception set. Instances hold the members
/// `_h` and `_ti` and their read-only views `_handle` and `_tidx`, and release their reference
/// when they die (or on `__del__()`). Requires a successful `rffi_python_init`; call through
/// `ctypes.PyDLL` (the GIL held) with `restype = ctypes.py_object`.
///
/// # Safety
/// The GIL must be held.
#[no_mangle]
pub unsafe extern "C" fn rffi_python_make_object_storage() -> *mut c_void {
    let Some(api) = cpython::api() else {
        return std::ptr::null_mut();
    };
    // SAFETY: GIL held (contract); the table is initialized.
    catch(|| unsafe { object_type::make(api) })
        .unwrap_or_else(|message| {
            // SAFETY: GIL held (contract).
            unsafe { raise_panic(api, "rffi_python_make_object_storage", &message) }
        })
        .cast()
}

/// Builds the `rffi.Function` class of the native path and returns a new reference to it, or
/// NULL with a Python exception set. `bases` is a tuple holding the package's Python Function
/// class (a subclass of the wrapper storage, see `rffi_python_make_object_storage`; its methods,
/// `__init__` and `__repr__` are inherited), `base_basicsize` that class's `__basicsize__` (a
/// multiple of 8; the native fields follow it), and `hooks` a dict of the package's functions
/// and facts by name (`fallback`, `take_raised`, `decode`, `table`, `resolve`, `decoders`,
/// `classes`, `decode_arg`, `write_owned`, `callback_failed`; see `Hooks` in this crate and the
/// package's `rffi/_native.py`). Instances add the members `release_gil`, `_gil_with_arguments`
/// and `__vectorcalloffset__`.
/// Requires a successful `rffi_python_init`; call through `ctypes.PyDLL` (the GIL held) with
/// `restype = ctypes.py_object`.
///
/// # Safety
/// The arguments must be live Python objects of the kinds described, and the GIL must be held.
#[no_mangle]
pub unsafe extern "C" fn rffi_python_make_function_type(
    bases: *mut c_void,
    base_basicsize: i64,
    hooks: *mut c_void,
) -> *mut c_void {
    let (Some(api), Some(rt)) = (cpython::api(), runtime::host()) else {
        return std::ptr::null_mut(); // no table: no way to raise either; ctypes reports NULL
    };
    catch(|| {
        // SAFETY: the same contract, forwarded.
        unsafe {
            function_type::make_function_type(api, rt, bases.cast(), base_basicsize, hooks.cast())
        }
    })
    .unwrap_or_else(|message| {
        // SAFETY: the GIL is held (contract).
        unsafe { raise_panic(api, "rffi_python_make_function_type", &message) }
    })
    .cast()
}

/// A runtime Function that calls the Python callable `callable` (holding a reference to it until
/// the Function is released): returns the new Function handle, or 0 with an Error raised on
/// this thread. Calls take the GIL themselves, from any thread. Call through `ctypes.PyDLL` (the
/// GIL held) after `rffi_python_make_function_type`.
///
/// # Safety
/// `callable` must be a live Python object and the GIL must be held.
#[no_mangle]
pub unsafe extern "C" fn rffi_python_function_from_callable(callable: *mut c_void) -> i64 {
    let refuse = |why: &std::ffi::CStr| {
        if let Some(rt) = runtime::host() {
            // SAFETY: NUL-terminated strings.
            unsafe { (rt.error_set_raised_from_cstr)(c"RuntimeError".as_ptr(), why.as_ptr()) };
        }
        0
    };
    let unavailable = c"rffi: the Python native path cannot make a callback Function";
    let (Some(api), Some(h)) = (cpython::api(), hooks()) else {
        return refuse(unavailable);
    };
    if callable.is_null() {
        return refuse(unavailable);
    }
    // SAFETY: the same contract, forwarded. NULL (0) only when creation raised an Error.
    catch(|| unsafe { callback::function_from_callable(api, h, callable.cast()) as i64 })
        .unwrap_or_else(|message| refuse(&describe("rffi_python_function_from_callable", &message)))
}

/// The native builtin `name` (`dec_ref`, `from_dlpack`; see `builtins.rs`) as a new Python
/// function bound to `context` (what the builtin needs from the package; see `builtins.rs`), or
/// NULL with a Python exception set. Call through `ctypes.PyDLL` (the GIL held) with
/// `restype = ctypes.py_object`, after `rffi_python_init`.
///
/// # Safety
/// `name` must be a NUL-terminated string, `context` a live Python object, and the GIL must be
/// held.
#[no_mangle]
pub unsafe extern "C" fn rffi_python_builtin(
    name: *const c_char,
    context: *mut c_void,
) -> *mut c_void {
    let Some(api) = cpython::api() else {
        return std::ptr::null_mut();
    };
    if name.is_null() || context.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a NUL-terminated string and a live object per the contract; GIL held.
    catch(|| unsafe { builtins::make(api, std::ffi::CStr::from_ptr(name), context.cast()) })
        .unwrap_or_else(|message| {
            // SAFETY: GIL held (contract).
            unsafe { raise_panic(api, "rffi_python_builtin", &message) }
        })
        .cast()
}

/// Raises the RuntimeError for a panic in `entry` and returns NULL (what the entry returns).
///
/// # Safety
/// The GIL must be held.
unsafe fn raise_panic(api: &cpython::Api, entry: &str, message: &str) -> PyObj {
    let text = describe(entry, message);
    // SAFETY: GIL held (contract); a NUL-terminated message.
    unsafe { (api.PyErr_SetString)(api.PyExc_RuntimeError, text.as_ptr()) };
    std::ptr::null_mut()
}

pub(crate) fn publish_hooks(h: Hooks) {
    // A previous Hooks (a re-import of the package) stays leaked: instances of its type may live.
    HOOKS.store(Box::into_raw(Box::new(h)), Ordering::Release);
}
