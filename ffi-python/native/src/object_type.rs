//! The storage of every wrapper on the native path: the base type of the package's
//! `rffi.Object`, a heap type whose instances hold the object's address and type index as plain
//! machine words (no Python ints), release their reference when they die (a native finalizer,
//! also reachable as `__del__` for an early release), and are made and read from Rust without a
//! Python call (see [`wrap`] and [`fields`]).
//!
//! Every wrapper class (`Object`, `Tensor`, `Array`, `Function`, registered object classes) is a
//! Python subclass of this type, so they all keep the same two fields at the same offset.

use super::cpython::*;
use rffi_core::abi::*;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// The native fields of a wrapper, right after the object header.
#[repr(C)]
pub(crate) struct Fields {
    /// The object's address (one owned reference), or 0 once released.
    pub handle: i64,
    /// The object's type index (what a call passes next to the address).
    pub type_index: i32,
    _pad: u32,
}

const _: () = assert!(core::mem::size_of::<Fields>() == 16);

/// The type, once made (a reference kept for the life of the process), and the offset of
/// [`Fields`] in its instances (the interpreter's object header size).
static TYPE: AtomicPtr<PyObject> = AtomicPtr::new(std::ptr::null_mut());
static OFFSET: AtomicUsize = AtomicUsize::new(0);

/// The storage type, if made.
#[inline(always)]
pub(crate) fn storage_type() -> PyObj {
    TYPE.load(Ordering::Acquire)
}

/// The native fields of `o`.
///
/// # Safety
/// `o` must be an instance of the storage type (or of a subclass).
#[inline(always)]
pub(crate) unsafe fn fields<'a>(o: PyObj) -> &'a mut Fields {
    // SAFETY: instances of the type carry `Fields` right after the header (contract).
    unsafe {
        &mut *o
            .cast::<u8>()
            .add(OFFSET.load(Ordering::Relaxed))
            .cast::<Fields>()
    }
}

/// Whether `t` (a type) is the storage type or a subclass of it.
///
/// # Safety
/// GIL held; `t` a live type.
#[inline(always)]
pub(crate) unsafe fn is_wrapper_type(api: &Api, t: PyObj) -> bool {
    let base = storage_type();
    // SAFETY: GIL held; both are types.
    !base.is_null() && (t == base || unsafe { (api.PyType_IsSubtype)(t, base) } != 0)
}

/// Whether instances of `cls` (a wrapper class) are made by [`wrap`] as they would be by
/// `cls.__new__(cls)`: the class does not define `__new__` itself.
///
/// # Safety
/// GIL held; `cls` a live subclass of the storage type.
#[inline(always)]
pub(crate) unsafe fn wraps_natively(api: &Api, cls: PyObj) -> bool {
    // SAFETY: GIL held; heap types answer PyType_GetSlot.
    unsafe { (api.PyType_GetSlot)(cls, Py_tp_new) == api.PyType_GenericNew as *mut c_void }
}

/// A new `cls` instance taking over the reference `handle` (of type `type_index`); NULL with a
/// Python error set (the reference released) when allocation fails.
///
/// # Safety
/// GIL held; `cls` a subclass of the storage type; `handle` an owned reference.
pub(crate) unsafe fn wrap(
    api: &Api,
    rt: &RFFIHostApi,
    cls: PyObj,
    handle: i64,
    type_index: i32,
) -> PyObj {
    // SAFETY: GIL held; a fresh instance of a subclass of the storage type.
    unsafe {
        let o = (api.PyType_GenericAlloc)(cls, 0);
        if o.is_null() {
            (rt.object_dec_ref)(handle as usize as RFFIObjectHandle);
            return o;
        }
        let f = fields(o);
        f.handle = handle;
        f.type_index = type_index;
        o
    }
}

