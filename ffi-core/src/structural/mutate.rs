//! Maps and mutations of the traversal engine (`traverse.rs`): replacing each value by what its
//! callback gives, rebuilding the containers and objects whose parts changed, or changing them
//! in place where the root was handed over and nothing else holds them; and the replacements
//! remembered for variables and DAG nodes.

use super::rebuild::{Child, Desc, Rebuild, Source};
use super::traverse::{field_region, parts, FieldRegion, Order, Parts, Style, Traversal};
use super::{addr, class_of, eq_hash_kind, same_value, Class};
use crate::abi::*;
use crate::any::Any;
use crate::error::{Error, Result};
use crate::reflection::init_field;
use crate::{Array, Dict, List, Map};

impl Traversal {
    /// Maps `v` (its callback if one matches, the style says how; else its children).
    /// `owners` is the strong count `v` has when the traversal may change it in place (0: it
    /// may not).
    pub fn mutate(&self, v: &Any, owners: u32) -> Result<Any> {
        self.nested(|| {
            let Some(cb) = self.find(v.type_index()) else {
                return self.default_mutate(v, owners);
            };
            match self.engine().style {
                Style::Mutate => self.call(&cb, &v.view(), Some(in_place(v, owners))),
                Style::Map(Order::Pre) => {
                    let x = self.call(&cb, &v.view(), None)?;
                    if same_value(&x, v) {
                        drop(x);
                        self.default_mutate(v, owners)
                    } else {
                        self.default_mutate(&x, 0)
                    }
                }
                Style::Map(Order::Post) => {
                    let x = self.default_mutate(v, owners)?;
                    self.call(&cb, &x.view(), None)
                }
                style => Err(Error::type_error(format!(
                    "mutate() is for maps and mutations, not {}",
                    style.name()
                ))),
            }
        })
    }

