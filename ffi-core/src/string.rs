//! Strings and byte strings: up to 7 bytes inline in the value (SmallStr / SmallBytes), longer
//! ones as heap objects (Str / Bytes) holding the bytes in place after the cell, NUL-terminated.

use crate::abi::*;
use crate::any::{raw_pod, Any, AnyView, FromAny, TypeMismatch};
use crate::object::{alloc_with_tail, ObjectRef};
use core::ffi::{c_void, CStr};
use std::alloc::Layout;

const CELL_OFFSET: usize = core::mem::size_of::<RFFIObject>();
const DATA_OFFSET: usize = CELL_OFFSET + core::mem::size_of::<RFFIStrCell>();

fn str_layout(len: usize) -> Layout {
    // The NUL terminator follows the bytes, so C callers can use `data` as a C string.
    Layout::from_size_align(DATA_OFFSET + len + 1, 8).expect("string too large")
}

unsafe extern "C" fn str_deleter(obj: *mut c_void, flags: i32) {
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        // SAFETY: made by `heap_string` (the only user of this deleter); the size in the cell
        // gives back the layout it was allocated with. Nothing in the body needs dropping.
        unsafe {
            let cell = obj.cast::<u8>().add(CELL_OFFSET).cast::<RFFIStrCell>();
            std::alloc::dealloc(obj.cast(), str_layout((*cell).size));
        }
    }
}

pub(crate) fn heap_string(bytes: &[u8], type_index: i32) -> ObjectRef {
    let len = bytes.len();
    // SAFETY: the builder writes the cell and `len + 1` bytes, exactly the tail of the layout,
    // and `str_deleter` frees that layout.
    unsafe {
        alloc_with_tail(type_index, str_layout(len), str_deleter, |tail| {
            let data = tail.add(DATA_OFFSET - CELL_OFFSET);
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), data, len);
            data.add(len).write(0);
            tail.cast::<RFFIStrCell>().write(RFFIStrCell {
                data: data.cast(),
                size: len,
            });
        })
    }
}

/// A str (`bytes == false`) or bytes value, inline when short.
pub(crate) fn make_string_any(bytes: &[u8], is_bytes: bool) -> Any {
    let (small, heap) = if is_bytes {
        (kRFFISmallBytes, kRFFIBytes)
    } else {
        (kRFFISmallStr, kRFFIStr)
    };
    if bytes.len() <= RFFI_SMALL_STR_MAX {
        let mut buf = [0u8; 8];
        buf[..bytes.len()].copy_from_slice(bytes);
        let mut raw = raw_pod(small, RFFIAnyValue { v_uint64: 0 });
        raw.small_str_len = bytes.len() as u32;
        raw.v.v_uint64 = u64::from_ne_bytes(buf);
        // SAFETY: a POD value.
        unsafe { Any::from_raw(raw) }
    } else {
        Any::from(heap_string(bytes, heap))
    }
}

