//! The traversals' entry points (Rust functions and tvm-ffi's global functions), the objects
//! they use (`ffi.VisitInterrupt`, the visitor's and mutator's methods), and `ffi.StructuralKey`,
//! a value that hashes and compares structurally.

use super::traverse::{Callback, Order, Style, Traversal};
use super::{structural_equal, structural_hash, Options};
use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::function_registry::{register_builtin, register_builtin_packed};
use crate::reflection::{Obj, ObjectDef, ObjectHeader};
use crate::{Array, Function, ObjectRef};

crate::object_type! {
    /// Returned by a structural walk's or visit's callback to stop the traversal; the walk
    /// returns it, with the value it carries.
    pub struct VisitInterrupt("ffi.VisitInterrupt") {
        /// What the callback hands back to the caller.
        pub value: Any,
    }
    methods {
        /// An interrupt carrying `value`.
        #[static_method]
        "__ffi_init__" => |value: Any| VisitInterrupt::new(value);
    }
}

impl VisitInterrupt {
    /// An interrupt carrying `value`.
    pub fn new(value: Any) -> Obj<VisitInterrupt> {
        Obj::new(VisitInterrupt {
            base: ObjectHeader::default(),
            value,
        })
    }
}

pub(crate) fn interrupt_index() -> i32 {
    VisitInterrupt::type_index()
}

crate::object_type! {
    /// A value that hashes and compares structurally (its hash computed once): as a key of a
    /// Map, a Dict or a Python dict, structurally equal values are the same key.
    pub struct StructuralKey("ffi.StructuralKey") {
        /// The value.
        pub key: Any,
        /// Its structural hash, as a signed 64-bit int.
        pub hash_i64: i64,
    }
    methods {
        /// The key of `value`.
        #[static_method]
        "__ffi_init__" => |value: Any| StructuralKey::new(value);
    }
}

impl StructuralKey {
    /// The key of `value` (a tensor's data counts, as in `structural_equal`'s default).
    pub fn new(key: Any) -> Result<Obj<StructuralKey>> {
        let hash = structural_hash(&key.view(), Options::default())?;
        Ok(Obj::new(StructuralKey {
            base: ObjectHeader::default(),
            key,
            hash_i64: hash as i64,
        }))
    }

    /// Whether both keys hold structurally equal values.
    pub fn equal(&self, other: &StructuralKey) -> Result<bool> {
        Ok(self.hash_i64 == other.hash_i64
            && structural_equal(&self.key.view(), &other.key.view(), Options::default())?)
    }
}

/// Walks `root`: at each value, the first callback that matches it is called with the value
/// (and the definition region kind, for callbacks `with_region`) before (`Order::Pre`) or after
/// its children. A callback returns None (go on), 1 (in pre-order: skip the children) or a
/// `VisitInterrupt`, which stops the walk and is returned.
pub fn structural_walk(
    root: &AnyView<'_>,
    callbacks: Vec<Callback>,
    order: Order,
) -> Result<Option<Any>> {
    run(Style::Walk(order), callbacks, |t| t.visit(root))
}

/// Visits `root`: the first callback that matches a value is called with `(value, visitor)` and
/// decides which children to visit; values without a callback have their children visited.
pub fn structural_visit(root: &AnyView<'_>, callbacks: Vec<Callback>) -> Result<Option<Any>> {
    run(Style::Visit, callbacks, |t| t.visit(root))
}

/// Maps `root`: each value is replaced by what its callback returns for it, before
/// (`Order::Pre`) or after its children are mapped. Containers and objects whose parts change
/// are copied, unless `owned` (the caller hands `root` over): then the parts only the root
/// reaches are changed in place.
pub fn structural_map(
    root: Any,
    callbacks: Vec<Callback>,
    order: Order,
    owned: bool,
) -> Result<Any> {
    run(Style::Map(order), callbacks, |t| {
        t.mutate(&root, owners(owned))
    })
}

