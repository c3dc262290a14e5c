//! `ffi.*` functions: container construction and access for bindings that do not know the
//! containers' layouts (the Python binding, C callers), and function-registry queries. The
//! immutable containers' functions are declared non-blocking: they copy and count references,
//! take no lock and call nothing they are given.

use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::function_registry::{register_builtin, register_builtin_packed};
use crate::{Array, Map, Shape};

register_builtin_packed!(nonblocking "ffi.Array", |args: &[AnyView<'_>]| {
    let items = args
        .iter()
        .map(AnyView::to_owned)
        .collect::<Result<Vec<_>>>()?;
    Ok(Array::new(items).into())
});

register_builtin!(nonblocking "ffi.ArraySize", |a: Array| a.len() as i64);

register_builtin!(nonblocking "ffi.ArrayGetItem", |a: Array, i: i64| a.get_item(i));

register_builtin_packed!(nonblocking "ffi.Map", |args: &[AnyView<'_>]| {
    if args.len() % 2 != 0 {
        return Err(Error::type_error(format!(
            "`ffi.Map` expects key, value pairs but got {} arguments",
            args.len()
        )));
    }
    let pairs = args
        .chunks_exact(2)
        .map(|kv| Ok((kv[0].to_owned()?, kv[1].to_owned()?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Map::new(pairs)?.into())
});

register_builtin!(nonblocking "ffi.MapSize", |m: Map| m.len() as i64);

register_builtin_packed!(nonblocking "ffi.MapGetItem", |args: &[AnyView<'_>]| {
    let [m, k] = args else {
        return Err(Error::type_error(format!(
            "`ffi.MapGetItem` expects 2 arguments but {} were given",
            args.len()
        )));
    };
    m.try_as::<Map>()?.get_item(k)
});

register_builtin_packed!(nonblocking "ffi.MapCount", |args: &[AnyView<'_>]| {
    let [m, k] = args else {
        return Err(Error::type_error(format!(
            "`ffi.MapCount` expects 2 arguments but {} were given",
            args.len()
        )));
    };
    Ok(Any::from(m.try_as::<Map>()?.get(k)?.is_some() as i64))
});

// Keys and values flattened as [k0, v0, k1, v1, ...], in insertion order.
register_builtin!(nonblocking "ffi.MapItems", |m: Map| -> Result<Array> {
    let mut items = Vec::with_capacity(m.len() * 2);
    for (k, v) in m.iter() {
        items.push(k.to_owned()?);
        items.push(v.to_owned()?);
    }
    Ok(Array::new(items))
});

register_builtin_packed!(nonblocking "ffi.Shape", |args: &[AnyView<'_>]| {
    let dims = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            a.try_as::<i64>().map_err(|e| {
                Error::type_error(format!("`ffi.Shape` argument #{i}: {}", e.message()))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Shape::new(&dims).into())
});

register_builtin!("ffi.ListGlobalFunctionNames", || {
    Array::new(
        crate::list_global_func_names()
            .into_iter()
            .map(Any::from)
            .collect(),
    )
});

register_builtin!("ffi.RemoveGlobalFunction", |name: String| {
    crate::remove_global_func(name)
});

register_builtin!("ffi.ErrorBacktrace", |e: Error| e.backtrace());

register_builtin!(
    "ffi.ModuleLoadFromFile",
    |path: String| crate::Module::load(path)
);

register_builtin!("ffi.ModuleGetFunction", |m: crate::Module, name: String| m
    .get_function(&name));

register_builtin!(
    "ffi.ModuleListFunctions",
    |m: crate::Module| -> Result<Array> {
        Ok(Array::new(
            m.function_names()?.into_iter().map(Any::from).collect(),
        ))
    }
);

register_builtin!("ffi.ModulePath", |m: crate::Module| m.path());

// A new tensor from the environment allocator when one is set, else (CPU only) the built-in one:
// how code that reaches the runtime only through global functions (C++ plugins) makes tensors.
register_builtin!(
    "ffi.TensorEmpty",
    |shape: Shape, dtype: crate::DataType, device: crate::Device| crate::Tensor::empty(
        shape.as_slice(),
        dtype,
        device
    )
);
