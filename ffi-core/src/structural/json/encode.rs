//! Writing a JSON graph.

use super::super::tensor::tensor_bytes;
use super::super::{addr, class_of, text_of, Class, Depth, FieldCache};
use super::{base64, inline_field, JSON_GRAPH_VERSION};
use crate::abi::*;
use crate::any::AnyView;
use crate::error::{Error, Result};
use crate::reflection::{member_name, read_field, type_attr};
use crate::schema::JsonValue as Json;
use crate::type_registry::{type_info, type_name};
use crate::{Shape, Tensor};
use rustc_hash::FxHashMap;

/// The JSON graph of `value`, with `metadata` (plain values: None, bools, numbers, strings,
/// sequences, maps with string keys) under `"metadata"` when given. A value that cannot be
/// written (a function, a module, an opaque handle, device memory) is a TypeError naming its type
/// and where it is in the graph.
pub fn to_json_graph(value: &AnyView<'_>, metadata: Option<&AnyView<'_>>) -> Result<String> {
    let mut e = Encoder {
        nodes: Vec::new(),
        by_identity: FxHashMap::default(),
        by_value: FxHashMap::default(),
        depth: Depth::new("to_json_graph_str"),
        fields: FieldCache::default(),
        path: Vec::new(),
    };
    let root = e.node(value)?;
    let mut top = vec![
        ("version".to_owned(), Json::Int(JSON_GRAPH_VERSION)),
        ("root_index".to_owned(), Json::Int(root as i64)),
        ("nodes".to_owned(), Json::Array(e.nodes)),
    ];
    if let Some(m) = metadata.filter(|m| !m.is_none()) {
        let mut depth = Depth::new("to_json_graph_str metadata");
        top.push(("metadata".to_owned(), plain(m, &mut depth)?));
    }
    Ok(Json::Object(top).to_json())
}

/// Metadata as plain JSON.
fn plain(v: &AnyView<'_>, depth: &mut Depth) -> Result<Json> {
    let raw = v.as_raw();
    let class = class_of(v.type_index());
    // Each arm reads the payload member that matches the type index.
    let out = match (class, v.type_index()) {
        (_, kRFFINone) => Json::Null,
        // SAFETY: as above.
        (_, kRFFIBool) => Json::Bool(unsafe { raw.v.v_int64 } != 0),
        // SAFETY: as above.
        (_, kRFFIInt) => Json::Int(unsafe { raw.v.v_int64 }),
        // SAFETY: as above.
        (_, kRFFIFloat) => Json::Number(unsafe { raw.v.v_float64 }),
        (Class::Str, _) => Json::Str(String::from_utf8_lossy(text_of(v)).into_owned()),
        (Class::Array | Class::List | Class::Map | Class::Dict, _) => {
            depth.enter()?;
            let out = if matches!(class, Class::Array | Class::List) {
                let items = super::super::items::Seq::of(v)?;
                Json::Array(
                    items
                        .iter()
                        .map(|x| plain(&x, depth))
                        .collect::<Result<_>>()?,
                )
            } else {
                let mut kv = Vec::new();
                for (k, x) in super::super::items::Entries::of(v)?.iter() {
                    let key = k.try_as::<String>().map_err(|_| {
                        Error::type_error("to_json_graph_str: metadata map keys must be strings")
                    })?;
                    kv.push((key, plain(&x, depth)?));
                }
                Json::Object(kv)
            };
            depth.leave();
            out
        }
        _ => {
            return Err(Error::type_error(format!(
                "to_json_graph_str: metadata holds a value of type `{}`; it takes None, bools, \
                 numbers, strings, sequences and maps with string keys",
                v.type_name()
            )))
        }
    };
    Ok(out)
}

struct Encoder {
    nodes: Vec<Json>,
    /// Objects written, by address.
    by_identity: FxHashMap<usize, usize>,
    /// Plain values written, by type and content: equal values share a node.
    by_value: FxHashMap<(i32, Vec<u8>), usize>,
    depth: Depth,
    fields: FieldCache,
    /// The steps from the root to the value being written, for messages.
    path: Vec<String>,
}

fn node(ty: &str, data: Option<Json>) -> Json {
    let mut kv = vec![("type".to_owned(), Json::Str(ty.to_owned()))];
    if let Some(d) = data {
        kv.push(("data".to_owned(), d));
    }
    Json::Object(kv)
}

impl Encoder {
    fn refuse(&self, v: &AnyView<'_>, why: &str) -> Error {
        Error::type_error(format!(
            "to_json_graph_str: cannot serialize a value of type `{}` at root{}: {why}",
            v.type_name(),
            self.path.concat()
        ))
    }

    /// The index of the node of `v`, writing it (and its parts) the first time.
    fn node(&mut self, v: &AnyView<'_>) -> Result<usize> {
        let ti = v.type_index();
        let class = class_of(ti);
        let value_key = match class {
            Class::Str => Some((kRFFIStr, text_of(v).to_vec())),
            Class::Bytes => Some((kRFFIBytes, text_of(v).to_vec())),
            // SAFETY: POD payloads are 8 plain bytes.
            Class::Pod => Some((ti, unsafe { v.as_raw().v.v_int64 }.to_le_bytes().to_vec())),
            _ => None,
        };
        let found = match &value_key {
            Some(k) => self.by_value.get(k),
            None => self.by_identity.get(&addr(v)),
        };
        if let Some(&i) = found {
            return Ok(i);
        }
        // The index is taken before the parts are written, so a cycle back here finds it.
        let index = self.nodes.len();
        self.nodes.push(Json::Null);
        match value_key {
            Some(k) => self.by_value.insert(k, index),
            None => self.by_identity.insert(addr(v), index),
        };
        self.depth.enter()?;
        let written = self.write(v, class);
        self.depth.leave();
        self.nodes[index] = written?;
        Ok(index)
    }

