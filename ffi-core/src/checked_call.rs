//! Functions checked against a signature at call: a wrapper that converts each argument with its
//! [`TypeSchema`] (int→float widening, containers element by element) and refuses what does not
//! fit with a TypeError naming the function, the argument (position and name), the expected and
//! actual types, and the signature; the result is checked the same way. It gives functions of
//! languages whose values carry no static types (Python, through its annotations) the checks a
//! Rust typed closure has, whichever language calls them.

use crate::any::AnyView;
use crate::error::{Error, Result};
use crate::function_metadata::render_signature;
use crate::function_registry::register_builtin;
use crate::schema::{parse_json, JsonValue, TypeSchema};
use crate::{Any, Function};

/// `inner` behind a check of its arguments and result against `schema` (an `ffi.Function`
/// schema: result first, then the arguments). `arg_names` name the arguments in messages;
/// `min_args` is how many arguments a call must give at least (the others have defaults in
/// `inner`). Errors name the function `name`.
pub fn with_signature(
    inner: Function,
    name: &str,
    schema: &TypeSchema,
    arg_names: Vec<String>,
    min_args: usize,
) -> Result<Function> {
    let TypeSchema::Function(Some((ret, args))) = schema else {
        return Err(Error::value_error(format!(
            "the signature of `{name}` must be a function schema with its argument types, not \
             {}",
            schema.render()
        )));
    };
    if min_args > args.len() {
        return Err(Error::value_error(format!(
            "`{name}`: {min_args} required arguments, but the signature has {}",
            args.len()
        )));
    }
    let rendered = render_signature(name, schema, &arg_names);
    let (ret, args, fname) = ((**ret).clone(), args.clone(), name.to_owned());
    let f = Function::from_packed(move |given: &[AnyView<'_>]| -> Result<Any> {
        let name = &fname;
        if given.len() < min_args || given.len() > args.len() {
            let expected = if min_args == args.len() {
                format!("{min_args}")
            } else {
                format!("{min_args} to {}", args.len())
            };
            return Err(Error::type_error(format!(
                "`{name}` expects {expected} argument{} but {} {} given (signature: {rendered})",
                if args.len() == 1 { "" } else { "s" },
                given.len(),
                if given.len() == 1 { "was" } else { "were" },
            )));
        }
        let mut converted = Vec::with_capacity(given.len());
        for (i, (v, t)) in given.iter().zip(&args).enumerate() {
            let arg = match arg_names.get(i) {
                Some(n) => format!("#{i} (`{n}`)"),
                None => format!("#{i}"),
            };
            converted.push(t.convert(v).map_err(|e| {
                Error::type_error(format!(
                    "Mismatched type on argument {arg} when calling `{name}`: {} (signature: \
                     {rendered})",
                    e.message()
                ))
            })?);
        }
        let out = inner.call(&converted)?;
        ret.convert(&out.view()).map_err(|e| {
            Error::type_error(format!(
                "`{name}` returned a value that does not fit its signature: {} (signature: \
                 {rendered})",
                e.message()
            ))
        })
    });
    f.set_name(name);
    Ok(f)
}

/// The `type_schema` and `arg_names` of function metadata (tvm-ffi's JSON form).
fn parse_metadata(metadata: &str) -> Result<(TypeSchema, Vec<String>)> {
    let meta = parse_json(metadata)
        .map_err(|e| Error::value_error(format!("invalid metadata JSON ({e})")))?;
    let schema = match meta.get("type_schema") {
        Some(JsonValue::Str(text)) => TypeSchema::from_json(text)?,
        _ => {
            return Err(Error::value_error(
                "the metadata has no `type_schema` string",
            ))
        }
    };
    let names = match meta.get("arg_names") {
        Some(JsonValue::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::value_error("`arg_names` must be strings"))?,
        _ => Vec::new(),
    };
    Ok((schema, names))
}

register_builtin!("ffi.FunctionWithSignature", |inner: Function,
                                                name: String,
                                                metadata: String,
                                                min_args: i64|
 -> Result<Function> {
    let (schema, names) = parse_metadata(&metadata)?;
    let min_args = usize::try_from(min_args)
        .map_err(|_| Error::value_error(format!("min_args must be >= 0, not {min_args}")))?;
    with_signature(inner, &name, &schema, names, min_args)
});
