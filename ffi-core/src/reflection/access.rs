//! Reaching fields and methods by name: the built-in field accessors (by offset and static type),
//! user getters and setters, method calls, and creating objects of registered types.

use super::{all_fields, find_field, find_method, key_of, lineage, member_name, registry_value};
use crate::abi::*;
use crate::any::{Any, AnyView, NONE_RAW};
use crate::error::{take_raised, Error, Result};
use crate::object::INITIAL_COUNT;
use crate::type_registry::{is_instance, type_info};
use crate::{Function, ObjectRef, ObjectType};
use core::ffi::c_void;
use std::alloc::Layout;
use std::sync::Mutex;

/// Built-in accessors take one of these locks, chosen by the field's address, so that a read
/// and a write of the same owning field (an `RFFIAny` or an object handle) never interleave.
static STRIPES: [Mutex<()>; 16] = [const { Mutex::new(()) }; 16];

fn stripe(addr: *mut u8) -> std::sync::MutexGuard<'static, ()> {
    STRIPES[(addr as usize >> 4) % STRIPES.len()]
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn raised(what: impl FnOnce() -> String) -> Error {
    take_raised().unwrap_or_else(|| Error::runtime_error(format!("{} failed", what())))
}

/// Reads the field `name` of `obj`.
pub fn get_field(obj: &ObjectRef, name: &str) -> Result<Any> {
    let index = obj.type_index();
    let f = find_field(index, name.as_bytes()).ok_or_else(|| no_member(index, "field", name))?;
    read_field(obj, f)
}

/// Reads the field `f` of `obj`, which must be a field of its type or of an ancestor.
pub(crate) fn read_field(obj: &ObjectRef, f: &RFFIFieldInfo) -> Result<Any> {
    // SAFETY: the field belongs to the object's type or an ancestor, so its offset is inside.
    let addr = unsafe { obj.as_ptr().cast::<u8>().add(f.offset as usize) };
    match f.getter {
        Some(getter) => {
            let mut out = NONE_RAW;
            // SAFETY: the getter registered for this field, with the field's address.
            if unsafe { getter(addr.cast(), &mut out) } != 0 {
                return Err(raised(|| {
                    format!(
                        "the getter of `{}.{}`",
                        key_of(obj.type_index()),
                        member_name(&f.name)
                    )
                }));
            }
            // SAFETY: the getter's result must be a well-formed owned value; check before use.
            unsafe { crate::foreign::check_result(&mut out, "a field getter")? };
            // SAFETY: checked just above.
            Ok(unsafe { Any::from_raw(out) })
        }
        // SAFETY: a built-in field at this address (checked at registration).
        None => Ok(unsafe { builtin_get(addr, f) }),
    }
}

/// Writes the field `name` of `obj`, checked against the field's type: a TypeError names the
/// type, the field, and the expected and actual types; a frozen field is an AttributeError.
pub fn set_field(obj: &ObjectRef, name: &str, value: &AnyView<'_>) -> Result<()> {
    let index = obj.type_index();
    let f = find_field(index, name.as_bytes()).ok_or_else(|| no_member(index, "field", name))?;
    if f.flags & kRFFIFieldFlagBitMaskWritable == 0 {
        return Err(Error::new(
            "AttributeError",
            format!(
                "cannot assign to field `{name}` of `{}`: it is frozen",
                key_of(index)
            ),
        ));
    }
    store(obj, f, value, &|| {
        format!("cannot set field `{name}` of `{}`", key_of(index))
    })
}

/// Writes the field `f` of `obj` as `set_field` does, frozen or not: for an object still being
/// built (a structural copy, a deserialized object) that nothing else has seen yet.
pub(crate) fn init_field(
    obj: &ObjectRef,
    f: &'static RFFIFieldInfo,
    value: &AnyView<'_>,
) -> Result<()> {
    store(obj, f, value, &|| {
        format!(
            "cannot set field `{}` of `{}`",
            member_name(&f.name),
            key_of(obj.type_index())
        )
    })
}

