//! Structural equality: two values are equal when they have the same shape and contents, object
//! fields compared by the type registry's field list (tvm-ffi's `StructuralEqual`). On the way back
//! up from the first difference it records the steps that lead to it on each side.

use super::items::{same_key, Entries, Seq};
use super::path::{AccessKind, AccessPath, Then};
use super::tensor::tensors_equal;
use super::{addr, class_of, eq_hash_kind, text_of, Class, Depth, FieldCache, OnPath, Options};
use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::Result;
use crate::reflection::{member_name, read_field, Obj};
use crate::{ObjectRef, Shape};
use rustc_hash::{FxHashMap, FxHashSet};

/// Whether `lhs` and `rhs` are structurally equal.
pub fn structural_equal(lhs: &AnyView<'_>, rhs: &AnyView<'_>, opts: Options) -> Result<bool> {
    Equal::new(opts, false).any(lhs, rhs)
}

/// Where `lhs` and `rhs` first differ, as the path to the difference on each side; `None` when
/// they are structurally equal.
pub fn first_mismatch(
    lhs: &AnyView<'_>,
    rhs: &AnyView<'_>,
    opts: Options,
) -> Result<Option<(Obj<AccessPath>, Obj<AccessPath>)>> {
    let mut e = Equal::new(opts, true);
    if e.any(lhs, rhs)? {
        return Ok(None);
    }
    let build = |steps: Vec<(AccessKind, Any)>| {
        steps
            .into_iter()
            .rev()
            .fold(AccessPath::root(), |p, (k, key)| p.then(k, key))
    };
    Ok(Some((build(e.lsteps), build(e.rsteps))))
}

pub(crate) struct Equal {
    opts: Options,
    /// Record the steps to the first difference.
    record: bool,
    depth: Depth,
    fields: FieldCache,
    on_path: OnPath,
    /// Pairs of tree nodes already found equal.
    proven: FxHashSet<(usize, usize)>,
    /// Free variables and DAG nodes mapped to each other: the other side's object, both ways.
    map_l: FxHashMap<usize, ObjectRef>,
    map_r: FxHashMap<usize, ObjectRef>,
    /// Free variables met now may be mapped (`map_free_vars`, or inside a definition field).
    free_vars: bool,
    /// Objects whose addresses are keys above, kept alive until the comparison ends.
    keep: Vec<ObjectRef>,
    lsteps: Vec<(AccessKind, Any)>,
    rsteps: Vec<(AccessKind, Any)>,
}

impl Equal {
    fn new(opts: Options, record: bool) -> Equal {
        Equal {
            opts,
            record,
            depth: Depth::new("structural_equal"),
            fields: FieldCache::default(),
            on_path: OnPath::default(),
            proven: FxHashSet::default(),
            map_l: FxHashMap::default(),
            map_r: FxHashMap::default(),
            free_vars: opts.map_free_vars,
            keep: Vec::new(),
            lsteps: Vec::new(),
            rsteps: Vec::new(),
        }
    }

    fn step(&mut self, l: (AccessKind, Any), r: (AccessKind, Any)) {
        if self.record {
            self.lsteps.push(l);
            self.rsteps.push(r);
        }
    }

    fn keep(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) {
        for v in [l, r] {
            if let Some(o) = v.as_object() {
                self.keep.push(o.clone());
            }
        }
    }

