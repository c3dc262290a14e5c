//! Shard plans in the shape of TVM's `shard_info.json`:
//! `{param: [[func_name, [out_shape, out_dtype], extra...], ...]}`. Each step calls the global
//! function `func_name` as `func(input, *extra, output)` with `output` allocated by the loader from
//! the declared shape and dtype; the last output's leading dimension is the worker count, and
//! worker `i` keeps slice `i`. Parameters without an entry are replicated.

use rffi_core::{Any, DataType, Error, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// One step of a parameter's plan.
#[derive(Clone, Debug)]
pub struct Step {
    /// The global function that makes this step's output (`rffi.shard.split`, ...).
    pub func: String,
    /// The shape of the step's output on each worker.
    pub out_shape: Vec<i64>,
    /// The dtype of the step's output.
    pub out_dtype: DataType,
    /// The arguments between the input and the output (ints, floats, strings, bools).
    pub extra: Vec<serde_json::Value>,
}

impl Step {
    /// The extra arguments as runtime values.
    pub fn extra_args(&self) -> Vec<Any> {
        self.extra
            .iter()
            .map(|v| match v {
                serde_json::Value::Bool(b) => Any::from(*b),
                serde_json::Value::Number(n) => match n.as_i64() {
                    Some(i) => Any::from(i),
                    None => Any::from(n.as_f64().unwrap_or(f64::NAN)),
                },
                serde_json::Value::String(s) => Any::from(s.as_str()),
                _ => Any::from(()),
            })
            .collect()
    }
}

/// The plan of every sharded parameter.
#[derive(Clone, Debug, Default)]
pub struct ShardInfo {
    /// Each sharded parameter's steps, by name (parameters not named are replicated).
    pub params: BTreeMap<String, Vec<Step>>,
    json: String,
}

fn bad(what: &str, msg: impl std::fmt::Display) -> Error {
    Error::value_error(format!("shard_info: {what}: {msg}"))
}

fn parse_step(name: &str, k: usize, v: &serde_json::Value) -> Result<Step> {
    let what = format!("parameter `{name}`, step {k}");
    let a = v.as_array().ok_or_else(|| {
        bad(
            &what,
            "expected [func_name, [out_shape, out_dtype], extra...]",
        )
    })?;
    let func = a
        .first()
        .and_then(|f| f.as_str())
        .ok_or_else(|| bad(&what, "the first item must be a function name"))?;
    let out = a.get(1).and_then(|o| o.as_array()).filter(|o| o.len() == 2);
    let out = out.ok_or_else(|| bad(&what, "the second item must be [out_shape, out_dtype]"))?;
    let out_shape = out[0]
        .as_array()
        .and_then(|s| s.iter().map(|d| d.as_i64().filter(|d| *d >= 0)).collect())
        .ok_or_else(|| {
            bad(
                &what,
                format!("out_shape {} is not a list of sizes", out[0]),
            )
        })?;
    let out_dtype = out[1]
        .as_str()
        .ok_or_else(|| bad(&what, format!("out_dtype {} is not a string", out[1])))
        .and_then(|s| DataType::parse(s).map_err(|e| bad(&what, format!("out_dtype: {e}"))))?;
    let extra = a[2..].to_vec();
    if let Some(x) = extra
        .iter()
        .find(|x| !(x.is_number() || x.is_string() || x.is_boolean()))
    {
        return Err(bad(
            &what,
            format!("extra argument {x} is not a number, string or bool"),
        ));
    }
    Ok(Step {
        func: func.to_string(),
        out_shape,
        out_dtype,
        extra,
    })
}

impl ShardInfo {
    /// Parses the JSON text of a plan.
    pub fn parse(json: &str) -> Result<ShardInfo> {
        let v: serde_json::Value =
            serde_json::from_str(json).map_err(|e| bad("malformed JSON", e))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("top level", "expected an object {param: [steps...]}"))?;
        let mut params = BTreeMap::new();
        for (name, steps) in obj {
            let steps = steps
                .as_array()
                .ok_or_else(|| bad(&format!("parameter `{name}`"), "expected a list of steps"))?;
            let steps = steps
                .iter()
                .enumerate()
                .map(|(k, s)| parse_step(name, k, s))
                .collect::<Result<Vec<_>>>()?;
            params.insert(name.clone(), steps);
        }
        Ok(ShardInfo {
            params,
            json: json.to_string(),
        })
    }

    /// Reads and parses a `shard_info.json` file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<ShardInfo> {
        let p = path.as_ref();
        let text = std::fs::read_to_string(p)
            .map_err(|e| Error::value_error(format!("shard_info `{}`: {e}", p.display())))?;
        Self::parse(&text)
    }

    /// JSON text (starts with `{`), a path to a JSON file, or empty (nothing sharded).
    pub fn from_text_or_path(s: &str) -> Result<ShardInfo> {
        match s.trim_start() {
            "" => Self::parse("{}"),
            t if t.starts_with('{') => Self::parse(t),
            _ => Self::from_path(s),
        }
    }

    /// The JSON text this plan was parsed from (what workers are sent).
    pub fn json(&self) -> &str {
        &self.json
    }
}
