//! Values: `Any` (owned) and `AnyView` (borrowed) over the 16-byte `RFFIAny`, and conversions
//! between them and Rust types.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::object::{dec_ref, inc_ref, ObjectRef};
use crate::string::{str_bytes_of, Bytes, RString};
use crate::type_registry::type_name;
use crate::{DataType, Device};
use core::ffi::c_void;
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

// ---------------------------------------------------------------------------------------------
// Conversions from values to Rust types

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

fn mismatch<T: FromAny>(v: &AnyView<'_>) -> TypeMismatch {
    TypeMismatch {
        expected: T::EXPECTED,
        actual: v.type_name(),
    }
}

fn int_of(v: &AnyView<'_>) -> Option<i64> {
    match v.0.type_index {
        // SAFETY: Int and Bool keep their value in v_int64.
        kRFFIInt | kRFFIBool => Some(unsafe { v.0.v.v_int64 }),
        _ => None,
    }
}

macro_rules! int_from_any {
    ($($t:ty => $name:literal),*) => {$(
        impl FromAny for $t {
            const EXPECTED: &'static str = $name;
            fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
                let i = int_of(v).ok_or_else(|| mismatch::<Self>(v))?;
                <$t>::try_from(i).map_err(|_| TypeMismatch {
                    expected: $name,
                    actual: format!("int {i} (out of range {}..={})", <$t>::MIN, <$t>::MAX),
                })
            }
        }
        impl From<$t> for Any {
            #[inline]
            fn from(x: $t) -> Any {
                Any(raw_pod(kRFFIInt, RFFIAnyValue { v_int64: x as i64 }))
            }
        }
    )*};
}
int_from_any!(i8 => "int8", i16 => "int16", i32 => "int32", i64 => "int", u8 => "uint8",
    u16 => "uint16", u32 => "uint32", isize => "int");

impl FromAny for u64 {
    const EXPECTED: &'static str = "uint64";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        let i = int_of(v).ok_or_else(|| mismatch::<Self>(v))?;
        u64::try_from(i).map_err(|_| TypeMismatch {
            expected: "uint64",
            actual: format!("int {i} (negative)"),
        })
    }
}

impl FromAny for usize {
    const EXPECTED: &'static str = "uint64";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        u64::from_any(v).map(|x| x as usize)
    }
}

impl FromAny for bool {
    const EXPECTED: &'static str = "bool";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        int_of(v).map(|i| i != 0).ok_or_else(|| mismatch::<Self>(v))
    }
}

impl From<bool> for Any {
    fn from(b: bool) -> Any {
        Any(raw_pod(kRFFIBool, RFFIAnyValue { v_int64: b as i64 }))
    }
}

impl FromAny for f64 {
    const EXPECTED: &'static str = "float";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        match v.0.type_index {
            // SAFETY: Float keeps its value in v_float64.
            kRFFIFloat => Ok(unsafe { v.0.v.v_float64 }),
            _ => int_of(v)
                .map(|i| i as f64)
                .ok_or_else(|| mismatch::<Self>(v)),
        }
    }
}

impl FromAny for f32 {
    const EXPECTED: &'static str = "float";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        f64::from_any(v).map(|x| x as f32)
    }
}

impl From<f64> for Any {
    fn from(x: f64) -> Any {
        Any(raw_pod(kRFFIFloat, RFFIAnyValue { v_float64: x }))
    }
}

impl From<f32> for Any {
    fn from(x: f32) -> Any {
        Any::from(x as f64)
    }
}

impl From<()> for Any {
    fn from(_: ()) -> Any {
        Any::none()
    }
}

impl FromAny for () {
    const EXPECTED: &'static str = "None";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        if v.is_none() {
            Ok(())
        } else {
            Err(mismatch::<Self>(v))
        }
    }
}

/// An opaque pointer value (`kRFFIOpaquePtr`); NULL converts from None too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpaquePtr(pub *mut c_void);

impl FromAny for OpaquePtr {
    const EXPECTED: &'static str = "void*";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        match v.0.type_index {
            // SAFETY: OpaquePtr keeps its value in v_ptr.
            kRFFIOpaquePtr => Ok(OpaquePtr(unsafe { v.0.v.v_ptr })),
            kRFFINone => Ok(OpaquePtr(core::ptr::null_mut())),
            _ => Err(mismatch::<Self>(v)),
        }
    }
}

impl From<OpaquePtr> for Any {
    fn from(p: OpaquePtr) -> Any {
        Any(raw_pod(kRFFIOpaquePtr, RFFIAnyValue { v_ptr: p.0 }))
    }
}

