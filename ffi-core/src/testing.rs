//! `testing.*` functions registered by the runtime, for the tests of every binding.

use core::ffi::c_void;

use crate::abi::RFFIAny;
use crate::any::{Any, AnyView, OpaquePtr};
use crate::error::{Error, Result};
use crate::function::Function;
use crate::function_registry::{register_builtin, register_builtin_packed};
use crate::object::ObjectRef;

register_builtin_packed!(nonblocking "testing.nop", |_args: &[AnyView<'_>]| Ok(Any::none()));

register_builtin_packed!(nonblocking "testing.echo", |args: &[AnyView<'_>]| match args.first() {
    Some(a) => a.to_owned(),
    None => Err(Error::type_error(
        "`testing.echo` expects at least 1 argument but 0 were given"
    )),
});

register_builtin!(nonblocking "testing.add_one", |x: i64| -> Result<i64> {
    x.checked_add(1)
        .ok_or_else(|| Error::value_error(format!("{x} + 1 overflows int64")))
});

register_builtin_packed!(nonblocking_with_arguments "testing.apply", |args: &[AnyView<'_>]| {
    let Some((f, rest)) = args.split_first() else {
        return Err(Error::type_error(
            "`testing.apply` expects a function and its arguments but got no arguments",
        ));
    };
    let f: Function = f
        .try_as()
        .map_err(|e| Error::type_error(format!("`testing.apply` argument #0: {}", e.message())))?;
    f.call_views(rest)
});

fn raise_error(kind: String, message: String) -> Result<()> {
    crate::function_registry::check_name("an error kind", &kind)?;
    Err(Error::new(&kind, message))
}

register_builtin!("testing.raise_error", raise_error);
// tvm-ffi's name for it, so tests written against tvm-ffi's testing functions run unchanged.
register_builtin!("testing.test_raise_error", raise_error);

// A typed Device parameter: what a caller's argument (a Device, or a string naming one)
// arrives as.
register_builtin!(
    "testing.schema_id_device",
    |d: crate::Device| -> crate::Device { d }
);

register_builtin!(nonblocking "testing.object_use_count", |obj: ObjectRef| -> i64 {
    // The argument holds one reference of its own for the duration of the call.
    obj.strong_count() as i64 - 1
});

register_builtin!("testing.panic", |message: String| -> Result<()> {
    panic!("{message}")
});

/// A C function of the runtime's safe-call signature that adds one to its int argument: what a
/// binding wraps when handed the address of a compiled function (`testing.get_add_one_c_symbol`).
///
/// # Safety
/// `args` holds `num_args` valid values; `result` is null or a zeroed value the caller owns.
unsafe extern "C" fn add_one_c_symbol(
    _resource: *mut c_void,
    args: *const RFFIAny,
    num_args: i32,
    result: *mut RFFIAny,
) -> i32 {
    let add_one = || -> Result<Any> {
        if num_args != 1 || args.is_null() {
            return Err(Error::type_error(format!(
                "the add_one C symbol expects 1 argument but {num_args} were given"
            )));
        }
        // SAFETY: the caller passes one valid value that outlives the call.
        let views = unsafe { AnyView::slice_from_raw(args, 1) };
        let x: i64 = views[0].try_as().map_err(|e| {
            Error::type_error(format!(
                "the add_one C symbol, argument #0: {}",
                e.message()
            ))
        })?;
        x.checked_add(1)
            .map(Any::from)
            .ok_or_else(|| Error::value_error(format!("{x} + 1 overflows int64")))
    };
    match add_one() {
        Ok(value) => {
            if !result.is_null() {
                // SAFETY: the caller owns `result`, zeroed (no object to release).
                unsafe { result.write(value.into_raw()) };
            }
            0
        }
        Err(e) => {
            crate::error::set_raised(e);
            -1
        }
    }
}

register_builtin!("testing.get_add_one_c_symbol", || OpaquePtr(
    add_one_c_symbol as *mut c_void
));
