//! `testing.SchemaAllTypes`: an object with a field of each kind a type schema describes (plain
//! values, optional values, containers of values, a value of several types), and methods taking
//! and returning them; tvm-ffi's tests use it to check type information and conversions.
//! Also `testing.TestDeepCopyEdges` (an any field and an object field) and the
//! `testing.schema_id_*` functions (their argument converted to a container type).

use crate::reflection::{Obj, ObjectHeader};
use crate::{Any, Array, DataType, Device, Map};

crate::object_type! {
    /// A field of each kind of type.
    pub struct SchemaAllTypes("testing.SchemaAllTypes") {
        /// A bool.
        pub v_bool: bool,
        /// An int.
        pub v_int: i64,
        /// A float.
        pub v_float: f64,
        /// A device.
        pub v_device: Device,
        /// A dtype.
        pub v_dtype: DataType,
        /// A string.
        pub v_string: String,
        /// Bytes.
        pub v_bytes: crate::Bytes,
        /// An optional int.
        pub v_opt_int: Option<i64>,
        /// An optional string.
        pub v_opt_str: Option<String>,
        /// An array of ints.
        pub v_arr_int: Array,
        /// An array of strings.
        pub v_arr_str: Array,
        /// A map from strings to ints.
        pub v_map_str_int: Map,
        /// A map from strings to arrays of ints.
        pub v_map_str_arr_int: Map,
        /// A string, an array of ints or a map from strings to ints.
        pub v_variant: Any,
        /// An optional array of ints and strings.
        pub v_opt_arr_variant: Option<Array>,
    }
    methods {
        /// `v_int + x`.
        "add_int" => |s: Obj<SchemaAllTypes>, x: i64| s.v_int + x;
        /// `items` with `x` appended.
        "append_int" => |_: Obj<SchemaAllTypes>, items: Array, x: i64| -> crate::Result<Array> {
            let mut out: Vec<Any> = items.iter().map(|v| v.to_owned()).collect::<crate::Result<_>>()?;
            out.push(x.into());
            Ok(Array::new(out))
        };
        /// Both strings joined, the one given, or None.
        "maybe_concat" => |_: Obj<SchemaAllTypes>, a: Option<String>, b: Option<String>| {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + &b),
                (a, b) => a.or(b),
            }
        };
        /// The entries of both maps; a key in both gets both arrays, `a`'s items first.
        "merge_map" => |_: Obj<SchemaAllTypes>, a: Map, b: Map| -> crate::Result<Map> {
            let mut entries: Vec<(Any, Any)> = Vec::new();
            for (k, v) in a.iter() {
                let mut items: Vec<Any> = v.try_as::<Array>()?.iter().map(|x| x.to_owned())
                    .collect::<crate::Result<_>>()?;
                if let Some(more) = b.get(&k)? {
                    for x in more.try_as::<Array>()?.iter() {
                        items.push(x.to_owned()?);
                    }
                }
                entries.push((k.to_owned()?, Array::new(items).into()));
            }
            for (k, v) in b.iter() {
                if a.get(&k)?.is_none() {
                    entries.push((k.to_owned()?, v.to_owned()?));
                }
            }
            Map::new(entries)
        };
        /// One with `v_int`, `v_float` and `v_string` given, the other fields empty or zero.
        #[static_method]
        "make_with" => |v_int: i64, v_float: f64, v_string: String| -> crate::Result<_> {
            Ok(Obj::new(SchemaAllTypes {
                base: ObjectHeader::default(),
                v_bool: false,
                v_int,
                v_float,
                v_device: Device::new(1, 0).map_err(crate::Error::value_error)?,
                v_dtype: DataType::parse("float32").map_err(crate::Error::value_error)?,
                v_string,
                v_bytes: crate::Bytes::new(b""),
                v_opt_int: None,
                v_opt_str: None,
                v_arr_int: Array::new(Vec::new()),
                v_arr_str: Array::new(Vec::new()),
                v_map_str_int: Map::new(Vec::new())?,
                v_map_str_arr_int: Map::new(Vec::new())?,
                v_variant: Any::from(""),
                v_opt_arr_variant: None,
            }))
        };
    }
}

crate::object_type! {
    /// A field of any value and a field of any object: what deep copies go into.
    pub struct TestDeepCopyEdges("testing.TestDeepCopyEdges") {
        /// Any value (None included).
        pub v_any: Any,
        /// Any object.
        pub v_obj: crate::ObjectRef,
    }
    methods {
        /// Makes one from its fields.
        #[static_method]
        "__ffi_init__" => |v_any: Any, v_obj: crate::ObjectRef| Obj::new(TestDeepCopyEdges {
            base: ObjectHeader::default(),
            v_any,
            v_obj,
        });
    }
}

/// Registers `testing.schema_id_<name>`: the argument converted to `schema` (a TypeSchema's
/// JSON), as a function declared with that parameter type receives it (an Array where a List is
/// expected becomes a List, and so on; an item of the wrong type is a TypeError).
macro_rules! schema_identity {
    ($($name:literal => $schema:literal;)*) => {$(
        crate::function_registry::register_builtin!($name, |v: Any| -> crate::Result<Any> {
            crate::schema::TypeSchema::from_json($schema)?.convert(&v.view())
        });
    )*};
}

schema_identity! {
    "testing.schema_id_arr_int" => r#"{"type":"ffi.Array","args":[{"type":"int"}]}"#;
    "testing.schema_id_arr_str" => r#"{"type":"ffi.Array","args":[{"type":"ffi.String"}]}"#;
    "testing.schema_id_list_int" => r#"{"type":"ffi.List","args":[{"type":"int"}]}"#;
    "testing.schema_id_list_str" => r#"{"type":"ffi.List","args":[{"type":"ffi.String"}]}"#;
    "testing.schema_id_map_str_int" =>
        r#"{"type":"ffi.Map","args":[{"type":"ffi.String"},{"type":"int"}]}"#;
    "testing.schema_id_map_str_str" =>
        r#"{"type":"ffi.Map","args":[{"type":"ffi.String"},{"type":"ffi.String"}]}"#;
    "testing.schema_id_dict_str_int" =>
        r#"{"type":"ffi.Dict","args":[{"type":"ffi.String"},{"type":"int"}]}"#;
    "testing.schema_id_dict_str_str" =>
        r#"{"type":"ffi.Dict","args":[{"type":"ffi.String"},{"type":"ffi.String"}]}"#;
}
