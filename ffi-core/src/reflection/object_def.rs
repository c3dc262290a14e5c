//! Object types defined in Rust: `object_type!` declares a `#[repr(C)]` struct whose first field is
//! the object header (or its parent type), registers its key, parent, fields and methods once, and
//! `Obj<T>` is the typed reference to such an object.

use crate::abi::*;
use crate::any::{Any, AnyView, FromAny, TypeMismatch};
use crate::error::Error;
use crate::object::{ObjectRef, INITIAL_COUNT};
use crate::type_registry::is_instance;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use std::sync::RwLock;

/// The header that starts every object type declared with `object_type!` (at offset 0).
#[repr(transparent)]
pub struct ObjectHeader(RFFIObject);

impl Default for ObjectHeader {
    fn default() -> Self {
        ObjectHeader(RFFIObject {
            combined_ref_count: INITIAL_COUNT,
            type_index: kRFFIObject,
            __padding: 0,
            deleter: None,
        })
    }
}

/// A Rust type laid out as an object: `#[repr(C)]`, starting with an `ObjectHeader` or with its
/// parent's type. Implemented by `object_type!`.
///
/// # Safety
/// The type must be `#[repr(C)]` with the header (directly or through its parent) at offset 0,
/// and `type_index` must return the index registered for `TYPE_KEY`.
pub unsafe trait ObjectDef: Sized + Send + Sync + 'static {
    /// The type's key in the type registry (`"my.Point"`).
    const TYPE_KEY: &'static str;
    /// The registered index (registering the type, its parents and members on first use).
    fn type_index() -> i32;
    /// The value made from every field's value in `all_fields` order (the parent's first),
    /// starting at `values[*at]` and advancing `at`: how structural copies and deserialization
    /// rebuild a type whose fields only Rust can construct.
    fn from_field_values(values: &[AnyView<'_>], at: &mut usize) -> crate::Result<Self>;
}

/// The next field value for `from_field_values`, or a TypeError naming the missing field.
#[doc(hidden)]
pub fn next_field_value<'a, 'v>(
    values: &'a [AnyView<'v>],
    at: &mut usize,
    key: &str,
    field: &str,
) -> crate::Result<&'a AnyView<'v>> {
    let v = values.get(*at).ok_or_else(|| {
        Error::type_error(format!(
            "`{key}` from fields: no value for field `{field}` (got {})",
            values.len()
        ))
    })?;
    *at += 1;
    Ok(v)
}

/// A field value that is not of the field's type: the TypeError of `from_field_values`.
#[doc(hidden)]
pub fn field_value_error(key: &str, field: &str, e: Error) -> Error {
    Error::type_error(format!(
        "`{key}` from fields: field `{field}`: {}",
        e.message()
    ))
}

/// A strong reference to an object of the Rust type `T` (or of a type derived from it).
#[repr(transparent)]
pub struct Obj<T: ObjectDef>(ObjectRef, PhantomData<T>);

unsafe extern "C" fn box_deleter<T>(obj: *mut c_void, flags: i32) {
    if flags & kRFFIObjectDeleterFlagBitMaskStrong != 0 {
        // SAFETY: allocated as a Box<T> by `Obj::new`; the strong part runs once.
        unsafe { core::ptr::drop_in_place(obj.cast::<T>()) };
    }
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        // SAFETY: the body was dropped; only the Box's memory remains.
        unsafe { std::alloc::dealloc(obj.cast(), std::alloc::Layout::new::<T>()) };
    }
}

impl<T: ObjectDef> Obj<T> {
    /// Moves `value` into a new object of type `T`.
    pub fn new(value: T) -> Obj<T> {
        let index = T::type_index();
        let p = Box::into_raw(Box::new(value)).cast::<RFFIObject>();
        // SAFETY: `T` starts with the header (ObjectDef contract); the allocation is ours.
        unsafe {
            (*p).combined_ref_count = INITIAL_COUNT;
            (*p).type_index = index;
            (*p).deleter = Some(box_deleter::<T>);
            Obj(ObjectRef::from_raw(NonNull::new_unchecked(p)), PhantomData)
        }
    }

