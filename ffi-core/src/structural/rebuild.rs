//! Building a new object graph from a description of one, node by node: what a deep copy and a
//! JSON graph's decoding share. Every node is built once (sharing is kept), and cycles are
//! closed:
//!
//! - objects the runtime can allocate empty (a creator, or `total_size`), Lists and Dicts exist
//!   before their contents, so a cycle back to them finds them;
//! - objects built from all their fields at once (`__ffi_from_fields__`, the Rust types) exist
//!   only after their contents: a cycle back to one leaves a placeholder in the slot that
//!   points back (the field's default, an empty container of the field's type, else None),
//!   and the slot is filled once the node exists;
//! - an Array or Map cannot be filled later: one that meets such a node is not built yet, and
//!   the slot that holds it is filled with it afterwards (the node exists by then).
//!
//! A build that fails may have closed cycles already (a List holding itself, an object whose
//! field holds it back); reference counts alone would never free those, so every List, Dict
//! and object the build made is emptied before the error is returned (`unlink`).

use super::{Class, Depth};
use crate::abi::*;
use crate::any::Any;
use crate::error::{Error, Result};
use crate::reflection::{
    create_object, default_of, init_field, member_name, type_attr, type_attr::FROM_FIELDS_ATTR,
};
use crate::type_registry::type_name;
use crate::{Array, Dict, Function, List, Map, ObjectRef};
use rustc_hash::{FxHashMap, FxHashSet};
use std::hash::Hash;

/// A part of a node: a value kept as it is, or another node.
pub(crate) enum Child<Id> {
    Value(Any),
    Node(Id),
}

