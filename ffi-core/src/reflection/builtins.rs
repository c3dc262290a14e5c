//! `ffi.*` functions over the type registry, for bindings (Python) and C callers that prefer
//! calls to the reflection structs: type information as JSON, fields and methods by name,
//! creating objects, and registering types whose fields are values stored in the object.

use super::{access, all_fields, find_field, lineage, member_name};
use crate::abi::*;
use crate::any::AnyView;
use crate::error::{Error, Result};
use crate::function_registry::{register_builtin, register_builtin_packed};
use crate::host::byte_array;
use crate::schema::json_quote;
use crate::type_registry::{is_instance, type_info, type_key_to_index};
use crate::{Any, Array, Function, ObjectRef};

fn text(ba: &RFFIByteArray) -> &'static str {
    member_name(ba)
}

fn index_of(key_or_index: &Any) -> Result<i32> {
    if let Ok(i) = key_or_index.try_as::<i64>() {
        return i32::try_from(i)
            .ok()
            .filter(|&i| type_info(i).is_some())
            .ok_or_else(|| Error::key_error(format!("unknown type index {i}")));
    }
    let key = key_or_index.try_as::<String>()?;
    type_key_to_index(&key).ok_or_else(|| Error::key_error(format!("unknown type key `{key}`")))
}

/// The type's information as JSON: key, index, ancestors' keys (root first), doc, own fields and
/// methods (name, doc, flags, metadata).
pub fn type_info_json(index: i32) -> Result<String> {
    let info =
        type_info(index).ok_or_else(|| Error::key_error(format!("unknown type index {index}")))?;
    let ancestors: Vec<String> = lineage(index)
        .skip(1)
        .map(|t| json_quote(text(&t.type_key)))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    // SAFETY: type registry entries live as long as the process.
    let meta = unsafe { info.metadata.as_ref() };
    // SAFETY: as above, with `num_fields` / `num_methods` entries.
    let (fields, methods) = unsafe {
        (
            crate::type_registry::slice(info.fields, info.num_fields),
            crate::type_registry::slice(info.methods, info.num_methods),
        )
    };
    let member = |name: &RFFIByteArray, doc: &RFFIByteArray, md: &RFFIByteArray, flags: i64| {
        let md = if md.size == 0 { "{}" } else { text(md) };
        format!(
            r#"{{"name":{},"doc":{},"flags":{flags},"metadata":{md}}}"#,
            json_quote(text(name)),
            json_quote(text(doc))
        )
    };
    Ok(format!(
        r#"{{"type_key":{},"type_index":{index},"ancestors":[{}],"doc":{},"total_size":{},"fields":[{}],"methods":[{}]}}"#,
        json_quote(text(&info.type_key)),
        ancestors.join(","),
        json_quote(meta.map_or("", |m| text(&m.doc))),
        meta.map_or(0, |m| m.total_size),
        fields
            .iter()
            .map(|f| member(&f.name, &f.doc, &f.metadata, f.flags))
            .collect::<Vec<_>>()
            .join(","),
        methods
            .iter()
            .map(|m| member(&m.name, &m.doc, &m.metadata, m.flags))
            .collect::<Vec<_>>()
            .join(","),
    ))
}

register_builtin!("ffi.TypeInfoJSON", |key_or_index: Any| -> Result<String> {
    type_info_json(index_of(&key_or_index)?)
});

register_builtin!("ffi.ObjectGetField", |obj: ObjectRef, name: String| {
    access::get_field(&obj, &name)
});

register_builtin!(
    "ffi.ObjectSetField",
    |obj: ObjectRef, name: String, value: Any| access::set_field(&obj, &name, &value.view())
);

// Writes a field whether or not it is frozen, with the same type checks as a setter: for code
// that finishes building an object nothing else has seen yet (Python's `__post_init__`, a
// dataclass `__init__` of its own, `object.__setattr__` on a frozen dataclass).
register_builtin!("ffi.ObjectInitField", |obj: ObjectRef,
                                          name: String,
                                          value: Any|
 -> Result<()> {
    let index = obj.type_index();
    let f = find_field(index, name.as_bytes()).ok_or_else(|| {
        Error::new(
            "AttributeError",
            format!("`{}` has no field `{name}`", super::key_of(index)),
        )
    })?;
    access::init_field(&obj, f, &value.view())
});

register_builtin!("ffi.TypeGetMethod", |key_or_index: Any,
                                        name: String|
 -> Result<Function> {
    access::static_method(index_of(&key_or_index)?, &name)
});

