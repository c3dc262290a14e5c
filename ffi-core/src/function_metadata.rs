//! Metadata of global functions: type schema, docstring and argument names, beside the function
//! registry. A Rust typed closure carries its schema (see `TypedFn::signature`); other languages
//! attach one (`ffi.SetGlobalFuncMetadata`, `RFFIFunctionSetGlobalFromMethodInfo`), and Python
//! functions with annotations do so when registered.
//!
//! The metadata text is tvm-ffi's: a JSON object whose `type_schema` is itself a JSON string
//! (`{"type_schema": "{\"type\":\"ffi.Function\",\"args\":[...]}"}`), plus `doc` and
//! `arg_names` where known, and rffi's `"nonblocking"`: `true` for a function that returns
//! promptly, waits for no other thread and calls no function it is given, `"with_arguments"` for
//! one that also calls the Functions passed as its arguments, on the calling thread (see
//! `function_registry::Nonblocking`; the runtime's own such functions say so, others may attach
//! it), which lets a binding keep its interpreter lock during the call.

use crate::error::{Error, Result};
use crate::function_registry::{get_global_func, register_builtin, Nonblocking};
use crate::schema::{json_quote, parse_json, JsonValue, TypeSchema};
use std::sync::{OnceLock, RwLock};

/// A process-lifetime table, so leak checkers see it as reachable (see `lifetime_map`).
type Table = crate::lifetime_map::LifetimeMap<Box<str>, Box<str>>;

fn table() -> &'static RwLock<Table> {
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// Attaches metadata (a JSON object) to the global function `name`, replacing any earlier one.
pub fn set_global_func_metadata(name: &str, metadata: &str) -> Result<()> {
    if crate::plugin::is_plugin() {
        let f = get_global_func("ffi.SetGlobalFuncMetadata")
            .ok_or_else(|| Error::runtime_error("the host has no ffi.SetGlobalFuncMetadata"))?;
        f.call(&[name.into(), metadata.into()])?;
        return Ok(());
    }
    check_metadata(metadata)?;
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    t.insert(name.into(), metadata.into());
    Ok(())
}

/// Checks function metadata: a JSON object whose `type_schema`, if any, is a JSON string holding
/// a valid schema.
pub fn check_metadata(metadata: &str) -> Result<()> {
    match parse_json(metadata) {
        Ok(JsonValue::Object(kv)) => {
            if let Some((_, v)) = kv.iter().find(|(k, _)| k == "type_schema") {
                let text = v.as_str().ok_or_else(|| {
                    Error::value_error("metadata `type_schema` must be a JSON string")
                })?;
                TypeSchema::from_json(text)?;
            }
            let declared = kv.iter().find(|(k, _)| k == "nonblocking").map(|(_, v)| v);
            Nonblocking::from_metadata(declared)?;
            Ok(())
        }
        Ok(_) => Err(Error::value_error(
            "function metadata must be a JSON object",
        )),
        Err(e) => Err(Error::value_error(format!("invalid metadata JSON ({e})"))),
    }
}

/// The metadata of the global function `name`: what was attached, or, for a Rust typed closure,
/// its schema. `None` if the name is not registered.
pub fn get_global_func_metadata(name: &str) -> Option<String> {
    if crate::plugin::is_plugin() {
        let f = get_global_func("ffi.GetGlobalFuncMetadata")?;
        return f.call(&[name.into()]).ok()?.try_as::<String>().ok();
    }
    if let Some(m) = table().read().unwrap_or_else(|e| e.into_inner()).get(name) {
        return Some(m.to_string());
    }
    let f = get_global_func(name)?;
    let mut entries = Vec::new();
    if let Some(s) = f.signature() {
        entries.push(format!(r#""type_schema":{}"#, json_quote(&s.to_json())));
    }
    match crate::function_registry::declared_nonblocking(&f) {
        Nonblocking::No => {}
        Nonblocking::Yes => entries.push(r#""nonblocking":true"#.to_owned()),
        Nonblocking::WithArguments => entries.push(r#""nonblocking":"with_arguments""#.to_owned()),
    }
    Some(format!("{{{}}}", entries.join(",")))
}

/// What the global function `name` declares about blocking (its metadata's `"nonblocking"`),
/// without rendering the metadata; `None` if the name is not registered.
pub fn global_func_nonblocking(name: &str) -> Option<Nonblocking> {
    if crate::plugin::is_plugin() {
        let f = get_global_func("ffi.GetGlobalFuncNonblocking")?;
        let code = f.call(&[name.into()]).ok()?.try_as::<i64>().ok()?;
        return Some(Nonblocking::from_code(code));
    }
    if let Some(m) = table().read().unwrap_or_else(|e| e.into_inner()).get(name) {
        // Checked when attached, so it parses and its value is one of the three.
        let meta = parse_json(m).ok()?;
        return Some(
            Nonblocking::from_metadata(meta.get("nonblocking")).unwrap_or(Nonblocking::No),
        );
    }
    let f = get_global_func(name)?;
    Some(crate::function_registry::declared_nonblocking(&f))
}

/// `name(a: int, b: float) -> str` from a function schema and optional argument names.
pub fn render_signature(name: &str, schema: &TypeSchema, arg_names: &[String]) -> String {
    match schema {
        TypeSchema::Function(Some((ret, args))) => {
            let params: Vec<String> = args
                .iter()
                .enumerate()
                .map(|(i, a)| match arg_names.get(i) {
                    Some(n) => format!("{n}: {}", a.render()),
                    None => format!("_{i}: {}", a.render()),
                })
                .collect();
            format!("{name}({}) -> {}", params.join(", "), ret.render())
        }
        _ => format!("{name}(*args)"),
    }
}

register_builtin!(
    "ffi.GetGlobalFuncMetadata",
    |name: String| -> Result<String> {
        get_global_func_metadata(&name)
            .ok_or_else(|| Error::key_error(format!("no global function `{name}`")))
    }
);

// What `ffi.GetGlobalFuncMetadata` says under `"nonblocking"`, as a number: 0 (may block), 1
// (non-blocking), 2 (non-blocking with its arguments); see `Nonblocking`.
register_builtin!(
    "ffi.GetGlobalFuncNonblocking",
    |name: String| -> Result<i64> {
        global_func_nonblocking(&name)
            .map(|n| n as i64)
            .ok_or_else(|| Error::key_error(format!("no global function `{name}`")))
    }
);

register_builtin!(
    "ffi.SetGlobalFuncMetadata",
    |name: String, metadata: String| set_global_func_metadata(&name, &metadata)
);

register_builtin!("ffi.TypeSchemaRender", |schema: String| -> Result<String> {
    Ok(TypeSchema::from_json(&schema)?.render())
});

register_builtin!("ffi.TypeSchemaConvert", |schema: String,
                                            value: crate::Any|
 -> Result<crate::Any> {
    TypeSchema::from_json(&schema)?.convert(&value.view())
});
