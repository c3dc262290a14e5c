//! Structural operations over values and object graphs, by the fields the type registry knows:
//!
//! - [`structural_equal`] / [`structural_hash`] (hash consistent with equality) and
//!   [`first_mismatch`], which says where two values first differ as a pair of [`AccessPath`]s
//!   (`root.body[2].name`);
//! - the recursive comparisons [`recursive_eq`], [`recursive_lt`], ... and [`recursive_hash`]
//!   (what a dataclass `==`, `<` and `hash` mean: values compared as values, fields in order);
//! - [`deep_copy`], which keeps sharing and cycles;
//! - [`repr_print`], a field-wise printer of a graph (shared objects shown once, cycles marked);
//! - [`to_json_graph`] / [`from_json_graph`], a JSON graph of any value (tensors included).
//!
//! Every operation takes graphs with cycles, and refuses a nesting deeper than the thread's stack
//! allows with a RecursionError instead of overflowing it. Each is also a global function
//! (`ffi.StructuralEqual`, `ffi.DeepCopy`, `ffi.ToJSONGraphString`, ...) and a C entry point.
//!
//! ```
//! use rffi_core::structural::{structural_equal, structural_hash, Options};
//! use rffi_core::{Any, Array};
//!
//! let a = Any::from(Array::new(vec![1i64.into(), "x".into()]));
//! let b = Any::from(Array::new(vec![1i64.into(), "x".into()]));
//! assert!(structural_equal(&a.view(), &b.view(), Options::default()).unwrap());
//! assert_eq!(
//!     structural_hash(&a.view(), Options::default()).unwrap(),
//!     structural_hash(&b.view(), Options::default()).unwrap()
//! );
//! ```

mod builtins;
mod compare;
mod copy;
mod equal;
mod hash;
mod hooks;
mod items;
pub mod json;
mod mutate;
mod path;
mod rebuild;
mod repr;
mod tensor;
mod traverse;
mod traverse_api;

pub use compare::{
    recursive_compare, recursive_eq, recursive_ge, recursive_gt, recursive_le, recursive_lt,
    Compared,
};
pub use copy::{deep_copy, shallow_copy};
pub use equal::{first_mismatch, structural_equal};
pub use hash::{recursive_hash, structural_hash};
pub use json::{from_json_graph, to_json_graph};
pub use path::{AccessKind, AccessPath, AccessStep};
pub use repr::repr_print;
pub use traverse::{Callback, Order, Style, Traversal};
pub use traverse_api::{
    structural_map, structural_mutate, structural_visit, structural_walk, StructuralKey,
    VisitInterrupt,
};

use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::reflection::all_fields;
use crate::type_registry::type_info;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// The field flags of a definition site (pattern or simple): where equality maps variables.
pub(crate) const DEF_SITE: i64 =
    kRFFIFieldFlagBitMaskSEqHashDef | kRFFIFieldFlagBitMaskSEqHashDefSimple;

/// Options of structural equality and hashing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Free variables (`kRFFISEqHashKindFreeVar` objects) may be mapped to each other anywhere,
    /// not only at definition sites.
    pub map_free_vars: bool,
    /// Tensors compare by dtype, shape and device only, not by their data.
    pub skip_tensor_content: bool,
}

/// How a structural operation sees a value of a type index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// A value stored in the `RFFIAny` itself: compared by its payload.
    Pod,
    Str,
    Bytes,
    Array,
    List,
    Map,
    Dict,
    Shape,
    Tensor,
    /// An object of a registered type: by its fields.
    Object,
    /// Functions, modules, errors, opaque objects: by identity.
    Opaque,
}

pub(crate) fn class_of(index: i32) -> Class {
    match index {
        kRFFIRawStr | kRFFISmallStr | kRFFIStr => Class::Str,
        kRFFIByteArrayPtr | kRFFISmallBytes | kRFFIBytes => Class::Bytes,
        i if i < kRFFIStaticObjectBegin => Class::Pod,
        kRFFIArray => Class::Array,
        kRFFIList => Class::List,
        kRFFIMap => Class::Map,
        kRFFIDict => Class::Dict,
        kRFFIShape => Class::Shape,
        kRFFITensor => Class::Tensor,
        i if i >= kRFFIDynObjectBegin => Class::Object,
        _ => Class::Opaque,
    }
}

/// Whether values of this class are nodes of a graph (containers and objects with fields): what
/// copies rebuild and cycle checks follow.
pub(crate) fn is_node(class: Class) -> bool {
    matches!(
        class,
        Class::Array | Class::List | Class::Map | Class::Dict | Class::Object
    )
}

/// The text or bytes of a string-like value.
pub(crate) fn text_of<'v>(v: &'v AnyView<'_>) -> &'v [u8] {
    crate::string::str_bytes_of(v).unwrap_or_default()
}

/// Whether two values are the same value: the same object, the same text or bytes (a string
/// rebuilt from the same text is the same), the same plain value. What a traversal's callback
/// returning its input, or a conversion that changed nothing, gives.
pub(crate) fn same_value(a: &Any, b: &Any) -> bool {
    let (ca, cb) = (class_of(a.type_index()), class_of(b.type_index()));
    match (ca, cb) {
        (Class::Str, Class::Str) | (Class::Bytes, Class::Bytes) => {
            text_of(&a.view()) == text_of(&b.view())
        }
        _ => {
            let (ra, rb) = (a.as_raw(), b.as_raw());
            // SAFETY: every value has its 8 payload bytes initialised.
            ra.type_index == rb.type_index && unsafe { ra.v.v_int64 == rb.v.v_int64 }
        }
    }
}

