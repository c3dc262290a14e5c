//! Tuning configs as data: JSON files per backend (`default.json`) and per arch (`sm_90.json`).
//!
//! A file maps a kernel key to a list of entries. A plain entry is an object of integer launch
//! parameters, optionally with a `when` condition over the problem size:
//!
//! ```json
//! { "softmax": [ { "threads": 128, "when": "cols <= 1024" }, { "threads": 512 } ] }
//! ```
//!
//! A `gen` entry expands named value lists into their Cartesian product (in the order written),
//! optionally filtered by a `where` constraint over the generated values; `set` adds fixed values
//! and `when` applies to every generated config:
//!
//! ```json
//! { "add": [ { "gen": { "threads": [128, 256, 512], "vec": [1, 2, 4] },
//!              "where": "threads * vec <= 1024", "set": { "waves": 4 } } ] }
//! ```
//!
//! Keys starting with `_` are comments. Lookup precedence for a key: the arch file, then the
//! backend file, then the kernel's built-in default (the kernel's own code, when nothing
//! matches). One expander serves every op; there is no per-op code here.

use crate::expr::Expr;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// One launch configuration: named integer parameters, in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The parameters by name, in file order.
    pub params: Vec<(String, i64)>,
    /// Applies only when this holds over the problem variables (and the params).
    pub when: Option<Expr>,
    /// Where it was written: `sm_90.json softmax[2]` (file, key, entry index), for `explain`.
    pub origin: String,
}

impl Config {
    /// The parameter `name`, if the config has it.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// `sm_90.json softmax[2] when cols <= 1024`: where the entry is and its condition.
    pub fn describe(&self) -> String {
        match &self.when {
            Some(w) => format!("{} (when {w})", self.origin),
            None => self.origin.clone(),
        }
    }
}

/// The configs of one file: kernel key → entries, expanded.
pub type Layer = HashMap<String, Vec<Config>>;

/// A backend's tuning: the backend layer and one layer per arch.
#[derive(Clone, Debug, Default)]
pub struct TuneTable {
    /// The configs for every arch of the backend.
    pub backend: Layer,
    /// The configs for one arch (`"sm_90"`), which come before the backend's.
    pub arch: HashMap<String, Layer>,
    /// Where the files came from, for `describe()`.
    pub source: String,
    /// Unique to this table in the process (never reused), so that a kernel may remember what
    /// it derived from the table (`TuneView::id`).
    pub id: u64,
}

fn int_of(v: &Value, what: &str) -> Result<i64, String> {
    v.as_i64()
        .or_else(|| v.as_bool().map(i64::from))
        .ok_or_else(|| format!("{what} must be an integer, got {v}"))
}

fn expr_of(v: &Value, what: &str) -> Result<Expr, String> {
    let s = v
        .as_str()
        .ok_or_else(|| format!("`{what}` must be a string expression, got {v}"))?;
    Expr::parse(s).map_err(|e| format!("`{what}` {e}"))
}

/// Expands one entry (plain or `gen`) into configs.
pub fn expand_entry(entry: &Value) -> Result<Vec<Config>, String> {
    let obj = entry
        .as_object()
        .ok_or_else(|| format!("an entry must be an object, got {entry}"))?;
    let when = obj.get("when").map(|w| expr_of(w, "when")).transpose()?;
    let Some(gen) = obj.get("gen") else {
        let mut params = Vec::new();
        for (k, v) in obj {
            if k == "when" || k.starts_with('_') {
                continue;
            }
            if k == "where" || k == "set" {
                return Err(format!("`{k}` is only valid in a `gen` entry"));
            }
            params.push((k.clone(), int_of(v, &format!("parameter `{k}`"))?));
        }
        return Ok(vec![Config {
            params,
            when,
            origin: String::new(),
        }]);
    };
    for k in obj.keys() {
        if !matches!(k.as_str(), "gen" | "where" | "set" | "when") && !k.starts_with('_') {
            return Err(format!(
                "unknown key `{k}` in a `gen` entry (expected gen, where, set, when)"
            ));
        }
    }
    let lists = gen
        .as_object()
        .ok_or_else(|| format!("`gen` must map names to value lists, got {gen}"))?;
    let mut axes: Vec<(String, Vec<i64>)> = Vec::new();
    for (name, values) in lists {
        let values = match values {
            Value::Array(items) => items
                .iter()
                .map(|v| int_of(v, &format!("gen value of `{name}`")))
                .collect::<Result<Vec<_>, _>>()?,
            // A single value is a list of one.
            v => vec![int_of(v, &format!("gen value of `{name}`"))?],
        };
        if values.is_empty() {
            return Err(format!("gen list `{name}` is empty"));
        }
        axes.push((name.clone(), values));
    }
    let fixed: Vec<(String, i64)> = match obj.get("set") {
        None => Vec::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| Ok((k.clone(), int_of(v, &format!("set `{k}`"))?)))
            .collect::<Result<_, String>>()?,
        Some(v) => return Err(format!("`set` must be an object, got {v}")),
    };
    let constraint = obj.get("where").map(|w| expr_of(w, "where")).transpose()?;
    let mut out = Vec::new();
    // Odometer over the axes, last axis fastest.
    let mut idx = vec![0usize; axes.len()];
    loop {
        let mut params: Vec<(String, i64)> = axes
            .iter()
            .zip(&idx)
            .map(|((n, vals), &i)| (n.clone(), vals[i]))
            .collect();
        params.extend(fixed.iter().cloned());
        let keep = match &constraint {
            None => true,
            Some(c) => {
                c.holds(&|name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| *v))?
            }
        };
        if keep {
            out.push(Config {
                params,
                when: when.clone(),
                origin: String::new(),
            });
        }
        let mut axis = axes.len();
        loop {
            if axis == 0 {
                return Ok(out);
            }
            axis -= 1;
            idx[axis] += 1;
            if idx[axis] < axes[axis].1.len() {
                break;
            }
            idx[axis] = 0;
        }
    }
}

