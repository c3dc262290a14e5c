//! The structural operations as global functions (tvm-ffi's names), for C and the bindings.

use super::*;
use crate::any::{Any, AnyView};
use crate::function_registry::{register_builtin, register_builtin_packed};
use crate::Array;

/// Checks the argument count of `f` (between `min` and `max`).
fn arity(f: &str, args: &[AnyView<'_>], min: usize, max: usize) -> Result<()> {
    if (min..=max).contains(&args.len()) {
        return Ok(());
    }
    Err(Error::type_error(format!(
        "{f}() takes {} arguments, got {}",
        if min == max {
            min.to_string()
        } else {
            format!("{min} to {max}")
        },
        args.len()
    )))
}

/// The optional flag at `i` (absent: false).
fn flag(f: &str, args: &[AnyView<'_>], i: usize) -> Result<bool> {
    match args.get(i) {
        None => Ok(false),
        Some(v) => v.try_as::<bool>().map_err(|_| {
            Error::type_error(format!(
                "{f}() argument #{i} must be a bool, not {}",
                v.type_name()
            ))
        }),
    }
}

/// `(map_free_vars, skip_tensor_content)` from positions `i` and `i + 1`.
fn options(f: &str, args: &[AnyView<'_>], i: usize) -> Result<Options> {
    Ok(Options {
        map_free_vars: flag(f, args, i)?,
        skip_tensor_content: flag(f, args, i + 1)?,
    })
}

register_builtin_packed!("ffi.StructuralEqual", |args: &[AnyView<'_>]| {
    const F: &str = "ffi.StructuralEqual";
    arity(F, args, 2, 4)?;
    Ok(structural_equal(&args[0], &args[1], options(F, args, 2)?)?.into())
});

register_builtin_packed!("ffi.StructuralHash", |args: &[AnyView<'_>]| {
    const F: &str = "ffi.StructuralHash";
    arity(F, args, 1, 3)?;
    Ok((structural_hash(&args[0], options(F, args, 1)?)? as i64).into())
});

register_builtin_packed!("ffi.GetFirstStructuralMismatch", |args: &[AnyView<
    '_,
>]| {
    const F: &str = "ffi.GetFirstStructuralMismatch";
    arity(F, args, 2, 4)?;
    Ok(
        match first_mismatch(&args[0], &args[1], options(F, args, 2)?)? {
            None => Any::none(),
            Some((l, r)) => Array::new(vec![l.into(), r.into()]).into(),
        },
    )
});

register_builtin!("ffi.RecursiveEq", |a: Any, b: Any| recursive_eq(
    &a.view(),
    &b.view()
));
register_builtin!("ffi.RecursiveLt", |a: Any, b: Any| recursive_lt(
    &a.view(),
    &b.view()
));
register_builtin!("ffi.RecursiveLe", |a: Any, b: Any| recursive_le(
    &a.view(),
    &b.view()
));
register_builtin!("ffi.RecursiveGt", |a: Any, b: Any| recursive_gt(
    &a.view(),
    &b.view()
));
register_builtin!("ffi.RecursiveGe", |a: Any, b: Any| recursive_ge(
    &a.view(),
    &b.view()
));
register_builtin!("ffi.RecursiveHash", |a: Any| -> Result<i64> {
    Ok(recursive_hash(&a.view())? as i64)
});

register_builtin!("ffi.DeepCopy", |a: Any| deep_copy(&a.view()));
register_builtin!("ffi.ShallowCopy", |a: Any| shallow_copy(&a.view()));

register_builtin_packed!("ffi.ReprPrint", |args: &[AnyView<'_>]| {
    arity("ffi.ReprPrint", args, 1, 2)?;
    let width = match args.get(1) {
        None => 0,
        Some(w) if w.is_none() => 0,
        Some(w) => usize::try_from(w.try_as::<i64>()?).map_err(|_| {
            Error::value_error("ffi.ReprPrint() width must be 0 (one line) or more")
        })?,
    };
    Ok(repr_print(&args[0], width)?.into())
});

register_builtin_packed!("ffi.ToJSONGraphString", |args: &[AnyView<'_>]| {
    arity("ffi.ToJSONGraphString", args, 1, 2)?;
    Ok(to_json_graph(&args[0], args.get(1))?.into())
});

register_builtin!("ffi.FromJSONGraphString", |text: String| from_json_graph(
    &text
));

register_builtin!("ffi.TypeSetStructuralEqHashKind", |key_or_index: Any,
                                                      kind: i64|
 -> Result<()> {
    let index = match key_or_index.try_as::<i64>() {
        Ok(i) => {
            i32::try_from(i).map_err(|_| Error::key_error(format!("unknown type index {i}")))?
        }
        Err(_) => {
            let key = key_or_index.try_as::<String>()?;
            crate::type_registry::type_key_to_index(&key)
                .ok_or_else(|| Error::key_error(format!("unknown type key `{key}`")))?
        }
    };
    let kind = i32::try_from(kind).map_err(|_| Error::value_error("kind out of range"))?;
    set_eq_hash_kind(index, kind)
});
