//! Access paths: where a part of a value lies, as the steps from the root (`root.body[2].name`).
//! They are objects (`ffi.reflection.AccessPath`, `ffi.reflection.AccessStep`, tvm-ffi's keys and
//! methods), so every language reads them; [`first_mismatch`](super::first_mismatch) returns
//! them.

use crate::reflection::{Obj, ObjectHeader};
use crate::{Any, AnyView, Array};
use std::fmt;

/// What one step does (`AccessStep::kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i64)]
pub enum AccessKind {
    /// `.name`
    Attr = 0,
    /// `[i]`
    ArrayItem = 1,
    /// `[key]`
    MapItem = 2,
    /// An attribute the other side has and this one lacks.
    AttrMissing = 3,
    /// An index past this side's end.
    ArrayItemMissing = 4,
    /// A key this side lacks.
    MapItemMissing = 5,
}

crate::object_type! {
    /// One step of an access path: an attribute, an array index or a map key, or one of them
    /// missing on this side.
    pub struct AccessStep("ffi.reflection.AccessStep") {
        /// The `AccessKind`: 0 attribute, 1 array item, 2 map item, 3-5 the same, missing.
        pub kind: i64,
        /// The attribute name, the index or the key.
        pub key: Any,
    }
}

crate::object_type! {
    /// A path from a root value to one of its parts, printed as `root.body[2].name`.
    pub struct AccessPath("ffi.reflection.AccessPath") {
        /// The path without its last step (None at the root).
        pub parent: Option<Obj<AccessPath>>,
        /// The last step (None at the root).
        pub step: Option<Obj<AccessStep>>,
        /// The number of steps.
        pub depth: i64,
    }
    methods {
        /// The path of the root itself.
        #[static_method]
        "_root" => AccessPath::root;
        /// This path followed by one step.
        "_extend" => |p: Obj<AccessPath>, s: Obj<AccessStep>| AccessPath::extend(&p, s);
        "_attr" => |p: Obj<AccessPath>, name: String| p.then(AccessKind::Attr, name.into());
        "_array_item" => |p: Obj<AccessPath>, i: i64| p.then(AccessKind::ArrayItem, i.into());
        "_map_item" => |p: Obj<AccessPath>, k: Any| p.then(AccessKind::MapItem, k);
        "_attr_missing" => |p: Obj<AccessPath>, name: String| {
            p.then(AccessKind::AttrMissing, name.into())
        };
        "_array_item_missing" => |p: Obj<AccessPath>, i: i64| {
            p.then(AccessKind::ArrayItemMissing, i.into())
        };
        "_map_item_missing" => |p: Obj<AccessPath>, k: Any| {
            p.then(AccessKind::MapItemMissing, k)
        };
        /// Whether this path is a prefix of (or equal to) `other`.
        "_is_prefix_of" => |p: Obj<AccessPath>, other: Obj<AccessPath>| p.is_prefix_of(&other);
        /// The steps from the root.
        "_to_steps" => |p: Obj<AccessPath>| {
            Array::new(p.steps().into_iter().map(Any::from).collect())
        };
        /// Whether both paths have the same steps.
        "_path_equal" => |p: Obj<AccessPath>, other: Obj<AccessPath>| p.path_equal(&other);
    }
}

impl AccessStep {
    /// A step of `kind` with `key` (a field name, an index or a map key).
    pub fn new(kind: AccessKind, key: Any) -> Obj<AccessStep> {
        Obj::new(AccessStep {
            base: ObjectHeader::default(),
            kind: kind as i64,
            key,
        })
    }

    fn same(&self, other: &AccessStep) -> bool {
        self.kind == other.kind
            && super::structural_equal(&self.key.view(), &other.key.view(), Default::default())
                .unwrap_or(false)
    }
}

impl AccessPath {
    /// The path of the root.
    pub fn root() -> Obj<AccessPath> {
        Obj::new(AccessPath {
            base: ObjectHeader::default(),
            parent: None,
            step: None,
            depth: 0,
        })
    }

    /// `path` followed by `step`.
    pub fn extend(path: &Obj<AccessPath>, step: Obj<AccessStep>) -> Obj<AccessPath> {
        Obj::new(AccessPath {
            base: ObjectHeader::default(),
            parent: Some(path.clone()),
            step: Some(step),
            depth: path.depth + 1,
        })
    }

    /// The steps from the root.
    pub fn steps(&self) -> Vec<Obj<AccessStep>> {
        let mut out = Vec::with_capacity(self.depth.max(0) as usize);
        let mut at = Some(self);
        while let Some(p) = at {
            if let Some(s) = &p.step {
                out.push(s.clone());
            }
            at = p.parent.as_deref();
        }
        out.reverse();
        out
    }

    /// Whether this path is `other` or leads to it (its steps start `other`'s).
    pub fn is_prefix_of(&self, other: &AccessPath) -> bool {
        let (mine, theirs) = (self.steps(), other.steps());
        mine.len() <= theirs.len() && mine.iter().zip(&theirs).all(|(a, b)| a.same(b))
    }

    /// Whether both paths have the same steps.
    pub fn path_equal(&self, other: &AccessPath) -> bool {
        self.depth == other.depth && self.is_prefix_of(other)
    }
}

/// Extends a path by one step (what the comparison records on the way back up).
pub(crate) trait Then {
    fn then(&self, kind: AccessKind, key: Any) -> Obj<AccessPath>;
}

impl Then for Obj<AccessPath> {
    fn then(&self, kind: AccessKind, key: Any) -> Obj<AccessPath> {
        AccessPath::extend(self, AccessStep::new(kind, key))
    }
}

impl fmt::Display for AccessPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("root")?;
        for s in self.steps() {
            let key = s.key.view();
            match s.kind {
                0 => write!(f, ".{}", plain(&key))?,
                1 => write!(f, "[{}]", plain(&key))?,
                2 => write!(f, "[{}]", super::repr_print(&key, 0).unwrap_or_default())?,
                3 => write!(f, ".<missing {}>", plain(&key))?,
                4 => write!(f, "[<missing {}>]", plain(&key))?,
                _ => write!(
                    f,
                    "[<missing {}>]",
                    super::repr_print(&key, 0).unwrap_or_default()
                )?,
            }
        }
        Ok(())
    }
}

/// A name or an index as it reads in a path.
fn plain(key: &AnyView<'_>) -> String {
    match key.try_as::<String>() {
        Ok(s) => s,
        Err(_) => super::repr_print(key, 0).unwrap_or_default(),
    }
}

crate::function_registry::register_builtin!("ffi.AccessPathToString", |p: Obj<AccessPath>| {
    p.to_string()
});
