//! The recursive comparisons and their hash.

use crate::types::*;
use rffi_core::structural::{
    recursive_eq, recursive_ge, recursive_gt, recursive_hash, recursive_le, recursive_lt,
};
use rffi_core::Any;

fn lt(a: &Any, b: &Any) -> bool {
    recursive_lt(&a.view(), &b.view()).unwrap()
}

fn req(a: &Any, b: &Any) -> bool {
    recursive_eq(&a.view(), &b.view()).unwrap()
}

fn rhash(a: &Any) -> u64 {
    recursive_hash(&a.view()).unwrap()
}

#[test]
fn values_order_and_equal_as_values() {
    assert!(req(&(-0.0).into(), &0.0.into()));
    assert_eq!(rhash(&(-0.0).into()), rhash(&0.0.into()));
    assert!(req(&f64::NAN.into(), &f64::NAN.into()));
    assert!(recursive_lt(&Any::from(f64::NAN).view(), &Any::from(1.0).view()).is_err());
    assert!(lt(&i64::MIN.into(), &i64::MAX.into()));
    assert!(lt(&"abc".into(), &"abcd".into()));
    assert!(lt(&Any::none(), &1i64.into()));
    assert!(!req(&1i64.into(), &true.into()));
    let e = recursive_lt(&Any::from(1i64).view(), &Any::from("x").view()).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    let (a, b, c) = (
        arr(vec![1i64.into(), 2i64.into()]),
        arr(vec![1i64.into(), 3i64.into()]),
        arr(vec![1i64.into(), 2i64.into(), 0i64.into()]),
    );
    assert!(lt(&a, &b) && lt(&a, &c) && !lt(&b, &a));
    assert!(recursive_le(&a.view(), &a.view()).unwrap());
    assert!(recursive_ge(&b.view(), &a.view()).unwrap());
    assert!(recursive_gt(&b.view(), &a.view()).unwrap());
    // Maps: equal or unordered.
    let (m1, m2) = (
        map(vec![("x".into(), 1i64.into())]),
        map(vec![("x".into(), 2i64.into())]),
    );
    assert!(req(&m1, &map(vec![("x".into(), 1i64.into())])));
    assert!(recursive_le(&m1.view(), &map(vec![("x".into(), 1i64.into())]).view()).unwrap());
    assert!(recursive_lt(&m1.view(), &m2.view()).is_err());
}

#[test]
fn objects_order_by_fields_skipping_compare_off() {
    let (a, b) = (
        node("a", 1, Any::none()).into(),
        node("a", 2, Any::none()).into(),
    );
    assert!(lt(&a, &b));
    assert!(!req(&a, &b));
    // `note` is compare-off: left out of == and of the hash.
    let t: Any = node("t", 0, Any::none()).into();
    let (r1, r2) = (reference(&t, "one"), reference(&t, "two"));
    assert!(req(&r1, &r2));
    assert_eq!(rhash(&r1), rhash(&r2));
    // Objects of different types are different, and have no order.
    assert!(!req(&a, &r1));
    assert!(recursive_lt(&a.view(), &r1.view()).is_err());
    // Equal cycles are equal.
    let (p, q) = (node("c", 1, Any::none()), node("c", 1, Any::none()));
    p.next.set(p.clone().into());
    q.next.set(q.clone().into());
    assert!(req(&p.clone().into(), &q.clone().into()));
    assert_eq!(rhash(&p.clone().into()), rhash(&q.clone().into()));
    // An order through a cycle is a ValueError (one object against itself is equal).
    let e = recursive_lt(&Any::from(p.clone()).view(), &Any::from(q.clone()).view()).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(e.message().contains("cyclic reference"), "{}", e.message());
    assert!(recursive_le(&Any::from(p.clone()).view(), &Any::from(p.clone()).view()).unwrap());
    p.next.set(Any::none());
    q.next.set(Any::none());
}

#[test]
fn hooks_replace_the_field_rule() {
    let (a, b, c) = (keyed(1, "a"), keyed(1, "b"), keyed(2, "a"));
    // `__ffi_eq__` and `__ffi_hash__` look at `key` only; `__ffi_compare__` orders by it.
    assert!(req(&a, &b) && !req(&a, &c));
    assert_eq!(rhash(&a), rhash(&b));
    assert!(lt(&a, &c) && !lt(&c, &a) && !lt(&a, &b));
    assert!(recursive_ge(&a.view(), &b.view()).unwrap());
    // Inside containers the same.
    let (x, y) = (
        arr(vec![0i64.into(), a.clone()]),
        arr(vec![0i64.into(), b.clone()]),
    );
    assert!(req(&x, &y));
    assert_eq!(rhash(&x), rhash(&y));
    assert!(lt(&x, &arr(vec![0i64.into(), c.clone()])));
    // An equality hook without a hash hook: equal by key, and hashing it is a ValueError.
    assert!(req(&eq_only(3, "a"), &eq_only(3, "b")));
    for v in [eq_only(3, "a"), arr(vec![eq_only(3, "a")])] {
        let e = recursive_hash(&v.view()).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(
            e.message()
                .contains("defines __ffi_eq__ or __ffi_compare__ but not __ffi_hash__"),
            "{}",
            e.message()
        );
    }
    // Without ordering hooks, ordering falls back to the fields.
    assert!(lt(&eq_only(1, "z"), &eq_only(2, "a")));
}
