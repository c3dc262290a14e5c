//! `AnyView`: a borrowed value, and how it becomes owned (`to_owned`) or prints.

use super::{Any, AnyView, FromAny};
use crate::abi::*;
use crate::error::{Error, Result};
use crate::object::{inc_ref, ObjectRef};
use crate::string::str_bytes_of;
use crate::type_registry::type_name;
use crate::{DataType, Device};
use core::marker::PhantomData;
use core::ptr::NonNull;

impl<'a> AnyView<'a> {
    /// Views a raw value.
    ///
    /// # Safety
    /// `raw` must be a valid value that stays valid (and its object alive) for `'a`.
    #[inline]
    pub unsafe fn from_raw(raw: RFFIAny) -> AnyView<'a> {
        AnyView(raw, PhantomData)
    }

    /// Views `n` raw arguments.
    ///
    /// # Safety
    /// `args` must point to `n` valid values that outlive `'a` (or `n` must be 0).
    #[inline]
    pub unsafe fn slice_from_raw(args: *const RFFIAny, n: usize) -> &'a [AnyView<'a>] {
        if n == 0 {
            return &[];
        }
        // SAFETY: AnyView is repr(transparent) over RFFIAny; forwarded contract.
        unsafe { core::slice::from_raw_parts(args.cast(), n) }
    }

    /// The viewed `RFFIAny` cell, to pass to C.
    #[inline]
    pub fn as_raw(&self) -> &RFFIAny {
        &self.0
    }

    /// The viewed value's type index (`kRFFIInt`, `kRFFIRawStr`, an object type's, ...).
    #[inline]
    pub fn type_index(&self) -> i32 {
        self.0.type_index
    }

    /// The name of the value's type, for messages (`int`, `str`, `ffi.Array`, `my.Point`).
    pub fn type_name(&self) -> String {
        type_name(self.0.type_index)
    }

    /// Whether the value is None.
    #[inline]
    pub fn is_none(&self) -> bool {
        self.0.type_index == kRFFINone
    }

    /// Converts to `T`, failing with a TypeError naming both types.
    pub fn try_as<T: FromAny>(&self) -> Result<T> {
        T::from_any(self).map_err(|m| Error::type_error(m.to_string()))
    }

    /// An owned copy: borrowed strings and byte arrays become String/Bytes values, an rvalue
    /// reference gives up its object, objects gain a reference.
    pub fn to_owned(&self) -> Result<Any> {
        let raw = self.0;
        let borrowing = matches!(
            raw.type_index,
            kRFFIRawStr | kRFFIByteArrayPtr | kRFFIObjectRValueRef | kRFFIDLTensorPtr
        );
        if !borrowing {
            // What the copy would own must be well-formed (small lengths, known indices, live
            // objects): the runtime's one value validator.
            // SAFETY: the view is valid for 'a, so a non-NULL object pointer is live.
            unsafe { crate::foreign::check_value(&raw) }
                .map_err(|why| Error::value_error(format!("invalid value: {why}")))?;
        }
        // SAFETY: in every arm, the view is valid for 'a, so its pointers and objects are live.
        unsafe {
            match raw.type_index {
                kRFFIRawStr | kRFFIByteArrayPtr => {
                    let bytes = str_bytes_of(self).ok_or_else(|| {
                        Error::value_error("NULL pointer in a string or byte-array value")
                    })?;
                    Ok(if raw.type_index == kRFFIRawStr {
                        crate::string::make_string_any(bytes, false)
                    } else {
                        crate::string::make_string_any(bytes, true)
                    })
                }
                kRFFIObjectRValueRef => {
                    let slot = raw.v.v_ptr.cast::<*mut RFFIObject>();
                    if slot.is_null() {
                        return Err(Error::value_error("NULL ObjectRValueRef"));
                    }
                    match NonNull::new(slot.replace(core::ptr::null_mut())) {
                        Some(p) => Ok(Any::from_object(ObjectRef::from_raw(p))),
                        None => Err(Error::value_error("object was already moved out")),
                    }
                }
                i if i >= kRFFIStaticObjectBegin => {
                    if raw.v.v_obj.is_null() {
                        return Err(Error::value_error(format!(
                            "NULL object pointer in a value of type {}",
                            type_name(i)
                        )));
                    }
                    inc_ref(raw.v.v_obj);
                    Ok(Any(raw))
                }
                kRFFIDLTensorPtr => Err(Error::type_error(
                    "a borrowed DLTensor* cannot be stored; convert it to a Tensor first",
                )),
                i if (0..kRFFIStaticObjectBegin).contains(&i) && i <= kRFFISmallBytes => {
                    Ok(Any(raw))
                }
                i => Err(Error::type_error(format!("invalid type index {i}"))),
            }
        }
    }

    /// Borrows the object, if this is one: a non-NULL pointer with the index of an object type.
    /// An index no type has is not an object whatever its payload, so its payload is never read
    /// as one (a caller's garbage would otherwise be dereferenced).
    pub fn as_object(&self) -> Option<&ObjectRef> {
        if crate::foreign::is_object_index(self.0.type_index) && !self.0.v_obj_is_null() {
            // SAFETY: ObjectRef is repr(transparent) over a non-null pointer, the same bits as
            // `v_obj`; the object outlives the view and the reference is never dropped through
            // this borrow.
            Some(unsafe { &*(&raw const self.0.v).cast::<ObjectRef>() })
        } else {
            None
        }
    }
}