    /// Checks that `obj` is a `T` (or derived) and converts.
    pub fn downcast(obj: ObjectRef) -> core::result::Result<Obj<T>, ObjectRef> {
        if is_instance(obj.type_index(), T::type_index()) {
            Ok(Obj(obj, PhantomData))
        } else {
            Err(obj)
        }
    }

    /// The reference as a plain object.
    pub fn as_object(&self) -> &ObjectRef {
        &self.0
    }

    /// The reference as a plain object, consumed.
    pub fn into_object(self) -> ObjectRef {
        self.0
    }
}

impl<T: ObjectDef> Clone for Obj<T> {
    fn clone(&self) -> Self {
        Obj(self.0.clone(), PhantomData)
    }
}

impl<T: ObjectDef> core::ops::Deref for Obj<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: checked to be a T or a type whose layout starts with a T.
        unsafe { &*self.0.as_ptr().cast::<T>() }
    }
}

impl<T: ObjectDef> FromAny for Obj<T> {
    const EXPECTED: &'static str = T::TYPE_KEY;
    fn from_any(v: &AnyView<'_>) -> core::result::Result<Self, TypeMismatch> {
        match v.as_object() {
            Some(o) if is_instance(o.type_index(), T::type_index()) => {
                Ok(Obj(o.clone(), PhantomData))
            }
            _ => Err(TypeMismatch {
                expected: T::TYPE_KEY,
                actual: v.type_name(),
            }),
        }
    }
}

impl<T: ObjectDef> From<Obj<T>> for Any {
    fn from(o: Obj<T>) -> Any {
        Any::from(o.0)
    }
}

impl<T: ObjectDef> crate::function::IntoCallResult for Obj<T> {
    fn into_call_result(self) -> core::result::Result<Any, crate::CallError> {
        Ok(self.into())
    }
}

/// A field type of an `object_type!`: how the runtime reads it (and, for `Mut`, writes it).
pub trait FieldValue: Send + Sync + 'static {
    /// `RFFIFieldInfo::field_static_type_index` (`kRFFIAny` when any value fits).
    const STATIC_INDEX: i32;
    /// The type schema as JSON text, such as `{"type":"int"}`.
    fn schema() -> String;
    /// The field's value, for the runtime's getter.
    fn get(&self) -> Any;
    /// The field from a value (a TypeError if it does not convert).
    fn from_value(v: &AnyView<'_>) -> crate::Result<Self>
    where
        Self: Sized;
    /// The setter of a writable field type (only `Mut<T>`).
    fn setter() -> RFFIFieldSetter {
        None
    }
}

macro_rules! field_values {
    ($($t:ty => $index:expr, $schema:expr;)*) => {$(
        impl FieldValue for $t {
            const STATIC_INDEX: i32 = $index;
            fn schema() -> String {
                $schema.to_string()
            }
            fn get(&self) -> Any {
                Any::from(self.clone())
            }
            fn from_value(v: &AnyView<'_>) -> crate::Result<Self> {
                v.try_as::<$t>()
            }
        }
    )*};
}
field_values! {
    i64 => kRFFIInt, r#"{"type":"int"}"#;
    i32 => kRFFIInt, r#"{"type":"int"}"#;
    f64 => kRFFIFloat, r#"{"type":"float"}"#;
    f32 => kRFFIFloat, r#"{"type":"float"}"#;
    bool => kRFFIBool, r#"{"type":"bool"}"#;
    String => kRFFIStr, r#"{"type":"ffi.String"}"#;
    crate::RString => kRFFIStr, r#"{"type":"ffi.String"}"#;
    crate::Bytes => kRFFIBytes, r#"{"type":"ffi.Bytes"}"#;
    crate::Device => kRFFIDevice, r#"{"type":"Device"}"#;
    crate::DataType => kRFFIDataType, r#"{"type":"DataType"}"#;
    crate::Array => kRFFIArray, r#"{"type":"ffi.Array"}"#;
    crate::Map => kRFFIMap, r#"{"type":"ffi.Map"}"#;
    crate::Function => kRFFIFunction, r#"{"type":"ffi.Function"}"#;
    crate::Tensor => kRFFITensor, r#"{"type":"ffi.Tensor"}"#;
    crate::Shape => kRFFIShape, r#"{"type":"ffi.Shape"}"#;
    ObjectRef => kRFFIObject, r#"{"type":"ffi.Object"}"#;
    Any => kRFFIAny, r#"{"type":"Any"}"#;
}

