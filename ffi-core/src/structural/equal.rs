//! Structural equality: two values are equal when they have the same shape and contents, object
//! fields compared by the registry's field list (tvm-ffi's `StructuralEqual`). On the way back
//! up from the first difference it records the steps that lead to it on each side.

use super::path::{AccessKind, AccessPath, Then};
use super::tensor::tensors_equal;
use super::{addr, class_of, eq_hash_kind, text_of, Class, Depth, FieldCache, OnPath, Options};
use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::Result;
use crate::map::MapKey;
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
        if let Some(equal) = self.on_path.cycle(al, ar) {
            return Ok(equal);
        }
        let tree = matches!(
            kind,
            kRFFISEqHashKindTreeNode | kRFFISEqHashKindConstTreeNode
        );
        if tree && self.proven.contains(&(al, ar)) {
            return Ok(true);
        }
        self.depth.enter()?;
        self.on_path.push(al, ar, self.depth.level());
        let equal = match class {
            Class::Array | Class::List => self.seq(l, r),
            Class::Map | Class::Dict => self.map(l, r),
            _ => self.fields(l, r),
        };
        self.on_path.pop(al, ar);
        self.depth.leave();
        if !equal? {
            return Ok(false);
        }
        if kind == kRFFISEqHashKindFreeVar && al != ar && !self.free_vars {
            return Ok(false);
        }
        if tree {
            self.keep(l, r);
            self.proven.insert((al, ar));
        } else if let (Some(lo), Some(ro)) = (l.as_object(), r.as_object()) {
            self.map_l.insert(al, ro.clone());
            self.map_r.insert(ar, lo.clone());
        }
        Ok(true)
    }

    fn seq(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<bool> {
        let (ls, rs) = (seq_items(l)?, seq_items(r)?);
        if ls.len() != rs.len() && !self.record {
            return Ok(false);
        }
        for (i, (a, b)) in ls.iter().zip(&rs).enumerate() {
            if !self.any(&a.view(), &b.view())? {
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
    /// counterpart.
    fn key_to_rhs(&self, k: &Any) -> Any {
        match self.map_l.get(&addr(&k.view())) {
            Some(m) if k.type_index() >= kRFFIStaticObjectBegin => Any::from(m.clone()),
            _ => k.clone(),
        }
    }

    fn map(&mut self, l: &AnyView<'_>, r: &AnyView<'_>) -> Result<bool> {
        let (lm, rm) = (MapLike::of(l)?, MapLike::of(r)?);
        let (le, re) = (lm.entries(), rm.entries());
        if le.len() != re.len() && !self.record {
            return Ok(false);
        }
        for (k, v) in &le {
            let rk = self.key_to_rhs(k);
            let Some(rv) = rm.get(&rk.view())? else {
                self.step(
                    (AccessKind::MapItem, k.clone()),
                    (AccessKind::MapItemMissing, rk),
                );
                return Ok(false);
            };
            if !self.any(&v.view(), &rv.view())? {
                self.step((AccessKind::MapItem, k.clone()), (AccessKind::MapItem, rk));
                return Ok(false);
            }
        }
        if le.len() == re.len() {
            return Ok(true);
        }
        // The right map has a key the left lacks: name it.
        for (k, _) in &re {
            let known = le.iter().any(|(lk, _)| {
                let lk = self.key_to_rhs(lk);
                same_key(&lk.view(), &k.view())
            });
            if !known {
                self.step(
                    (AccessKind::MapItemMissing, k.clone()),
                    (AccessKind::MapItem, k.clone()),
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
            } else if f.flags & kRFFIFieldFlagBitMaskSEqHashDef != 0 {
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

/// Whether two keys name the same entry of a map.
fn same_key(a: &AnyView<'_>, b: &AnyView<'_>) -> bool {
    matches!((MapKey::of(a), MapKey::of(b)), (Ok(x), Ok(y)) if x == y)
}

/// The items of an Array or List.
pub(crate) fn seq_items(v: &AnyView<'_>) -> Result<Vec<Any>> {
    crate::containers::seq_items(v)
        .map_err(|t| crate::Error::type_error(format!("not a sequence: {t}")))
}

/// A Map or a Dict, read the same way.
pub(crate) enum MapLike {
    Map(crate::Map),
    Dict(crate::Dict),
}

impl MapLike {
    pub(crate) fn of(v: &AnyView<'_>) -> Result<MapLike> {
        Ok(match v.type_index() {
            kRFFIDict => MapLike::Dict(v.try_as()?),
            _ => MapLike::Map(v.try_as()?),
        })
    }

    pub(crate) fn entries(&self) -> Vec<(Any, Any)> {
        match self {
            MapLike::Map(m) => m
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_owned().unwrap_or_default(),
                        v.to_owned().unwrap_or_default(),
                    )
                })
                .collect(),
            MapLike::Dict(d) => d.items(),
        }
    }

    pub(crate) fn get(&self, k: &AnyView<'_>) -> Result<Option<Any>> {
        match self {
            MapLike::Map(m) => m.get(k)?.map(|v| v.to_owned()).transpose(),
            MapLike::Dict(d) => d.get(k),
        }
    }
}