/// Mutates `root`: the first callback that matches a value is called with `(value, mutator)`
/// (and the in-place mode, for callbacks `with_mode`) and its result is final; values without a
/// callback have their children mutated.
pub fn structural_mutate(root: Any, callbacks: Vec<Callback>, owned: bool) -> Result<Any> {
    run(Style::Mutate, callbacks, |t| t.mutate(&root, owners(owned)))
}

fn owners(owned: bool) -> u32 {
    u32::from(owned)
}

fn run<R>(
    style: Style,
    callbacks: Vec<Callback>,
    f: impl FnOnce(&Traversal) -> Result<R>,
) -> Result<R> {
    let t = Traversal::new(style, callbacks)?;
    let r = f(&t);
    t.finish();
    r
}

// ---- Global functions (tvm-ffi's names and arguments) ----

/// `entries`: an Array of `[type_index, function]` (`[type_index, function, with_mode]` for a
/// mutation), `type_index` -1 for any value.
fn callbacks(f: &str, entries: &AnyView<'_>, with_region: bool) -> Result<Vec<Callback>> {
    let bad = |why: String| Error::type_error(format!("{f}: {why}"));
    let entries: Array = entries.try_as().map_err(|_| {
        bad(format!(
            "callbacks must be an Array, not {}",
            entries.type_name()
        ))
    })?;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let e: Array = e.try_as().map_err(|_| {
                bad(format!(
                    "callback #{i} must be [type_index, function], not {}",
                    e.type_name()
                ))
            })?;
            if !(2..=3).contains(&e.len()) {
                return Err(bad(format!(
                    "callback #{i} must be [type_index, function], not {} items",
                    e.len()
                )));
            }
            let type_index = e.as_slice()[0]
                .try_as::<i64>()
                .ok()
                .and_then(|t| i32::try_from(t).ok());
            let type_index = type_index
                .filter(|&t| t >= -1)
                .ok_or_else(|| bad(format!("callback #{i}: the type index must be -1 or more")))?;
            let func: Function = e.as_slice()[1]
                .try_as()
                .map_err(|_| bad(format!("callback #{i}: not a function")))?;
            let with_mode = match e.get(2) {
                Some(m) => m.try_as::<bool>()?,
                None => false,
            };
            Ok(Callback {
                type_index,
                func,
                with_region,
                with_mode,
            })
        })
        .collect()
}

fn order(f: &str, v: &AnyView<'_>) -> Result<Order> {
    match v.try_as::<i64>() {
        Ok(0) => Ok(Order::Pre),
        Ok(1) => Ok(Order::Post),
        _ => Err(Error::value_error(format!(
            "{f}: order must be 0 (pre-order) or 1 (post-order), not {v:?}"
        ))),
    }
}

