//! Values: `Any` (owned) and `AnyView` (borrowed) over the 16-byte `RFFIAny`, and conversions
//! between them and Rust types.
//!
//! This module holds the owned value; `view` the borrowed one (and taking ownership of what it
//! borrows); `convert` the `FromAny` trait with the conversions of strings, bytes, objects and
//! options; `scalars` the conversions of values held in the cell itself (numbers, bool, None,
//! opaque pointers, devices, dtypes).

mod convert;
mod scalars;
mod view;

pub(crate) use convert::object_any_conversions;
pub use convert::{FromAny, TypeMismatch};
pub use scalars::OpaquePtr;

use crate::abi::*;
use crate::error::Result;
use crate::object::{dec_ref, inc_ref, ObjectRef};
use core::marker::PhantomData;
use core::ptr::NonNull;

/// An owned value. Holds a strong reference when it is an object (type index >= 64); otherwise it
/// is plain data. Never holds a borrowed kind (RawStr, ByteArrayPtr, ObjectRValueRef, DLTensorPtr).
#[repr(transparent)]
pub struct Any(RFFIAny);

/// A borrowed value, valid for `'a`: arguments of a call, or a view of an `Any`.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct AnyView<'a>(RFFIAny, PhantomData<&'a ()>);

// SAFETY: owned values are plain data or strong references to thread-safe objects.
unsafe impl Send for Any {}
// SAFETY: as above; `Any` has no interior mutability.
unsafe impl Sync for Any {}

pub(crate) const fn raw_pod(type_index: i32, v: RFFIAnyValue) -> RFFIAny {
    RFFIAny {
        type_index,
        small_str_len: 0,
        v,
    }
}

/// The all-zero `None` value, also what a caller stores in `result` before a call.
pub const NONE_RAW: RFFIAny = raw_pod(kRFFINone, RFFIAnyValue { v_int64: 0 });

impl Any {
    /// The None value.
    pub const fn none() -> Any {
        Any(NONE_RAW)
    }

    /// Takes ownership of a raw owned value.
    ///
    /// # Safety
    /// `raw` must be a valid owned value (an object index carries one strong reference) and must
    /// not be one of the borrowed kinds.
    #[inline]
    pub unsafe fn from_raw(raw: RFFIAny) -> Any {
        Any(raw)
    }

    /// Gives up ownership of the raw value.
    #[inline]
    pub fn into_raw(self) -> RFFIAny {
        let raw = self.0;
        core::mem::forget(self);
        raw
    }

    /// The value's `RFFIAny` cell, to pass to C (this value keeps its reference).
    #[inline]
    pub fn as_raw(&self) -> &RFFIAny {
        &self.0
    }

    /// The value's type index (`kRFFIInt`, `kRFFIStr`, a registered object type's, ...).
    #[inline]
    pub fn type_index(&self) -> i32 {
        self.0.type_index
    }

    /// Whether the value is None.
    #[inline]
    pub fn is_none(&self) -> bool {
        self.0.type_index == kRFFINone
    }

    /// A borrowed view of the value, valid while `self` lives.
    #[inline]
    pub fn view(&self) -> AnyView<'_> {
        AnyView(self.0, PhantomData)
    }

    /// A view that borrows this value in place (for data stored inside it, like small strings).
    #[inline]
    pub fn view_ref(&self) -> &AnyView<'_> {
        // SAFETY: both are repr(transparent) over RFFIAny, and the view borrows `self`.
        unsafe { &*(self as *const Any).cast::<AnyView<'_>>() }
    }

    /// Converts to `T`, failing with a TypeError naming both types.
    pub fn try_as<T: FromAny>(&self) -> Result<T> {
        self.view().try_as()
    }

    /// Moves the object out (no count change), if this is an object.
    pub fn into_object(self) -> Option<ObjectRef> {
        if self.0.type_index >= kRFFIStaticObjectBegin {
            // SAFETY: object values carry a non-null strong reference, moved to the ObjectRef.
            let p = unsafe { NonNull::new_unchecked(self.into_raw().v.v_obj) };
            // SAFETY: as above.
            Some(unsafe { ObjectRef::from_raw(p) })
        } else {
            None
        }
    }

    pub(crate) fn from_object(obj: ObjectRef) -> Any {
        let index = obj.type_index();
        Any(raw_pod(
            index,
            RFFIAnyValue {
                v_obj: obj.into_raw().as_ptr(),
            },
        ))
    }
}

impl Default for Any {
    fn default() -> Self {
        Any::none()
    }
}

impl Drop for Any {
    #[inline]
    fn drop(&mut self) {
        if self.0.type_index >= kRFFIStaticObjectBegin {
            // SAFETY: an owned object value holds one strong reference.
            unsafe { dec_ref(self.0.v.v_obj) }
        }
    }
}

impl Clone for Any {
    #[inline]
    fn clone(&self) -> Self {
        if self.0.type_index >= kRFFIStaticObjectBegin {
            // SAFETY: we hold a strong reference.
            unsafe { inc_ref(self.0.v.v_obj) }
        }
        Any(self.0)
    }
}

impl core::fmt::Debug for Any {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.view().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_abi() {
        assert_eq!(core::mem::size_of::<Any>(), 16);
        assert_eq!(core::mem::size_of::<AnyView<'_>>(), 16);
    }
}
