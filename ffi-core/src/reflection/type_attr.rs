//! Type attributes: named values attached to a type index (tvm-ffi's type attribute columns),
//! such as `__ffi_from_fields__`, the constructor structural copies and deserialization use for
//! types the runtime cannot allocate itself.
//!
//! The table lives in the host runtime's image. A plugin's copy of this crate reaches it through
//! the global functions `ffi.TypeRegisterAttr` / `ffi.TypeGetAttr`, which its function registry forwards
//! to the host, so an attribute registered by a plugin is seen by the host and the other way
//! round.

use crate::error::{Error, Result};
use crate::function_registry::{get_global_func, register_builtin};
use crate::host::host;
use crate::type_registry::type_info;
use crate::Any;
use rustc_hash::FxHashMap;
use std::sync::{OnceLock, RwLock};

/// The attribute holding a type's field constructor: a Function taking every field's value, in
/// `all_fields` order, and returning a new object (declared by `object_type!`).
pub const FROM_FIELDS_ATTR: &str = "__ffi_from_fields__";

type Table = RwLock<FxHashMap<(i32, Box<str>), Any>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(Table::default)
}

fn check_type(index: i32) -> Result<()> {
    type_info(index)
        .map(|_| ())
        .ok_or_else(|| Error::key_error(format!("unknown type index {index}")))
}

/// Sets the attribute `name` of type `index` (a later call replaces it). Kept for the life of
/// the process, as type entries are.
pub fn register_type_attr(index: i32, name: &str, value: Any) -> Result<()> {
    if host().is_some() {
        return forwarded("ffi.TypeRegisterAttr")?
            .call(&[Any::from(i64::from(index)), Any::from(name), value])
            .map(drop);
    }
    check_type(index)?;
    crate::function_registry::check_name("a type attribute name", name)?;
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    t.insert((index, name.into()), value);
    Ok(())
}

/// The attribute `name` of type `index` itself (not inherited), if set.
pub fn type_attr(index: i32, name: &str) -> Result<Option<Any>> {
    if host().is_some() {
        let v =
            forwarded("ffi.TypeGetAttr")?.call(&[Any::from(i64::from(index)), Any::from(name)])?;
        return Ok((!v.is_none()).then_some(v));
    }
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    Ok(t.get(&(index, name.into())).cloned())
}

fn forwarded(name: &str) -> Result<crate::Function> {
    get_global_func(name)
        .ok_or_else(|| Error::runtime_error(format!("the host runtime has no `{name}`")))
}

register_builtin!("ffi.TypeRegisterAttr", |index: i64,
                                           name: String,
                                           value: Any|
 -> Result<()> {
    let index = i32::try_from(index)
        .map_err(|_| Error::key_error(format!("unknown type index {index}")))?;
    register_type_attr(index, &name, value)
});

register_builtin!("ffi.TypeGetAttr", |index: i64,
                                      name: String|
 -> Result<Any> {
    let index = i32::try_from(index)
        .map_err(|_| Error::key_error(format!("unknown type index {index}")))?;
    Ok(type_attr(index, &name)?.unwrap_or_default())
});
