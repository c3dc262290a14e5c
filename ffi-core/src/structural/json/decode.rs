//! Reading a JSON graph: every part is checked, and the first problem is a ValueError saying
//! which node and what was expected.

use super::super::rebuild::{Child, Desc, Rebuild, Source};
use super::super::Class;
use super::{base64, inline_field, JSON_GRAPH_VERSION};
use crate::abi::*;
use crate::any::Any;
use crate::error::{Error, Result};
use crate::reflection::{all_fields, member_name};
use crate::schema::{parse_json, JsonValue as Json};
use crate::type_registry::type_key_to_index;
use crate::{Bytes, DataType, Device, Shape, Tensor};

/// The value of a JSON graph written by `to_json_graph` (or by tvm-ffi).
pub fn from_json_graph(text: &str) -> Result<Any> {
    let bad = |what: String| Error::value_error(format!("from_json_graph_str: {what}"));
    let top = parse_json(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    if !matches!(top, Json::Object(_)) {
        return Err(bad(
            "expected a JSON object with `root_index` and `nodes`".into()
        ));
    }
    if let Some(v) = top.get("version") {
        match v.as_i64() {
            Some(n) if (1..=JSON_GRAPH_VERSION).contains(&n) => {}
            _ => {
                return Err(bad(format!(
                    "format version {} is not one this runtime reads (1 to {JSON_GRAPH_VERSION})",
                    v.to_json()
                )))
            }
        }
    }
    let root = top
        .get("root_index")
        .and_then(Json::as_i64)
        .ok_or_else(|| bad("expected an integer `root_index`".into()))?;
    let Some(Json::Array(nodes)) = top.get("nodes") else {
        return Err(bad("expected an array `nodes`".into()));
    };
    let graph = Graph { nodes };
    let root = graph.index(&Json::Int(root), "the root index")?;
    Rebuild::new(graph, "from_json_graph_str").run(Child::Node(root))
}

struct Graph<'a> {
    nodes: &'a [Json],
}

fn bad(i: usize, what: impl std::fmt::Display) -> Error {
    Error::value_error(format!("from_json_graph_str: node {i}: {what}"))
}

impl Graph<'_> {
    /// A node index, checked.
    fn index(&self, v: &Json, what: &str) -> Result<usize> {
        v.as_i64()
            .filter(|&i| (0..self.nodes.len() as i64).contains(&i))
            .map(|i| i as usize)
            .ok_or_else(|| {
                Error::value_error(format!(
                    "from_json_graph_str: {what} {} is not a node index (0 to {})",
                    v.to_json(),
                    self.nodes.len() as i64 - 1
                ))
            })
    }

    fn children(&self, i: usize, data: Option<&Json>) -> Result<Vec<Child<usize>>> {
        let Some(Json::Array(items)) = data else {
            return Err(bad(i, "expected `data` to be an array of node indices"));
        };
        items
            .iter()
            .map(|x| Ok(Child::Node(self.index(x, &format!("node {i}: item"))?)))
            .collect()
    }
}

/// A plain value of a node or an inline field, read as `ty`.
fn plain(i: usize, ty: &str, data: Option<&Json>) -> Result<Any> {
    let want = |what: &str| bad(i, format!("`{ty}` expects {what} as its data"));
    let data = data.unwrap_or(&Json::Null);
    Ok(match ty {
        "None" => Any::none(),
        "bool" => match data {
            Json::Bool(b) => (*b).into(),
            _ => return Err(want("true or false")),
        },
        "int" => data.as_i64().ok_or_else(|| want("an integer"))?.into(),
        "float" => data.as_f64().ok_or_else(|| want("a number"))?.into(),
        "DataType" => {
            let s = data.as_str().ok_or_else(|| want("a dtype string"))?;
            DataType::parse(s).map_err(|e| bad(i, e))?.into()
        }
        _ => return Err(bad(i, format!("`{ty}` is not a plain value type"))),
    })
}

impl Source for Graph<'_> {
    type Id = usize;

    fn describe(&mut self, i: usize) -> Result<Desc<usize>> {
        let node = &self.nodes[i];
        let ty = node
            .get("type")
            .and_then(Json::as_str)
            .ok_or_else(|| bad(i, "expected an object with a string `type`"))?;
        let data = node.get("data");
        let want = |what: &str| bad(i, format!("`{ty}` expects {what} as its data"));
        Ok(match ty {
            "None" | "bool" | "int" | "float" | "DataType" => Desc::Leaf(plain(i, ty, data)?),
            "Device" => {
                let pair = match data {
                    Some(Json::Array(p)) if p.len() == 2 => (p[0].as_i64(), p[1].as_i64()),
                    _ => (None, None),
                };
                let (Some(t), Some(id)) = pair else {
                    return Err(want("[device_type, device_id]"));
                };
                let t = i32::try_from(t).map_err(|_| want("a device type"))?;
                let id = i32::try_from(id).map_err(|_| want("a device index"))?;
                Desc::Leaf(Device::new(t, id).map_err(|e| bad(i, e))?.into())
            }
            "ffi.String" => Desc::Leaf(
                data.and_then(Json::as_str)
                    .ok_or_else(|| want("a string"))?
                    .into(),
            ),
            "ffi.Bytes" => {
                let text = data
                    .and_then(Json::as_str)
                    .ok_or_else(|| want("base64 text"))?;
                Desc::Leaf(Bytes::new(&base64::decode(text).map_err(|e| bad(i, e))?).into())
            }
            "ffi.Shape" => Desc::Leaf(Shape::new(&ints(i, data, "shape")?).into()),
            "ffi.Tensor" => Desc::Leaf(tensor(i, data)?.into()),
            "ffi.Array" => Desc::Seq(Class::Array, self.children(i, data)?),
            "ffi.List" => Desc::Seq(Class::List, self.children(i, data)?),
            "ffi.Map" | "ffi.Dict" => {
                let items = self.children(i, data)?;
                if items.len() % 2 != 0 {
                    return Err(want("alternating key and value indices (an even count)"));
                }
                let mut it = items.into_iter();
                let mut pairs = Vec::new();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                let class = if ty == "ffi.Map" {
                    Class::Map
                } else {
                    Class::Dict
                };
                Desc::Map(class, pairs)
            }
            key => self.object(i, key, data)?,
        })
    }
}

