//! Run-time types (Python's `py_class`, `register_value_type`) that extend a **native** type: one
//! declared in Rust (`object_type!`) or registered from C with a creator, whose objects only the
//! type itself can build.
//!
//! Such an object is one block: the native type's object (made by its field constructor
//! `__ffi_from_fields__`, or else its creator) relocated to the front, so the native fields keep
//! their offsets, getters and setters and native code sees a plain object of its type; then the
//! native object's own deleter (8 bytes, at `native_size` rounded up to 8); then a value slot per
//! run-time field. The native part is moved bitwise (Rust values always may be; a C type must
//! not point into itself), and its old memory is released by its deleter's weak part alone, so
//! its contents are not destroyed there. When the object dies, the run-time fields are released
//! and the saved deleter's strong part destroys the native contents.

use super::access::{field_schema, no_member, release_builtin_fields, store};
use super::type_attr::{type_attr, FROM_FIELDS_ATTR};
use super::{all_fields, default_of, find_field, key_of, lineage, member_name};
use crate::abi::*;
use crate::any::AnyView;
use crate::error::{Error, Result};
use crate::object::INITIAL_COUNT;
use crate::type_registry::type_info;
use crate::{Function, ObjectRef};
use core::ffi::c_void;
use std::alloc::Layout;

/// The allocation alignment of extended objects (covers every field alignment up to 16).
const ALIGN: usize = 16;

fn total_size(t: &RFFITypeInfo) -> i32 {
    // SAFETY: registry metadata lives as long as the process.
    unsafe { t.metadata.as_ref() }.map_or(0, |m| m.total_size)
}

/// Whether the runtime must build objects of `t` through the type itself (it has a creator:
/// every `object_type!`, and C types that register one).
pub(crate) fn is_native(t: &RFFITypeInfo) -> bool {
    // SAFETY: as above.
    unsafe { t.metadata.as_ref() }.is_some_and(|m| m.creator.is_some())
}

/// The nearest native type in `index`'s lineage (itself included), if any.
pub(crate) fn native_root(index: i32) -> Option<&'static RFFITypeInfo> {
    lineage(index).find(|t| is_native(t))
}

/// Where an extended object keeps its native part's deleter.
fn deleter_slot(native: &RFFITypeInfo) -> usize {
    (total_size(native) as usize).next_multiple_of(8)
}

/// The offset of the first run-time field of a type extending the native type `parent`.
pub(crate) fn first_field_offset(parent: &RFFITypeInfo) -> Result<i32> {
    if (total_size(parent) as usize) < core::mem::size_of::<RFFIObject>() {
        return Err(Error::type_error(format!(
            "cannot extend `{}`: its metadata gives no total_size",
            key_of(parent.type_index)
        )));
    }
    Ok((deleter_slot(parent) + core::mem::size_of::<RFFIObjectDeleter>()) as i32)
}

/// Registers the field constructor of `index` (which extends a native type): every field's
/// value in `all_fields` order, as the native types' constructors take them, so that structural
/// copies and deserialization rebuild its objects.
pub(crate) fn register_from_fields(index: i32) -> Result<()> {
    let ctor = Function::from_packed(move |args| {
        let fields = all_fields(index);
        if args.len() != fields.len() {
            return Err(Error::type_error(format!(
                "`{}` from fields: {} values for {} fields",
                key_of(index),
                args.len(),
                fields.len()
            )));
        }
        let values: Vec<_> = fields
            .iter()
            .zip(args)
            .map(|(f, v)| (member_name(&f.name), *v))
            .collect();
        let describe =
            |i: usize| format!("`{}` from fields: field `{}`", key_of(index), values[i].0);
        Ok(create(index, &values, &describe)?.into())
    });
    super::type_attr::register_type_attr(index, FROM_FIELDS_ATTR, ctor.into())
}