impl<T: ObjectDef> FieldValue for Obj<T> {
    const STATIC_INDEX: i32 = kRFFIObject;
    fn schema() -> String {
        format!(r#"{{"type":"{}"}}"#, T::TYPE_KEY)
    }
    fn get(&self) -> Any {
        Any::from(self.clone())
    }
    fn from_value(v: &AnyView<'_>) -> crate::Result<Self> {
        v.try_as::<Obj<T>>()
    }
}

impl<T: FieldValue + Clone> FieldValue for Option<T>
where
    Option<T>: Into<Any>,
{
    const STATIC_INDEX: i32 = T::STATIC_INDEX;
    fn schema() -> String {
        format!(r#"{{"type":"Optional","args":[{}]}}"#, T::schema())
    }
    fn get(&self) -> Any {
        self.clone().into()
    }
    fn from_value(v: &AnyView<'_>) -> crate::Result<Self> {
        if v.is_none() {
            Ok(None)
        } else {
            T::from_value(v).map(Some)
        }
    }
}

/// A field that other languages may write (`RFFIObjectSetField`, `obj.x = ...` in Python): the
/// value sits behind a lock, read with `get` and written with `set`.
pub struct Mut<T>(RwLock<T>);

impl<T: Clone> Mut<T> {
    /// A field holding `v`.
    pub fn new(v: T) -> Self {
        Mut(RwLock::new(v))
    }
    /// A copy of the current value.
    pub fn get(&self) -> T {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
    /// Replaces the value (what a write from another language does, after its type check).
    pub fn set(&self, v: T) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = v;
    }
}

unsafe extern "C" fn mut_setter<T: FieldValue + FromAny + Clone>(
    field: *mut c_void,
    value: *const RFFIAny,
) -> i32 {
    crate::capi::boundary::guard(|| {
        // SAFETY: registered for a `Mut<T>` field; `value` is a valid view for the call.
        let (cell, view) = unsafe { (&*field.cast::<Mut<T>>(), AnyView::from_raw(*value)) };
        let v = T::from_any(&view)
            .map_err(|m| Error::type_error(format!("expected {}, got {}", m.expected, m.actual)))?;
        cell.set(v);
        Ok(())
    })
}

impl<T: FieldValue + FromAny + Clone> FieldValue for Mut<T> {
    const STATIC_INDEX: i32 = T::STATIC_INDEX;
    fn schema() -> String {
        T::schema()
    }
    fn get(&self) -> Any {
        Mut::get(self).get()
    }
    fn from_value(v: &AnyView<'_>) -> crate::Result<Self> {
        T::from_value(v).map(Mut::new)
    }
    fn setter() -> RFFIFieldSetter {
        Some(mut_setter::<T>)
    }
}

/// The getter of a field of Rust type `T`.
pub(crate) unsafe extern "C" fn field_getter<T: FieldValue>(
    field: *mut c_void,
    out: *mut RFFIAny,
) -> i32 {
    crate::capi::boundary::guard(|| {
        // SAFETY: registered for a field of type `T` at this address; `out` is writable.
        unsafe { out.write(FieldValue::get(&*field.cast::<T>()).into_raw()) };
        Ok(())
    })
}