    fn write(&mut self, v: &AnyView<'_>, class: Class) -> Result<Json> {
        let raw = v.as_raw();
        let ti = v.type_index();
        Ok(match class {
            // SAFETY: in every arm, the payload member read matches the type index.
            Class::Pod => unsafe {
                match ti {
                    kRFFINone => node("None", None),
                    kRFFIBool => node("bool", Some(Json::Bool(raw.v.v_int64 != 0))),
                    kRFFIInt => node("int", Some(Json::Int(raw.v.v_int64))),
                    kRFFIFloat => node("float", Some(Json::Number(raw.v.v_float64))),
                    kRFFIDataType => node(
                        "DataType",
                        Some(Json::Str(crate::DataType(raw.v.v_dtype).to_string())),
                    ),
                    kRFFIDevice => {
                        let d = raw.v.v_device;
                        node(
                            "Device",
                            Some(Json::Array(vec![
                                Json::Int(d.device_type.into()),
                                Json::Int(d.device_id.into()),
                            ])),
                        )
                    }
                    _ => {
                        return Err(self.refuse(v, "a raw pointer means nothing in another process"))
                    }
                }
            },
            Class::Str => node(
                "ffi.String",
                Some(Json::Str(String::from_utf8_lossy(text_of(v)).into_owned())),
            ),
            Class::Bytes => node("ffi.Bytes", Some(Json::Str(base64::encode(text_of(v))))),
            Class::Shape => node(
                "ffi.Shape",
                Some(Json::Array(
                    v.try_as::<Shape>()?.iter().map(|&d| Json::Int(d)).collect(),
                )),
            ),
            Class::Tensor => {
                let t = v.try_as::<Tensor>()?;
                let what = format!(
                    "to_json_graph_str (the tensor at root{})",
                    self.path.concat()
                );
                let data = tensor_bytes(&t, &what)?;
                node(
                    "ffi.Tensor",
                    Some(Json::Object(vec![
                        ("dtype".into(), Json::Str(t.dtype().to_string())),
                        (
                            "shape".into(),
                            Json::Array(t.shape().iter().map(|&d| Json::Int(d)).collect()),
                        ),
                        ("data".into(), Json::Str(base64::encode(&data))),
                    ])),
                )
            }
            Class::Array | Class::List => {
                let items = super::super::items::Seq::of(v)?;
                let mut out = Vec::with_capacity(items.len());
                for (i, x) in items.iter().enumerate() {
                    self.path.push(format!("[{i}]"));
                    out.push(Json::Int(self.node(&x)? as i64));
                    self.path.pop();
                }
                node(type_name(ti).as_str(), Some(Json::Array(out)))
            }
            Class::Map | Class::Dict => {
                let entries = super::super::items::Entries::of(v)?;
                let mut out = Vec::with_capacity(2 * entries.len());
                for (k, x) in entries.iter() {
                    self.path
                        .push(format!("[{}]", super::super::repr_print(&k, 0)?));
                    out.push(Json::Int(self.node(&k)? as i64));
                    out.push(Json::Int(self.node(&x)? as i64));
                    self.path.pop();
                }
                node(type_name(ti).as_str(), Some(Json::Array(out)))
            }
            Class::Object => self.object(v)?,
            Class::Opaque => return Err(self.refuse(v, "it has no fields to write")),
        })
    }

    fn object(&mut self, v: &AnyView<'_>) -> Result<Json> {
        let ti = v.type_index();
        // SAFETY: type registry metadata lives as long as the process.
        let meta = type_info(ti).and_then(|i| unsafe { i.metadata.as_ref() });
        let creatable = meta.is_some_and(|m| {
            m.creator.is_some() || m.total_size as usize >= core::mem::size_of::<RFFIObject>()
        }) || type_attr(ti, crate::reflection::type_attr::FROM_FIELDS_ATTR)?
            .is_some();
        if !creatable {
            return Err(self.refuse(
                v,
                "the runtime cannot create objects of this type (no creator, size or field \
                 constructor), so it could not be read back",
            ));
        }
        let obj = v.as_object().unwrap();
        let mut data = Vec::new();
        for f in self.fields.of(ti).iter() {
            let name = member_name(&f.name);
            let x = read_field(obj, f)?;
            let value = if inline_field(f.field_static_type_index) {
                // Plain fields are written in place; None (an optional field) as null.
                match class_of(x.type_index()) {
                    _ if x.is_none() => Json::Null,
                    Class::Pod => self
                        .write(&x.view(), Class::Pod)?
                        .get("data")
                        .cloned()
                        .unwrap_or(Json::Null),
                    _ => return Err(self.refuse(&x.view(), "not the field's declared type")),
                }
            } else {
                self.path.push(format!(".{name}"));
                let i = self.node(&x.view())?;
                self.path.pop();
                Json::Int(i as i64)
            };
            data.push((name.to_owned(), value));
        }
        Ok(node(&type_name(ti), Some(Json::Object(data))))
    }
}
