//! Object types the tests build graphs of.

use rffi_core::abi::*;
use rffi_core::reflection::{Mut, Obj, ObjectDef, ObjectHeader};
use rffi_core::structural::{set_eq_hash_kind, Options};
use rffi_core::{Any, Array, Dict, Function, List, ObjectRef};

rffi_core::object_type! {
    /// A variable: equal only to itself, or to the one it is bound to at a definition.
    pub struct Var("test_structural.Var") {
        #[structural_eq_ignore]
        pub name: String,
    }
}

rffi_core::object_type! {
    /// A function: its parameters are a definition site; its comment does not count.
    pub struct Func("test_structural.Func") {
        #[structural_eq_def]
        pub params: Array,
        pub body: Array,
        #[structural_eq_ignore]
        #[default = ""]
        pub comment: String,
    }
}

rffi_core::object_type! {
    /// A node of a graph that may hold cycles (its `next` is writable).
    pub struct Node("test_structural.Node") {
        pub name: String,
        #[default = 0i64]
        pub value: i64,
        pub next: Mut<Any>,
    }
}

rffi_core::object_type! {
    /// Containers in writable fields without defaults: a cycle runs through an Array.
    pub struct Holder("test_structural.Holder") {
        pub items: Mut<Array>,
        pub table: Mut<rffi_core::Map>,
    }
}

rffi_core::object_type! {
    /// Refers to an object by identity.
    pub struct Ref("test_structural.Ref") {
        #[structural_eq_identity]
        pub target: ObjectRef,
        #[compare_off]
        pub note: String,
    }
}

/// Whether two values are the same object.
pub fn same(a: &Any, b: &Any) -> bool {
    a.view()
        .as_object()
        .unwrap()
        .same_as(b.view().as_object().unwrap())
}

pub fn var(name: &str) -> Any {
    static KIND: std::sync::Once = std::sync::Once::new();
    KIND.call_once(|| set_eq_hash_kind(Var::type_index(), kRFFISEqHashKindFreeVar).unwrap());
    Obj::new(Var {
        base: ObjectHeader::default(),
        name: name.into(),
    })
    .into()
}

pub fn func(params: Vec<Any>, body: Vec<Any>, comment: &str) -> Any {
    Obj::new(Func {
        base: ObjectHeader::default(),
        params: Array::new(params),
        body: Array::new(body),
        comment: comment.into(),
    })
    .into()
}

pub fn node(name: &str, value: i64, next: Any) -> Obj<Node> {
    Obj::new(Node {
        base: ObjectHeader::default(),
        name: name.into(),
        value,
        next: Mut::new(next),
    })
}

pub fn holder(items: Vec<Any>) -> Obj<Holder> {
    Obj::new(Holder {
        base: ObjectHeader::default(),
        items: Mut::new(Array::new(items)),
        table: Mut::new(rffi_core::Map::new(Vec::new()).unwrap()),
    })
}

pub fn reference(target: &Any, note: &str) -> Any {
    Obj::new(Ref {
        base: ObjectHeader::default(),
        target: target.view().as_object().unwrap().clone(),
        note: note.into(),
    })
    .into()
}

/// A type whose fields the runtime lays out (as Python's `py_class` and C types do).
pub fn pair_type() -> i32 {
    static INDEX: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *INDEX.get_or_init(|| {
        rffi_core::get_global_func("ffi.TypeRegisterValueType")
            .unwrap()
            .call(&[
                "test_structural.Pair".into(),
                Any::none(),
                r#"[{"name":"first","type_schema":"{\"type\":\"Any\"}"},
                    {"name":"second","type_schema":"{\"type\":\"Any\"}"}]"#
                    .into(),
            ])
            .unwrap()
            .try_as::<i64>()
            .unwrap() as i32
    })
}

pub fn pair(first: Any, second: Any) -> Any {
    let p = rffi_core::reflection::create_object(pair_type()).unwrap();
    rffi_core::reflection::set_field(&p, "first", &first.view()).unwrap();
    rffi_core::reflection::set_field(&p, "second", &second.view()).unwrap();
    p.into()
}

pub fn arr(items: Vec<Any>) -> Any {
    Array::new(items).into()
}

pub fn list(items: Vec<Any>) -> List {
    List::new(items)
}

pub fn dict(pairs: Vec<(Any, Any)>) -> Any {
    Dict::new(pairs).unwrap().into()
}

pub fn map(pairs: Vec<(Any, Any)>) -> Any {
    rffi_core::Map::new(pairs).unwrap().into()
}

pub fn eq(a: &Any, b: &Any) -> bool {
    rffi_core::structural::structural_equal(&a.view(), &b.view(), Options::default()).unwrap()
}

pub fn hash(a: &Any) -> u64 {
    rffi_core::structural::structural_hash(&a.view(), Options::default()).unwrap()
}

rffi_core::object_type! {
    /// Compared, ordered and hashed by `key` alone, through its hooks.
    pub struct Keyed("test_structural.Keyed") {
        pub key: i64,
        pub label: String,
    }
    methods {
        #[type_attr]
        "__ffi_eq__" => |a: Obj<Keyed>, b: Obj<Keyed>, fn_eq: Function| {
            fn_eq.call(&[a.key.into(), b.key.into()])?.try_as::<bool>()
        };
        #[type_attr]
        "__ffi_compare__" => |a: Obj<Keyed>, b: Obj<Keyed>, fn_cmp: Function| {
            fn_cmp.call(&[a.key.into(), b.key.into()])?.try_as::<i64>()
        };
        #[type_attr]
        "__ffi_hash__" => |a: Obj<Keyed>, fn_hash: Function| {
            fn_hash.call(&[a.key.into()])?.try_as::<i64>()
        };
    }
}

rffi_core::object_type! {
    /// An equality hook without a hash hook: equal by `key`, and cannot be hashed.
    pub struct EqOnly("test_structural.EqOnly") {
        pub key: i64,
        pub label: String,
    }
    methods {
        #[type_attr]
        "__ffi_eq__" => |a: Obj<EqOnly>, b: Obj<EqOnly>, fn_eq: Function| {
            fn_eq.call(&[a.key.into(), b.key.into()])?.try_as::<bool>()
        };
    }
}

pub fn keyed(key: i64, label: &str) -> Any {
    Obj::new(Keyed {
        base: ObjectHeader::default(),
        key,
        label: label.into(),
    })
    .into()
}

pub fn eq_only(key: i64, label: &str) -> Any {
    Obj::new(EqOnly {
        base: ObjectHeader::default(),
        key,
        label: label.into(),
    })
    .into()
}

/// Sets `field` of the object `v` to None: breaks a reference cycle a test made through it (the
/// copies' too), which reference counts alone never free.
pub fn clear_field(v: &Any, field: &str) {
    let obj = v.view().as_object().unwrap().clone();
    rffi_core::reflection::set_field(&obj, field, &Any::none().view()).unwrap();
}