/// The bytes of any string-like value (RawStr, ByteArrayPtr, SmallStr/Bytes, Str/Bytes), borrowed
/// from the view. `None` for other types and for NULL pointers.
pub(crate) fn str_bytes_of<'v>(v: &'v AnyView<'_>) -> Option<&'v [u8]> {
    let raw = v.as_raw();
    // SAFETY: in every arm, the view is valid for 'a, and the payload member read matches the index.
    unsafe {
        match raw.type_index {
            kRFFISmallStr | kRFFISmallBytes => {
                let len = (raw.small_str_len as usize).min(RFFI_SMALL_STR_MAX);
                // The bytes live inside the value itself, hence the result borrows `v`.
                let p = (&raw const raw.v.v_bytes).cast::<u8>();
                Some(core::slice::from_raw_parts(p, len))
            }
            kRFFIRawStr => {
                let p = raw.v.v_c_str;
                (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
            }
            kRFFIByteArrayPtr => {
                let ba = raw.v.v_ptr.cast::<RFFIByteArray>();
                if ba.is_null() || ((*ba).data.is_null() && (*ba).size != 0) {
                    return None;
                }
                Some(crate::error::byte_array_bytes(&*ba))
            }
            // The header must agree: a cell is read as a string's only if it is one (a value
            // saying String over another object would otherwise read that object's body).
            kRFFIStr | kRFFIBytes
                if !raw.v.v_obj.is_null() && (*raw.v.v_obj).type_index == raw.type_index =>
            {
                let cell = raw.v.v_obj.add(1).cast::<RFFIStrCell>();
                Some(crate::error::byte_array_bytes(&*cell))
            }
            _ => None,
        }
    }
}

macro_rules! string_type {
    ($(#[$doc:meta])* $name:ident, $small:expr, $heap:expr, $borrowed:expr, $expected:literal) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name(Any);

        impl $name {
            /// The content's bytes (inline for short values, in the heap object otherwise).
            pub fn as_bytes(&self) -> &[u8] {
                str_bytes_of(self.0.view_ref()).unwrap_or(&[])
            }
            /// The length in bytes.
            pub fn len(&self) -> usize {
                self.as_bytes().len()
            }
            /// Whether the content is empty.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// The value as an `Any` (small or heap form).
            pub fn into_any(self) -> Any {
                self.0
            }
        }

        impl FromAny for $name {
            const EXPECTED: &'static str = $expected;
            fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
                let i = v.type_index();
                let err = || TypeMismatch { expected: $expected, actual: v.type_name() };
                if i == $small || i == $heap {
                    let owned = v.to_owned().map_err(|_| err())?;
                    return $name::checked(owned);
                }
                if i == $borrowed || i == kRFFIByteArrayPtr {
                    let bytes = str_bytes_of(v).ok_or_else(err)?;
                    return $name::checked(make_string_any(bytes, $heap == kRFFIBytes));
                }
                Err(err())
            }
        }

        impl From<$name> for Any {
            fn from(s: $name) -> Any {
                s.0
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

string_type!(
    /// An owned, immutable UTF-8 string value (SmallStr or Str).
    RString, kRFFISmallStr, kRFFIStr, kRFFIRawStr, "str"
);
string_type!(
    /// An owned, immutable byte string value (SmallBytes or Bytes).
    Bytes, kRFFISmallBytes, kRFFIBytes, kRFFIByteArrayPtr, "bytes"
);

impl RString {
    /// A string holding a copy of `s` (inline up to 7 bytes).
    pub fn new(s: &str) -> RString {
        RString(make_string_any(s.as_bytes(), false))
    }

    fn checked(any: Any) -> Result<RString, TypeMismatch> {
        let bytes = str_bytes_of(any.view_ref()).unwrap_or(&[]);
        if core::str::from_utf8(bytes).is_err() {
            return Err(TypeMismatch {
                expected: "str",
                actual: "str with invalid UTF-8".into(),
            });
        }
        Ok(RString(any))
    }

    /// The content (checked UTF-8 when the string was made).
    pub fn as_str(&self) -> &str {
        // SAFETY: checked to be UTF-8 when constructed.
        unsafe { core::str::from_utf8_unchecked(self.as_bytes()) }
    }
}

impl core::ops::Deref for RString {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for RString {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Bytes {
    /// A byte string holding a copy of `b` (inline up to 7 bytes).
    pub fn new(b: &[u8]) -> Bytes {
        Bytes(make_string_any(b, true))
    }

    fn checked(any: Any) -> Result<Bytes, TypeMismatch> {
        Ok(Bytes(any))
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_heap_boundary() {
        let seven = Any::from("abcdefg");
        assert_eq!(seven.type_index(), kRFFISmallStr);
        assert_eq!(seven.as_raw().small_str_len, 7);
        let eight = Any::from("abcdefgh");
        assert_eq!(eight.type_index(), kRFFIStr);
        assert_eq!(eight.try_as::<String>().unwrap(), "abcdefgh");
        assert_eq!(seven.try_as::<String>().unwrap(), "abcdefg");
        let b7 = Any::from(&b"\0\x01\x02\0\x04\x05\x06"[..]);
        assert_eq!(b7.type_index(), kRFFISmallBytes);
        assert_eq!(b7.try_as::<Vec<u8>>().unwrap(), b"\0\x01\x02\0\x04\x05\x06");
        let b9 = Any::from(&b"\0\x01\x02\0\x04\x05\x06\x07\0"[..]);
        assert_eq!(b9.type_index(), kRFFIBytes);
        assert_eq!(
            b9.try_as::<Vec<u8>>().unwrap(),
            b"\0\x01\x02\0\x04\x05\x06\x07\0"
        );
    }

    #[test]
    fn heap_string_is_nul_terminated_and_embedded_nuls_kept() {
        let s = "with\0nul inside, long";
        let a = Any::from(s);
        assert_eq!(a.try_as::<String>().unwrap(), s);
        let obj = a.view().as_object().unwrap().clone();
        let cell = obj.cell_ptr::<RFFIStrCell>();
        // SAFETY: a live Str object.
        unsafe {
            assert_eq!((*cell).size, s.len());
            assert_eq!(*(*cell).data.add(s.len()), 0);
        }
        assert_eq!(obj.strong_count(), 2);
    }

    #[test]
    fn str_and_bytes_do_not_mix() {
        assert!(Any::from("abc").try_as::<Vec<u8>>().is_err());
        assert!(Any::from(&b"abc"[..]).try_as::<String>().is_err());
        let bad = Any::from(&[0xffu8, 0xfe][..]);
        assert!(bad.try_as::<Bytes>().is_ok());
    }

    #[test]
    fn invalid_utf8_string_is_rejected() {
        let bytes = [b'a', 0xff, b'b'];
        let any = make_string_any(&bytes, false);
        let e = any.try_as::<String>().unwrap_err();
        assert_eq!(e.message(), "expected str but got str with invalid UTF-8");
    }
}
