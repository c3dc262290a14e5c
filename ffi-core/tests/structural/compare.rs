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
    p.next.set(Any::none());
    q.next.set(Any::none());
}
