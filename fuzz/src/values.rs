//! Target `any_args`: arbitrary 16-byte values as arguments. Each value has any type index,
//! small-string length and payload bits; where the payload is a pointer it points to something
//! real (a pooled object, possibly of another type than the index says; a C string; a byte array;
//! an rvalue slot; a DLTensor) or is NULL, or, for an index no type has, to an unmapped address,
//! so a runtime that reads it crashes the fuzzer. The values are decoded every way the runtime
//! decodes arguments (to owned values, through the C ABI, to each Rust type, printed) and passed
//! to functions through `RFFIFunctionCall`.
//!
//! What must hold: no crash; `to_owned` gives only well-formed values; conversions succeed only
//! for matching kinds; a call returns 0 or -1 with an error; references balance.

use super::dlpack::Layout;
use super::input::Input;
use super::pool::{pool, Pool};
use rffi_core::abi::*;
use rffi_core::capi::function::RFFIFunctionCall;
use rffi_core::capi::value::RFFIAnyViewToOwnedAny;
use rffi_core::error::take_raised;
use rffi_core::foreign::check_value;
use rffi_core::object::{dec_ref, inc_ref};
use rffi_core::{
    Any, AnyView, Array, DataType, Device, Error, Function, Map, ObjectRef, OpaquePtr, Shape,
    Tensor,
};
use std::ffi::CString;

/// Whether a value is an argument (borrowed) or a result (owned: an object carries a reference).
#[derive(Clone, Copy, PartialEq)]
pub enum Role {
    Argument,
    Result,
}

/// What the values of one case point to, alive until the case ends.
// Boxed: values point into them while the vectors grow.
#[allow(clippy::vec_box)]
#[derive(Default)]
pub struct Scratch {
    c_strings: Vec<CString>,
    byte_arrays: Vec<Box<RFFIByteArray>>,
    /// Rvalue slots, each holding a reference of its own (released at the end unless moved out).
    slots: Vec<Box<*mut RFFIObject>>,
    layouts: Vec<Box<Layout>>,
    /// References handed out with result values, in order.
    pub given: Vec<*mut RFFIObject>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for slot in &self.slots {
            if !slot.is_null() {
                // SAFETY: the slot still holds the reference it was given (not moved out).
                unsafe { dec_ref(**slot) };
            }
        }
    }
}

/// A value's type index: mostly the ABI's indices and their neighbours, sometimes any.
pub fn type_index(input: &mut Input<'_>) -> i32 {
    let sel = input.u8();
    match sel {
        0..=99 => i32::from(sel) - 2,
        100..=199 => 128 + i32::from(sel - 100) % 4,
        _ => input.i32(),
    }
}

/// Reads one value for `role`.
pub fn make_value(
    input: &mut Input<'_>,
    pool: &Pool,
    scratch: &mut Scratch,
    role: Role,
) -> RFFIAny {
    let index = type_index(input);
    let small_str_len = match input.u8() {
        0..=199 => u32::from(input.u8() % 12),
        _ => input.u32(),
    };
    let mut raw = RFFIAny {
        type_index: index,
        small_str_len,
        v: RFFIAnyValue {
            v_int64: input.i64(),
        },
    };
    let sel = input.u8();
    let null = sel % 5 == 0;
    match index {
        kRFFINone..=kRFFIDevice | kRFFISmallStr | kRFFISmallBytes => {}
        kRFFIDLTensorPtr => {
            raw.v.v_ptr = if null {
                core::ptr::null_mut()
            } else if sel % 2 == 0 {
                pool.dltensor.cast()
            } else {
                let layout = Layout::read(input);
                let p = (&raw const layout.dl).cast_mut().cast();
                scratch.layouts.push(layout);
                p
            };
        }
        kRFFIRawStr => {
            raw.v.v_c_str = if null {
                core::ptr::null()
            } else {
                let text = input.string(40);
                let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
                let s = CString::new(&text[..end]).unwrap();
                let p = s.as_ptr();
                scratch.c_strings.push(s);
                p
            };
        }
        kRFFIByteArrayPtr => {
            raw.v.v_ptr = if null {
                core::ptr::null_mut()
            } else {
                let ba = if sel % 2 == 0 {
                    let text = input.string(40);
                    RFFIByteArray {
                        data: text.as_ptr().cast(),
                        size: text.len(),
                    }
                } else {
                    RFFIByteArray {
                        data: core::ptr::null(),
                        size: input.edgy_u64() as usize,
                    }
                };
                let mut ba = Box::new(ba);
                let p = (&raw mut *ba).cast();
                scratch.byte_arrays.push(ba);
                p
            };
        }
        kRFFIObjectRValueRef => {
            raw.v.v_ptr = if null {
                core::ptr::null_mut()
            } else {
                let obj = if sel % 3 == 0 {
                    core::ptr::null_mut()
                } else {
                    let obj = pool_object(pool, input.u8());
                    // SAFETY: a live pool object; the slot's reference, released by `Scratch`.
                    unsafe { inc_ref(obj) };
                    obj
                };
                let mut slot = Box::new(obj);
                let p = (&raw mut *slot).cast();
                scratch.slots.push(slot);
                p
            };
        }
        _ if is_object_type(index) => {
            raw.v.v_obj = if null {
                core::ptr::null_mut()
            } else {
                let obj = pool_object(pool, input.u8());
                if role == Role::Result {
                    // SAFETY: a live pool object; the reference goes with the result.
                    unsafe { inc_ref(obj) };
                    scratch.given.push(obj);
                }
                obj
            };
        }
        // No type has this index: its payload must never be read, so it points nowhere.
        _ => raw.v.v_int64 = if null { 0 } else { i64::from(input.u16() | 1) },
    }
    raw
}

