//! The kinds of the package's conversion table as the native path sees them: the native codes,
//! the lookup of a type's kind (the table, else the package's resolver), and a small cache of the
//! kinds of the types met last.

use super::cpython::*;
use super::Hooks;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// The native codes of the package's conversion kinds (`rffi/_convert.py`: `PYTHON, NONE, ...`;
/// 0 is the Python setter; NONE = 1 and BOOL = 2 are the singletons, recognised before the
/// lookup).
pub(super) mod native {
    pub const INT: i64 = 3;
    pub const FLOAT: i64 = 4;
    pub const STR: i64 = 5;
    pub const BYTES: i64 = 6;
    pub const OBJECT: i64 = 7;
    pub const DLPACK: i64 = 8;
    pub const CALLABLE: i64 = 9;
}

/// The kind code of values of exact type `t` (see [`native`]; 0: the package's setter), or None
/// with a Python error set: from the kind cache, else the package's table (`TABLE[t]`), else its
/// resolver (`kind_of(t)`, which adds the type to the table).
///
/// # Safety
/// GIL held; `t` a live type.
#[inline(always)]
pub(super) unsafe fn kind_code(api: &Api, h: &Hooks, t: PyObj) -> Option<i64> {
    // SAFETY: GIL held; `t` a live type.
    if let Some(code) = unsafe { known_kind(api, h, t) } {
        return Some(code);
    }
    // SAFETY: GIL held; the package's resolver (which adds the type to the table), whose new
    // reference is released here.
    unsafe {
        let args = (api.PyTuple_New)(1);
        if args.is_null() {
            return None;
        }
        (api.Py_IncRef)(t);
        (api.PyTuple_SetItem)(args, 0, t);
        let kind = (api.PyObject_CallObject)(h.resolve, args);
        (api.Py_DecRef)(args);
        if kind.is_null() {
            return None;
        }
        let code = (api.PyLong_AsLongLong)(kind);
        (api.Py_DecRef)(kind);
        if code == -1 && !(api.PyErr_Occurred)().is_null() {
            return None;
        }
        KINDS.remember(api, t, code);
        Some(code)
    }
}

/// The kind code of exact type `t` if the package's table has one (the kind cache first), without
/// resolving a type it does not know.
///
/// # Safety
/// GIL held; `t` a live type.
#[inline(always)]
pub(super) unsafe fn known_kind(api: &Api, h: &Hooks, t: PyObj) -> Option<i64> {
    if let Some(code) = KINDS.get(t) {
        return Some(code);
    }
    // SAFETY: GIL held; a borrowed lookup (types hash and compare without failing).
    unsafe {
        let kind = (api.PyDict_GetItemWithError)(h.table, t);
        if kind.is_null() {
            return None;
        }
        let code = (api.PyLong_AsLongLong)(kind);
        KINDS.remember(api, t, code);
        Some(code)
    }
}

/// The kind codes of the types met last, so that a call does not look each argument's type up
/// in the table (a dict lookup, ~100 instructions): a direct-mapped cache, read and written with
/// the GIL held, holding a reference to each type in it (an address is not reused while it is
/// there). The package empties it whenever it changes a type's kind (`register_kind`).
struct KindCache {
    types: [AtomicUsize; KIND_SLOTS],
    codes: [AtomicI64; KIND_SLOTS],
}

const KIND_SLOTS: usize = 64;

static KINDS: KindCache = KindCache {
    types: [const { AtomicUsize::new(0) }; KIND_SLOTS],
    codes: [const { AtomicI64::new(0) }; KIND_SLOTS],
};

impl KindCache {
    fn slot(t: PyObj) -> usize {
        (t as usize >> 4) % KIND_SLOTS // type objects are 16-byte aligned
    }

    #[inline(always)]
    fn get(&self, t: PyObj) -> Option<i64> {
        let k = Self::slot(t);
        (self.types[k].load(Ordering::Relaxed) == t as usize)
            .then(|| self.codes[k].load(Ordering::Relaxed))
    }

    /// # Safety
    /// GIL held; `t` a live type.
    unsafe fn remember(&self, api: &Api, t: PyObj, code: i64) {
        let k = Self::slot(t);
        // SAFETY: GIL held; the cache's reference keeps the type alive while it is here.
        unsafe { (api.Py_IncRef)(t) };
        self.codes[k].store(code, Ordering::Relaxed);
        let old = self.types[k].swap(t as usize, Ordering::Relaxed);
        if old != 0 {
            // SAFETY: GIL held; the reference taken when `old` was remembered.
            unsafe { (api.Py_DecRef)(old as PyObj) };
        }
    }

    /// # Safety
    /// GIL held.
    unsafe fn forget(&self, api: &Api) {
        for k in 0..KIND_SLOTS {
            let old = self.types[k].swap(0, Ordering::Relaxed);
            if old != 0 {
                // SAFETY: GIL held; the reference taken when `old` was remembered.
                unsafe { (api.Py_DecRef)(old as PyObj) };
            }
        }
    }
}

/// Empties the kind cache (the package changed a type's kind).
///
/// # Safety
/// GIL held.
pub(super) unsafe fn forget_kinds(api: &Api) {
    // SAFETY: forwarded.
    unsafe { KINDS.forget(api) }
}