impl RFFIAny {
    fn v_obj_is_null(&self) -> bool {
        // SAFETY: reading 8 payload bytes as a pointer is valid for every value.
        unsafe { self.v.v_obj.is_null() }
    }
}

impl<'a> From<&'a Any> for AnyView<'a> {
    fn from(a: &'a Any) -> Self {
        a.view()
    }
}

impl core::fmt::Debug for AnyView<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: in every arm, the payload member read matches the type index.
        unsafe {
            match self.0.type_index {
                kRFFINone => write!(f, "None"),
                kRFFIInt => write!(f, "{}", self.0.v.v_int64),
                kRFFIBool => write!(f, "{}", self.0.v.v_int64 != 0),
                kRFFIFloat => write!(f, "{:?}", self.0.v.v_float64),
                kRFFIOpaquePtr => write!(f, "{:p}", self.0.v.v_ptr),
                kRFFIDataType => write!(f, "{:?}", DataType(self.0.v.v_dtype)),
                kRFFIDevice => write!(f, "{:?}", Device(self.0.v.v_device)),
                _ => match str_bytes_of(self) {
                    Some(b) => write!(f, "{}", String::from_utf8_lossy(b).escape_debug()),
                    None => match self.as_object().map(|o| o.clone().into()) {
                        Some(obj) => debug_object(obj, f),
                        None => write!(f, "<{}>", self.type_name()),
                    },
                },
            }
        }
    }
}

/// Containers print their contents; other objects their type.
fn debug_object(obj: Any, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
    if let Ok(a) = obj.try_as::<crate::Array>() {
        return core::fmt::Debug::fmt(&a, f);
    }
    if let Ok(m) = obj.try_as::<crate::Map>() {
        return core::fmt::Debug::fmt(&m, f);
    }
    if let Ok(s) = obj.try_as::<crate::Shape>() {
        return core::fmt::Debug::fmt(&s, f);
    }
    write!(f, "<{}>", obj.view().type_name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::any::NONE_RAW;

    #[test]
    fn borrowed_kinds_become_owned() {
        let text = c"hello world, long enough for the heap";
        let mut raw = NONE_RAW;
        raw.type_index = kRFFIRawStr;
        raw.v.v_c_str = text.as_ptr();
        // SAFETY: `text` outlives the view.
        let view = unsafe { AnyView::from_raw(raw) };
        let owned = view.to_owned().unwrap();
        assert_eq!(owned.type_index(), kRFFIStr);
        assert_eq!(owned.try_as::<String>().unwrap(), text.to_str().unwrap());

        let obj = Any::from("a heap string value");
        let mut slot = obj.clone().into_raw().v;
        let mut rv = NONE_RAW;
        rv.type_index = kRFFIObjectRValueRef;
        rv.v.v_ptr = (&raw mut slot.v_obj).cast();
        // SAFETY: `slot` outlives the view.
        let view = unsafe { AnyView::from_raw(rv) };
        let moved = view.to_owned().unwrap();
        assert_eq!(moved.view().as_object().unwrap().strong_count(), 2);
        assert!(view.to_owned().is_err(), "second move must fail");
    }
}
