//! Reflection over the type registry: the fields and methods of object types, registered from
//! Rust (`object_type!`), C (`RFFITypeRegisterField`, ...) or Python, and reached by name from
//! every language (`get_field`, `set_field`, `call_method`, `create_object`).
//!
//! Registration copies what it is given (names, docs, metadata text) and keeps defaults, setter
//! functions and methods alive for the life of the process, as type entries themselves are.
//! A type's members are meant to be registered before its objects are shared between threads.

mod access;
mod builtins;
mod extend;
mod object_def;
#[doc(hidden)] // what `object_type!` expands to
pub mod spec;
pub mod type_attr;

pub use access::{
    call_method, create_object, create_with_fields, default_of, get_field, set_field, static_method,
};
pub(crate) use access::{init_field, read_field};
#[doc(hidden)]
pub use object_def::{field_value_error, next_field_value};
pub use object_def::{FieldValue, Mut, Obj, ObjectDef, ObjectHeader};
pub use type_attr::{register_type_attr, type_attr};

use crate::abi::*;
use crate::any::AnyView;
use crate::error::{Error, Result};
use crate::host::host;
use crate::type_registry::{leak_bytes, slice, type_info, with_entry_mut};
use crate::{Any, Function, ObjectRef, ObjectType};
use core::cell::Cell;
use std::sync::Once;

/// An object type declared at compile time with `object_type!`: registered (with its parents,
/// fields and methods) when the type registry is first asked about a run-time type, or in a
/// plugin by its `rffi_plugin_init`.
pub struct StaticType {
    /// Registers the type (and its parents and members) and returns its index.
    pub register: fn() -> i32,
}

inventory::collect!(StaticType);

thread_local! {
    static DECLARING: Cell<bool> = const { Cell::new(false) };
}

/// Registers every `object_type!` of this image once (in a plugin image: once bound to its
/// host). Lookups made while it runs (a type's registration asking for its parent) go straight
/// to the table.
#[doc(hidden)]
pub fn declare_static_types() {
    if crate::plugin::is_plugin() {
        return; // declared by `rffi_plugin_init`
    }
    static ONCE: Once = Once::new();
    if ONCE.is_completed() || DECLARING.with(Cell::get) {
        return;
    }
    ONCE.call_once(|| {
        DECLARING.with(|d| d.set(true));
        for s in inventory::iter::<StaticType> {
            (s.register)();
        }
        DECLARING.with(|d| d.set(false));
    });
}

/// Registers the `object_type!`s of a plugin image in the host runtime.
pub(crate) fn declare_static_types_in_host() {
    for s in inventory::iter::<StaticType> {
        (s.register)();
    }
}

fn bytes(ba: &RFFIByteArray) -> &'static [u8] {
    // SAFETY: byte arrays handed to registration are valid for the call (contract of the callers);
    // the result is only read before returning.
    unsafe { crate::error::byte_array_bytes(ba) }
}

fn name_of(ba: &RFFIByteArray, what: &str) -> Result<String> {
    let s = std::str::from_utf8(bytes(ba))
        .map_err(|e| Error::value_error(format!("{what} is not valid UTF-8 ({e})")))?;
    crate::function_registry::check_name(what, s)?;
    Ok(s.to_owned())
}

/// The key of a type index, for messages.
pub(crate) fn key_of(index: i32) -> String {
    crate::type_registry::type_name(index)
}

/// The key of a registered type, or a KeyError naming the unknown index.
fn known_type(index: i32) -> Result<String> {
    match type_info(index) {
        Some(_) => Ok(key_of(index)),
        None => Err(Error::key_error(format!("unknown type index {index}"))),
    }
}

/// Whether the runtime has a built-in accessor for a field of this static type and size.
pub(crate) fn builtin_supported(index: i32, size: i64) -> bool {
    match index {
        kRFFIInt => matches!(size, 1 | 2 | 4 | 8),
        kRFFIFloat => matches!(size, 4 | 8),
        kRFFIBool => size == 1,
        kRFFIAny => size == 16,
        i => i >= kRFFIStaticObjectBegin && size == 8,
    }
}