    pub(crate) fn any(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<bool> {
        let (tl, tr) = (l.type_index(), r.type_index());
        let (cl, cr) = (class_of(tl), class_of(tr));
        if cl != cr || (tl != tr && !matches!(cl, Class::Str | Class::Bytes)) {
            return Ok(false);
        }
        match cl {
            Class::Pod => Ok(pod_equal(l, r)),
            Class::Str | Class::Bytes => Ok(text_of(l) == text_of(r)),
            Class::Shape => Ok(l.try_as::<Shape>()?.as_slice() == r.try_as::<Shape>()?.as_slice()),
            Class::Tensor => tensors_equal(l, r, self.opts.skip_tensor_content),
            Class::Opaque => Ok(addr(l) == addr(r)),
            Class::Array | Class::List | Class::Map | Class::Dict | Class::Object => {
                self.node(l, r, cl)
            }
        }
    }

    /// Containers and objects: kinds, mappings and cycles first, then the contents.
    fn node(&mut self, l: &AnyView<'_>, r: &AnyView<'_>, class: Class) -> Result<bool> {
        let (al, ar) = (addr(l), addr(r));
        let kind = if class == Class::Object {
            eq_hash_kind(l.type_index())
        } else {
            kRFFISEqHashKindTreeNode
        };
        match kind {
            kRFFISEqHashKindUniqueInstance => return Ok(al == ar),
            kRFFISEqHashKindConstTreeNode if al == ar => return Ok(true),
            kRFFISEqHashKindFreeVar | kRFFISEqHashKindDAGNode => {
                if let Some(m) = self.map_l.get(&al) {
                    return Ok(m.as_ptr() as usize == ar);
                }
                if self.map_r.contains_key(&ar) {
                    return Ok(false);
                }
            }
            _ => {}
        }
        // A cycle runs through a List, a Dict or an object (Arrays and Maps cannot refer back
        // to themselves), so only those are tracked; objects found equal are remembered.
        let tracked = !matches!(class, Class::Array | Class::Map);
        if tracked {
            if let Some(equal) = self.on_path.cycle(al, ar) {
                return Ok(equal);
            }
        }
        let tree = matches!(
            kind,
            kRFFISEqHashKindTreeNode | kRFFISEqHashKindConstTreeNode
        );
        let remember = tree && class == Class::Object;
        if remember && self.proven.contains(&(al, ar)) {
            return Ok(true);
        }
        self.depth.enter()?;
        if tracked {
            self.on_path.push(al, ar, self.depth.level());
        }
        let equal = match class {
            Class::Array | Class::List => self.seq(l, r),
            Class::Map | Class::Dict => self.map(l, r),
            _ => self.fields(l, r),
        };
        if tracked {
            self.on_path.pop(al, ar);
        }
        self.depth.leave();
        if !equal? {
            return Ok(false);
        }
        if kind == kRFFISEqHashKindFreeVar && al != ar && !self.free_vars {
            return Ok(false);
        }
        if remember {
            self.keep(l, r);
            self.proven.insert((al, ar));
        } else if !tree {
            if let (Some(lo), Some(ro)) = (l.as_object(), r.as_object()) {
                self.map_l.insert(al, ro.clone());
                self.map_r.insert(ar, lo.clone());
            }
        }
        Ok(true)
    }

    fn seq(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<bool> {
        let (ls, rs) = (Seq::of(l)?, Seq::of(r)?);
        if ls.len() != rs.len() && !self.record {
            return Ok(false);
        }
        for i in 0..ls.len().min(rs.len()) {
            if !self.any(&ls.get(i), &rs.get(i))? {
                let i = Any::from(i as i64);
                self.step(
                    (AccessKind::ArrayItem, i.clone()),
                    (AccessKind::ArrayItem, i),
                );
                return Ok(false);
            }
        }
        let n = Any::from(ls.len().min(rs.len()) as i64);
        if ls.len() > rs.len() {
            self.step(
                (AccessKind::ArrayItem, n.clone()),
                (AccessKind::ArrayItemMissing, n),
            );
        } else if ls.len() < rs.len() {
            self.step(
                (AccessKind::ArrayItemMissing, n.clone()),
                (AccessKind::ArrayItem, n),
            );
        }
        Ok(ls.len() == rs.len())
    }

    /// A key of the left map as the right map would have it: a mapped variable becomes its
    /// counterpart (`None`: the key itself).
    fn key_to_rhs(&self, k: &AnyView<'_>) -> Option<Any> {
        if self.map_l.is_empty() || k.type_index() < kRFFIStaticObjectBegin {
            return None;
        }
        self.map_l.get(&addr(k)).map(|m| Any::from(m.clone()))
    }

    fn map(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<bool> {
        let (lm, rm) = (Entries::of(l)?, Entries::of(r)?);
        if lm.len() != rm.len() && !self.record {
            return Ok(false);
        }
        // Maps built alike list their keys in the same order: compare in step while they do,
        // and look keys up only from the first that differs.
        let mut in_step = lm.len() == rm.len();
        for i in 0..lm.len() {
            let (k, v) = lm.at(i);
            let mapped = self.key_to_rhs(&k);
            let rk = mapped.as_ref().map_or(k, Any::view);
            let found: Option<Any>;
            let rv = if in_step && same_key(&rk, &rm.at(i).0) {
                rm.at(i).1
            } else {
                in_step = false;
                found = rm.get(&rk)?;
                match &found {
                    Some(x) => x.view(),
                    None => {
                        let rk = rk.to_owned()?;
                        self.step(
                            (AccessKind::MapItem, k.to_owned()?),
                            (AccessKind::MapItemMissing, rk),
                        );
                        return Ok(false);
                    }
                }
            };
            if !self.any(&v, &rv)? {
                let rk = rk.to_owned()?;
                self.step(
                    (AccessKind::MapItem, k.to_owned()?),
                    (AccessKind::MapItem, rk),
                );
                return Ok(false);
            }
        }
        if lm.len() == rm.len() {
            return Ok(true);
        }
        // The right map has a key the left lacks: name it.
        for (k, _) in rm.iter() {
            let mut known = false;
            for (lk, _) in lm.iter() {
                let mapped = self.key_to_rhs(&lk);
                if same_key(&mapped.as_ref().map_or(lk, Any::view), &k) {
                    known = true;
                    break;
                }
            }
            if !known {
                self.step(
                    (AccessKind::MapItemMissing, k.to_owned()?),
                    (AccessKind::MapItem, k.to_owned()?),
                );
                break;
            }
        }
        Ok(false)
    }

    fn fields(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<bool> {
        let (lo, ro) = (l.as_object().unwrap(), r.as_object().unwrap());
        let fields = self.fields.of(l.type_index());
        for f in fields.iter() {
            if f.flags & kRFFIFieldFlagBitMaskSEqHashIgnore != 0 {
                continue;
            }
            let (a, b) = (read_field(lo, f)?, read_field(ro, f)?);
            let equal = if f.flags & kRFFIFieldFlagBitMaskSEqHashIdentity != 0 {
                identical(&a.view(), &b.view())
            } else if f.flags & super::DEF_SITE != 0 {
                let outer = core::mem::replace(&mut self.free_vars, true);
                let equal = self.any(&a.view(), &b.view());
                self.free_vars = outer;
                equal?
            } else {
                self.any(&a.view(), &b.view())?
            };
            if !equal {
                let name = Any::from(member_name(&f.name));
                self.step((AccessKind::Attr, name.clone()), (AccessKind::Attr, name));
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The payloads of two values of the same POD type: bit for bit, except that every NaN equals
/// every NaN.
fn pod_equal(l: &AnyView<'_>, r: &AnyView<'_>) -> bool {
    let (a, b) = (l.as_raw(), r.as_raw());
    // SAFETY: POD payloads are 8 plain bytes; floats read as floats.
    unsafe {
        if a.type_index == kRFFIFloat && a.v.v_float64.is_nan() {
            return b.v.v_float64.is_nan();
        }
        a.small_str_len == b.small_str_len && a.v.v_int64 == b.v.v_int64
    }
}

/// The same object, or equal plain values (for a field compared by identity).
pub(crate) fn identical(l: &AnyView<'_>, r: &AnyView<'_>) -> bool {
    let (cl, cr) = (class_of(l.type_index()), class_of(r.type_index()));
    match (cl, cr) {
        (Class::Pod, Class::Pod) => l.type_index() == r.type_index() && pod_equal(l, r),
        (Class::Str, Class::Str) | (Class::Bytes, Class::Bytes) => text_of(l) == text_of(r),
        _ => l.type_index() == r.type_index() && addr(l) == addr(r),
    }
}
