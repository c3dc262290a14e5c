//! The CPython stable-ABI entry points the fast path uses, handed over by the Python package at
//! import (`rffi_python_init`) instead of linked: this library never links libpython.
//!
//! `PyObject` stays opaque. The few C layouts the fast path fills (`PyType_Spec`, `PyType_Slot`,
//! `PyMemberDef`) and the flag/slot numbers are part of the stable ABI and declared here by hand.
#![allow(non_camel_case_types, non_upper_case_globals)]

use std::ffi::{c_char, c_double, c_int, c_long, c_longlong, c_uint, c_void};
use std::sync::OnceLock;

/// An opaque CPython object.
#[repr(C)]
pub(crate) struct PyObject {
    _private: [u8; 0],
}

pub(crate) type Py_ssize_t = isize;

#[repr(C)]
pub(crate) struct PyType_Slot {
    pub slot: c_int,
    pub pfunc: *mut c_void,
}

#[repr(C)]
pub(crate) struct PyType_Spec {
    pub name: *const c_char,
    pub basicsize: c_int,
    pub itemsize: c_int,
    pub flags: c_uint,
    pub slots: *mut PyType_Slot,
}

#[repr(C)]
pub(crate) struct PyMemberDef {
    pub name: *const c_char,
    pub type_code: c_int,
    pub offset: Py_ssize_t,
    pub flags: c_int,
    pub doc: *const c_char,
}

impl PyMemberDef {
    /// A member `name` of `type_code` at `offset` in the instance.
    pub(crate) const fn new(
        name: &'static std::ffi::CStr,
        type_code: c_int,
        offset: usize,
        flags: c_int,
    ) -> PyMemberDef {
        PyMemberDef {
            name: name.as_ptr(),
            type_code,
            offset: offset as Py_ssize_t,
            flags,
            doc: std::ptr::null(),
        }
    }

    /// The NULL entry that ends a member table.
    pub(crate) const END: PyMemberDef = PyMemberDef {
        name: std::ptr::null(),
        type_code: 0,
        offset: 0,
        flags: 0,
        doc: std::ptr::null(),
    };
}

#[repr(C)]
pub(crate) struct PyMethodDef {
    pub name: *const c_char,
    pub meth: *mut c_void,
    pub flags: c_int,
    pub doc: *const c_char,
}

pub(crate) const METH_NOARGS: c_int = 0x0004;
pub(crate) const METH_O: c_int = 0x0008;
pub(crate) const METH_FASTCALL: c_int = 0x0080;
pub(crate) const METH_KEYWORDS: c_int = 0x0002;
pub(crate) const Py_tp_call: c_int = 50;
pub(crate) const Py_tp_dealloc: c_int = 52;
pub(crate) const Py_tp_doc: c_int = 56;
pub(crate) const Py_tp_new: c_int = 65;
pub(crate) const Py_tp_members: c_int = 72;
pub(crate) const Py_tp_free: c_int = 74;
pub(crate) const Py_tp_finalize: c_int = 80;
pub(crate) const T_INT: c_int = 1;
pub(crate) const T_BOOL: c_int = 14;
pub(crate) const T_LONGLONG: c_int = 17;
pub(crate) const T_PYSSIZET: c_int = 19;
pub(crate) const READONLY: c_int = 1;
pub(crate) const Py_TPFLAGS_BASETYPE: c_uint = 1 << 10;
pub(crate) const Py_TPFLAGS_HAVE_VECTORCALL: c_uint = 1 << 11;
pub(crate) const PY_VECTORCALL_ARGUMENTS_OFFSET: usize = 1 << (usize::BITS - 1);

pub(crate) type PyObj = *mut PyObject;
pub(crate) type VectorcallFunc = unsafe extern "C" fn(PyObj, *const PyObj, usize, PyObj) -> PyObj;

/// Declares the table: each entry is `kind name: type`, kind `f` (a function), `o` (a static
/// object: its address) or `p` (a `PyObject*` variable: its value). The names, in order, are what
/// `rffi_python_symbol_names` gives the package to resolve.
macro_rules! table {
    ($($kind:ident $name:ident : $ty:ty,)*) => {
        /// The resolved entry points, in the order of `SYMBOL_NAMES`.
        #[repr(C)]
        pub(crate) struct Api {
            $(pub $name: $ty,)*
            /// Byte offset of `ob_type` in an object (`object.__basicsize__ - 8`).
            pub ob_type_offset: usize,
        }
        pub(crate) const SYMBOL_COUNT: usize = [$(stringify!($name)),*].len();
        /// Space-separated `kind:name` entries, NUL-terminated.
        pub(crate) const SYMBOL_NAMES: &str =
            concat!($(stringify!($kind), ":", stringify!($name), " ",)* "\0");
    };
}

