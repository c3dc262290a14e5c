//! Tensors as values: the object type (`ObjectType`), conversion of function arguments
//! (`FromAny`: a Tensor object or a borrowed `DLTensor*`, see the module docs of `tensor`) and
//! of results, and `TensorMut`, the argument type of functions that write.

use super::{dlpack, view, Tensor};
use crate::abi::*;
use crate::any::{Any, AnyView, FromAny, TypeMismatch};
use crate::error::Result;
use crate::object::{ObjectRef, ObjectType};
use crate::type_registry::type_name;
use core::ptr::NonNull;

// SAFETY: `Tensor` is `#[repr(transparent)]` over ObjectRef and only built from objects of index
// `kRFFITensor` (checked in `from_object`).
unsafe impl ObjectType for Tensor {
    const TYPE_KEY: &'static str = "ffi.Tensor";

    #[inline]
    fn type_index() -> i32 {
        kRFFITensor
    }

    #[inline]
    fn as_object(&self) -> &ObjectRef {
        &self.0
    }

    #[inline]
    unsafe fn from_object_unchecked(obj: ObjectRef) -> Self {
        Tensor(obj)
    }

    /// Checks the type index. A foreign Tensor whose `strides` is NULL (the ABI says it never is,
    /// but a producer may break the rule) is wrapped in a view of ours with compact strides, so
    /// `strides()` can always return the real strides.
    fn from_object(obj: ObjectRef) -> Result<Self, ObjectRef> {
        if obj.type_index() != kRFFITensor {
            return Err(obj);
        }
        let t = Tensor(obj);
        if t.lacks_strides() {
            return Ok(view::wrap_foreign_without_strides(t));
        }
        Ok(t)
    }

    fn into_object(self) -> ObjectRef {
        self.0
    }
}

impl FromAny for Tensor {
    const EXPECTED: &'static str = "ffi.Tensor";

    /// A Tensor object, an rvalue reference to one, or a borrowed `DLTensor*` (see the module
    /// docs for the lifetime of the latter).
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        let raw = v.as_raw();
        match raw.type_index {
            kRFFIDLTensorPtr => {
                // SAFETY: a DLTensorPtr value keeps a `DLTensor*` in v_ptr.
                let p = unsafe { raw.v.v_ptr }.cast::<DLTensor>();
                let Some(p) = NonNull::new(p) else {
                    return Err(TypeMismatch {
                        expected: Self::EXPECTED,
                        actual: "DLTensor* (NULL)".into(),
                    });
                };
                // SAFETY: the caller passes a valid DLTensor for the duration of the call.
                unsafe { dlpack::borrow_dltensor(p.as_ref()) }.map_err(|e| TypeMismatch {
                    expected: Self::EXPECTED,
                    actual: format!("an invalid DLTensor* ({e})"),
                })
            }
            _ => {
                let obj = ObjectRef::from_any(v).map_err(|mut m| {
                    m.expected = Self::EXPECTED;
                    m
                })?;
                Tensor::from_object(obj).map_err(|o| TypeMismatch {
                    expected: Self::EXPECTED,
                    actual: type_name(o.type_index()),
                })
            }
        }
    }
}

impl From<Tensor> for Any {
    fn from(t: Tensor) -> Any {
        Any::from(t.0)
    }
}

impl From<&Tensor> for Any {
    fn from(t: &Tensor) -> Any {
        Any::from(t.0.clone())
    }
}

/// A tensor argument the function writes to: converts like [`Tensor`] but refuses read-only
/// tensors, so a read-only import cannot be modified through a typed function.
#[derive(Clone, Debug)]
pub struct TensorMut(Tensor);

impl TensorMut {
    /// `t` if it is writable, else a ValueError.
    pub fn new(t: Tensor) -> Result<TensorMut> {
        t.data_ptr_mut()?;
        Ok(TensorMut(t))
    }

    /// The tensor, without the promise of writability.
    pub fn into_inner(self) -> Tensor {
        self.0
    }
}

impl core::ops::Deref for TensorMut {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        &self.0
    }
}

impl FromAny for TensorMut {
    const EXPECTED: &'static str = "writable ffi.Tensor";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        let t = Tensor::from_any(v).map_err(|mut m| {
            m.expected = Self::EXPECTED;
            m
        })?;
        if t.read_only() {
            return Err(TypeMismatch {
                expected: Self::EXPECTED,
                actual: "read-only ffi.Tensor".into(),
            });
        }
        Ok(TensorMut(t))
    }
}

impl From<TensorMut> for Any {
    fn from(t: TensorMut) -> Any {
        Any::from(t.0)
    }
}
