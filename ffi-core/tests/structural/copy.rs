//! deep_copy: new containers and objects, the same sharing, the same cycles.

use crate::types::*;
use rffi_core::reflection::get_field;
use rffi_core::structural::deep_copy;
use rffi_core::{Any, Array, Function, List};

fn copy(v: &Any) -> Any {
    deep_copy(&v.view()).unwrap()
}

fn same(a: &Any, b: &Any) -> bool {
    a.view()
        .as_object()
        .unwrap()
        .same_as(b.view().as_object().unwrap())
}

fn item(v: &Any, i: usize) -> Any {
    v.try_as::<Array>()
        .unwrap()
        .get(i)
        .unwrap()
        .to_owned()
        .unwrap()
}

#[test]
fn copies_are_new_equal_and_keep_sharing() {
    let s: Any = node("shared", 1, Any::none()).into();
    let p = pair(s.clone(), "long string value".into());
    let root = arr(vec![s.clone(), s.clone(), p.clone(), 7i64.into()]);
    let c = copy(&root);
    assert!(eq(&root, &c));
    assert!(!same(&root, &c));
    // Objects are new, and what was shared is shared in the copy.
    assert!(!same(&item(&c, 0), &s));
    assert!(same(&item(&c, 0), &item(&c, 1)));
    let first = get_field(item(&c, 2).view().as_object().unwrap(), "first").unwrap();
    assert!(same(&first, &item(&c, 0)));
    assert!(!same(&item(&c, 2), &p));
    // Plain values come through.
    assert_eq!(item(&c, 3).try_as::<i64>().unwrap(), 7);
}

#[test]
fn cycles_survive_a_copy() {
    // A Rust type (built from its fields) in a cycle through its writable field.
    let a = node("a", 1, Any::none());
    let b = node("b", 2, a.clone().into());
    a.next.set(b.clone().into());
    let c = copy(&a.clone().into());
    let ca = c.view().as_object().unwrap().clone();
    let cb = get_field(&ca, "next").unwrap();
    assert!(!same(&c, &a.clone().into()));
    assert!(same(
        &get_field(cb.view().as_object().unwrap(), "next").unwrap(),
        &c
    ));
    assert!(eq(&c, &a.clone().into()));
    // A runtime-laid-out object in a cycle through an Array: Array(p) <-> p.
    let p = pair(Any::none(), 0i64.into());
    let cyc = arr(vec![p.clone()]);
    rffi_core::reflection::set_field(p.view().as_object().unwrap(), "first", &cyc.view()).unwrap();
    for root in [p.clone(), cyc.clone()] {
        let c = copy(&root);
        assert!(eq(&c, &root));
        assert!(!same(&c, &root));
    }
    let cp = copy(&p);
    let inner = get_field(cp.view().as_object().unwrap(), "first").unwrap();
    assert!(same(&item(&inner, 0), &cp));
    // A List holding itself.
    let l = List::new(vec![1i64.into()]);
    l.append(l.clone().into());
    let cl = copy(&l.clone().into()).try_as::<List>().unwrap();
    assert!(same(&cl.get_item(1).unwrap(), &cl.clone().into()));
    for n in [&a, &b] {
        n.next.set(Any::none());
    }
    rffi_core::reflection::set_field(p.view().as_object().unwrap(), "first", &Any::none().view())
        .unwrap();
    l.clear();
    cl.clear();
}

#[test]
fn values_without_fields_are_shared_and_unsupported_types_refused() {
    let f: Any = Function::from_typed(|x: i64| x + 1).into();
    let root = arr(vec![f.clone()]);
    assert!(same(&item(&copy(&root), 0), &f));
    // A type registered with no way to create it (no creator, size or field constructor).
    let index = rffi_core::type_registry::register_type("test_structural.Bare", None).unwrap();
    // SAFETY: a zeroed header for the type, released by its (absent) deleter never running:
    // the object is leaked, which a test may do.
    let bare = unsafe {
        let p = Box::leak(Box::new(rffi_core::abi::RFFIObject {
            combined_ref_count: 1 | (1 << 32),
            type_index: index,
            __padding: 0,
            deleter: None,
        }));
        rffi_core::ObjectRef::from_raw(core::ptr::NonNull::from(p))
    };
    let e = deep_copy(&Any::from(bare).view()).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message().contains("does not support deepcopy"),
        "{}",
        e.message()
    );
}