fn pool_object(pool: &Pool, sel: u8) -> *mut RFFIObject {
    pool.object(sel).view().as_object().unwrap().as_ptr()
}

/// Whether `index` is the index of an object type (static, or registered at run time).
pub fn is_object_type(index: i32) -> bool {
    index >= kRFFIStaticObjectBegin && rffi_core::type_registry::type_index_to_key(index).is_some()
}

pub fn run(data: &[u8]) {
    let _ = take_raised();
    let (pool, _case) = pool();
    {
        let mut input = Input::new(data);
        let mut scratch = Scratch::default();
        let n = usize::from(input.u8() % 5);
        let mut args: Vec<RFFIAny> = (0..n)
            .map(|_| make_value(&mut input, pool, &mut scratch, Role::Argument))
            .collect();
        let how = input.u8();
        for (i, raw) in args.iter().enumerate() {
            // SAFETY: every pointer in the value is live for this case (see `make_value`).
            let view = unsafe { AnyView::from_raw(*raw) };
            decode(&view, how.rotate_left(i as u32));
        }
        let (name, f) = &pool.callees[usize::from(input.u8()) % pool.callees.len()];
        call(f, name, &mut args);
    }
    pool.assert_at_rest();
}

/// Calls `f` with `args` through the C ABI.
fn call(f: &Function, name: &str, args: &mut [RFFIAny]) {
    let mut result = rffi_core::any::NONE_RAW;
    // SAFETY: a live function; `args` holds valid views; a writable result slot.
    let rc = unsafe {
        RFFIFunctionCall(
            f.as_raw().cast(),
            args.as_mut_ptr(),
            args.len() as i32,
            &mut result,
        )
    };
    match rc {
        0 => {
            // SAFETY: on success the result is an owned, well-formed value.
            assert_eq!(unsafe { check_value(&result) }, Ok(()), "{name}");
            assert!(
                take_raised().is_none(),
                "{name} succeeded with an error raised"
            );
            // SAFETY: as above.
            let owned = unsafe { Any::from_raw(result) };
            let _ = format!("{owned:?}");
        }
        -1 => {
            let e = take_raised().unwrap_or_else(|| panic!("{name}: -1 without an error"));
            assert!(!e.kind().is_empty());
            let _ = e.message();
        }
        rc => panic!("{name} returned {rc}"),
    }
}

