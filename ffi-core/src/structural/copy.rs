//! Deep copy: a new graph with new containers and objects, the same sharing and the same cycles.
//! Shallow copy: a new container or object holding the original's members themselves.
//! Strings, shapes, tensors, functions and other values without fields are immutable or handles,
//! and are shared with the original (by both).

use super::rebuild::{Child, Desc, Rebuild, Source};
use super::{addr, class_of, is_node, Class};
use crate::any::{Any, AnyView};
use crate::error::Result;
use crate::reflection::read_field;
use rustc_hash::FxHashMap;

/// A deep copy of `value`. A type the runtime can neither create empty nor build from its fields
/// is a TypeError naming it ("does not support deepcopy").
pub fn deep_copy(value: &AnyView<'_>) -> Result<Any> {
    let mut live = Live::default();
    let root = live.child(value.to_owned()?);
    Rebuild::new(live, "deepcopy").run(root)
}

/// A shallow copy of `value` (Python's `copy.copy`): a new Array, List, Map, Dict or object of
/// a registered type with the same items or field values (not copied), built as a deep copy
/// builds its nodes; other values are returned as they are. A type the runtime can neither
/// create empty nor build from its fields is a TypeError ("does not support copy").
pub fn shallow_copy(value: &AnyView<'_>) -> Result<Any> {
    let mut live = Live {
        shallow: true,
        ..Live::default()
    };
    let root = live.child(value.to_owned()?);
    Rebuild::new(live, "copy").run(root)
}

/// Whether objects of this type are members of an enum (its type has the `__ffi_enum__`
/// attribute, the members by name): singletons, which copies share.
fn is_enum_member(index: i32) -> bool {
    index >= crate::abi::kRFFIDynObjectBegin
        && crate::reflection::type_attr::type_attr(index, ENUM_ATTR).is_ok_and(|a| a.is_some())
}

/// The type attribute of an enum type: its members by name.
pub(crate) const ENUM_ATTR: &str = "__ffi_enum__";

/// The graph being copied: nodes by address.
#[derive(Default)]
struct Live {
    nodes: FxHashMap<usize, Any>,
    /// Copy the root only: its members are kept as they are.
    shallow: bool,
}

impl Live {
    fn child(&mut self, v: Any) -> Child<usize> {
        if !is_node(class_of(v.type_index()))
            || (self.shallow && !self.nodes.is_empty())
            || is_enum_member(v.type_index())
        {
            return Child::Value(v);
        }
        let a = addr(&v.view());
        self.nodes.entry(a).or_insert(v);
        Child::Node(a)
    }
}

impl Source for Live {
    type Id = usize;

    fn describe(&mut self, id: usize) -> Result<Desc<usize>> {
        let v = self.nodes[&id].clone();
        let view = v.view();
        let class = class_of(v.type_index());
        Ok(match class {
            Class::Array | Class::List => Desc::Seq(
                class,
                super::items::Seq::of(&view)?
                    .iter()
                    .map(|x| Ok(self.child(x.to_owned()?)))
                    .collect::<Result<_>>()?,
            ),
            Class::Map | Class::Dict => Desc::Map(
                class,
                super::items::Entries::of(&view)?
                    .iter()
                    .map(|(k, x)| Ok((self.child(k.to_owned()?), self.child(x.to_owned()?))))
                    .collect::<Result<_>>()?,
            ),
            _ => {
                let obj = view.as_object().unwrap();
                let mut fields = Vec::new();
                for f in crate::reflection::all_fields(v.type_index()) {
                    let x = read_field(obj, f)?;
                    fields.push((f, self.child(x)));
                }
                Desc::Object(v.type_index(), fields)
            }
        })
    }
}
