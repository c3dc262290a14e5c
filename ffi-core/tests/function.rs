//! Functions: typed and packed closures, C callbacks, argument errors, panics.

use rffi_core::abi::{kRFFIInt, RFFIAny};
use rffi_core::{Any, AnyView, Array, Device, Error, Function, Result};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn typed_closure_converts_both_ways() {
    let f = Function::from_typed(|a: i64, b: f64| -> Result<f64> { Ok(a as f64 * b) });
    let r = f.call(&[Any::from(3i64), Any::from(1.5)]).unwrap();
    assert_eq!(r.try_as::<f64>().unwrap(), 4.5);
    // Plain return types work too, and so do strings, devices and options.
    let g = Function::from_typed(|s: String, d: Device, n: Option<i64>| {
        format!("{s}@{d}/{}", n.unwrap_or(-1))
    });
    let r = g
        .call(&[Any::from("x"), Any::from(Device::cuda(2)), Any::none()])
        .unwrap();
    assert_eq!(r.try_as::<String>().unwrap(), "x@cuda:2/-1");
}

#[test]
fn wrong_type_names_function_position_and_types() {
    let f = Function::from_typed(|a: i64, b: String| format!("{a}{b}"));
    rffi_core::register_global_func("test_fn.concat", f.clone(), false).unwrap();
    let e = f.call(&[Any::from(1i64), Any::from(2i64)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(
        e.message(),
        "Mismatched type on argument #1 when calling `test_fn.concat`: expected str but got int \
         (signature: test_fn.concat(_0: int, _1: str) -> str)"
    );
    let e = f.call(&[Any::from(1i64)]).unwrap_err();
    assert_eq!(
        e.message(),
        "`test_fn.concat` expects 2 arguments but 1 was given \
         (signature: test_fn.concat(_0: int, _1: str) -> str)"
    );
    let narrow = Function::from_typed(|x: u8| x);
    let e = narrow.call(&[Any::from(256i64)]).unwrap_err();
    assert_eq!(
        e.message(),
        "Mismatched type on argument #0 when calling `<anonymous>`: expected uint8 but got int 256 \
         (out of range 0..=255) (signature: <anonymous>(_0: int) -> int)"
    );
}

#[test]
fn packed_closure_sees_borrowed_arguments() {
    let f = Function::from_packed(|args: &[AnyView<'_>]| {
        let items = args
            .iter()
            .map(AnyView::to_owned)
            .collect::<Result<Vec<_>>>()?;
        Ok(Array::new(items).into())
    });
    let r = f.call(&[Any::from(1i64), Any::from("two")]).unwrap();
    let arr = r.try_as::<Array>().unwrap();
    assert_eq!(arr.len(), 2);
    assert_eq!(arr.get_item(1).unwrap().try_as::<String>().unwrap(), "two");
}

#[test]
fn errors_and_panics_become_errors() {
    let f = Function::from_typed(|x: i64| -> Result<i64> {
        if x < 0 {
            Err(Error::value_error(format!("negative: {x}")))
        } else {
            Ok(x)
        }
    });
    rffi_core::register_global_func("test_fn.non_negative", f.clone(), false).unwrap();
    let e = f.call(&[Any::from(-3i64)]).unwrap_err();
    assert_eq!(
        (e.kind().as_str(), e.message().as_str()),
        ("ValueError", "negative: -3")
    );
    let first = e.backtrace().lines().next().unwrap().to_owned();
    assert!(first.starts_with("  File \""), "{first}");
    assert!(first.ends_with("in test_fn.non_negative"), "{first}");
    assert!(first.contains("tests/function.rs"), "{first}");

    let p = Function::from_typed(|| -> i64 { panic!("kaboom {}", 7) });
    let e = p.call(&[]).unwrap_err();
    assert_eq!(e.kind(), "RuntimeError");
    assert_eq!(e.message(), "panic: kaboom 7");
    assert!(
        e.backtrace().contains("tests/function.rs"),
        "{}",
        e.backtrace()
    );

    // anyhow errors keep their context chain.
    let a = Function::from_typed(|| -> anyhow::Result<i64> {
        use anyhow::Context;
        Err(anyhow::anyhow!("disk on fire")).context("saving")
    });
    let e = a.call(&[]).unwrap_err();
    assert_eq!(e.message(), "saving: disk on fire");
}

static DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn c_double(
    ctx: *mut c_void,
    args: *const RFFIAny,
    n: i32,
    result: *mut RFFIAny,
) -> i32 {
    // SAFETY: test callback: called with one int argument and a writable result.
    unsafe {
        assert_eq!(n, 1);
        let scale = *(ctx as *const i64);
        (*result).type_index = kRFFIInt;
        (*result).v.v_int64 = (*args).v.v_int64 * scale;
    }
    0
}

unsafe extern "C" fn c_delete(ctx: *mut c_void) {
    // SAFETY: the context was made by Box::into_raw below.
    drop(unsafe { Box::from_raw(ctx as *mut i64) });
    DELETED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn c_callback_with_context_and_deleter() {
    let ctx = Box::into_raw(Box::new(3i64)).cast::<c_void>();
    // SAFETY: the callback follows the calling convention; the context is a leaked Box freed by
    // the deleter.
    let f = unsafe { Function::from_safe_call(ctx, c_double, Some(c_delete)) };
    let g = f.clone();
    assert_eq!(
        f.call(&[Any::from(14i64)])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        42
    );
    // Called from Rust code through the function registry's testing.apply.
    let apply = rffi_core::get_global_func("testing.apply").unwrap();
    let r = apply
        .call(&[Any::from(g.clone()), Any::from(5i64)])
        .unwrap();
    assert_eq!(r.try_as::<i64>().unwrap(), 15);
    drop(f);
    drop(g);
    assert_eq!(DELETED.load(Ordering::SeqCst), 1);
}
