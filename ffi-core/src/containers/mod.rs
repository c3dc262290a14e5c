//! Mutable containers: `List` (a shared, growable sequence; the ABI's `RFFISeqCell` at offset 24
//! with its items in a separate buffer) and `Dict` (a shared mapping in insertion order), beside
//! the immutable `Array` and `Map`. Both guard their contents with a lock, so they may be shared
//! and mutated between threads; foreign code uses the `ffi.List*` / `ffi.Dict*` functions.

mod builtins;
mod dict;
mod list;

pub use dict::Dict;
pub use list::List;

use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::{Array, Map};

/// The items of an Array or List value (owned copies), or why it is not one.
pub(crate) fn seq_items(v: &AnyView<'_>) -> Result<Vec<Any>, String> {
    match v.type_index() {
        kRFFIArray => {
            let a: Array = v.try_as().map_err(|e| e.message())?;
            a.iter()
                .map(|x| x.to_owned().map_err(|e| e.message()))
                .collect()
        }
        kRFFIList => Ok(v.try_as::<List>().map_err(|e| e.message())?.items()),
        _ => Err(v.type_name()),
    }
}

/// The entries of a Map or Dict value (owned copies), or why it is not one.
pub(crate) fn map_items(v: &AnyView<'_>) -> Result<Vec<(Any, Any)>, String> {
    match v.type_index() {
        kRFFIMap => {
            let m: Map = v.try_as().map_err(|e| e.message())?;
            m.iter()
                .map(|(k, x)| {
                    Ok((
                        k.to_owned().map_err(|e| e.message())?,
                        x.to_owned().map_err(|e| e.message())?,
                    ))
                })
                .collect()
        }
        kRFFIDict => Ok(v.try_as::<Dict>().map_err(|e| e.message())?.items()),
        _ => Err(v.type_name()),
    }
}

pub(crate) fn make_list(items: Vec<Any>) -> Any {
    Any::from(List::new(items))
}

pub(crate) fn make_dict(pairs: Vec<(Any, Any)>) -> Any {
    // Keys came out of a map, so they hash.
    Dict::new(pairs).map(Any::from).unwrap_or_default()
}

/// A Python-style index into `len` items: negative counts from the end.
pub(crate) fn resolve_index(i: i64, len: usize, what: &str) -> crate::Result<usize> {
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return Err(crate::Error::index_error(format!(
            "{what} index {i} out of range for length {len}"
        )));
    }
    Ok(j as usize)
}
