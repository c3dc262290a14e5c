//! Target `callback_results`: a C callback that returns an arbitrary 16-byte value (any type
//! index, small-string length and payload; pointers to real objects of any type, NULL, or for an
//! index no type has, an unmapped address) with an arbitrary status, raising an error or not,
//! called through `RFFIFunctionCall`, through `Function::call`, and from inside a Rust function
//! (`testing.apply`), so the value reaches `foreign::check_value` on every way in.
//!
//! What must hold: the caller sees 0 exactly when the status is 0 and the value is well-formed
//! by the model below, and otherwise -1 with the callback's own error, or a RuntimeError naming
//! the bad status or the malformed value; an accepted value decodes like any other; every
//! reference the callback handed over is released exactly once.

use super::input::Input;
use super::pool::pool;
use super::values::{is_object_type, make_value, Role, Scratch};
use core::ffi::c_void;
use rffi_core::abi::*;
use rffi_core::capi::error::RFFIErrorSetRaisedFromCStr;
use rffi_core::capi::function::{RFFIFunctionCall, RFFIFunctionCreate};
use rffi_core::error::take_raised;
use rffi_core::foreign::check_value;
use rffi_core::object::dec_ref;
use rffi_core::{Any, Error, Function, ObjectRef};
use std::ptr::NonNull;

/// What the callback does.
struct Spec {
    value: RFFIAny,
    status: i32,
    raise: bool,
}

const RAISED: &str = "raised by the callback";

unsafe extern "C" fn callback(
    ctx: *mut c_void,
    _args: *const RFFIAny,
    _num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    // SAFETY: the context is the case's `Spec`, alive while its function is called.
    let spec = unsafe { &*ctx.cast::<Spec>() };
    // SAFETY: the runtime passes a writable result slot.
    unsafe { result.write(spec.value) };
    if spec.raise {
        // SAFETY: NUL-terminated strings.
        unsafe {
            RFFIErrorSetRaisedFromCStr(c"ValueError".as_ptr(), c"raised by the callback".as_ptr())
        };
    }
    spec.status
}

/// Whether the runtime must accept `v` as a result: the model of `check_value`.
fn well_formed(v: &RFFIAny) -> bool {
    // SAFETY: every pointer read below is NULL-checked first, and non-NULL object pointers are
    // live pool objects (see `make_value`).
    unsafe {
        match v.type_index {
            kRFFINone..=kRFFIDevice => true,
            kRFFIDLTensorPtr => !v.v.v_ptr.is_null(),
            kRFFISmallStr | kRFFISmallBytes => v.small_str_len <= 7,
            i if is_object_type(i) => !v.v.v_obj.is_null() && (*v.v.v_obj).type_index == i,
            _ => false,
        }
    }
}

pub fn run(data: &[u8]) {
    let _ = take_raised();
    let (pool, _case) = pool();
    {
        let mut input = Input::new(data);
        let mut scratch = Scratch::default();
        let status = match input.u8() % 8 {
            0..=4 => 0,
            5 => -1,
            6 => i32::from(input.u8() as i8),
            _ => input.i32(),
        };
        let raise = input.u8() % 4 == 0;
        let value = make_value(&mut input, pool, &mut scratch, Role::Result);
        let spec = Box::new(Spec {
            value,
            status,
            raise,
        });
        let mut handle = core::ptr::null_mut();
        // SAFETY: a callback following the calling convention, with its context; no deleter
        // (the context outlives the function: see the end of this block).
        let rc = unsafe {
            RFFIFunctionCreate(
                (&raw const *spec).cast_mut().cast(),
                Some(callback),
                None,
                &mut handle,
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: a new reference to a Function.
        let f: Function = rffi_core::ObjectType::from_object(unsafe {
            ObjectRef::from_raw(NonNull::new(handle.cast()).unwrap())
        })
        .unwrap_or_else(|_| panic!("not a Function"));
        let accepted = status == 0 && well_formed(&value);
        let outcome = match input.u8() % 3 {
            0 => through_c(&f),
            1 => f.call(&[]),
            _ => rffi_core::get_global_func("testing.apply")
                .unwrap()
                .call(&[Any::from(f.clone())]),
        };
        match outcome {
            Ok(v) => {
                assert!(
                    accepted,
                    "accepted status {status} with {}",
                    describe(&value)
                );
                // SAFETY: a value the runtime accepted.
                assert_eq!(unsafe { check_value(v.as_raw()) }, Ok(()));
                super::values::decode(&v.view(), input.u8());
                // The reference the callback gave (if any) is released when `v` drops.
                drop(v);
                let _ = take_raised();
            }
            Err(e) => {
                assert!(
                    !accepted,
                    "refused status {status} with {}: {}",
                    describe(&value),
                    e.message()
                );
                let message = e.message();
                if status != 0 && raise {
                    assert_eq!(
                        (e.kind().as_str(), message.as_str()),
                        ("ValueError", RAISED)
                    );
                } else if status != 0 {
                    assert_eq!(e.kind(), "RuntimeError");
                    assert!(message.contains("without raising an error"), "{message}");
                } else {
                    assert_eq!(e.kind(), "RuntimeError");
                    assert!(message.contains("returned a malformed value"), "{message}");
                }
                // A refused result's reference is the caller's to drop, never the runtime's.
                for &obj in &scratch.given {
                    // SAFETY: the reference `make_value` added for the result.
                    unsafe { dec_ref(obj) };
                }
            }
        }
        drop(f);
        drop(spec);
    }
    pool.assert_at_rest();
}

/// `RFFIFunctionCall` with no arguments, as a `Result`.
fn through_c(f: &Function) -> Result<Any, Error> {
    let mut result = rffi_core::any::NONE_RAW;
    // SAFETY: a live function, no arguments, a writable result slot.
    let rc = unsafe { RFFIFunctionCall(f.as_raw().cast(), core::ptr::null_mut(), 0, &mut result) };
    match rc {
        // SAFETY: on success the result slot holds an owned value.
        0 => Ok(unsafe { Any::from_raw(result) }),
        -1 => Err(take_raised().expect("-1 without an error raised")),
        rc => panic!("RFFIFunctionCall returned {rc}"),
    }
}

/// A raw value's fields, for failure messages.
fn describe(v: &RFFIAny) -> String {
    // SAFETY: reading the payload's 8 bytes as an integer is valid for every value.
    let payload = unsafe { v.v.v_int64 };
    format!(
        "type index {}, small_str_len {}, payload {payload:#x}",
        v.type_index, v.small_str_len
    )
}