impl Graph<'_> {
    fn object(&self, i: usize, key: &str, data: Option<&Json>) -> Result<Desc<usize>> {
        let index = type_key_to_index(key)
            .filter(|&t| t >= kRFFIDynObjectBegin)
            .ok_or_else(|| {
                bad(
                    i,
                    format!(
                        "unknown type `{key}` (is the library that registers it loaded?), or a \
                         type that cannot be read from JSON"
                    ),
                )
            })?;
        let Some(Json::Object(values)) = data else {
            return Err(bad(
                i,
                format!("`{key}` expects an object of fields as its data"),
            ));
        };
        let mut given = Vec::new();
        for f in all_fields(index) {
            let name = member_name(&f.name);
            let Some((_, v)) = values.iter().find(|(n, _)| n == name) else {
                continue; // a default, or the rebuild says it is required
            };
            let child = if inline_field(f.field_static_type_index) {
                let ty = match f.field_static_type_index {
                    _ if matches!(v, Json::Null) => "None",
                    kRFFIInt => "int",
                    kRFFIBool => "bool",
                    kRFFIFloat => "float",
                    kRFFIDataType => "DataType",
                    _ => "None",
                };
                let field = format!("field `{name}` of `{key}`");
                Child::Value(
                    plain(i, ty, Some(v))
                        .map_err(|e| bad(i, format!("{field}: {}", e.message())))?,
                )
            } else {
                Child::Node(self.index(v, &format!("node {i}: field `{name}`"))?)
            };
            given.push((f, child));
        }
        Ok(Desc::Object(index, given))
    }
}

fn ints(i: usize, data: Option<&Json>, what: &str) -> Result<Vec<i64>> {
    match data {
        Some(Json::Array(items)) => items
            .iter()
            .map(|x| {
                x.as_i64()
                    .ok_or_else(|| bad(i, format!("{what}: expected integers")))
            })
            .collect(),
        _ => Err(bad(i, format!("{what}: expected an array of integers"))),
    }
}

/// A CPU tensor from `{"dtype", "shape", "data"}`.
fn tensor(i: usize, data: Option<&Json>) -> Result<Tensor> {
    let d = data.ok_or_else(|| bad(i, "`ffi.Tensor` expects {dtype, shape, data}"))?;
    let dtype = d
        .get("dtype")
        .and_then(Json::as_str)
        .ok_or_else(|| bad(i, "tensor: expected a dtype string"))?;
    let dtype = DataType::parse(dtype).map_err(|e| bad(i, e))?;
    let shape = ints(i, d.get("shape"), "tensor shape")?;
    if shape.iter().any(|&s| s < 0) {
        return Err(bad(i, "tensor shape: negative dimension"));
    }
    let bytes = base64::decode(
        d.get("data")
            .and_then(Json::as_str)
            .ok_or_else(|| bad(i, "tensor: expected base64 `data`"))?,
    )
    .map_err(|e| bad(i, e))?;
    // The size is checked against the data before anything is allocated.
    let bits = shape
        .iter()
        .try_fold(1u128, |n, &s| n.checked_mul(s as u128))
        .and_then(|n| n.checked_mul(u128::from(dtype.bits()) * u128::from(dtype.lanes())));
    let want = bits.map(|b| b.div_ceil(8));
    if want != Some(bytes.len() as u128) {
        return Err(bad(
            i,
            format!(
                "tensor data has {} bytes, not what {dtype} of shape {shape:?} takes",
                bytes.len()
            ),
        ));
    }
    let t = Tensor::empty(&shape, dtype, Device::cpu()).map_err(|e| bad(i, e.message()))?;
    if !bytes.is_empty() {
        let dst = t.data_ptr_mut()?.cast::<u8>();
        // SAFETY: a fresh compact CPU tensor of exactly `nbytes` bytes, used by nothing else.
        unsafe {
            core::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                dst.add(t.byte_offset() as usize),
                bytes.len(),
            )
        };
    }
    Ok(t)
}
