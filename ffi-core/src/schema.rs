//! Type schemas: a description of a value's type (`int`, `Optional[str]`, `List[float]`,
//! `my.Point`, ...), written as tvm-ffi's JSON (`{"type":"ffi.Array","args":[{"type":"int"}]}`),
//! and the converter that checks a value against one and converts what fits (an int widens to a
//! float, an array's elements are converted), naming the path to what does not.

mod json;

use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::string::str_bytes_of;
use crate::type_registry::{is_instance, type_key_to_index};
use crate::{Array, Map};

/// A type, as function signatures and fields declare it.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeSchema {
    /// Any value (`Any`; Python's `typing.Any`).
    Any,
    /// None (`None`).
    None,
    /// A bool (`bool`).
    Bool,
    /// An int64 (`int`); a bool converts.
    Int,
    /// A float64 (`float`); an int widens.
    Float,
    /// A string (`ffi.String`, Python's `str`).
    Str,
    /// A byte string (`ffi.Bytes`, Python's `bytes`).
    Bytes,
    /// A device (`Device`).
    Device,
    /// A data type (`DataType`).
    DataType,
    /// An opaque pointer (`void*`), or None.
    OpaquePtr,
    /// A tensor (`ffi.Tensor`).
    Tensor,
    /// A Function; with a signature `(result, args)` when known.
    Function(Option<(Box<TypeSchema>, Vec<TypeSchema>)>),
    /// An object type by key (`ffi.Object` for any object).
    Object(String),
    /// None or the inner type (`Optional[T]`).
    Optional(Box<TypeSchema>),
    /// Any of the types, tried in order (`Union[A, B]`; tvm-ffi's `Variant`).
    Union(Vec<TypeSchema>),
    /// An immutable sequence whose items have the type (`ffi.Array`, Python's `list[T]`).
    Array(Box<TypeSchema>),
    /// A mutable sequence whose items have the type (`ffi.List`).
    List(Box<TypeSchema>),
    /// An immutable mapping with key and value types (`ffi.Map`, Python's `dict[K, V]`).
    Map(Box<TypeSchema>, Box<TypeSchema>),
    /// A mutable mapping with key and value types (`ffi.Dict`).
    Dict(Box<TypeSchema>, Box<TypeSchema>),
    /// A sequence of fixed length with a type per position (`Tuple[A, B]`).
    Tuple(Vec<TypeSchema>),
}

use TypeSchema as S;

impl TypeSchema {
    /// The schema of a type key (`"int"`, `"ffi.String"`, `"my.Point"`, ...), without arguments.
    pub fn from_key(key: &str) -> TypeSchema {
        match key {
            "Any" | "ffi.Any" => S::Any,
            "None" | "void" => S::None,
            "bool" => S::Bool,
            "int" | "int8" | "int16" | "int32" | "uint8" | "uint16" | "uint32" | "uint64" => S::Int,
            "float" => S::Float,
            "str" | "ffi.String" => S::Str,
            "bytes" | "ffi.Bytes" => S::Bytes,
            "Device" => S::Device,
            "DataType" | "dtype" => S::DataType,
            "void*" => S::OpaquePtr,
            "ffi.Tensor" | "DLTensor*" | "writable ffi.Tensor" => S::Tensor,
            "ffi.Function" => S::Function(None),
            "ffi.Array" => S::Array(Box::new(S::Any)),
            "ffi.List" => S::List(Box::new(S::Any)),
            "ffi.Map" => S::Map(Box::new(S::Any), Box::new(S::Any)),
            "ffi.Dict" => S::Dict(Box::new(S::Any), Box::new(S::Any)),
            k => S::Object(k.to_owned()),
        }
    }

