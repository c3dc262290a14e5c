//! Safetensors weights, memory-mapped: one file, a directory holding `model.safetensors` or
//! `model.safetensors.index.json`, or an index file itself (`{"weight_map": {name: file}}`).
//! Opening reads and checks every header (a truncated or malformed file is an error naming it);
//! tensor bytes are read from the mapping only when a parameter is loaded.

use rffi_core::{DataType, Error, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One tensor of a weights file: its dtype, shape and bytes.
pub struct TensorRef<'a> {
    /// The element type.
    pub dtype: DataType,
    /// The shape.
    pub shape: Vec<i64>,
    /// The bytes, borrowed from the mapped file.
    pub data: &'a [u8],
}

struct Entry {
    file: usize,
    dtype: DataType,
    shape: Vec<i64>,
    bytes: Range<usize>,
}

/// Every tensor of a set of safetensors files, by name.
pub struct Weights {
    maps: Vec<memmap2::Mmap>,
    entries: BTreeMap<String, Entry>,
}

fn dtype_of(d: safetensors::Dtype) -> Option<DataType> {
    use safetensors::Dtype::*;
    Some(match d {
        BOOL => DataType::bool_(),
        U8 => DataType::uint(8),
        U16 => DataType::uint(16),
        U32 => DataType::uint(32),
        U64 => DataType::uint(64),
        I8 => DataType::int(8),
        I16 => DataType::int(16),
        I32 => DataType::int(32),
        I64 => DataType::int(64),
        F16 => DataType::float(16),
        BF16 => DataType::bfloat16(),
        F32 => DataType::float(32),
        F64 => DataType::float(64),
        _ => return None,
    })
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::value_error(format!("weights `{}`: {e}", path.display()))
}

/// The safetensors files `path` names, in order.
fn files_of(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    let index = if meta.is_dir() {
        let single = path.join("model.safetensors");
        if single.is_file() {
            return Ok(vec![single]);
        }
        path.join("model.safetensors.index.json")
    } else if path.extension().is_some_and(|e| e == "json") {
        path.to_path_buf()
    } else {
        return Ok(vec![path.to_path_buf()]);
    };
    let text = std::fs::read_to_string(&index).map_err(|e| io_err(&index, e))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| io_err(&index, format!("malformed JSON: {e}")))?;
    let map = json
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| io_err(&index, "no `weight_map` object"))?;
    let dir = index.parent().unwrap_or(Path::new("."));
    let mut files: Vec<PathBuf> = Vec::new();
    for (name, f) in map {
        let f = f
            .as_str()
            .ok_or_else(|| io_err(&index, format!("`weight_map[{name:?}]` is not a string")))?;
        let p = dir.join(f);
        if !files.contains(&p) {
            files.push(p);
        }
    }
    Ok(files)
}

thread_local! {
    /// Weight files opened on this thread (`super::files_opened`).
    pub(super) static OPENED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Weights {
    /// Maps every file `path` names and reads their headers.
    pub fn open(path: impl AsRef<Path>) -> Result<Weights> {
        let mut w = Weights {
            maps: Vec::new(),
            entries: BTreeMap::new(),
        };
        for file in files_of(path.as_ref())? {
            let f = File::open(&file).map_err(|e| io_err(&file, e))?;
            OPENED.with(|n| n.set(n.get() + 1));
            // SAFETY: the mapping is read-only; a file changed by another process while mapped
            // is outside what a loader can guard against (as with every safetensors reader).
            let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| io_err(&file, e))?;
            let st = safetensors::SafeTensors::deserialize(&map)
                .map_err(|e| io_err(&file, format!("not a valid safetensors file: {e}")))?;
            let base = map.as_ptr() as usize;
            let idx = w.maps.len();
            for (name, view) in st.iter() {
                let dtype = dtype_of(view.dtype()).ok_or_else(|| {
                    io_err(
                        &file,
                        format!("`{name}`: dtype {:?} is not supported", view.dtype()),
                    )
                })?;
                let start = view.data().as_ptr() as usize - base;
                // The format checks a shape against its bytes, which a zero dimension satisfies
                // whatever the others say.
                let shape = view
                    .shape()
                    .iter()
                    .map(|&d| {
                        i64::try_from(d).map_err(|_| {
                            io_err(
                                &file,
                                format!(
                                    "`{name}`: dimension {d} of shape {:?} is larger than \
                                     2^63-1",
                                    view.shape()
                                ),
                            )
                        })
                    })
                    .collect::<Result<Vec<i64>>>()?;
                let entry = Entry {
                    file: idx,
                    dtype,
                    shape,
                    bytes: start..start + view.data().len(),
                };
                if w.entries.insert(name.to_string(), entry).is_some() {
                    return Err(io_err(&file, format!("`{name}` appears in two files")));
                }
            }
            w.maps.push(map);
        }
        Ok(w)
    }

    /// Parameter names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Whether the weights have a tensor `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// The tensor `name`, if the weights have it.
    pub fn get(&self, name: &str) -> Option<TensorRef<'_>> {
        let e = self.entries.get(name)?;
        Some(TensorRef {
            dtype: e.dtype,
            shape: e.shape.clone(),
            data: &self.maps[e.file][e.bytes.clone()],
        })
    }
}
