//! Conversions both ways of the values held in the cell itself: integers (range-checked), bool,
//! floats, None, opaque pointers, devices and dtypes (which a string names too).

use super::convert::mismatch;
use super::{raw_pod, Any, AnyView, FromAny, TypeMismatch, NONE_RAW};
use crate::abi::*;
use crate::string::str_bytes_of;
use crate::{DataType, Device};
use core::ffi::c_void;

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

/// A value held in the cell as `index` (read and checked by `cell`, called only for that index)
/// or named by a string (`parse`): a string names a device ("cuda:1", "cpu") as it names a
/// DataType ("float32"). A byte array names nothing.
fn from_cell_or_name<T: FromAny>(
    v: &AnyView<'_>,
    index: i32,
    cell: impl FnOnce(&RFFIAny) -> Result<T, String>,
    parse: fn(&str) -> Result<T, String>,
) -> Result<T, TypeMismatch> {
    if v.0.type_index == index {
        cell(&v.0)
    } else {
        // A name is text: strings only (not bytes, nor a byte array).
        let text = matches!(v.0.type_index, kRFFIRawStr | kRFFISmallStr | kRFFIStr);
        match str_bytes_of(v) {
            Some(b) if text => core::str::from_utf8(b)
                .map_err(|_| "invalid UTF-8".to_owned())
                .and_then(parse),
            _ => return Err(mismatch::<T>(v)),
        }
    }
    .map_err(|e| TypeMismatch {
        expected: T::EXPECTED,
        actual: e,
    })
}

impl FromAny for Device {
    const EXPECTED: &'static str = "Device";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        // SAFETY: called for a Device value, which keeps its value in v_device.
        let cell = |raw: &RFFIAny| Device::from_raw(unsafe { raw.v.v_device });
        from_cell_or_name(v, kRFFIDevice, cell, Device::parse)
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
        // SAFETY: called for a DataType value, which keeps its value in v_dtype.
        let cell = |raw: &RFFIAny| DataType::from_raw(unsafe { raw.v.v_dtype });
        from_cell_or_name(v, kRFFIDataType, cell, DataType::parse)
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // Names are text: a string names a device or a data type (small and heap strings
        // alike), bytes with the same content do not.
        for (name, id) in [("cuda:1", 1), ("cuda:100", 100)] {
            assert_eq!(
                Any::from(name).try_as::<Device>().unwrap(),
                Device::cuda(id)
            );
        }
        for bytes in [&b"cuda:1"[..], b"cuda:100"] {
            let e = Any::from(bytes).try_as::<Device>().unwrap_err();
            assert_eq!(e.kind(), "TypeError");
            assert!(Any::from(bytes).try_as::<DataType>().is_err());
        }
        assert!(Any::from(&b"int8"[..]).try_as::<DataType>().is_err());
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
}