    /// tvm-ffi's JSON form: `{"type": origin, "args": [...]}`.
    pub fn to_json(&self) -> String {
        let (origin, args): (&str, Vec<&TypeSchema>) = match self {
            S::Any => ("Any", vec![]),
            S::None => ("None", vec![]),
            S::Bool => ("bool", vec![]),
            S::Int => ("int", vec![]),
            S::Float => ("float", vec![]),
            S::Str => ("ffi.String", vec![]),
            S::Bytes => ("ffi.Bytes", vec![]),
            S::Device => ("Device", vec![]),
            S::DataType => ("DataType", vec![]),
            S::OpaquePtr => ("void*", vec![]),
            S::Tensor => ("ffi.Tensor", vec![]),
            S::Function(None) => ("ffi.Function", vec![]),
            S::Function(Some((r, a))) => {
                ("ffi.Function", core::iter::once(&**r).chain(a).collect())
            }
            S::Object(k) => (k.as_str(), vec![]),
            S::Optional(t) => ("Optional", vec![&**t]),
            S::Union(ts) => ("Union", ts.iter().collect()),
            S::Array(t) => ("ffi.Array", vec![&**t]),
            S::List(t) => ("ffi.List", vec![&**t]),
            S::Map(k, v) => ("ffi.Map", vec![&**k, &**v]),
            S::Dict(k, v) => ("ffi.Dict", vec![&**k, &**v]),
            S::Tuple(ts) => ("Tuple", ts.iter().collect()),
        };
        let mut s = format!(r#"{{"type":{}"#, json::quote(origin));
        if !args.is_empty() {
            s.push_str(r#","args":["#);
            s.push_str(
                &args
                    .iter()
                    .map(|a| a.to_json())
                    .collect::<Vec<_>>()
                    .join(","),
            );
            s.push(']');
        }
        s.push('}');
        s
    }

    /// Parses the JSON form (also accepting tvm-ffi's `Variant` for `Union`).
    pub fn from_json(text: &str) -> Result<TypeSchema> {
        let v = json::parse(text)
            .map_err(|e| Error::value_error(format!("invalid type schema JSON ({e}): {text}")))?;
        Self::from_value(&v)
    }

    pub(crate) fn from_value(v: &json::Value) -> Result<TypeSchema> {
        let bad = || Error::value_error(format!("invalid type schema: {}", v.to_json()));
        let origin = v
            .get("type")
            .and_then(json::Value::as_str)
            .ok_or_else(bad)?;
        let args = match v.get("args") {
            Some(json::Value::Array(a)) => a.iter().map(Self::from_value).collect::<Result<_>>()?,
            Some(_) => return Err(bad()),
            None => Vec::new(),
        };
        let arg =
            |i: usize| -> Box<TypeSchema> { Box::new(args.get(i).cloned().unwrap_or(S::Any)) };
        Ok(match origin {
            "Optional" if args.len() == 1 => S::Optional(arg(0)),
            "Union" | "Variant" => S::Union(args.clone()),
            "Tuple" | "tuple" => S::Tuple(args.clone()),
            "ffi.Array" | "list" | "List" => S::Array(arg(0)),
            "ffi.List" => S::List(arg(0)),
            "ffi.Map" | "dict" | "Dict" => S::Map(arg(0), arg(1)),
            "ffi.Dict" => S::Dict(arg(0), arg(1)),
            "ffi.Function" if !args.is_empty() => S::Function(Some((arg(0), args[1..].to_vec()))),
            o => Self::from_key(o),
        })
    }

    /// As Python's typing writes it: `int`, `Optional[str]`, `List[float]`, `my.Point`.
    pub fn render(&self) -> String {
        let list = |ts: &[TypeSchema]| ts.iter().map(S::render).collect::<Vec<_>>().join(", ");
        match self {
            S::Any => "Any".into(),
            S::None => "None".into(),
            S::Bool => "bool".into(),
            S::Int => "int".into(),
            S::Float => "float".into(),
            S::Str => "str".into(),
            S::Bytes => "bytes".into(),
            S::Device => "Device".into(),
            S::DataType => "dtype".into(),
            S::OpaquePtr => "void*".into(),
            S::Tensor => "Tensor".into(),
            S::Function(None) => "Callable".into(),
            S::Function(Some((r, a))) => format!("Callable[[{}], {}]", list(a), r.render()),
            S::Object(k) => k.clone(),
            S::Optional(t) => format!("Optional[{}]", t.render()),
            S::Union(ts) => format!("Union[{}]", list(ts)),
            S::Array(t) => format!("Array[{}]", t.render()),
            S::List(t) => format!("List[{}]", t.render()),
            S::Map(k, v) => format!("Map[{}, {}]", k.render(), v.render()),
            S::Dict(k, v) => format!("Dict[{}, {}]", k.render(), v.render()),
            S::Tuple(ts) => format!("Tuple[{}]", list(ts)),
        }
    }

    /// Checks `v` against this schema and converts it: an int becomes a float where a float is
    /// expected, a bool an int, the elements of an array or map are converted; a value that does
    /// not fit is a TypeError naming the path to it (`[1]`, `["key"]`), the expected and the
    /// actual type.
    pub fn convert(&self, v: &AnyView<'_>) -> Result<Any> {
        self.convert_at(v, &mut String::new())
            .map_err(|(path, expected, actual)| {
                let at = if path.is_empty() {
                    String::new()
                } else {
                    format!(" at {path}")
                };
                Error::type_error(format!("expected {expected}{at}, got {actual}"))
            })
    }

    fn convert_at(
        &self,
        v: &AnyView<'_>,
        path: &mut String,
    ) -> core::result::Result<Any, (String, String, String)> {
        let ti = v.type_index();
        let fail = |path: &String| Err((path.clone(), self.render(), v.type_name()));
        let owned = |path: &String| {
            v.to_owned()
                .map_err(|e| (path.clone(), self.render(), e.message()))
        };
        match self {
            S::Any => owned(path),
            S::None if ti == kRFFINone => Ok(Any::none()),
            S::Bool if ti == kRFFIBool => owned(path),
            S::Int if ti == kRFFIInt || ti == kRFFIBool => Ok(Any::from(int_payload(v))),
            S::Float if ti == kRFFIFloat => owned(path),
            S::Float if ti == kRFFIInt => Ok(Any::from(int_payload(v) as f64)),
            S::Str if matches!(ti, kRFFIRawStr | kRFFISmallStr | kRFFIStr) => owned(path),
            S::Bytes if matches!(ti, kRFFIByteArrayPtr | kRFFISmallBytes | kRFFIBytes) => {
                owned(path)
            }
            S::Device if ti == kRFFIDevice => owned(path),
            S::DataType if ti == kRFFIDataType => owned(path),
            S::OpaquePtr if ti == kRFFIOpaquePtr || ti == kRFFINone => owned(path),
            S::Tensor if ti == kRFFITensor => owned(path),
            S::Function(_) if ti == kRFFIFunction => owned(path),
            S::Object(key) => match type_key_to_index(key) {
                Some(target) if ti >= kRFFIStaticObjectBegin && is_instance(ti, target) => {
                    owned(path)
                }
                Some(kRFFIStr) if str_bytes_of(v).is_some() => owned(path),
                _ => fail(path),
            },
            S::Optional(_) if ti == kRFFINone => Ok(Any::none()),
            S::Optional(t) => t.convert_at(v, path),
            S::Union(ts) => {
                for t in ts {
                    if let Ok(x) = t.convert_at(v, path) {
                        return Ok(x);
                    }
                }
                fail(path)
            }
            S::Array(t) | S::List(t) if ti == kRFFIArray || ti == kRFFIList => {
                let items = crate::containers::seq_items(v)
                    .map_err(|e| (path.clone(), self.render(), e))?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    out.push(t.convert_at(&item.view(), path)?);
                    path.truncate(len);
                }
                let wanted = if matches!(self, S::List(_)) {
                    kRFFIList
                } else {
                    kRFFIArray
                };
                if ti == wanted && unchanged(&items, out.iter()) {
                    return owned(path); // already what is expected: the same container
                }
                Ok(match self {
                    S::List(_) => crate::containers::make_list(out),
                    _ => Any::from(Array::new(out)),
                })
            }
            S::Tuple(ts) if ti == kRFFIArray || ti == kRFFIList => {
                let items = crate::containers::seq_items(v)
                    .map_err(|e| (path.clone(), self.render(), e))?;
                if items.len() != ts.len() {
                    return Err((
                        path.clone(),
                        self.render(),
                        format!("a sequence of {} items", items.len()),
                    ));
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, (t, item)) in ts.iter().zip(&items).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    out.push(t.convert_at(&item.view(), path)?);
                    path.truncate(len);
                }
                Ok(Any::from(Array::new(out)))
            }
            S::Map(k, val) | S::Dict(k, val) if ti == kRFFIMap || ti == kRFFIDict => {
                let pairs = crate::containers::map_items(v)
                    .map_err(|e| (path.clone(), self.render(), e))?;
                let mut out = Vec::with_capacity(pairs.len());
                for (key, value) in &pairs {
                    let len = path.len();
                    path.push_str(&format!("[{}]", describe_key(key)));
                    let ck = k.convert_at(&key.view(), path)?;
                    let cv = val.convert_at(&value.view(), path)?;
                    path.truncate(len);
                    out.push((ck, cv));
                }
                let wanted = if matches!(self, S::Dict(..)) {
                    kRFFIDict
                } else {
                    kRFFIMap
                };
                let flat = pairs.iter().flat_map(|(k, v)| [k, v]);
                if ti == wanted && unchanged(flat, out.iter().flat_map(|(k, v)| [k, v])) {
                    return owned(path); // already what is expected: the same container
                }
                Ok(match self {
                    S::Dict(..) => crate::containers::make_dict(out),
                    // Keys came out of a map, so they hash.
                    _ => Map::new(out).map(Any::from).unwrap_or_default(),
                })
            }
            _ => fail(path),
        }
    }
}

/// Whether converting the items changed none of them (then the container itself is kept).
fn unchanged<'a>(
    before: impl IntoIterator<Item = &'a Any>,
    after: impl IntoIterator<Item = &'a Any>,
) -> bool {
    before
        .into_iter()
        .zip(after)
        .all(|(a, b)| crate::structural::same_value(a, b))
}

/// The payload of an int or bool value.
fn int_payload(v: &AnyView<'_>) -> i64 {
    debug_assert!(matches!(v.type_index(), kRFFIInt | kRFFIBool));
    // SAFETY: ints and bools are stored in v_int64 (callers check the index).
    unsafe { v.as_raw().v.v_int64 }
}

fn describe_key(k: &Any) -> String {
    match k.try_as::<String>() {
        Ok(s) => json::quote(&s),
        Err(_) => match k.try_as::<i64>() {
            Ok(i) => i.to_string(),
            Err(_) => k.view().type_name(),
        },
    }
}

pub use json::quote as json_quote;
pub(crate) use json::{parse as parse_json, Value as JsonValue};
