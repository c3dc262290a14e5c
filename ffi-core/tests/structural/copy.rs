//! deep_copy: new containers and objects, the same sharing, the same cycles.

use crate::types::*;
use rffi_core::reflection::get_field;
use rffi_core::structural::{deep_copy, shallow_copy};
use rffi_core::{Any, Array, Function, List, Map};

fn copy(v: &Any) -> Any {
    deep_copy(&v.view()).unwrap()
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
        let pair_of_copy = if same(&root, &p) { c } else { item(&c, 0) };
        clear_field(&pair_of_copy, "first");
    }
    let cp = copy(&p);
    let inner = get_field(cp.view().as_object().unwrap(), "first").unwrap();
    assert!(same(&item(&inner, 0), &cp));
    clear_field(&cp, "first");
    // A List holding itself.
    let l = List::new(vec![1i64.into()]);
    l.append(l.clone().into());
    let cl = copy(&l.clone().into()).try_as::<List>().unwrap();
    assert!(same(&cl.get_item(1).unwrap(), &cl.clone().into()));
    for n in [&a, &b] {
        n.next.set(Any::none());
    }
    clear_field(&c, "next");
    rffi_core::reflection::set_field(p.view().as_object().unwrap(), "first", &Any::none().view())
        .unwrap();
    l.clear();
    cl.clear();
}

#[test]
fn a_cycle_through_an_array_field_of_a_rust_type() {
    // h.items = [h]: the copy is built from its fields before its Array exists, so the field
    // constructor gets an empty Array in its place, and the copy's own Array after.
    let h = holder(vec![1i64.into()]);
    h.items.set(Array::new(vec![h.clone().into(), 2i64.into()]));
    let root: Any = h.clone().into();
    let c = copy(&root);
    assert!(!same(&c, &root));
    assert!(eq(&c, &root));
    let items = get_field(c.view().as_object().unwrap(), "items").unwrap();
    assert!(same(&item(&items, 0), &c));
    assert_eq!(item(&items, 1).try_as::<i64>().unwrap(), 2);
    // Reached through an Array first, the same.
    let outer = arr(vec![root.clone(), root.clone()]);
    let co = copy(&outer);
    assert!(same(&item(&co, 0), &item(&co, 1)) && !same(&item(&co, 0), &root));
    let inner = get_field(item(&co, 0).view().as_object().unwrap(), "items").unwrap();
    assert!(same(&item(&inner, 0), &item(&co, 0)));
    h.items.set(Array::new(Vec::new()));
    for n in [c, item(&co, 0)] {
        rffi_core::reflection::set_field(
            n.view().as_object().unwrap(),
            "items",
            &Any::from(Array::new(Vec::new())).view(),
        )
        .unwrap();
    }
}

/// An object of a type registered with no way to create it (no creator, size or field
/// constructor): what no copy can make.
fn bare() -> Any {
    static INDEX: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    let index = *INDEX.get_or_init(|| {
        rffi_core::type_registry::register_type("test_structural.Bare", None).unwrap()
    });
    /// Frees the header once the last reference of either kind is gone.
    unsafe extern "C" fn free_bare(obj: *mut core::ffi::c_void, flags: i32) {
        if flags & rffi_core::abi::kRFFIObjectDeleterFlagBitMaskWeak != 0 {
            // SAFETY: made by `Box::new` below; the protocol calls this once with the weak bit.
            drop(unsafe { Box::from_raw(obj.cast::<rffi_core::abi::RFFIObject>()) });
        }
    }
    // SAFETY: a bare header for the type (nothing after it), freed by `free_bare`.
    let bare = unsafe {
        let p = Box::leak(Box::new(rffi_core::abi::RFFIObject {
            combined_ref_count: 1 | (1 << 32),
            type_index: index,
            __padding: 0,
            deleter: Some(free_bare),
        }));
        rffi_core::ObjectRef::from_raw(core::ptr::NonNull::from(p))
    };
    Any::from(bare)
}