// Packed: (type key or index, the caller's name for messages, then a (field name, argument
// position, value) triple per field given). The object is made with those field values, frozen
// fields included; a value that does not fit is a TypeError naming the caller, the argument's
// position (-1: given by keyword; below: a default) and field, and the expected and actual types:
// `P.__init__() argument #0 (`mass`): expected float, got str`.
register_builtin_packed!("ffi.ObjectCreateInit", |args: &[AnyView<'_>]| {
    if args.len() < 2 || (args.len() - 2) % 3 != 0 {
        return Err(Error::type_error(format!(
            "ffi.ObjectCreateInit takes a type, a caller name and (name, position, value) \
             triples, not {} arguments",
            args.len()
        )));
    }
    let index = index_of(&args[0].to_owned()?)?;
    let caller = args[1].try_as::<String>()?;
    let mut names = Vec::with_capacity((args.len() - 2) / 3);
    let mut positions = Vec::with_capacity(names.capacity());
    for t in args[2..].chunks(3) {
        names.push(t[0].try_as::<String>()?);
        positions.push(t[1].try_as::<i64>()?);
    }
    let values: Vec<(&str, AnyView<'_>)> = names
        .iter()
        .zip(args[2..].chunks(3))
        .map(|(n, t)| (n.as_str(), t[2]))
        .collect();
    let describe = |i: usize| match positions[i] {
        p if p >= 0 => format!("{caller} argument #{p} (`{}`)", names[i]),
        -1 => format!("{caller} keyword argument `{}`", names[i]),
        _ => format!("{caller} default of field `{}`", names[i]),
    };
    Ok(Any::from(access::create_with_fields(
        index, &values, &describe,
    )?))
});

register_builtin!("ffi.TypeRegisterMethod", |key_or_index: Any,
                                             name: String,
                                             method: Function,
                                             doc: String,
                                             is_static: bool,
                                             metadata: String|
 -> Result<()> {
    let index = index_of(&key_or_index)?;
    if !metadata.is_empty() {
        crate::function_metadata::check_metadata(&metadata)?;
    }
    let value = Any::from(method);
    let info = RFFIMethodInfo {
        name: byte_array(name.as_bytes()),
        doc: byte_array(doc.as_bytes()),
        metadata: byte_array(metadata.as_bytes()),
        flags: if is_static {
            kRFFIFieldFlagBitMaskIsStaticMethod
        } else {
            0
        },
        method: *value.as_raw(),
    };
    // SAFETY: every pointer in `info` borrows a local alive for the call.
    unsafe { super::register_method(index, &info) }
});

register_builtin!(
    "ffi.ObjectCreate",
    |key_or_index: Any| -> Result<ObjectRef> { access::create_object(index_of(&key_or_index)?) }
);

register_builtin!("ffi.TypeFieldDefault", |key_or_index: Any,
                                           name: String|
 -> Result<Any> {
    let index = index_of(&key_or_index)?;
    let f = find_field(index, name.as_bytes())
        .ok_or_else(|| Error::new("AttributeError", format!("no field `{name}`")))?;
    if f.flags & kRFFIFieldFlagBitMaskHasDefault == 0 {
        return Err(Error::key_error(format!("field `{name}` has no default")));
    }
    access::default_of(f)
});

register_builtin!("ffi.ObjectIsInstance", |obj: ObjectRef,
                                           key_or_index: Any|
 -> Result<bool> {
    Ok(is_instance(obj.type_index(), index_of(&key_or_index)?))
});

register_builtin!("ffi.TypeKeyToIndex", |key: String| -> Result<i64> {
    type_key_to_index(&key)
        .map(i64::from)
        .ok_or_else(|| Error::key_error(format!("unknown type key `{key}`")))
});

/// Registers a type whose fields are values stored in the object (16 bytes each, after the
/// parent's), type-checked on write against their schemas: how a language without its own object
/// layout (Python's `py_class`) defines types every language can read. The parent may be a
/// native type (Rust's `object_type!`, a C type with a creator): see `extend`. `fields` is a JSON array
/// of `{"name", "doc", "flags", "type_schema", "frozen"}`; a frozen field is written only when
/// its object is made (`create_with_fields`), never by a setter. Registering the same key again
/// returns its index.
pub fn register_value_type(key: &str, parent: Option<i32>, fields_json: &str) -> Result<i32> {
    // One registration at a time: a second one of the same key waits and then finds the
    // type's members there, instead of registering them twice.
    static REGISTERING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
    let parent_index = parent.unwrap_or(kRFFIObject);
    let base = match parent_index {
        kRFFIObject => core::mem::size_of::<RFFIObject>() as i32,
        p => {
            let info =
                type_info(p).ok_or_else(|| Error::key_error(format!("unknown type index {p}")))?;
            // SAFETY: type registry metadata lives as long as the process.
            let size = unsafe { info.metadata.as_ref() }.map_or(0, |m| m.total_size);
            if super::extend::is_native(info) {
                super::extend::first_field_offset(info)?
            } else if size == 0
                || (super::extend::native_root(p).is_none()
                    && all_fields(p).iter().any(|f| f.getter.is_some()))
            {
                return Err(Error::type_error(format!(
                    "cannot extend `{}`: only types whose fields the runtime lays out can be",
                    text(&info.type_key)
                )));
            } else {
                size
            }
        }
    };
    let index = crate::type_registry::register_type(key, parent)?;
    if super::spec::has_members(index) {
        return Ok(index);
    }
    let fields = match crate::schema::parse_json(fields_json) {
        Ok(crate::schema::JsonValue::Array(a)) => a,
        _ => return Err(Error::value_error("fields must be a JSON array")),
    };
    let mut offset = base;
    for f in &fields {
        let name = f
            .get("name")
            .and_then(|v| v.as_str())
            .ok_or_else(|| Error::value_error("each field needs a \"name\""))?;
        let doc = f.get("doc").and_then(|v| v.as_str()).unwrap_or("");
        let flags = f.get("flags").and_then(|v| v.as_i64()).unwrap_or(0);
        let writable = match f.get("frozen") {
            Some(crate::schema::JsonValue::Bool(true)) => 0,
            _ => kRFFIFieldFlagBitMaskWritable,
        };
        let metadata = match f.get("type_schema").and_then(|v| v.as_str()) {
            Some(s) => {
                crate::schema::TypeSchema::from_json(s)?;
                format!(r#"{{"type_schema":{}}}"#, json_quote(s))
            }
            None => String::new(),
        };
        let info = RFFIFieldInfo {
            name: byte_array(name.as_bytes()),
            doc: byte_array(doc.as_bytes()),
            metadata: byte_array(metadata.as_bytes()),
            flags: (flags & !kRFFIFieldFlagBitMaskWritable | writable)
                & !(kRFFIFieldFlagBitMaskHasDefault | kRFFIFieldFlagBitMaskSetterIsFunctionObj),
            size: 16,
            alignment: 8,
            offset: offset as i64,
            getter: None,
            setter: core::ptr::null_mut(),
            default_value_or_factory: crate::any::NONE_RAW,
            field_static_type_index: kRFFIAny,
        };
        // SAFETY: the strings borrow locals alive for the call.
        unsafe { super::register_field(index, &info) }?;
        offset += 16;
    }
    let meta = RFFITypeMetadata {
        doc: byte_array(b""),
        creator: None,
        total_size: offset,
        structural_eq_hash_kind: 0,
    };
    // SAFETY: as above.
    unsafe { super::register_metadata(index, &meta) }?;
    if super::extend::native_root(index).is_some() {
        super::extend::register_from_fields(index)?;
    }
    Ok(index)
}

register_builtin!("ffi.TypeRegisterValueType", |key: String,
                                                parent: Any,
                                                fields: String|
 -> Result<i64> {
    let parent = if parent.is_none() {
        None
    } else {
        Some(index_of(&parent)?)
    };
    register_value_type(&key, parent, &fields).map(i64::from)
});

register_builtin!("ffi.TypeRegisterDoc", |key_or_index: Any,
                                          doc: String|
 -> Result<()> {
    let index = index_of(&key_or_index)?;
    let info = type_info(index).ok_or_else(|| Error::key_error("unknown type"))?;
    // SAFETY: registry metadata lives as long as the process.
    let old = unsafe { info.metadata.as_ref() };
    let meta = RFFITypeMetadata {
        doc: byte_array(doc.as_bytes()),
        creator: old.and_then(|m| m.creator),
        total_size: old.map_or(0, |m| m.total_size),
        structural_eq_hash_kind: old.map_or(0, |m| m.structural_eq_hash_kind),
    };
    // SAFETY: the doc borrows a local alive for the call.
    unsafe { super::register_metadata(index, &meta) }
});

register_builtin!("ffi.GetRegisteredTypeKeys", || -> Array {
    let mut keys = Vec::new();
    let mut i = kRFFIDynObjectBegin;
    while let Some(info) = type_info(i) {
        keys.push(Any::from(text(&info.type_key)));
        i += 1;
    }
    Array::new(keys)
});