// A string names a device ("cuda:1", "cpu"), as a string names a DataType.
impl FromAny for Device {
    const EXPECTED: &'static str = "Device";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        match v.0.type_index {
            // SAFETY: Device keeps its value in v_device.
            kRFFIDevice => Device::from_raw(unsafe { v.0.v.v_device }),
            _ => match str_bytes_of(v) {
                Some(b) if v.0.type_index != kRFFIByteArrayPtr => {
                    let s = core::str::from_utf8(b).map_err(|_| "invalid UTF-8".to_owned());
                    s.and_then(Device::parse)
                }
                _ => return Err(mismatch::<Self>(v)),
            },
        }
        .map_err(|e| TypeMismatch {
            expected: "Device",
            actual: e,
        })
    }
}

impl From<Device> for Any {
    fn from(d: Device) -> Any {
        Any(raw_pod(kRFFIDevice, RFFIAnyValue { v_device: d.raw() }))
    }
}

impl FromAny for DataType {
    const EXPECTED: &'static str = "DataType";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        match v.0.type_index {
            // SAFETY: DataType keeps its value in v_dtype.
            kRFFIDataType => DataType::from_raw(unsafe { v.0.v.v_dtype }),
            _ => match str_bytes_of(v) {
                Some(b) if v.0.type_index != kRFFIByteArrayPtr => {
                    let s = core::str::from_utf8(b).map_err(|_| "invalid UTF-8".to_owned());
                    s.and_then(DataType::parse)
                }
                _ => return Err(mismatch::<Self>(v)),
            },
        }
        .map_err(|e| TypeMismatch {
            expected: "DataType",
            actual: e,
        })
    }
}

impl From<DataType> for Any {
    fn from(d: DataType) -> Any {
        let mut raw = NONE_RAW;
        raw.type_index = kRFFIDataType;
        raw.v.v_dtype = d.raw();
        Any(raw)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_abi() {
        assert_eq!(core::mem::size_of::<Any>(), 16);
        assert_eq!(core::mem::size_of::<AnyView<'_>>(), 16);
    }

    #[test]
    fn ints_with_range_checks() {
        let a = Any::from(300i64);
        assert_eq!(a.type_index(), kRFFIInt);
        assert_eq!(a.try_as::<i64>().unwrap(), 300);
        assert_eq!(a.try_as::<u16>().unwrap(), 300);
        let e = a.try_as::<u8>().unwrap_err();
        assert_eq!(e.kind(), "TypeError");
        assert_eq!(
            e.message(),
            "expected uint8 but got int 300 (out of range 0..=255)"
        );
        assert!(Any::from(-1i64).try_as::<u64>().is_err());
        assert_eq!(Any::from(true).try_as::<i32>().unwrap(), 1);
        assert_eq!(Any::from(2i32).try_as::<f64>().unwrap(), 2.0);
    }

    #[test]
    fn bool_float_none() {
        let b = Any::from(true);
        assert_eq!(b.type_index(), kRFFIBool);
        assert!(b.try_as::<bool>().unwrap());
        assert_eq!(Any::from(1.5f64).try_as::<f64>().unwrap(), 1.5);
        let e = Any::from(1.5).try_as::<i64>().unwrap_err();
        assert_eq!(e.message(), "expected int but got float");
        assert!(Any::none().try_as::<()>().is_ok());
        assert_eq!(Any::none().try_as::<Option<i64>>().unwrap(), None);
        assert_eq!(
            Any::from(Some(3i64)).try_as::<Option<i64>>().unwrap(),
            Some(3)
        );
        let e = Any::from(1i64).try_as::<String>().unwrap_err();
        assert_eq!(e.message(), "expected str but got int");
    }

    #[test]
    fn device_and_dtype() {
        let d = Device::cuda(1);
        let a = Any::from(d);
        assert_eq!(a.try_as::<Device>().unwrap(), d);
        let t = DataType::parse("float32x4").unwrap();
        assert_eq!(Any::from(t).try_as::<DataType>().unwrap(), t);
        assert_eq!(
            Any::from("int8").try_as::<DataType>().unwrap().to_string(),
            "int8"
        );
        // Foreign memory with an unknown device type is rejected, not trusted.
        let mut raw = NONE_RAW;
        raw.type_index = kRFFIDevice;
        raw.v.v_device = DLDevice {
            device_type: 99,
            device_id: 0,
        };
        // SAFETY: a POD value.
        let bad = unsafe { AnyView::from_raw(raw) };
        let e = bad.try_as::<Device>().unwrap_err();
        assert_eq!(e.kind(), "TypeError");
        assert!(e.message().contains("99"), "{}", e.message());
    }

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