/// Makes an object of type `index` (as `create_object`) and gives it the field values `values`
/// (name, value), frozen fields included: how a generated `__init__` builds a frozen object,
/// which no setter can change afterwards. A value that does not fit its field is a TypeError
/// starting with `describe(i)` (`i` indexes `values`), then the expected and actual types.
pub fn create_with_fields(
    index: i32,
    values: &[(&str, AnyView<'_>)],
    describe: &dyn Fn(usize) -> String,
) -> Result<ObjectRef> {
    if super::extend::native_root(index).is_some() {
        return super::extend::create(index, values, describe);
    }
    let obj = create_object(index)?;
    for (i, (name, value)) in values.iter().enumerate() {
        let f =
            find_field(index, name.as_bytes()).ok_or_else(|| no_member(index, "field", name))?;
        store(&obj, f, value, &|| describe(i))?;
    }
    Ok(obj)
}

/// Writes `value` into the field `f` of `obj` (writable or not: callers decide), through the
/// field's setter or the built-in accessor, checked against the field's schema and static type.
/// A mismatch is a TypeError `"{context}: expected ..., got ..."`.
pub(crate) fn store(
    obj: &ObjectRef,
    f: &'static RFFIFieldInfo,
    value: &AnyView<'_>,
    context: &dyn Fn() -> String,
) -> Result<()> {
    let index = obj.type_index();
    let name = member_name(&f.name);
    // SAFETY: the field belongs to the object's type or an ancestor, so its offset is inside.
    let addr = unsafe { obj.as_ptr().cast::<u8>().add(f.offset as usize) };
    if f.flags & kRFFIFieldFlagBitMaskSetterIsFunctionObj != 0 {
        // SAFETY: checked to be a Function at registration and kept alive since.
        let setter =
            unsafe { Function::from_object_unchecked(ObjectRef::from_handle(f.setter).unwrap()) };
        setter
            .call_views(&[AnyView::from(&Any::from(obj.clone())), *value])
            .map_err(|e| e.context(&context()))?;
        return Ok(());
    }
    if !f.setter.is_null() {
        // SAFETY: registered as an `RFFIFieldSetter` (the flag is not set).
        let setter: unsafe extern "C" fn(*mut c_void, *const RFFIAny) -> i32 =
            unsafe { core::mem::transmute(f.setter) };
        // SAFETY: the setter registered for this field, with the field's address and a view.
        if unsafe { setter(addr.cast(), value.as_raw()) } != 0 {
            let e = raised(|| format!("the setter of `{}.{name}`", key_of(index)));
            return Err(e.context(&context()));
        }
        return Ok(());
    }
    if f.getter.is_some() {
        return Err(Error::new(
            "AttributeError",
            format!(
                "field `{name}` of `{}` has a getter but no setter",
                key_of(index)
            ),
        ));
    }
    // A field with a type schema takes what the schema accepts, converted (an int for a float,
    // a list of ints for `List[float]`), before the storage check below.
    let by_schema = match field_schema(f) {
        Some(s) => Some(
            s.convert(value)
                .map_err(|e| Error::type_error(format!("{}: {}", context(), e.message())))?,
        ),
        None => None,
    };
    let value = &by_schema.as_ref().map_or(*value, Any::view);
    let converted = convert(value, f.field_static_type_index, f.size).map_err(|actual| {
        Error::type_error(format!(
            "{}: expected {}, got {actual}",
            context(),
            expected_name(f.field_static_type_index)
        ))
    })?;
    // SAFETY: a built-in field at this address (checked at registration).
    unsafe { builtin_set(addr, f, converted) };
    Ok(())
}

/// The type schema in a field's metadata (`{"type_schema": "<JSON>"}`), if it has one.
pub(crate) fn field_schema(f: &RFFIFieldInfo) -> Option<crate::schema::TypeSchema> {
    if f.metadata.size == 0 {
        return None;
    }
    let meta = crate::schema::parse_json(member_name(&f.metadata)).ok()?;
    match meta.get("type_schema")? {
        crate::schema::JsonValue::Str(text) => crate::schema::TypeSchema::from_json(text).ok(),
        v => crate::schema::TypeSchema::from_value(v).ok(),
    }
    .filter(|s| *s != crate::schema::TypeSchema::Any)
}

fn expected_name(index: i32) -> String {
    match index {
        kRFFIAny => "any value".into(),
        i if i >= kRFFIStaticObjectBegin => format!("{} or None", key_of(i)),
        i => key_of(i),
    }
}

pub(crate) fn no_member(index: i32, what: &str, name: &str) -> Error {
    Error::new(
        "AttributeError",
        format!("`{}` has no {what} `{name}`", key_of(index)),
    )
}

/// A value converted for a built-in field.
enum Stored {
    Int(i64),
    Float(f64),
    Any(Any),
}

/// Checks and converts a value for a built-in field; `Err` is the actual type's name.
fn convert(value: &AnyView<'_>, index: i32, size: i64) -> core::result::Result<Stored, String> {
    let actual = || value.type_name();
    let ti = value.type_index();
    match index {
        kRFFIInt => {
            let v = match ti {
                // SAFETY: ints and bools are stored in v_int64.
                kRFFIInt | kRFFIBool => unsafe { value.as_raw().v.v_int64 },
                _ => return Err(actual()),
            };
            let bits = size * 8;
            if bits < 64 && (v < -(1i64 << (bits - 1)) || v >= 1i64 << (bits - 1)) {
                return Err(format!("int {v}, out of range for {bits} bits"));
            }
            Ok(Stored::Int(v))
        }
        kRFFIBool => match ti {
            // SAFETY: as above.
            kRFFIBool | kRFFIInt => Ok(Stored::Int(
                (unsafe { value.as_raw().v.v_int64 } != 0) as i64,
            )),
            _ => Err(actual()),
        },
        kRFFIFloat => match ti {
            // SAFETY: the payload member matches the index.
            kRFFIFloat => Ok(Stored::Float(unsafe { value.as_raw().v.v_float64 })),
            // SAFETY: as above; int→float widening.
            kRFFIInt => Ok(Stored::Float(unsafe { value.as_raw().v.v_int64 } as f64)),
            _ => Err(actual()),
        },
        kRFFIAny => value.to_owned().map(Stored::Any).map_err(|e| e.message()),
        target => {
            if value.is_none() {
                return Ok(Stored::Any(Any::none()));
            }
            let owned = value.to_owned().map_err(|e| e.message())?;
            // A short string or bytes is inline in a value; an object field stores an object.
            let owned = match owned.type_index() {
                kRFFISmallStr | kRFFISmallBytes => {
                    let is_bytes = owned.type_index() == kRFFISmallBytes;
                    let b = crate::string::str_bytes_of(&owned.view())
                        .unwrap_or(&[])
                        .to_vec();
                    let i = if is_bytes { kRFFIBytes } else { kRFFIStr };
                    Any::from(crate::string::heap_string(&b, i))
                }
                _ => owned,
            };
            let oi = owned.type_index();
            if oi >= kRFFIStaticObjectBegin && is_instance(oi, target) {
                Ok(Stored::Any(owned))
            } else {
                Err(actual())
            }
        }
    }
}

/// # Safety
/// `addr` is a built-in field described by `f`, inside a live object.
unsafe fn builtin_get(addr: *mut u8, f: &RFFIFieldInfo) -> Any {
    let _g = stripe(addr);
    // SAFETY: in every arm, `addr` holds a value of the field's static type and size.
    unsafe {
        match (f.field_static_type_index, f.size) {
            (kRFFIInt, 1) => Any::from(addr.cast::<i8>().read_unaligned() as i64),
            (kRFFIInt, 2) => Any::from(addr.cast::<i16>().read_unaligned() as i64),
            (kRFFIInt, 4) => Any::from(addr.cast::<i32>().read_unaligned() as i64),
            (kRFFIInt, _) => Any::from(addr.cast::<i64>().read_unaligned()),
            (kRFFIBool, _) => Any::from(addr.read() != 0),
            (kRFFIFloat, 4) => Any::from(addr.cast::<f32>().read_unaligned() as f64),
            (kRFFIFloat, _) => Any::from(addr.cast::<f64>().read_unaligned()),
            (kRFFIAny, _) => AnyView::from_raw(addr.cast::<RFFIAny>().read())
                .to_owned()
                .unwrap_or_default(),
            _ => match ObjectRef::from_handle(addr.cast::<*mut c_void>().read()) {
                Some(o) => Any::from(o),
                None => Any::none(),
            },
        }
    }
}

/// # Safety
/// `addr` is a built-in field described by `f`, inside a live object; `v` was converted for it.
unsafe fn builtin_set(addr: *mut u8, f: &RFFIFieldInfo, v: Stored) {
    let old;
    {
        let _g = stripe(addr);
        // SAFETY: in every arm, `addr` holds a value of the field's static type and size; the old
        // owned value is taken out and released after the lock is dropped.
        unsafe {
            old = match (v, f.field_static_type_index, f.size) {
                (Stored::Int(i), kRFFIInt | kRFFIBool, 1) => {
                    addr.cast::<i8>().write(i as i8);
                    None
                }
                (Stored::Int(i), _, 2) => {
                    addr.cast::<i16>().write_unaligned(i as i16);
                    None
                }
                (Stored::Int(i), _, 4) => {
                    addr.cast::<i32>().write_unaligned(i as i32);
                    None
                }
                (Stored::Int(i), _, _) => {
                    addr.cast::<i64>().write_unaligned(i);
                    None
                }
                (Stored::Float(x), _, 4) => {
                    addr.cast::<f32>().write_unaligned(x as f32);
                    None
                }
                (Stored::Float(x), _, _) => {
                    addr.cast::<f64>().write_unaligned(x);
                    None
                }
                (Stored::Any(a), kRFFIAny, _) => {
                    Some(Any::from_raw(addr.cast::<RFFIAny>().replace(a.into_raw())))
                }
                (Stored::Any(a), _, _) => {
                    let new = a
                        .into_object()
                        .map_or(core::ptr::null_mut(), |o| o.into_raw().as_ptr());
                    let prev = addr.cast::<*mut RFFIObject>().replace(new);
                    core::ptr::NonNull::new(prev).map(|p| Any::from(ObjectRef::from_raw(p)))
                }
            };
        }
    }
    drop(old);
}

/// Calls the method `name` of `obj` with `args`: an instance method gets `obj` first.
pub fn call_method(obj: &ObjectRef, name: &str, args: &[AnyView<'_>]) -> Result<Any> {
    let index = obj.type_index();
    let m = find_method(index, name.as_bytes()).ok_or_else(|| no_member(index, "method", name))?;
    let f = registry_value(&m.method);
    let f = f.as_object().expect("methods are Function objects");
    // SAFETY: checked to be a Function at registration.
    let f = unsafe { Function::from_object_unchecked(f.clone()) };
    if m.flags & kRFFIFieldFlagBitMaskIsStaticMethod != 0 {
        return f.call_views(args);
    }
    let this = Any::from(obj.clone());
    let mut all = Vec::with_capacity(args.len() + 1);
    all.push(this.view());
    all.extend_from_slice(args);
    f.call_views(&all)
}

/// The method `name` of type `index` (static or not) as a Function.
pub fn static_method(index: i32, name: &str) -> Result<Function> {
    let m = find_method(index, name.as_bytes()).ok_or_else(|| no_member(index, "method", name))?;
    let f = registry_value(&m.method);
    // SAFETY: checked to be a Function at registration.
    Ok(unsafe { Function::from_object_unchecked(f.as_object().unwrap().clone()) })
}

/// Makes an object of type `index` with every field at its default: through the type's
/// `creator`, or, for types whose metadata gives `total_size`, as a zeroed block the runtime
/// owns, whose built-in fields get their defaults (the others stay zero / None) and whose owning
/// built-in fields (values, objects) it releases.
pub fn create_object(index: i32) -> Result<ObjectRef> {
    let info =
        type_info(index).ok_or_else(|| Error::key_error(format!("unknown type index {index}")))?;
    // SAFETY: metadata, when set, is a type registry entry alive for the process.
    let meta = unsafe { info.metadata.as_ref() };
    if let Some(creator) = meta.and_then(|m| m.creator) {
        let mut out: RFFIObjectHandle = core::ptr::null_mut();
        // SAFETY: the creator's contract: fills `out` with a new reference or raises.
        if unsafe { creator(&mut out) } != 0 {
            return Err(raised(|| format!("the creator of `{}`", key_of(index))));
        }
        let p = core::ptr::NonNull::new(out.cast::<RFFIObject>()).ok_or_else(|| {
            Error::runtime_error(format!("the creator of `{}` returned NULL", key_of(index)))
        })?;
        // SAFETY: a new reference handed to us.
        return Ok(unsafe { ObjectRef::from_raw(p) });
    }
    if super::extend::native_root(index).is_some() {
        return super::extend::create(index, &[], &|_| String::new());
    }
    let size = meta.map_or(0, |m| m.total_size) as usize;
    let fields = all_fields(index);
    if size < core::mem::size_of::<RFFIObject>() {
        return Err(Error::type_error(format!(
            "`{}` cannot be created generically: it has no creator and no total_size",
            key_of(index),
        )));
    }
    if let Some(f) = fields.iter().find(|f| f.offset + f.size > size as i64) {
        return Err(Error::value_error(format!(
            "field `{}` of `{}` lies past total_size {size}",
            member_name(&f.name),
            key_of(index)
        )));
    }
    let layout = Layout::from_size_align(size, 8).map_err(|e| Error::value_error(e.to_string()))?;
    // SAFETY: a non-zero size.
    let mem = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<RFFIObject>();
    let Some(p) = core::ptr::NonNull::new(mem) else {
        std::alloc::handle_alloc_error(layout)
    };
    // SAFETY: fresh zeroed memory of at least a header: all-zero fields are None / 0.
    let obj = unsafe {
        p.as_ptr().write(RFFIObject {
            combined_ref_count: INITIAL_COUNT,
            type_index: index,
            __padding: 0,
            deleter: Some(generic_deleter),
        });
        ObjectRef::from_raw(p)
    };
    for f in fields {
        // Fields with their own accessors start zeroed: what they hold is the type's business.
        if f.flags & kRFFIFieldFlagBitMaskHasDefault == 0 || f.getter.is_some() {
            continue;
        }
        let value = default_of(f)?;
        let converted = convert(&value.view(), f.field_static_type_index, f.size).map_err(|a| {
            Error::type_error(format!(
                "default of field `{}` of `{}` is a {a}",
                member_name(&f.name),
                key_of(index)
            ))
        })?;
        // SAFETY: a built-in field inside the fresh object.
        unsafe {
            builtin_set(
                obj.as_ptr().cast::<u8>().add(f.offset as usize),
                f,
                converted,
            )
        };
    }
    Ok(obj)
}

/// The default value of a field (calling its factory, if it has one).
pub fn default_of(f: &'static RFFIFieldInfo) -> Result<Any> {
    let v = registry_value(&f.default_value_or_factory);
    if f.flags & kRFFIFieldFlagBitMaskDefaultFromFactory != 0 {
        // SAFETY: checked to be a Function at registration.
        let factory = unsafe { Function::from_object_unchecked(v.as_object().unwrap().clone()) };
        factory.call(&[])
    } else {
        v.to_owned()
    }
}

/// Deleter of objects made by `create_object` without a creator: releases the owning built-in
/// fields of the type and its ancestors, then the memory (`total_size` of the type).
unsafe extern "C" fn generic_deleter(obj: *mut c_void, flags: i32) {
    // SAFETY: the header is live until the weak part runs.
    let index = unsafe { (*obj.cast::<RFFIObject>()).type_index };
    if flags & kRFFIObjectDeleterFlagBitMaskStrong != 0 {
        for t in lineage(index) {
            // SAFETY: the fields of the object's types, inside the object being destroyed.
            unsafe { release_builtin_fields(obj.cast(), t) };
        }
    }
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        // SAFETY: allocated by `create_object` with the type's total_size and alignment 8.
        unsafe {
            let size = (*type_info(index).unwrap().metadata).total_size as usize;
            std::alloc::dealloc(obj.cast(), Layout::from_size_align_unchecked(size, 8));
        }
    }
}

/// Releases the owning built-in fields (values, object handles) of type `t` in `obj`.
///
/// # Safety
/// `obj` is an object of `t` or a type derived from it, being destroyed; `t`'s fields without
/// getters are built-in fields inside it.
pub(crate) unsafe fn release_builtin_fields(obj: *mut u8, t: &RFFITypeInfo) {
    // SAFETY: `fields` has `num_fields` entries.
    for f in unsafe { crate::type_registry::slice(t.fields, t.num_fields) } {
        if f.getter.is_some() {
            continue;
        }
        // SAFETY: a built-in field inside the object (contract).
        unsafe {
            let addr = obj.add(f.offset as usize);
            match f.field_static_type_index {
                kRFFIAny => drop(Any::from_raw(addr.cast::<RFFIAny>().replace(NONE_RAW))),
                i if i >= kRFFIStaticObjectBegin => {
                    let p = addr
                        .cast::<*mut RFFIObject>()
                        .replace(core::ptr::null_mut());
                    if let Some(p) = core::ptr::NonNull::new(p) {
                        drop(ObjectRef::from_raw(p));
                    }
                }
                _ => {}
            }
        }
    }
}