/// Parses one file's text into a layer.
pub fn parse_layer(text: &str) -> Result<Layer, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let obj = v
        .as_object()
        .ok_or("the top level must be an object of kernel keys")?;
    let mut layer = Layer::new();
    for (key, entries) in obj {
        if key.starts_with('_') {
            continue;
        }
        let entries = entries
            .as_array()
            .ok_or_else(|| format!("`{key}` must be a list of entries"))?;
        let mut configs = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let expanded = expand_entry(e).map_err(|m| format!("`{key}` entry {i}: {m}"))?;
            configs.extend(expanded.into_iter().map(|mut c| {
                c.origin = format!("{key}[{i}]");
                c
            }));
        }
        layer.insert(key.clone(), configs);
    }
    Ok(layer)
}

impl TuneTable {
    /// Builds a backend's table from `(file name, text)` pairs: `default.json` is the backend
    /// layer, `<arch>.json` an arch layer.
    pub fn from_files(files: &[(String, String)], source: String) -> Result<TuneTable, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let mut t = TuneTable {
            source,
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            ..TuneTable::default()
        };
        for (name, text) in files {
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            let mut layer = parse_layer(text).map_err(|e| format!("{}/{name}: {e}", t.source))?;
            for c in layer.values_mut().flatten() {
                c.origin = format!("{name} {}", c.origin);
            }
            if stem == "default" {
                t.backend = layer;
            } else {
                t.arch.insert(stem.to_owned(), layer);
            }
        }
        Ok(t)
    }

    /// Reads `<dir>/<backend>/*.json`; a missing folder is an empty table (every kernel then uses
    /// its built-in defaults).
    pub fn from_dir(dir: &Path, backend: &str) -> Result<TuneTable, String> {
        let folder = dir.join(backend);
        let mut files = Vec::new();
        if folder.is_dir() {
            let entries = std::fs::read_dir(&folder)
                .map_err(|e| format!("cannot read {}: {e}", folder.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("cannot read {}: {e}", folder.display()))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(".json") {
                    let text = std::fs::read_to_string(entry.path())
                        .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
                    files.push((name, text));
                }
            }
        }
        files.sort();
        TuneTable::from_files(&files, folder.display().to_string())
    }
}

/// A backend's configs as a kernel sees them: arch layer first, then backend layer.
#[derive(Copy, Clone, Debug)]
pub struct TuneView<'a> {
    pub(crate) table: Option<&'a TuneTable>,
    pub(crate) arch: Option<&'a str>,
}

