//! Type attributes: named values attached to a type index (tvm-ffi's type attribute columns),
//! such as `__ffi_from_fields__`, the constructor structural copies and deserialization use for
//! types the runtime cannot allocate itself.
//!
//! The table is column-oriented, as tvm-ffi's: one `RFFITypeAttrColumn` per attribute name, so
//! C reads a type's entry with one index (`RFFIGetTypeAttrColumn`). It lives in the host runtime's
//! image. A plugin's copy of this crate reaches it through
//! the global functions `ffi.TypeRegisterAttr` / `ffi.TypeGetAttr`, which its function registry forwards
//! to the host, so an attribute registered by a plugin is seen by the host and the other way
//! round.

use crate::abi::{RFFIAny, RFFITypeAttrColumn};
use crate::any::{AnyView, NONE_RAW};
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

/// One attribute's column: the C view (`RFFITypeAttrColumn`) over entries the table owns.
struct Column {
    abi: RFFITypeAttrColumn,
    /// The entries `abi.data` points to.
    entries: Box<[RFFIAny]>,
    /// Arrays replaced when the column grew, kept for readers that may still hold them.
    retired: Vec<Box<[RFFIAny]>>,
    /// Values replaced by later registrations, kept for the same reason.
    replaced: Vec<RFFIAny>,
}

// SAFETY: the column's entries are owned values the table keeps for the life of the process; they
// are written only under the table's write lock.
unsafe impl Send for Column {}
// SAFETY: as above.
unsafe impl Sync for Column {}

type Table = RwLock<FxHashMap<Box<str>, &'static mut Column>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(Table::default)
}

fn check_type(index: i32) -> Result<()> {
    type_info(index)
        .map(|_| ())
        .ok_or_else(|| Error::key_error(format!("unknown type index {index}")))
}

impl Column {
    fn get(&self, index: i32) -> Option<&RFFIAny> {
        let at = index.checked_sub(self.abi.begin_index)?;
        self.entries.get(usize::try_from(at).ok()?)
    }

    /// Sets the entry of `index`, growing the range to cover it. The arrays and values replaced
    /// stay allocated for the life of the process: a reader of the C column may still hold them.
    fn set(&mut self, index: i32, value: Any) {
        let (begin, end) = if self.entries.is_empty() {
            (index, index + 1)
        } else {
            let end = self.abi.begin_index + self.abi.size;
            (self.abi.begin_index.min(index), end.max(index + 1))
        };
        if begin != self.abi.begin_index || end - begin != self.abi.size {
            let mut grown = vec![NONE_RAW; (end - begin) as usize].into_boxed_slice();
            if !self.entries.is_empty() {
                let shift = (self.abi.begin_index - begin) as usize;
                grown[shift..shift + self.entries.len()].copy_from_slice(&self.entries);
            }
            // The old array's values now belong to the new one; the array itself stays.
            self.retired
                .push(core::mem::replace(&mut self.entries, grown));
            self.abi = RFFITypeAttrColumn {
                data: self.entries.as_ptr(),
                size: end - begin,
                begin_index: begin,
            };
        }
        // A replaced value is kept (never released): a reader may still hold it.
        let at = (index - begin) as usize;
        let old = core::mem::replace(&mut self.entries[at], value.into_raw());
        if old.type_index != NONE_RAW.type_index {
            self.replaced.push(old);
        }
    }
}

/// Sets the attribute `name` of type `index` (a later call replaces it). Kept for the life of
/// the process, as type entries are. Setting one for the None type (index 0) only makes sure the
/// column exists, as C readers expect of columns they look up.
pub fn register_type_attr(index: i32, name: &str, value: Any) -> Result<()> {
    if host().is_some() {
        return forwarded("ffi.TypeRegisterAttr")?
            .call(&[Any::from(i64::from(index)), Any::from(name), value])
            .map(drop);
    }
    check_type(index)?;
    crate::function_registry::check_name("a type attribute name", name)?;
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    let column = t.entry(name.into()).or_insert_with(|| {
        Box::leak(Box::new(Column {
            abi: RFFITypeAttrColumn {
                data: core::ptr::null(),
                size: 0,
                begin_index: 0,
            },
            entries: Box::default(),
            retired: Vec::new(),
            replaced: Vec::new(),
        }))
    });
    column.set(index, value);
    Ok(())
}

/// The attribute `name` of type `index` itself (not inherited), if set (and not None).
pub fn type_attr(index: i32, name: &str) -> Result<Option<Any>> {
    if host().is_some() {
        let v =
            forwarded("ffi.TypeGetAttr")?.call(&[Any::from(i64::from(index)), Any::from(name)])?;
        return Ok((!v.is_none()).then_some(v));
    }
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    let Some(raw) = t.get(name).and_then(|c| c.get(index)) else {
        return Ok(None);
    };
    // SAFETY: an owned value of the column, alive for the process.
    let v = unsafe { AnyView::from_raw(*raw) }.to_owned()?;
    Ok((!v.is_none()).then_some(v))
}

/// The C view of the column of `name`, or None if no type has that attribute registered. The
/// pointer stays valid for the life of the process; registrations may replace what it holds.
pub fn type_attr_column(name: &str) -> Option<*const RFFITypeAttrColumn> {
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    t.get(name).map(|c| &c.abi as *const RFFITypeAttrColumn)
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