/// Makes an object of `index`, a native type or one extending a native type, with the field
/// values `values` (see `create_with_fields`): the native part by its field constructor from its
/// fields (given or default) or else by its creator, then the other fields.
pub(crate) fn create(
    index: i32,
    values: &[(&str, AnyView<'_>)],
    describe: &dyn Fn(usize) -> String,
) -> Result<ObjectRef> {
    let native = native_root(index)
        .ok_or_else(|| Error::type_error(format!("`{}` is no native type", key_of(index))))?;
    let ni = native.type_index;
    let ctor = match type_attr(ni, FROM_FIELDS_ATTR)? {
        Some(c) => Some(c.try_as::<Function>()?),
        None => None,
    };
    let native_fields = all_fields(ni);
    let made = match &ctor {
        Some(ctor) => {
            let mut args = Vec::with_capacity(native_fields.len());
            for f in &native_fields {
                let name = member_name(&f.name);
                args.push(match values.iter().position(|(k, _)| *k == name) {
                    Some(i) => match field_schema(f) {
                        Some(s) => s.convert(&values[i].1).map_err(|e| {
                            Error::type_error(format!("{}: {}", describe(i), e.message()))
                        })?,
                        None => values[i].1.to_owned()?,
                    },
                    None if f.flags & kRFFIFieldFlagBitMaskHasDefault != 0 => default_of(f)?,
                    None => {
                        return Err(Error::type_error(format!(
                            "`{}` needs a value for field `{name}` of `{}`, which has no default",
                            key_of(index),
                            key_of(ni)
                        )))
                    }
                });
            }
            ctor.call(&args)?.into_object().ok_or_else(|| {
                Error::type_error(format!(
                    "the field constructor of `{}` returned no object",
                    key_of(ni)
                ))
            })?
        }
        None => super::create_object(ni)?,
    };
    let obj = if ni == index {
        made // the native type itself: nothing to extend
    } else {
        relocate(index, native, made)?
    };
    for (i, (name, value)) in values.iter().enumerate() {
        if ctor.is_some() && native_fields.iter().any(|f| member_name(&f.name) == *name) {
            continue; // given to the constructor
        }
        let f =
            find_field(index, name.as_bytes()).ok_or_else(|| no_member(index, "field", name))?;
        store(&obj, f, value, &|| describe(i))?;
    }
    Ok(obj)
}

/// Moves the fresh native object `made` to the front of a new object of `index`.
fn relocate(index: i32, native: &RFFITypeInfo, made: ObjectRef) -> Result<ObjectRef> {
    let ni = native.type_index;
    if made.type_index() != ni {
        return Err(Error::type_error(format!(
            "the constructor of `{}` made a `{}`",
            key_of(ni),
            key_of(made.type_index())
        )));
    }
    if !made.is_unique() {
        return Err(Error::runtime_error(format!(
            "cannot extend `{}`: its constructor kept a reference to the object it made, which \
             therefore cannot move",
            key_of(ni)
        )));
    }
    let info = type_info(index).ok_or_else(|| Error::key_error("unknown type"))?;
    let size = total_size(info) as usize;
    let slot = deleter_slot(native);
    let layout =
        Layout::from_size_align(size, ALIGN).map_err(|e| Error::value_error(e.to_string()))?;
    // SAFETY: a non-zero size (at least the native part and the deleter slot).
    let mem = unsafe { std::alloc::alloc_zeroed(layout) };
    if mem.is_null() {
        std::alloc::handle_alloc_error(layout)
    }
    let src = made.into_raw().as_ptr();
    // SAFETY: `src` is a live object of the native type, `total_size` bytes long, that only we
    // hold; `mem` has room for it and the slot. After the copy the old block is released by its
    // deleter's weak part alone, which frees memory without destroying what was moved out.
    unsafe {
        core::ptr::copy_nonoverlapping(src.cast::<u8>(), mem, total_size(native) as usize);
        let old_deleter = (*src).deleter;
        let header = mem.cast::<RFFIObject>();
        (*header).combined_ref_count = INITIAL_COUNT;
        (*header).type_index = index;
        (*header).deleter = Some(extended_deleter);
        mem.add(slot).cast::<RFFIObjectDeleter>().write(old_deleter);
        if let Some(d) = old_deleter {
            d(src.cast(), kRFFIObjectDeleterFlagBitMaskWeak);
        }
        Ok(ObjectRef::from_raw(core::ptr::NonNull::new_unchecked(
            header,
        )))
    }
}

/// Deleter of extended objects: the run-time fields, then the native part through its own
/// deleter's strong part; the memory last.
unsafe extern "C" fn extended_deleter(obj: *mut c_void, flags: i32) {
    // SAFETY: the header is live until the weak part runs.
    let index = unsafe { (*obj.cast::<RFFIObject>()).type_index };
    let native = native_root(index).expect("extended objects have a native root");
    if flags & kRFFIObjectDeleterFlagBitMaskStrong != 0 {
        for t in lineage(index).take_while(|t| t.type_index != native.type_index) {
            // SAFETY: the run-time fields of this object's types, inside the object.
            unsafe { release_builtin_fields(obj.cast(), t) };
        }
        // SAFETY: the slot holds the native part's deleter, written by `relocate`; its strong
        // part destroys the native contents in place.
        unsafe {
            let d = obj
                .cast::<u8>()
                .add(deleter_slot(native))
                .cast::<RFFIObjectDeleter>()
                .read();
            if let Some(d) = d {
                d(obj, kRFFIObjectDeleterFlagBitMaskStrong);
            }
        }
    }
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        let size = type_info(index).map_or(0, total_size) as usize;
        // SAFETY: allocated by `relocate` with this size and alignment.
        unsafe { std::alloc::dealloc(obj.cast(), Layout::from_size_align_unchecked(size, ALIGN)) };
    }
}