/// Registers a field of `type_index` (copied; see `RFFIFieldInfo`).
///
/// # Safety
/// The byte arrays, the default value and the setter of `info` must be valid for the call.
pub unsafe fn register_field(type_index: i32, info: &RFFIFieldInfo) -> Result<()> {
    if let Some(host) = host() {
        // SAFETY: the host's entry point with a valid field description.
        return unsafe { host.register_field(type_index, info) };
    }
    let key = known_type(type_index)?;
    let name = name_of(&info.name, "a field name")?;
    let mut f = *info;
    if f.getter.is_none() {
        if !builtin_supported(f.field_static_type_index, f.size) {
            return Err(Error::value_error(format!(
                "field `{name}` of `{key}`: no getter, and no built-in accessor for static type \
                 {} of size {}",
                f.field_static_type_index, f.size
            )));
        }
        if f.offset < core::mem::size_of::<RFFIObject>() as i64 {
            return Err(Error::value_error(format!(
                "field `{name}` of `{key}`: offset {} is inside the object header",
                f.offset
            )));
        }
    }
    let setter = if f.flags & kRFFIFieldFlagBitMaskSetterIsFunctionObj != 0 {
        let setter = ObjectRef::from_handle(f.setter)
            .and_then(|o| Function::from_object(o).ok())
            .ok_or_else(|| {
                Error::type_error(format!(
                    "field `{name}` of `{key}`: the setter flag says Function, but it is not one"
                ))
            })?;
        Some(setter)
    } else {
        None
    };
    let default = if f.flags & kRFFIFieldFlagBitMaskHasDefault != 0 {
        // SAFETY: a valid value for the call (contract).
        let v = unsafe { AnyView::from_raw(f.default_value_or_factory) }.to_owned()?;
        if f.flags & kRFFIFieldFlagBitMaskDefaultFromFactory != 0 && v.type_index() != kRFFIFunction
        {
            return Err(Error::type_error(format!(
                "field `{name}` of `{key}`: the default factory must be a Function, not {}",
                v.view().type_name()
            )));
        }
        Some(v)
    } else {
        None
    };
    with_entry_mut(type_index, |entry, w| {
        let own_info = entry.info();
        // SAFETY: the entry's fields array has `num_fields` items.
        let own = unsafe { slice(own_info.fields, own_info.num_fields) };
        if own.iter().any(|g| bytes(&g.name) == name.as_bytes()) {
            return Err(Error::value_error(format!(
                "field `{name}` of `{key}` is already registered"
            )));
        }
        // From here on the type registry owns these for the life of the process.
        if let Some(setter) = setter {
            f.setter = setter.into_object().into_raw().as_ptr().cast();
        }
        f.default_value_or_factory = default.map_or(crate::any::NONE_RAW, Any::into_raw);
        f.name = leak_bytes(name.as_bytes());
        f.doc = leak_bytes(bytes(&info.doc));
        f.metadata = leak_bytes(bytes(&info.metadata));
        w.push_field(f);
        Ok(())
    })
}

/// Registers a method of `type_index` (copied; the Function is kept for ever).
///
/// # Safety
/// The byte arrays and the method value of `info` must be valid for the call.
pub unsafe fn register_method(type_index: i32, info: &RFFIMethodInfo) -> Result<()> {
    if let Some(host) = host() {
        // SAFETY: the host's entry point with a valid method description.
        return unsafe { host.register_method(type_index, info) };
    }
    let key = known_type(type_index)?;
    let name = name_of(&info.name, "a method name")?;
    // SAFETY: a valid value for the call (contract).
    let method = unsafe { AnyView::from_raw(info.method) }.to_owned()?;
    if method.type_index() != kRFFIFunction {
        return Err(Error::type_error(format!(
            "method `{name}` of `{key}` must be a Function, not {}",
            method.view().type_name()
        )));
    }
    // Errors inside the method name it by its type (`my.Point.norm`), unless it has a name.
    if let Ok(f) = method.try_as::<Function>() {
        f.set_name(&format!("{key}.{name}"));
    }
    let mut m = *info;
    with_entry_mut(type_index, |entry, w| {
        let own_info = entry.info();
        // SAFETY: the entry's methods array has `num_methods` items.
        let own = unsafe { slice(own_info.methods, own_info.num_methods) };
        if own.iter().any(|g| bytes(&g.name) == name.as_bytes()) {
            return Err(Error::value_error(format!(
                "method `{name}` of `{key}` is already registered"
            )));
        }
        m.name = leak_bytes(name.as_bytes());
        m.doc = leak_bytes(bytes(&info.doc));
        m.metadata = leak_bytes(bytes(&info.metadata));
        m.method = method.into_raw(); // owned by the type registry for ever
        w.push_method(m);
        Ok(())
    })
}