/// Decodes a value every way arguments are decoded; `how` picks how an rvalue reference is
/// taken (moving out is destructive, so only one way per case).
pub fn decode(view: &AnyView<'_>, how: u8) {
    let index = view.type_index();
    let _ = format!("{view:?}");
    let _ = view.type_name();
    if index == kRFFIObjectRValueRef {
        match how % 4 {
            0 => owned(view),
            1 => owned_c(view),
            2 => {
                let _ = view.try_as::<ObjectRef>();
            }
            _ => {
                let _ = view.try_as::<Array>();
            }
        }
        return;
    }
    owned(view);
    owned_c(view);
    // Plain kinds convert only from their own indices.
    if view.try_as::<i64>().is_ok() || view.try_as::<bool>().is_ok() {
        assert!(matches!(index, kRFFIInt | kRFFIBool));
    }
    if view.try_as::<f64>().is_ok() {
        assert!(matches!(index, kRFFIInt | kRFFIBool | kRFFIFloat));
    }
    // A Device comes from a Device, or from a string naming one ("cuda:1"), never from bytes.
    if view.try_as::<Device>().is_ok() {
        assert!(matches!(
            index,
            kRFFIDevice | kRFFIRawStr | kRFFISmallStr | kRFFIStr
        ));
    }
    if let Ok(d) = view.try_as::<DataType>() {
        assert!(DataType::from_raw(d.raw()).is_ok());
        assert!(matches!(
            index,
            kRFFIDataType | kRFFIRawStr | kRFFISmallStr | kRFFIStr
        ));
    }
    if let Ok(s) = view.try_as::<String>() {
        let from = [kRFFIRawStr, kRFFIByteArrayPtr, kRFFISmallStr, kRFFIStr];
        assert!(from.contains(&index), "{index}: {s:?}");
    }
    if view.try_as::<Vec<u8>>().is_ok() {
        assert!(matches!(
            index,
            kRFFIByteArrayPtr | kRFFISmallBytes | kRFFIBytes
        ));
    }
    let _ = view.try_as::<OpaquePtr>();
    let _ = view.try_as::<()>();
    let _ = view.try_as::<Option<i64>>();
    if let Ok(obj) = view.try_as::<ObjectRef>() {
        assert!(is_object_type(obj.type_index()));
    }
    typed::<Array>(view);
    typed::<Map>(view);
    typed::<Function>(view);
    typed::<Shape>(view);
    typed::<Error>(view);
    if let Ok(t) = view.try_as::<Tensor>() {
        let _ = (
            t.shape().to_vec(),
            t.strides().to_vec(),
            t.dtype(),
            t.device(),
        );
    }
}

/// A typed object conversion: it succeeds only for a live object whose header says its type.
fn typed<T: rffi_core::FromAny + rffi_core::ObjectType>(view: &AnyView<'_>) {
    if let Ok(x) = view.try_as::<T>() {
        let obj = x.as_object();
        assert_eq!(
            rffi_core::type_registry::type_index_to_key(obj.type_index()),
            Some(T::TYPE_KEY)
        );
        let _ = format!("{:?}", Any::from(obj.clone()));
    }
}

/// `to_owned`: what it gives is well-formed and owns no borrowed kind.
fn owned(view: &AnyView<'_>) {
    if let Ok(v) = view.to_owned() {
        // SAFETY: a value the runtime made.
        assert_eq!(unsafe { check_value(v.as_raw()) }, Ok(()));
        assert!(!matches!(
            v.type_index(),
            kRFFIRawStr | kRFFIByteArrayPtr | kRFFIObjectRValueRef | kRFFIDLTensorPtr
        ));
        let _ = format!("{v:?}");
    }
}

/// `RFFIAnyViewToOwnedAny`: agrees with `to_owned`.
fn owned_c(view: &AnyView<'_>) {
    let mut out = rffi_core::any::NONE_RAW;
    // SAFETY: a valid view and a writable out-slot.
    match unsafe { RFFIAnyViewToOwnedAny(view.as_raw(), &mut out) } {
        0 => {
            // SAFETY: an owned value the runtime made.
            assert_eq!(unsafe { check_value(&out) }, Ok(()));
            // SAFETY: as above.
            drop(unsafe { Any::from_raw(out) });
        }
        -1 => {
            let e = take_raised().expect("-1 without an error");
            assert!(
                matches!(&*e.kind(), "ValueError" | "TypeError"),
                "{}",
                e.kind()
            );
        }
        rc => panic!("RFFIAnyViewToOwnedAny returned {rc}"),
    }
}