table! {
    f Py_IncRef: unsafe extern "C" fn(PyObj),
    f Py_DecRef: unsafe extern "C" fn(PyObj),
    f PyErr_Occurred: unsafe extern "C" fn() -> PyObj,
    f PyErr_Clear: unsafe extern "C" fn(),
    f PyErr_SetString: unsafe extern "C" fn(PyObj, *const c_char),
    f PyErr_SetObject: unsafe extern "C" fn(PyObj, PyObj),
    f PyLong_AsLongLongAndOverflow: unsafe extern "C" fn(PyObj, *mut c_int) -> c_longlong,
    f PyLong_AsLongLong: unsafe extern "C" fn(PyObj) -> c_longlong,
    f PyLong_FromLongLong: unsafe extern "C" fn(c_longlong) -> PyObj,
    f PyFloat_AsDouble: unsafe extern "C" fn(PyObj) -> c_double,
    f PyFloat_FromDouble: unsafe extern "C" fn(c_double) -> PyObj,
    f PyBool_FromLong: unsafe extern "C" fn(c_long) -> PyObj,
    f PyUnicode_AsUTF8AndSize: unsafe extern "C" fn(PyObj, *mut Py_ssize_t) -> *const c_char,
    f PyUnicode_DecodeUTF8: unsafe extern "C" fn(*const c_char, Py_ssize_t, *const c_char) -> PyObj,
    f PyUnicode_InternFromString: unsafe extern "C" fn(*const c_char) -> PyObj,
    f PyBytes_AsString: unsafe extern "C" fn(PyObj) -> *mut c_char,
    f PyBytes_Size: unsafe extern "C" fn(PyObj) -> Py_ssize_t,
    f PyTuple_New: unsafe extern "C" fn(Py_ssize_t) -> PyObj,
    f PyTuple_SetItem: unsafe extern "C" fn(PyObj, Py_ssize_t, PyObj) -> c_int,
    f PyTuple_Size: unsafe extern "C" fn(PyObj) -> Py_ssize_t,
    f PyTuple_GetItem: unsafe extern "C" fn(PyObj, Py_ssize_t) -> PyObj,
    f PyDict_New: unsafe extern "C" fn() -> PyObj,
    f PyDict_SetItem: unsafe extern "C" fn(PyObj, PyObj, PyObj) -> c_int,
    f PyDict_GetItem: unsafe extern "C" fn(PyObj, PyObj) -> PyObj,
    // Without PyDict_GetItem's saving and restoring of the error state (half its cost): for keys
    // whose hash and comparison cannot fail (types, small ints).
    f PyDict_GetItemWithError: unsafe extern "C" fn(PyObj, PyObj) -> PyObj,
    f PyObject_Call: unsafe extern "C" fn(PyObj, PyObj, PyObj) -> PyObj,
    f PyObject_CallObject: unsafe extern "C" fn(PyObj, PyObj) -> PyObj,
    f PyObject_GetAttr: unsafe extern "C" fn(PyObj, PyObj) -> PyObj,
    f PyObject_Type: unsafe extern "C" fn(PyObj) -> PyObj,
    f PyType_FromSpecWithBases: unsafe extern "C" fn(*mut PyType_Spec, PyObj) -> PyObj,
    f PyType_GenericAlloc: unsafe extern "C" fn(PyObj, Py_ssize_t) -> PyObj,
    f PyType_GenericNew: unsafe extern "C" fn(PyObj, PyObj, PyObj) -> PyObj,
    f PyType_GetSlot: unsafe extern "C" fn(PyObj, c_int) -> *mut c_void,
    f PyType_IsSubtype: unsafe extern "C" fn(PyObj, PyObj) -> c_int,
    f PyVectorcall_Call: unsafe extern "C" fn(PyObj, PyObj, PyObj) -> PyObj,
    f PyObject_VectorcallMethod: unsafe extern "C" fn(PyObj, *const PyObj, usize, PyObj) -> PyObj,
    f PyObject_VectorcallDict: unsafe extern "C" fn(PyObj, *const PyObj, usize, PyObj) -> PyObj,
    f PyEval_SaveThread: unsafe extern "C" fn() -> *mut c_void,
    f PyEval_RestoreThread: unsafe extern "C" fn(*mut c_void),
    // `_PyThreadState_UncheckedGet` before 3.13 (the package resolves the older name).
    f PyThreadState_GetUnchecked: unsafe extern "C" fn() -> *mut c_void,
    f PyCapsule_IsValid: unsafe extern "C" fn(PyObj, *const c_char) -> c_int,
    f PyCapsule_GetPointer: unsafe extern "C" fn(PyObj, *const c_char) -> *mut c_void,
    f PyCapsule_SetName: unsafe extern "C" fn(PyObj, *const c_char) -> c_int,
    f PyList_GetItem: unsafe extern "C" fn(PyObj, Py_ssize_t) -> PyObj,
    f PyGILState_Ensure: unsafe extern "C" fn() -> c_int,
    f PyGILState_GetThisThreadState: unsafe extern "C" fn() -> *mut c_void,
    f PyGILState_Release: unsafe extern "C" fn(c_int),
    f PyErr_Fetch: unsafe extern "C" fn(*mut PyObj, *mut PyObj, *mut PyObj),
    f PyErr_Restore: unsafe extern "C" fn(PyObj, PyObj, PyObj),
    f PyErr_NormalizeException: unsafe extern "C" fn(*mut PyObj, *mut PyObj, *mut PyObj),
    f PyException_SetTraceback: unsafe extern "C" fn(PyObj, PyObj) -> c_int,
    f Py_IsInitialized: unsafe extern "C" fn() -> c_int,
    f Py_GetRecursionLimit: unsafe extern "C" fn() -> c_int,
    f PyCFunction_NewEx: unsafe extern "C" fn(*mut PyMethodDef, PyObj, PyObj) -> PyObj,
    f Py_SetRecursionLimit: unsafe extern "C" fn(c_int),
    o _Py_NoneStruct: PyObj,
    o _Py_TrueStruct: PyObj,
    o _Py_FalseStruct: PyObj,
    o PyLong_Type: PyObj,
    o PyFloat_Type: PyObj,
    o PyUnicode_Type: PyObj,
    o PyBytes_Type: PyObj,
    p PyExc_TypeError: PyObj,
    p PyExc_RuntimeError: PyObj,
}

