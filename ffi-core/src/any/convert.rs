//! `FromAny`, the conversion of values to Rust types, and the conversions both ways of strings,
//! bytes, objects and options (values held behind a pointer).

use super::{Any, AnyView};
use crate::abi::*;
use crate::error::Error;
use crate::object::ObjectRef;
use crate::string::{Bytes, RString};

/// Why a value could not be converted: what was expected and what it was.
#[derive(Debug, Clone)]
pub struct TypeMismatch {
    /// The type the conversion wanted (`int`, `ffi.Array`, ...).
    pub expected: &'static str,
    /// The type the value had.
    pub actual: String,
}

impl core::fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "expected {} but got {}", self.expected, self.actual)
    }
}

/// Rust types a value converts into (function arguments, results of calls).
pub trait FromAny: Sized {
    /// The name used in error messages, e.g. `int`, `str`, `ffi.Array`.
    const EXPECTED: &'static str;
    /// Converts a value, or says what was expected and what the value was.
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch>;
    /// The type schema of an argument of this type (recorded in typed functions' signatures).
    fn type_schema() -> crate::schema::TypeSchema {
        crate::schema::TypeSchema::from_key(Self::EXPECTED)
    }
}

pub(super) fn mismatch<T: FromAny>(v: &AnyView<'_>) -> TypeMismatch {
    TypeMismatch {
        expected: T::EXPECTED,
        actual: v.type_name(),
    }
}

impl FromAny for String {
    const EXPECTED: &'static str = "str";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        RString::from_any(v).map(|s| s.as_str().to_owned())
    }
}

impl From<&str> for Any {
    fn from(s: &str) -> Any {
        crate::string::make_string_any(s.as_bytes(), false)
    }
}

impl From<String> for Any {
    fn from(s: String) -> Any {
        Any::from(s.as_str())
    }
}

impl FromAny for Vec<u8> {
    const EXPECTED: &'static str = "bytes";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        Bytes::from_any(v).map(|b| b.as_bytes().to_vec())
    }
}

impl From<&[u8]> for Any {
    fn from(b: &[u8]) -> Any {
        crate::string::make_string_any(b, true)
    }
}

impl From<Vec<u8>> for Any {
    fn from(b: Vec<u8>) -> Any {
        Any::from(b.as_slice())
    }
}

impl FromAny for Any {
    const EXPECTED: &'static str = "Any";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        v.to_owned().map_err(|e| TypeMismatch {
            expected: "Any",
            actual: e.message(),
        })
    }
}

impl FromAny for ObjectRef {
    const EXPECTED: &'static str = "ffi.Object";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        match v.0.type_index {
            kRFFIObjectRValueRef => Any::from_any(v).map(|a| a.into_object().expect("object")),
            _ => v.as_object().cloned().ok_or_else(|| mismatch::<Self>(v)),
        }
    }
}

impl From<ObjectRef> for Any {
    fn from(o: ObjectRef) -> Any {
        Any::from_object(o)
    }
}

impl<T: FromAny> FromAny for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn type_schema() -> crate::schema::TypeSchema {
        crate::schema::TypeSchema::Optional(Box::new(T::type_schema()))
    }
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        if v.is_none() {
            Ok(None)
        } else {
            T::from_any(v).map(Some)
        }
    }
}

impl<T: Into<Any>> From<Option<T>> for Any {
    fn from(o: Option<T>) -> Any {
        o.map_or_else(Any::none, Into::into)
    }
}

/// Conversions for every typed object reference (`Function`, `Array`, `Error`, ...).
macro_rules! object_any_conversions {
    ($($ty:ty),*) => {$(
        impl $crate::any::FromAny for $ty {
            const EXPECTED: &'static str = <$ty as $crate::object::ObjectType>::TYPE_KEY;
            fn from_any(
                v: &$crate::any::AnyView<'_>,
            ) -> Result<Self, $crate::any::TypeMismatch> {
                let obj = <$crate::object::ObjectRef as $crate::any::FromAny>::from_any(v)
                    .map_err(|mut m| {
                        m.expected = Self::EXPECTED;
                        m
                    })?;
                <$ty as $crate::object::ObjectType>::from_object(obj).map_err(|o| {
                    $crate::any::TypeMismatch {
                        expected: Self::EXPECTED,
                        actual: $crate::type_registry::type_name(o.type_index()),
                    }
                })
            }
        }
        impl From<$ty> for $crate::any::Any {
            fn from(x: $ty) -> $crate::any::Any {
                $crate::any::Any::from(<$ty as $crate::object::ObjectType>::into_object(x))
            }
        }
        impl From<&$ty> for $crate::any::Any {
            fn from(x: &$ty) -> $crate::any::Any {
                $crate::any::Any::from(<$ty as $crate::object::ObjectType>::as_object(x).clone())
            }
        }
    )*};
}
pub(crate) use object_any_conversions;

object_any_conversions!(Error);