fn arity(f: &str, args: &[AnyView<'_>], n: usize) -> Result<()> {
    if args.len() == n {
        return Ok(());
    }
    Err(Error::type_error(format!(
        "{f}() takes {n} arguments, got {}",
        args.len()
    )))
}

/// The root of a map or mutation, and whether the caller handed it over (an rvalue reference).
fn root(args: &[AnyView<'_>]) -> Result<(Any, bool)> {
    Ok((
        args[0].to_owned()?,
        args[0].type_index() == kRFFIObjectRValueRef,
    ))
}

fn both(f: &str, args: &[AnyView<'_>]) -> Result<Vec<Callback>> {
    let mut all = callbacks(f, &args[1], false)?;
    all.extend(callbacks(f, &args[2], true)?);
    Ok(all)
}

register_builtin_packed!("ffi.StructuralWalk", |args: &[AnyView<'_>]| {
    const F: &str = "ffi.StructuralWalk";
    arity(F, args, 4)?;
    Ok(structural_walk(&args[0], both(F, args)?, order(F, &args[3])?)?.unwrap_or_default())
});

register_builtin_packed!("ffi.StructuralVisit", |args: &[AnyView<'_>]| {
    const F: &str = "ffi.StructuralVisit";
    arity(F, args, 2)?;
    Ok(structural_visit(&args[0], callbacks(F, &args[1], false)?)?.unwrap_or_default())
});

register_builtin_packed!("ffi.StructuralMap", |args: &[AnyView<'_>]| {
    const F: &str = "ffi.StructuralMap";
    arity(F, args, 4)?;
    let (value, owned) = root(args)?;
    structural_map(value, both(F, args)?, order(F, &args[3])?, owned)
});

register_builtin_packed!("ffi.StructuralMutate", |args: &[AnyView<'_>]| {
    const F: &str = "ffi.StructuralMutate";
    arity(F, args, 2)?;
    let (value, owned) = root(args)?;
    structural_mutate(value, callbacks(F, &args[1], false)?, owned)
});

fn traversal(f: &str, obj: &ObjectRef) -> Result<Traversal> {
    Traversal::from_object(obj, f)
}

register_builtin!("ffi.StructuralVisitorVisit", |v: ObjectRef,
                                                 x: Any|
 -> Result<Any> {
    let t = traversal("StructuralVisitor.visit", &v)?;
    Ok(t.visit(&x.view())?.unwrap_or_default())
});
register_builtin!("ffi.StructuralVisitorDefaultVisit", |v: ObjectRef,
                                                        x: Any|
 -> Result<Any> {
    let t = traversal("StructuralVisitor.default_visit", &v)?;
    Ok(t.default_visit(&x.view())?.unwrap_or_default())
});
register_builtin!("ffi.StructuralMutatorMutate", |v: ObjectRef,
                                                  x: Any|
 -> Result<Any> {
    traversal("StructuralMutator.mutate", &v)?.mutate(&x, 0)
});
register_builtin!("ffi.StructuralMutatorDefaultMutate", |v: ObjectRef,
                                                         x: Any|
 -> Result<Any> {
    traversal("StructuralMutator.default_mutate", &v)?.default_mutate(&x, 0)
});
register_builtin!("ffi.StructuralMutatorVarRemapGet", |v: ObjectRef,
                                                       x: Any|
 -> Result<Any> {
    let t = traversal("StructuralMutator.var_remap_get", &v)?;
    Ok(t.remap_get(&x)?.unwrap_or_default())
});
register_builtin!("ffi.StructuralMutatorVarRemapSet", |v: ObjectRef,
                                                       x: Any,
                                                       mapped: Any|
 -> Result<()> {
    traversal("StructuralMutator.var_remap_set", &v)?.remap_set(&x, mapped)
});

fn region_kind(f: &str, v: ObjectRef) -> Result<i64> {
    Ok(i64::from(traversal(f, &v)?.region()))
}

fn with_region_kind(f: &str, v: ObjectRef, kind: i64, callback: Function) -> Result<Any> {
    let t = traversal(f, &v)?;
    let kind = i32::try_from(kind).map_err(|_| Error::value_error(format!("{f}: bad kind")))?;
    t.with_region(kind, || callback.call(&[]))
}

register_builtin!("ffi.StructuralVisitorDefRegionKind", |v: ObjectRef| {
    region_kind("StructuralVisitor.def_region_kind", v)
});
register_builtin!("ffi.StructuralMutatorDefRegionKind", |v: ObjectRef| {
    region_kind("StructuralMutator.def_region_kind", v)
});
register_builtin!(
    "ffi.StructuralVisitorWithDefRegionKind",
    |v: ObjectRef, kind: i64, f: Function| {
        with_region_kind("StructuralVisitor.with_def_region_kind", v, kind, f)
    }
);
register_builtin!(
    "ffi.StructuralMutatorWithDefRegionKind",
    |v: ObjectRef, kind: i64, f: Function| {
        with_region_kind("StructuralMutator.with_def_region_kind", v, kind, f)
    }
);

register_builtin!("ffi.VisitInterrupt", |value: Any| VisitInterrupt::new(
    value
));
register_builtin!("ffi.StructuralKey", |value: Any| StructuralKey::new(value));
register_builtin!(
    "ffi.StructuralKeyEqual",
    |a: Obj<StructuralKey>, b: Obj<StructuralKey>| { a.equal(&b) }
);