const _: () = {
    // Every entry is one pointer; `Api` is the table followed by `ob_type_offset`.
    assert!(core::mem::size_of::<Api>() == (SYMBOL_COUNT + 1) * core::mem::size_of::<usize>());
};

// SAFETY: the table holds addresses of process-wide CPython functions and objects; it is
// immutable once stored and the objects are only used with the GIL held.
unsafe impl Sync for Api {}
// SAFETY: as above.
unsafe impl Send for Api {}

static API: OnceLock<Api> = OnceLock::new();

/// The table, once `rffi_python_init` accepted one.
#[inline]
pub(crate) fn api() -> Option<&'static Api> {
    API.get()
}

/// Stores the table: `table` holds `n` non-NULL addresses in `SYMBOL_NAMES` order. Returns false
/// (storing nothing) on a wrong count, a NULL entry or an implausible header size. A second
/// successful call keeps the first table (the addresses cannot differ within one process).
///
/// # Safety
/// `table` must be NULL or point to `n` readable pointers that are the named CPython entries.
pub(crate) unsafe fn init(table: *const *const c_void, n: i32, object_basicsize: i64) -> bool {
    if table.is_null() || n < 0 || n as usize != SYMBOL_COUNT {
        return false;
    }
    if !(16..=256).contains(&object_basicsize) || object_basicsize % 8 != 0 {
        return false;
    }
    // SAFETY: `n` readable pointers per the contract.
    let entries = unsafe { std::slice::from_raw_parts(table, SYMBOL_COUNT) };
    if entries.iter().any(|p| p.is_null()) {
        return false;
    }
    let mut words: Vec<usize> = entries.iter().map(|p| *p as usize).collect();
    words.push(object_basicsize as usize - 8);
    // SAFETY: `Api` is `repr(C)`, one pointer-sized field per entry in table order followed by
    // `ob_type_offset` (checked by the size assertion above); every function-pointer entry is
    // non-NULL and, per the contract, the address of the CPython function of that signature.
    let api = unsafe { std::ptr::read(words.as_ptr().cast::<Api>()) };
    let _ = API.set(api);
    true
}

impl Api {
    /// `Py_TYPE(o)`, read at the offset the running interpreter reported.
    ///
    /// # Safety
    /// `o` must be a live object.
    #[inline(always)]
    pub(crate) unsafe fn type_of(&self, o: PyObj) -> PyObj {
        // SAFETY: every object starts with its header; `ob_type` is its last word.
        unsafe { *o.cast::<u8>().add(self.ob_type_offset).cast::<PyObj>() }
    }

    /// Runs `f` with the interpreter's recursion limit raised by a few frames: the package's
    /// error hooks (turning an exception into an Error and back) must run even when the failure
    /// being reported is a RecursionError at the limit, or that exception would be replaced by
    /// the hook's own failure.
    ///
    /// # Safety
    /// GIL held.
    pub(crate) unsafe fn with_headroom<R>(&self, f: impl FnOnce() -> R) -> R {
        const HEADROOM: c_int = 50;
        // SAFETY: GIL held; stable-ABI calls that only adjust the interpreter's limit.
        let limit = unsafe { (self.Py_GetRecursionLimit)() };
        // SAFETY: as above.
        unsafe { (self.Py_SetRecursionLimit)(limit.saturating_add(HEADROOM)) };
        let r = f();
        // SAFETY: as above; the limit the interpreter had.
        unsafe { (self.Py_SetRecursionLimit)(limit) };
        r
    }

    /// A new reference to `None`.
    #[inline(always)]
    pub(crate) fn none(&self) -> PyObj {
        // SAFETY: `_Py_NoneStruct` is the immortal-or-refcounted None singleton.
        unsafe { (self.Py_IncRef)(self._Py_NoneStruct) };
        self._Py_NoneStruct
    }
}