impl<'a> TuneView<'a> {
    /// A view with no configs: every kernel falls back to its built-in default.
    pub const EMPTY: TuneView<'static> = TuneView {
        table: None,
        arch: None,
    };

    /// The view of `table` for `arch` (None: the backend layer only).
    pub fn new(table: &'a TuneTable, arch: Option<&'a str>) -> TuneView<'a> {
        TuneView {
            table: Some(table),
            arch,
        }
    }

    /// What identifies this view's configs: the table's `id` (0 for none) and the arch's address
    /// (the arch string lives as long as the table). Equal identities see equal configs.
    pub fn id(&self) -> (u64, usize) {
        (
            self.table.map_or(0, |t| t.id),
            self.arch.map_or(0, |a| a.as_ptr() as usize),
        )
    }

    /// The configs for `key` from the highest layer that has it (empty: use the built-in default).
    pub fn configs(&self, key: &str) -> &'a [Config] {
        let Some(t) = self.table else {
            return &[];
        };
        if let Some(c) = self
            .arch
            .and_then(|a| t.arch.get(a))
            .and_then(|l| l.get(key))
        {
            return c;
        }
        t.backend.get(key).map_or(&[], Vec::as_slice)
    }

    /// The first config for `key` whose `when` holds over `vars` (and the config's own params);
    /// `None`: use the built-in default. A `when` naming an unknown variable is an error.
    pub fn select(&self, key: &str, vars: &[(&str, i64)]) -> rffi_core::Result<Option<&'a Config>> {
        for c in self.configs(key) {
            let Some(when) = &c.when else {
                return Ok(Some(c));
            };
            let lookup = |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| *v)
                    .or_else(|| c.get(name))
            };
            let holds = when.holds(&lookup).map_err(|e| {
                rffi_core::Error::value_error(format!("tuning config for `{key}`: `when` {e}"))
            })?;
            if holds {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    /// Parameter `name` of the config `select` picks, else `default`.
    pub fn param(
        &self,
        key: &str,
        name: &str,
        vars: &[(&str, i64)],
        default: i64,
    ) -> rffi_core::Result<i64> {
        Ok(self
            .select(key, vars)?
            .and_then(|c| c.get(name))
            .unwrap_or(default))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(c: &Config) -> String {
        c.params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn gen_expands_in_order_with_constraint_and_set() {
        let v: Value = serde_json::from_str(
            r#"{"gen": {"threads": [128, 256, 512], "vec": [1, 4]},
                "where": "threads * vec <= 1024", "set": {"waves": 2}, "when": "n > 10"}"#,
        )
        .unwrap();
        let configs = expand_entry(&v).unwrap();
        let got: Vec<String> = configs.iter().map(names).collect();
        assert_eq!(
            got,
            [
                "threads=128,vec=1,waves=2",
                "threads=128,vec=4,waves=2",
                "threads=256,vec=1,waves=2",
                "threads=256,vec=4,waves=2",
                "threads=512,vec=1,waves=2",
            ]
        );
        assert!(configs.iter().all(|c| c.when.is_some()));
    }

    #[test]
    fn bad_entries_are_errors() {
        let e = parse_layer(r#"{"add": [{"threads": "many"}]}"#).unwrap_err();
        assert!(
            e.contains("`add` entry 0") && e.contains("must be an integer"),
            "{e}"
        );
        let e = parse_layer(r#"{"add": [{"gen": {"a": []}}]}"#).unwrap_err();
        assert!(e.contains("gen list `a` is empty"), "{e}");
        let e = parse_layer(r#"{"add": [{"gen": {"a": [1]}, "wher": "a"}]}"#).unwrap_err();
        assert!(e.contains("unknown key `wher`"), "{e}");
        let e = parse_layer(r#"{"add": [{"gen": {"a": [1]}, "where": "b > 1"}]}"#).unwrap_err();
        assert!(e.contains("unknown variable `b`"), "{e}");
        let e = parse_layer(r#"{"add": [{"a": 1, "where": "a > 1"}]}"#).unwrap_err();
        assert!(e.contains("only valid in a `gen` entry"), "{e}");
        assert!(parse_layer("[1]").unwrap_err().contains("top level"));
        assert!(parse_layer("{").unwrap_err().contains("invalid JSON"));
    }

    #[test]
    fn precedence_arch_then_backend_then_default() {
        let files = vec![
            (
                "default.json".to_owned(),
                r#"{"_comment": "x", "softmax": [{"threads": 256}], "add": [{"threads": 128}]}"#
                    .to_owned(),
            ),
            (
                "sm_90.json".to_owned(),
                r#"{"softmax": [{"threads": 64, "when": "cols <= 1024"}, {"threads": 1024}]}"#
                    .to_owned(),
            ),
        ];
        let t = TuneTable::from_files(&files, "test".into()).unwrap();
        let hopper = TuneView::new(&t, Some("sm_90"));
        let ampere = TuneView::new(&t, Some("sm_80"));
        let small = [("cols", 512)];
        let big = [("cols", 4096)];
        assert_eq!(hopper.param("softmax", "threads", &small, 1).unwrap(), 64);
        assert_eq!(hopper.param("softmax", "threads", &big, 1).unwrap(), 1024);
        // No arch entry for `add`: the backend layer answers.
        assert_eq!(hopper.param("add", "threads", &[], 1).unwrap(), 128);
        assert_eq!(ampere.param("softmax", "threads", &big, 1).unwrap(), 256);
        // No entry anywhere: the built-in default.
        assert_eq!(ampere.param("matmul", "tile", &[], 7).unwrap(), 7);
        assert_eq!(
            TuneView::EMPTY.param("softmax", "threads", &[], 5).unwrap(),
            5
        );
        // A `when` over an unknown variable is reported, not skipped.
        let e = hopper.select("softmax", &[]).unwrap_err();
        assert!(
            e.message().contains("unknown variable `cols`"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn reads_a_directory() {
        let dir = std::env::temp_dir().join(format!("rffi-tune-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("cpu")).unwrap();
        std::fs::write(dir.join("cpu/default.json"), r#"{"add": [{"chunk": 9}]}"#).unwrap();
        let t = TuneTable::from_dir(&dir, "cpu").unwrap();
        assert_eq!(
            TuneView::new(&t, None)
                .param("add", "chunk", &[], 0)
                .unwrap(),
            9
        );
        let empty = TuneTable::from_dir(&dir, "cuda").unwrap();
        assert!(empty.backend.is_empty());
        std::fs::write(dir.join("cpu/default.json"), "{oops").unwrap();
        let e = TuneTable::from_dir(&dir, "cpu").unwrap_err();
        assert!(e.contains("default.json: invalid JSON"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