    /// Maps `v`'s children (each through [`mutate`](Self::mutate)) and returns `v` if none
    /// changed, else `v` with the new children (changed in place when allowed, else a copy).
    /// Variables and DAG nodes keep what their mapping gave for later occurrences.
    pub fn default_mutate(&self, v: &Any, owners: u32) -> Result<Any> {
        let index = v.type_index();
        if class_of(index) != Class::Object {
            return self.mutate_parts(v, owners);
        }
        let kind = eq_hash_kind(index);
        let (var, dag) = (
            kind == kRFFISEqHashKindFreeVar,
            kind == kRFFISEqHashKindDAGNode,
        );
        let e = self.engine();
        let key = addr(&v.view());
        if var || dag {
            let remap = e.remap.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, mapped)) = remap.get(&key) {
                return Ok(mapped.clone());
            }
        }
        // A variable outside a definition whose definition did not change: a use, unchanged.
        if var && self.region() == kRFFIDefRegionKindNone {
            return Ok(v.clone());
        }
        let out = self.mutate_parts(v, owners)?;
        let record = dag || self.region() == kRFFIDefRegionKindPattern || !same_value(&out, v);
        if (var || dag) && record {
            let mut remap = e.remap.lock().unwrap_or_else(|p| p.into_inner());
            remap.insert(key, (v.clone(), out.clone()));
        }
        Ok(out)
    }

    /// The replacement recorded for a variable or DAG node, if any.
    pub fn remap_get(&self, var: &Any) -> Result<Option<Any>> {
        let key = remap_key(var)?;
        let remap = self
            .engine()
            .remap
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        Ok(remap.get(&key).map(|(_, m)| m.clone()))
    }

    /// Records `mapped` as the replacement of a variable or DAG node.
    pub fn remap_set(&self, var: &Any, mapped: Any) -> Result<()> {
        let key = remap_key(var)?;
        let mut remap = self
            .engine()
            .remap
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        remap.insert(key, (var.clone(), mapped));
        Ok(())
    }

    fn mutate_parts(&self, v: &Any, owners: u32) -> Result<Any> {
        let here = in_place(v, owners);
        // A child is held by its slot and by the copy `parts` read.
        let child_owners = if here { 2 } else { 0 };
        let view = v.view();
        match parts(&view)? {
            Parts::Leaf => Ok(v.clone()),
            Parts::Seq(class, items) => {
                let mut changed: Vec<(usize, Any)> = Vec::new();
                for (i, x) in items.iter().enumerate() {
                    let y = self.mutate(x, child_owners)?;
                    if !same_value(&y, x) {
                        changed.push((i, y));
                    }
                }
                if changed.is_empty() {
                    return Ok(v.clone());
                }
                if here {
                    for (i, y) in changed {
                        match class {
                            // SAFETY: nothing else holds the Array (`in_place`).
                            Class::Array => unsafe { array_of(v)?.replace_unique(i, y) },
                            _ => list_of(v)?.set_item(i as i64, y)?,
                        }
                    }
                    return Ok(v.clone());
                }
                let mut items = items;
                for (i, y) in changed {
                    items[i] = y;
                }
                Ok(match class {
                    Class::Array => Array::new(items).into(),
                    _ => List::new(items).into(),
                })
            }
            Parts::Map(class, entries) => {
                let mut changed: Vec<(usize, Any)> = Vec::new();
                for (i, (_, x)) in entries.iter().enumerate() {
                    let y = self.mutate(x, child_owners)?;
                    if !same_value(&y, x) {
                        changed.push((i, y));
                    }
                }
                if changed.is_empty() {
                    return Ok(v.clone());
                }
                if here && class == Class::Dict {
                    let d: Dict = view.try_as()?;
                    for (i, y) in changed {
                        d.set_item(entries[i].0.clone(), y)?;
                    }
                    return Ok(v.clone());
                }
                let mut entries = entries;
                for (i, y) in changed {
                    entries[i].1 = y;
                }
                Ok(match class {
                    Class::Map => Map::new(entries)?.into(),
                    _ => Dict::new(entries)?.into(),
                })
            }
            Parts::Object(fields) => {
                let mut changed: Vec<(usize, Any)> = Vec::new();
                self.in_object(&view, || {
                    for (i, (f, x)) in fields.iter().enumerate() {
                        let y = match field_region(f) {
                            FieldRegion::Skip => continue,
                            FieldRegion::Same => self.mutate(x, child_owners)?,
                            FieldRegion::Enter(k) => {
                                self.with_region(k, || self.mutate(x, child_owners))?
                            }
                        };
                        if !same_value(&y, x) {
                            changed.push((i, y));
                        }
                    }
                    Ok(())
                })?;
                if changed.is_empty() {
                    return Ok(v.clone());
                }
                if here {
                    let obj = view.as_object().expect("an object");
                    for (i, y) in changed {
                        init_field(obj, fields[i].0, &y.view())?;
                    }
                    return Ok(v.clone());
                }
                let mut fields = fields;
                for (i, y) in changed {
                    fields[i].1 = y;
                }
                rebuild_object(v.type_index(), fields, self.engine().style.name())
            }
        }
    }
}

fn remap_key(var: &Any) -> Result<usize> {
    let kind = eq_hash_kind(var.type_index());
    if class_of(var.type_index()) != Class::Object
        || !(kind == kRFFISEqHashKindFreeVar || kind == kRFFISEqHashKindDAGNode)
    {
        return Err(Error::type_error(format!(
            "var_remap: expected a variable or DAG node (structural_eq=\"var\" or \"dag\"), got {}",
            var.view().type_name()
        )));
    }
    Ok(addr(&var.view()))
}

/// Whether `v` may be changed in place: allowed (`owners` > 0) and held by nobody else.
fn in_place(v: &Any, owners: u32) -> bool {
    owners != 0
        && v.type_index() >= kRFFIStaticObjectBegin
        && v.view()
            .as_object()
            .is_some_and(|o| o.strong_count() == owners)
}

fn array_of(v: &Any) -> Result<Array> {
    v.view().try_as::<Array>()
}

fn list_of(v: &Any) -> Result<List> {
    v.view().try_as::<List>()
}

/// A new object of type `index` with the given field values, built the way a copy builds one.
fn rebuild_object(
    index: i32,
    fields: Vec<(&'static RFFIFieldInfo, Any)>,
    what: &'static str,
) -> Result<Any> {
    struct One(Option<Desc<()>>);
    impl Source for One {
        type Id = ();
        fn describe(&mut self, _: ()) -> Result<Desc<()>> {
            self.0
                .take()
                .ok_or_else(|| Error::runtime_error("one object described twice"))
        }
    }
    let fields = fields
        .into_iter()
        .map(|(f, v)| (f, Child::Value(v)))
        .collect();
    Rebuild::new(One(Some(Desc::Object(index, fields))), what).run(Child::Node(()))
}