/// What a node is.
pub(crate) enum Desc<Id> {
    /// A value used as it is (strings, tensors, functions, ...).
    Leaf(Any),
    Seq(Class, Vec<Child<Id>>),
    Map(Class, Vec<(Child<Id>, Child<Id>)>),
    /// An object of a registered type and the fields given for it (the others take their
    /// defaults).
    Object(i32, Vec<(&'static RFFIFieldInfo, Child<Id>)>),
}

/// The graph being copied or decoded.
pub(crate) trait Source {
    type Id: Copy + Eq + Hash;
    fn describe(&mut self, id: Self::Id) -> Result<Desc<Self::Id>>;
}

/// A slot left empty by a cycle, filled once its node exists.
enum Slot {
    Field(ObjectRef, &'static RFFIFieldInfo),
    List(List, usize),
    Dict(Dict, Any),
}

pub(crate) struct Rebuild<S: Source> {
    pub(crate) source: S,
    /// The operation, for messages: "deepcopy", "from_json_graph_str".
    what: &'static str,
    built: FxHashMap<S::Id, Any>,
    /// Nodes whose value does not exist yet (built from their contents).
    pending: FxHashSet<S::Id>,
    later: Vec<(Slot, S::Id)>,
    depth: Depth,
    /// The Lists, Dicts and objects this build made (what `unlink` empties on failure).
    made: Vec<Any>,
}

impl<S: Source> Rebuild<S> {
    pub(crate) fn new(source: S, what: &'static str) -> Self {
        Rebuild {
            source,
            what,
            built: FxHashMap::default(),
            pending: FxHashSet::default(),
            later: Vec::new(),
            depth: Depth::new(what),
            made: Vec::new(),
        }
    }

    /// Builds the graph from `root` and closes its cycles; on failure, nothing it made is left
    /// in a cycle.
    pub(crate) fn run(mut self, root: Child<S::Id>) -> Result<Any> {
        let built = self.build_graph(root);
        if built.is_err() {
            self.unlink();
        }
        built
    }

    /// Empties every List and Dict the build made, and gives every object it made the
    /// placeholders of its object fields, so that no cycle among them outlives the failed build.
    fn unlink(&mut self) {
        self.later.clear();
        self.built.clear();
        for v in self.made.drain(..) {
            match v.type_index() {
                kRFFIList => v.try_as::<List>().map(|l| l.clear()).unwrap_or_default(),
                kRFFIDict => v.try_as::<Dict>().map(|d| d.clear()).unwrap_or_default(),
                index => {
                    let Some(obj) = v.view().as_object().cloned() else {
                        continue;
                    };
                    for f in crate::reflection::all_fields(index) {
                        let holds_objects = f.field_static_type_index == kRFFIAny
                            || f.field_static_type_index >= kRFFIStaticObjectBegin;
                        if let (true, Ok(p)) = (holds_objects, placeholder(f)) {
                            // A field that refuses its placeholder keeps its value.
                            let _ = init_field(&obj, f, &p.view());
                        }
                    }
                }
            }
        }
    }

    fn build_graph(&mut self, root: Child<S::Id>) -> Result<Any> {
        let v = match self.child(root)? {
            Ok(v) => v,
            Err(_) => return Err(self.immutable_cycle()),
        };
        while let Some((slot, id)) = self.later.pop() {
            let target = self.node(id)?.map_err(|_| self.immutable_cycle())?;
            match slot {
                Slot::Field(obj, f) => init_field(&obj, f, &target.view()).map_err(|e| {
                    Error::type_error(format!(
                        "{}: cannot close the cycle through field `{}` of `{}`: {}",
                        self.what,
                        member_name(&f.name),
                        type_name(obj.type_index()),
                        e.message()
                    ))
                })?,
                Slot::List(l, i) => l.set_item(i as i64, target).map_err(|e| self.named(e))?,
                Slot::Dict(d, k) => d.set_item(k, target).map_err(|e| self.named(e))?,
            }
        }
        Ok(v)
    }

    /// The value of a child, or (`Err`) the node it is when that cannot be built yet: the
    /// caller leaves a placeholder and fills the slot later.
    fn child(&mut self, c: Child<S::Id>) -> Result<Result<Any, S::Id>> {
        match c {
            Child::Value(v) => Ok(Ok(v)),
            Child::Node(id) => self.node(id),
        }
    }

    fn node(&mut self, id: S::Id) -> Result<Result<Any, S::Id>> {
        if let Some(v) = self.built.get(&id) {
            return Ok(Ok(v.clone()));
        }
        if self.pending.contains(&id) {
            return Ok(Err(id));
        }
        let desc = self.source.describe(id)?;
        self.depth.enter()?;
        let v = self.build(id, desc);
        self.depth.leave();
        let Some(v) = v? else {
            return Ok(Err(id));
        };
        self.built.insert(id, v.clone());
        Ok(Ok(v))
    }

    /// The node's value, or `None` for an Array or Map that meets a node not built yet.
    fn build(&mut self, id: S::Id, desc: Desc<S::Id>) -> Result<Option<Any>> {
        match desc {
            Desc::Leaf(v) => Ok(Some(v)),
            Desc::Seq(Class::List, items) => {
                let list = List::new(Vec::new());
                self.built.insert(id, list.clone().into());
                self.made.push(list.clone().into());
                for (i, c) in items.into_iter().enumerate() {
                    match self.child(c)? {
                        Ok(v) => list.append(v),
                        Err(target) => {
                            list.append(Any::none());
                            self.later.push((Slot::List(list.clone(), i), target));
                        }
                    }
                }
                Ok(Some(list.into()))
            }
            Desc::Map(Class::Dict, entries) => {
                let dict = Dict::new(Vec::new())?;
                self.built.insert(id, dict.clone().into());
                self.made.push(dict.clone().into());
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    let Ok(k) = self.child(k)? else {
                        return Err(self.immutable_cycle());
                    };
                    if dict.get(&k.view()).map_err(|e| self.named(e))?.is_some() {
                        return Err(self.repeated_key(&format!("entry {i} of a Dict")));
                    }
                    match self.child(v)? {
                        Ok(v) => dict.set_item(k, v).map_err(|e| self.named(e))?,
                        Err(target) => {
                            dict.set_item(k.clone(), Any::none())
                                .map_err(|e| self.named(e))?;
                            self.later.push((Slot::Dict(dict.clone(), k), target));
                        }
                    }
                }
                Ok(Some(dict.into()))
            }
            Desc::Seq(_, items) => {
                self.pending.insert(id);
                let mut out = Vec::with_capacity(items.len());
                for c in items {
                    match self.child(c) {
                        Ok(Ok(v)) => out.push(v),
                        blocked => {
                            self.pending.remove(&id);
                            return blocked.map(|_| None);
                        }
                    }
                }
                self.pending.remove(&id);
                Ok(Some(Array::new(out).into()))
            }
            Desc::Map(_, entries) => {
                self.pending.insert(id);
                let mut out = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let kv = self.child(k).and_then(|k| Ok((k, self.child(v)?)));
                    match kv {
                        Ok((Ok(k), Ok(v))) => out.push((k, v)),
                        blocked => {
                            self.pending.remove(&id);
                            return blocked.map(|_| None);
                        }
                    }
                }
                self.pending.remove(&id);
                let n = out.len();
                let map = Map::new(out).map_err(|e| self.named(e))?;
                if map.len() != n {
                    return Err(self.repeated_key("an entry of a Map"));
                }
                Ok(Some(map.into()))
            }
            Desc::Object(index, fields) => self.object(id, index, fields).map(Some),
        }
    }

    /// `e`, from a container or a type's own code, named as part of this operation (its kind
    /// and traceback kept).
    fn named(&self, e: Error) -> Error {
        e.context(self.what)
    }

    /// A Dict or Map with an entry (`which`) whose key an earlier one has: no copy makes one, and
    /// in a JSON graph it would drop a value the graph built, perhaps a cycle nothing then frees.
    fn repeated_key(&self, which: &str) -> Error {
        Error::value_error(format!(
            "{}: {which} repeats the key of an earlier entry",
            self.what
        ))
    }

    fn immutable_cycle(&self) -> Error {
        Error::value_error(format!(
            "{}: a cycle runs through Arrays, Maps or Dict keys only, which cannot refer to \
             themselves once built",
            self.what
        ))
    }

    fn object(
        &mut self,
        id: S::Id,
        index: i32,
        given: Vec<(&'static RFFIFieldInfo, Child<S::Id>)>,
    ) -> Result<Any> {
        if let Some(ctor) = type_attr(index, FROM_FIELDS_ATTR)? {
            return self.by_constructor(id, index, ctor, given);
        }
        let obj = create_object(index).map_err(|e| {
            Error::type_error(format!(
                "`{}` does not support {}: it has no field constructor, and the runtime cannot \
                 create it ({})",
                type_name(index),
                self.what,
                e.message()
            ))
        })?;
        self.built.insert(id, obj.clone().into());
        self.made.push(obj.clone().into());
        for (f, c) in given {
            match self.child(c)? {
                Ok(v) => {
                    init_field(&obj, f, &v.view()).map_err(|e| self.field_error(index, f, e))?
                }
                Err(target) => self.later.push((Slot::Field(obj.clone(), f), target)),
            }
        }
        Ok(obj.into())
    }

    /// An object made by its type's field constructor from every field's value.
    fn by_constructor(
        &mut self,
        id: S::Id,
        index: i32,
        ctor: Any,
        given: Vec<(&'static RFFIFieldInfo, Child<S::Id>)>,
    ) -> Result<Any> {
        let ctor: Function = ctor.try_as().map_err(|e| self.named(e))?;
        let mut given: Vec<_> = given.into_iter().map(Some).collect();
        self.pending.insert(id);
        let mut values = Vec::new();
        let mut open = Vec::new();
        for f in crate::reflection::all_fields(index) {
            let slot = given
                .iter_mut()
                .find(|g| g.as_ref().is_some_and(|(gf, _)| core::ptr::eq(*gf, f)))
                .and_then(Option::take);
            let v = match slot {
                Some((_, c)) => match self.child(c)? {
                    Ok(v) => v,
                    Err(target) => {
                        open.push((f, target));
                        placeholder(f)?
                    }
                },
                None if f.flags & kRFFIFieldFlagBitMaskHasDefault != 0 => default_of(f)?,
                None => {
                    return Err(Error::type_error(format!(
                        "{}: required field `{}` of `{}` is missing",
                        self.what,
                        member_name(&f.name),
                        type_name(index)
                    )))
                }
            };
            values.push(v);
        }
        self.pending.remove(&id);
        let made = ctor.call(&values).map_err(|e| self.named(e))?;
        let obj = made.view().as_object().cloned().ok_or_else(|| {
            self.named(Error::type_error(format!(
                "`{}` from fields made no object",
                type_name(index)
            )))
        })?;
        for (f, target) in open {
            self.later.push((Slot::Field(obj.clone(), f), target));
        }
        self.made.push(made.clone());
        Ok(made)
    }

    fn field_error(&self, index: i32, f: &RFFIFieldInfo, e: Error) -> Error {
        Error::new(
            &e.kind(),
            format!(
                "{}: field `{}` of `{}`: {}",
                self.what,
                member_name(&f.name),
                type_name(index),
                e.message()
            ),
        )
    }
}

/// What a field constructor gets for a field whose value is not built yet (a cycle runs through
/// it): a value the field accepts, replaced once the node exists.
fn placeholder(f: &'static RFFIFieldInfo) -> Result<Any> {
    if f.flags & kRFFIFieldFlagBitMaskHasDefault != 0 {
        return default_of(f);
    }
    Ok(match f.field_static_type_index {
        kRFFIArray => Array::new(Vec::new()).into(),
        kRFFIList => List::new(Vec::new()).into(),
        kRFFIMap => Map::new(Vec::new())?.into(),
        kRFFIDict => Dict::new(Vec::new())?.into(),
        _ => Any::none(),
    })
}