/// Releases the wrapper's reference once (the handle becomes 0), with the GIL held: a deleter
/// that needs it (numpy's, a Python callable's) does not wait for it.
///
/// # Safety
/// GIL held; `o` an instance of the storage type.
unsafe fn release(o: PyObj) {
    // SAFETY: per the contract; a reference this wrapper owned.
    unsafe {
        let handle = std::mem::replace(&mut fields(o).handle, 0);
        if handle != 0 {
            if let Some(rt) = super::runtime::host() {
                // The interpreter frees wrappers while an exception propagates; a deleter that
                // calls into Python (an opaque object's, numpy's) must not run with it set (a
                // ctypes call there fails on it, leaking the object). Kept aside, then put back:
                // a deallocator leaves the exception state as it found it.
                let api = api();
                let mut saved = [std::ptr::null_mut(); 3];
                if let Some(api) = api {
                    (api.PyErr_Fetch)(&mut saved[0], &mut saved[1], &mut saved[2]);
                }
                (rt.object_dec_ref)(handle as usize as RFFIObjectHandle);
                if let Some(api) = api {
                    (api.PyErr_Restore)(saved[0], saved[1], saved[2]);
                }
            }
        }
    }
}

/// `tp_finalize` (and `__del__`, for an early release): releases the reference.
unsafe extern "C" fn finalize(o: PyObj) {
    // SAFETY: the interpreter calls it with the GIL held on an instance of the type.
    let _ = crate::panics::catch(|| unsafe { release(o) });
}

/// `tp_dealloc`: releases the reference if the finalizer did not, frees the instance with its
/// class's `tp_free` and drops the instance's reference to its (heap) class, as every heap
/// base type's deallocator must.
unsafe extern "C" fn dealloc(o: PyObj) {
    let _ = crate::panics::catch(|| {
        let Some(api) = api() else { return };
        // SAFETY: the interpreter calls it with the GIL held on an instance that is going away.
        unsafe {
            release(o);
            let ty = api.type_of(o);
            let free = (api.PyType_GetSlot)(ty, Py_tp_free);
            if !free.is_null() {
                let free: unsafe extern "C" fn(*mut c_void) = std::mem::transmute(free);
                free(o.cast());
            }
            (api.Py_DecRef)(ty);
        }
    });
}

/// Makes the storage type (once per process; later calls return it again): a new reference, or
/// NULL with a Python error set.
///
/// # Safety
/// GIL held; the CPython table is initialized.
pub(crate) unsafe fn make(api: &'static Api) -> PyObj {
    let made = storage_type();
    if !made.is_null() {
        // SAFETY: GIL held; the type is kept alive by the static's reference.
        unsafe { (api.Py_IncRef)(made) };
        return made;
    }
    let header = api.ob_type_offset + 8;
    // `_h`/`_ti` are the package's own names for the fields; `_handle`/`_tidx`, what users read,
    // are read-only (a replaced handle would be released or passed without a reference). The
    // table is leaked: the type refers to it for its whole life.
    let members: &'static mut [PyMemberDef; 5] = Box::leak(Box::new([
        PyMemberDef::new(c"_h", T_LONGLONG, header, 0),
        PyMemberDef::new(c"_ti", T_INT, header + 8, 0),
        PyMemberDef::new(c"_handle", T_LONGLONG, header, READONLY),
        PyMemberDef::new(c"_tidx", T_INT, header + 8, READONLY),
        PyMemberDef::END,
    ]));
    let slot = |slot: c_int, pfunc: *mut c_void| PyType_Slot { slot, pfunc };
    let mut slots = [
        slot(Py_tp_new, api.PyType_GenericNew as *mut c_void),
        slot(Py_tp_dealloc, dealloc as *mut c_void),
        slot(Py_tp_finalize, finalize as *mut c_void),
        slot(Py_tp_members, members.as_mut_ptr().cast()),
        slot(
            Py_tp_doc,
            c"The native storage of an rffi wrapper: the object's address and type index.".as_ptr()
                as *mut c_void,
        ),
        slot(0, std::ptr::null_mut()),
    ];
    let mut spec = PyType_Spec {
        name: c"rffi.ObjectStorage".as_ptr(),
        basicsize: (header + core::mem::size_of::<Fields>()) as c_int,
        itemsize: 0,
        flags: Py_TPFLAGS_BASETYPE,
        slots: slots.as_mut_ptr(),
    };
    // SAFETY: GIL held; a complete spec whose arrays outlive the call.
    let ty = unsafe { (api.PyType_FromSpecWithBases)(&mut spec, std::ptr::null_mut()) };
    if !ty.is_null() {
        OFFSET.store(header, Ordering::Relaxed);
        // SAFETY: GIL held; the static keeps its own reference for the life of the process.
        unsafe { (api.Py_IncRef)(ty) };
        TYPE.store(ty, Ordering::Release);
    }
    ty
}
