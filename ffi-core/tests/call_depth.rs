//! The call-depth guard seen from Rust: the environment variable (read once, when the first C
//! callback is entered), the global functions that change the limit, and recursion through C
//! callbacks made in Rust. One test: the limit is process-wide.

use rffi_core::abi::RFFIAny;
use rffi_core::{get_global_func, Any, Function};
use std::ffi::c_void;

/// A C callback `f(k)` that calls the Function in its context with `k - 1` until 0.
unsafe extern "C" fn countdown(
    ctx: *mut c_void,
    args: *const RFFIAny,
    n: i32,
    result: *mut RFFIAny,
) -> i32 {
    assert_eq!(n, 1);
    // SAFETY: the context is the Function cell set up by `countdown_fn`; one argument.
    let (f, k) = unsafe { (&*ctx.cast::<Option<Function>>(), (*args).v.v_int64) };
    let value = if k == 0 {
        Any::from(0i64)
    } else {
        match f.as_ref().unwrap().call(&[Any::from(k - 1)]) {
            Ok(v) => v,
            Err(e) => {
                rffi_core::error::set_raised(e);
                return -1;
            }
        }
    };
    // SAFETY: the caller's result slot.
    unsafe { result.write(value.into_raw()) };
    0
}

fn countdown_fn() -> (Function, Box<Option<Function>>) {
    let mut cell: Box<Option<Function>> = Box::new(None);
    // SAFETY: `countdown` follows the calling convention; the cell outlives the calls.
    let f = unsafe {
        Function::from_safe_call(
            (&mut *cell as *mut Option<Function>).cast(),
            countdown,
            None,
        )
    };
    *cell = Some(f.clone());
    (f, cell)
}

#[test]
fn depth_limit_from_the_environment_and_the_function_registry() {
    let (f, mut cell) = countdown_fn();
    std::env::set_var("RFFI_MAX_CALL_DEPTH", "lots");
    let e = f.call(&[Any::from(3i64)]).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(
        e.message()
            .contains("RFFI_MAX_CALL_DEPTH=\"lots\" is not a call depth"),
        "{}",
        e.message()
    );
    std::env::set_var("RFFI_MAX_CALL_DEPTH", "40");
    assert_eq!(
        f.call(&[Any::from(39i64)])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        0
    );
    let e = f.call(&[Any::from(40i64)]).unwrap_err();
    assert_eq!(e.kind(), "RecursionError");
    assert!(
        e.message()
            .starts_with("maximum call depth 40 exceeded when calling an unnamed C function"),
        "{}",
        e.message()
    );
    // The depth is back to 0 after the failure: a shallow call works.
    assert!(f.call(&[Any::from(1i64)]).is_ok());

    let get = get_global_func("ffi.GetMaxCallDepth").unwrap();
    let set = get_global_func("ffi.SetMaxCallDepth").unwrap();
    assert_eq!(get.call(&[]).unwrap().try_as::<i64>().unwrap(), 40);
    assert_eq!(
        set.call(&[Any::from(100i64)])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        40
    );
    assert!(f.call(&[Any::from(99i64)]).is_ok());
    assert_eq!(
        f.call(&[Any::from(100i64)]).unwrap_err().kind(),
        "RecursionError"
    );
    for bad in [0i64, -1, 1 << 40] {
        let e = set.call(&[Any::from(bad)]).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(
            e.message().contains(&format!("not {bad}")),
            "{}",
            e.message()
        );
    }
    assert_eq!(get.call(&[]).unwrap().try_as::<i64>().unwrap(), 100);
    // Break the cycle Function -> context -> Function.
    cell.take();
}