/// Sets the type-wide metadata of `type_index` (doc, creator, total size); a later call replaces
/// it.
///
/// # Safety
/// The doc byte array must be valid for the call; `creator`, if any, must follow its contract.
pub unsafe fn register_metadata(type_index: i32, meta: &RFFITypeMetadata) -> Result<()> {
    if let Some(host) = host() {
        // SAFETY: the host's entry point with a valid description.
        return unsafe { host.register_metadata(type_index, meta) };
    }
    let mut m = *meta;
    m.doc = leak_bytes(bytes(&meta.doc));
    with_entry_mut(type_index, |_, w| {
        w.set_metadata(m);
        Ok(())
    })
}

/// The types from `index` up to the root, nearest first.
pub(crate) fn lineage(index: i32) -> impl Iterator<Item = &'static RFFITypeInfo> {
    let info = type_info(index);
    // SAFETY: `type_ancestors` has `type_depth` live entries.
    let ancestors = info.map_or(&[][..], |i| unsafe {
        slice(i.type_ancestors, i.type_depth)
    });
    info.into_iter().chain(
        ancestors
            .iter()
            .rev()
            // SAFETY: ancestors are type registry entries, alive for the process.
            .map(|&a| unsafe { &*a }),
    )
}

/// The field `name` of type `index` or of its nearest ancestor that has it.
pub fn find_field(index: i32, name: &[u8]) -> Option<&'static RFFIFieldInfo> {
    lineage(index).find_map(|t| {
        // SAFETY: `fields` has `num_fields` entries.
        unsafe { slice(t.fields, t.num_fields) }
            .iter()
            .find(|f| bytes(&f.name) == name)
    })
}

/// The method `name` of type `index` or of its nearest ancestor that has it.
pub fn find_method(index: i32, name: &[u8]) -> Option<&'static RFFIMethodInfo> {
    lineage(index).find_map(|t| {
        // SAFETY: `methods` has `num_methods` entries.
        unsafe { slice(t.methods, t.num_methods) }
            .iter()
            .find(|m| bytes(&m.name) == name)
    })
}

/// Every field of type `index`, root type's first (the order of a generated `__init__`).
pub fn all_fields(index: i32) -> Vec<&'static RFFIFieldInfo> {
    let mut types: Vec<_> = lineage(index).collect();
    types.reverse();
    types
        .into_iter()
        // SAFETY: `fields` has `num_fields` entries.
        .flat_map(|t| unsafe { slice(t.fields, t.num_fields) }.iter())
        .collect()
}

/// The name of a field or method as text.
pub fn member_name(ba: &RFFIByteArray) -> &'static str {
    // SAFETY: names are checked UTF-8 at registration.
    unsafe { std::str::from_utf8_unchecked(bytes(ba)) }
}

impl ObjectRef {
    /// A new reference to the object behind a raw handle, if it is not NULL.
    pub(crate) fn from_handle(h: *mut core::ffi::c_void) -> Option<ObjectRef> {
        let p = core::ptr::NonNull::new(h.cast::<RFFIObject>())?;
        // SAFETY: callers pass handles of live objects they hold.
        Some(unsafe { ObjectRef::from_borrowed(p) })
    }
}

/// The value of `Any` owned by the type registry as a view.
pub(crate) fn registry_value(raw: &'static RFFIAny) -> AnyView<'static> {
    // SAFETY: owned by the type registry for the life of the process.
    unsafe { AnyView::from_raw(*raw) }
}
