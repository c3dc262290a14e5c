//! Target `dtype_device`: data-type and device strings, and the raw `DLDataType` / `DLDevice`
//! bits foreign code writes. What must hold: the C ABI and the Rust API agree; whatever parses
//! is a valid value whose printed form parses back to it; an invalid value prints in a form that
//! never parses; a value converts from an `Any` exactly when it parses or validates.

use super::input::Input;
use rffi_core::abi::{kRFFIDataType, kRFFIDevice, DLDataType, DLDevice, RFFIAny, RFFIByteArray};
use rffi_core::capi::value::{RFFIDataTypeFromString, RFFIDataTypeToString};
use rffi_core::error::take_raised;
use rffi_core::{Any, AnyView, DataType, Device};

pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.u8();
    let rest = input.bytes(usize::MAX);
    let mut raw = Input::new(rest);
    match mode % 4 {
        0 => dtype_text(rest),
        1 => device_text(rest),
        2 => dtype_raw(DLDataType {
            code: raw.u8(),
            bits: raw.u8(),
            lanes: raw.u16(),
        }),
        _ => device_raw(DLDevice {
            device_type: raw.i32(),
            device_id: raw.i32(),
        }),
    }
}

fn dtype_text(bytes: &[u8]) {
    let ba = RFFIByteArray {
        data: bytes.as_ptr().cast(),
        size: bytes.len(),
    };
    let mut out = DLDataType::default();
    // SAFETY: `ba` describes `bytes`, alive for the call; `out` is writable.
    let rc = unsafe { RFFIDataTypeFromString(&ba, &mut out) };
    let text = core::str::from_utf8(bytes).ok();
    let parsed = text.map(DataType::parse);
    match (rc, &parsed) {
        (0, Some(Ok(dt))) => {
            assert_eq!(out, dt.raw(), "C and Rust parse {text:?} differently");
            valid_dtype(*dt);
        }
        (0, _) => panic!("RFFIDataTypeFromString accepted {bytes:?}, which Rust refuses"),
        (-1, Some(Ok(dt))) => panic!("RFFIDataTypeFromString refused {text:?} = {dt:?}"),
        (-1, _) => {
            let e = take_raised().expect("-1 without an error raised");
            assert_eq!(e.kind(), "ValueError");
            assert!(
                e.message().starts_with("RFFIDataTypeFromString: "),
                "{}",
                e.message()
            );
        }
        (rc, _) => panic!("RFFIDataTypeFromString returned {rc}"),
    }
    if let Some(text) = text {
        // A string value converts to a DataType exactly when it parses (small and heap strings).
        let converted = Any::from(text).try_as::<DataType>();
        assert_eq!(
            converted.is_ok(),
            parsed.as_ref().unwrap().is_ok(),
            "{text:?}"
        );
        if let (Ok(a), Some(Ok(b))) = (converted, &parsed) {
            assert_eq!(a, *b);
        }
    }
}

/// What holds for every valid data type.
fn valid_dtype(dt: DataType) {
    assert_eq!(DataType::from_raw(dt.raw()), Ok(dt));
    let text = dt.to_string();
    assert_eq!(DataType::parse(&text), Ok(dt), "printed as {text:?}");
    let mut out = rffi_core::any::NONE_RAW;
    // SAFETY: a readable dtype and a writable out-slot.
    assert_eq!(unsafe { RFFIDataTypeToString(&dt.raw(), &mut out) }, 0);
    // SAFETY: on success the out-slot holds an owned value.
    let printed = unsafe { Any::from_raw(out) };
    assert_eq!(printed.try_as::<String>().unwrap(), text);
    assert_eq!(
        as_value(kRFFIDataType, dt.raw()).try_as::<DataType>().ok(),
        Some(dt)
    );
}

fn dtype_raw(raw: DLDataType) {
    match DataType::from_raw(raw) {
        Ok(dt) => valid_dtype(dt),
        Err(e) => {
            assert!(e.starts_with("invalid DLDataType: "), "{e}");
            let text = DataType(raw).to_string();
            assert!(
                DataType::parse(&text).is_err(),
                "invalid {raw:?} printed as {text:?}, which parses"
            );
            let mut out = rffi_core::any::NONE_RAW;
            // SAFETY: a readable dtype and a writable out-slot.
            assert_eq!(unsafe { RFFIDataTypeToString(&raw, &mut out) }, -1);
            assert_eq!(take_raised().expect("error raised").kind(), "ValueError");
            assert!(as_value(kRFFIDataType, raw).try_as::<DataType>().is_err());
        }
    }
}

fn device_text(bytes: &[u8]) {
    let Ok(text) = core::str::from_utf8(bytes) else {
        return;
    };
    match Device::parse(text) {
        Ok(dev) => valid_device(dev),
        Err(e) => assert!(e.starts_with("invalid device "), "{e}"),
    }
}

fn valid_device(dev: Device) {
    assert_eq!(Device::from_raw(dev.raw()), Ok(dev));
    let text = dev.to_string();
    assert_eq!(Device::parse(&text), Ok(dev), "printed as {text:?}");
    assert_eq!(
        as_value(kRFFIDevice, dev.raw()).try_as::<Device>().ok(),
        Some(dev)
    );
}

fn device_raw(raw: DLDevice) {
    match Device::from_raw(raw) {
        Ok(dev) => valid_device(dev),
        Err(e) => {
            assert!(e.starts_with("invalid DLDevice: "), "{e}");
            let text = Device(raw).to_string();
            assert!(
                Device::parse(&text).is_err(),
                "invalid {raw:?} printed as {text:?}, which parses"
            );
            assert!(as_value(kRFFIDevice, raw).try_as::<Device>().is_err());
        }
    }
}

/// A plain value of `type_index` whose payload holds `payload`'s bytes.
fn as_value<T: Copy>(type_index: i32, payload: T) -> AnyView<'static> {
    let mut raw: RFFIAny = rffi_core::any::NONE_RAW;
    raw.type_index = type_index;
    // SAFETY: `T` is a DLDataType or DLDevice (at most 8 bytes), written into the 8-byte payload.
    unsafe { (&raw mut raw.v).cast::<T>().write(payload) };
    // SAFETY: a plain value, no pointers.
    unsafe { AnyView::from_raw(raw) }
}
