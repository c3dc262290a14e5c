//! `testing.*` functions registered by the runtime, for the tests of every binding.

use crate::any::{Any, AnyView};
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