/// The address of an object value (0 for other values): its identity.
pub(crate) fn addr(v: &AnyView<'_>) -> usize {
    if v.type_index() >= kRFFIStaticObjectBegin {
        // SAFETY: object values hold an object pointer.
        unsafe { v.as_raw().v.v_obj as usize }
    } else {
        0
    }
}

/// The equality kind of a registered type (`kRFFISEqHashKind*`); undeclared types compare as
/// trees.
pub(crate) fn eq_hash_kind(index: i32) -> i32 {
    // SAFETY: type registry metadata lives as long as the process.
    let kind = type_info(index)
        .and_then(|i| unsafe { i.metadata.as_ref() })
        .map_or(kRFFISEqHashKindUnsupported, |m| m.structural_eq_hash_kind);
    match kind {
        kRFFISEqHashKindFreeVar
        | kRFFISEqHashKindDAGNode
        | kRFFISEqHashKindConstTreeNode
        | kRFFISEqHashKindUniqueInstance => kind,
        _ => kRFFISEqHashKindTreeNode,
    }
}

/// Sets the structural equality kind of a registered type (`kRFFISEqHashKind*`), keeping the rest
/// of its metadata.
pub fn set_eq_hash_kind(index: i32, kind: i32) -> Result<()> {
    if !(kRFFISEqHashKindUnsupported..=kRFFISEqHashKindUniqueInstance).contains(&kind) {
        return Err(Error::value_error(format!(
            "structural_eq kind must be 0 to 5, not {kind}"
        )));
    }
    let info =
        type_info(index).ok_or_else(|| Error::key_error(format!("unknown type index {index}")))?;
    // SAFETY: registry metadata lives as long as the process.
    let old = unsafe { info.metadata.as_ref() };
    let meta = RFFITypeMetadata {
        doc: old.map_or(crate::host::byte_array(b""), |m| m.doc),
        creator: old.and_then(|m| m.creator),
        total_size: old.map_or(0, |m| m.total_size),
        structural_eq_hash_kind: kind,
    };
    // SAFETY: the doc is the type registry's own (alive for the process) or empty.
    unsafe { crate::reflection::register_metadata(index, &meta) }
}

/// The fields of each type met during one operation (root type's first), looked up once.
#[derive(Default)]
pub(crate) struct FieldCache(FxHashMap<i32, Rc<[&'static RFFIFieldInfo]>>);

impl FieldCache {
    pub(crate) fn of(&mut self, index: i32) -> Rc<[&'static RFFIFieldInfo]> {
        self.0
            .entry(index)
            .or_insert_with(|| all_fields(index).into())
            .clone()
    }
}

/// The nesting guard of a recursive operation: refuses to go deeper than the thread's stack
/// allows (or than `MAX_UNKNOWN_STACK` levels where the stack's bounds are unknown).
pub(crate) struct Depth {
    level: u32,
    floor: usize,
    what: &'static str,
}

/// Levels allowed where the stack's size cannot be known.
const MAX_UNKNOWN_STACK: u32 = 2000;

impl Depth {
    pub(crate) fn new(what: &'static str) -> Depth {
        Depth {
            level: 0,
            floor: crate::call_depth::recursion_floor(),
            what,
        }
    }

    pub(crate) fn level(&self) -> u32 {
        self.level
    }

    /// One level deeper, or a RecursionError naming the operation.
    #[inline]
    pub(crate) fn enter(&mut self) -> Result<()> {
        let low = if self.floor == 0 {
            self.level >= MAX_UNKNOWN_STACK
        } else {
            crate::call_depth::stack_pointer() < self.floor
        };
        if low {
            return Err(Error::new(
                "RecursionError",
                format!(
                    "{}: the value is nested too deeply ({} levels) for this thread's stack; \
                     run it on a thread with a larger stack",
                    self.what, self.level
                ),
            ));
        }
        self.level += 1;
        Ok(())
    }

    #[inline]
    pub(crate) fn leave(&mut self) {
        self.level -= 1;
    }
}

/// The nodes a recursive walk over two graphs is inside of, with the level each was entered at:
/// meeting a pair again is a cycle, equal only if both sides close their cycle at the same level
/// (which keeps equality consistent with a hash that encodes the cycle's length).
#[derive(Default)]
pub(crate) struct OnPath {
    lhs: FxHashMap<usize, u32>,
    rhs: FxHashMap<usize, u32>,
}

impl OnPath {
    /// `Some(equal)` when `l` or `r` is already on the path (a cycle), `None` otherwise.
    pub(crate) fn cycle(&self, l: usize, r: usize) -> Option<bool> {
        match (self.lhs.get(&l), self.rhs.get(&r)) {
            (None, None) => None,
            (Some(a), Some(b)) => Some(a == b),
            _ => Some(false),
        }
    }

    pub(crate) fn push(&mut self, l: usize, r: usize, level: u32) {
        self.lhs.insert(l, level);
        self.rhs.insert(r, level);
    }

    pub(crate) fn pop(&mut self, l: usize, r: usize) {
        self.lhs.remove(&l);
        self.rhs.remove(&r);
    }
}