/// A copy that fails after it closed a cycle (a List holding itself, then a value no copy can
/// make) left its half-made List in that cycle, which reference counts never free: what the
/// List held (the shared Function here) stayed referenced for good. The failed build now empties
/// the Lists, Dicts and objects it made (a JSON graph read that fails likewise: the
/// `json_graph` fuzz target's LeakSanitizer replay found it there).
#[test]
fn a_failed_copy_leaves_no_cycle_behind() {
    let f: Any = Function::from_typed(|x: i64| x).into();
    let count = || f.view().as_object().unwrap().strong_count();
    let before = count();
    let l = List::new(Vec::new());
    l.append(l.clone().into());
    l.append(f.clone());
    l.append(bare());
    let e = deep_copy(&Any::from(l.clone()).view()).unwrap_err();
    assert!(
        e.message().contains("does not support deepcopy"),
        "{}",
        e.message()
    );
    assert_eq!(
        count(),
        before + 1,
        "only the original List holds the Function"
    );
    l.clear();
    assert_eq!(count(), before);
}

#[test]
fn values_without_fields_are_shared_and_unsupported_types_refused() {
    let f: Any = Function::from_typed(|x: i64| x + 1).into();
    let root = arr(vec![f.clone()]);
    assert!(same(&item(&copy(&root), 0), &f));
    let e = deep_copy(&bare().view()).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message().contains("does not support deepcopy"),
        "{}",
        e.message()
    );
}

#[test]
fn shallow_copies_are_new_and_share_their_members() {
    let shallow = |v: &Any| shallow_copy(&v.view()).unwrap();
    let inner = arr(vec![1i64.into()]);
    // Containers: new, the items themselves.
    let root = arr(vec![inner.clone(), 2i64.into()]);
    let c = shallow(&root);
    assert!(!same(&c, &root) && same(&item(&c, 0), &inner) && eq(&c, &root));
    let l = list(vec![inner.clone()]);
    let cl = shallow(&l.clone().into()).try_as::<List>().unwrap();
    assert!(!same(&cl.clone().into(), &l.clone().into()) && same(&cl.get_item(0).unwrap(), &inner));
    cl.append(3i64.into());
    assert_eq!((l.len(), cl.len()), (1, 2));
    let m = map(vec![("k".into(), inner.clone())]);
    let cm = shallow(&m);
    let cm_map = cm.try_as::<Map>().unwrap();
    let got = cm_map
        .get(&Any::from("k").view())
        .unwrap()
        .unwrap()
        .to_owned()
        .unwrap();
    assert!(!same(&cm, &m) && same(&got, &inner));
    // Objects: a Rust type (built from its fields) and a runtime-laid-out one.
    let n: Any = node("n", 5, inner.clone()).into();
    let cn = shallow(&n);
    assert!(!same(&cn, &n));
    assert!(same(
        &get_field(cn.view().as_object().unwrap(), "next").unwrap(),
        &inner
    ));
    assert_eq!(
        get_field(cn.view().as_object().unwrap(), "value")
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        5
    );
    let p = pair(inner.clone(), 0i64.into());
    let cp = shallow(&p);
    assert!(!same(&cp, &p));
    assert!(same(
        &get_field(cp.view().as_object().unwrap(), "first").unwrap(),
        &inner
    ));
    // A member that points back at the original stays pointing at the original.
    let h = holder(Vec::new());
    h.items.set(Array::new(vec![h.clone().into()]));
    let ch = shallow(&h.clone().into());
    let items = get_field(ch.view().as_object().unwrap(), "items").unwrap();
    assert!(same(&item(&items, 0), &h.clone().into()) && !same(&ch, &h.clone().into()));
    h.items.set(Array::new(Vec::new()));
    // Values without fields come back as they are.
    let f: Any = Function::from_typed(|x: i64| x).into();
    assert!(same(&shallow(&f), &f));
    assert_eq!(shallow(&7i64.into()).try_as::<i64>().unwrap(), 7);
}
