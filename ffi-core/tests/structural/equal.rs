//! structural_equal / structural_hash / first_mismatch.

use crate::types::*;
use rffi_core::structural::{first_mismatch, structural_equal, structural_hash, Options};
use rffi_core::{Any, DataType, Device, Shape, Tensor};

fn mismatch(a: &Any, b: &Any) -> Option<(String, String)> {
    first_mismatch(&a.view(), &b.view(), Options::default())
        .unwrap()
        .map(|(l, r)| (l.to_string(), r.to_string()))
}

#[test]
fn plain_values_strings_and_containers() {
    let cases: Vec<(Any, Any, bool)> = vec![
        (1i64.into(), 1i64.into(), true),
        (1i64.into(), 2i64.into(), false),
        (1i64.into(), true.into(), false),
        (1i64.into(), 1.0.into(), false),
        (f64::NAN.into(), f64::NAN.into(), true),
        ("short".into(), "short".into(), true),
        // A 7-byte string is stored in the value, an 8-byte one in an object.
        ("1234567".into(), "12345678".into(), false),
        ("a long string".into(), "a long string".into(), true),
        (Any::from(&b"xy"[..]), Any::from(&b"xy"[..]), true),
        (Any::from(&b"xy"[..]), "xy".into(), false),
        (DataType::float(32).into(), DataType::float(32).into(), true),
        (Device::cpu().into(), Device::cuda(0).into(), false),
        (Shape::new(&[2, 3]).into(), Shape::new(&[2, 3]).into(), true),
        (
            Shape::new(&[2, 3]).into(),
            Shape::new(&[3, 2]).into(),
            false,
        ),
        (
            arr(vec![1i64.into(), "x".into()]),
            arr(vec![1i64.into(), "x".into()]),
            true,
        ),
        (
            arr(vec![1i64.into()]),
            arr(vec![1i64.into(), 2i64.into()]),
            false,
        ),
        (arr(vec![]), list(vec![]).into(), false),
        // Maps are equal whatever order they were built in; a Map is not a Dict.
        (
            map(vec![("a".into(), 1i64.into()), ("b".into(), 2i64.into())]),
            map(vec![("b".into(), 2i64.into()), ("a".into(), 1i64.into())]),
            true,
        ),
        (
            map(vec![("a".into(), 1i64.into())]),
            dict(vec![("a".into(), 1i64.into())]),
            false,
        ),
        (Any::none(), Any::none(), true),
        (Any::none(), 0i64.into(), false),
    ];
    for (a, b, want) in &cases {
        assert_eq!(eq(a, b), *want, "{a:?} vs {b:?}");
        assert_eq!(eq(b, a), *want, "{b:?} vs {a:?}");
        if *want {
            assert_eq!(hash(a), hash(b), "{a:?} vs {b:?}");
        } else {
            assert_ne!(hash(a), hash(b), "{a:?} vs {b:?}");
        }
    }
}

#[test]
fn objects_compare_by_fields_and_report_the_first_difference() {
    let a = arr(vec![
        node("n", 1, Any::none()).into(),
        node("leaf", 2, "x".into()).into(),
    ]);
    let b = arr(vec![
        node("n", 1, Any::none()).into(),
        node("leaf", 2, "x".into()).into(),
    ]);
    let c = arr(vec![
        node("n", 1, Any::none()).into(),
        node("LEAF", 2, "x".into()).into(),
    ]);
    assert!(eq(&a, &b));
    assert_eq!(hash(&a), hash(&b));
    assert!(!eq(&a, &c));
    assert_ne!(hash(&a), hash(&c));
    assert_eq!(mismatch(&a, &b), None);
    let (l, r) = mismatch(&a, &c).unwrap();
    assert_eq!((l.as_str(), r.as_str()), ("root[1].name", "root[1].name"));
    // Lengths, keys: the missing side says so.
    let short = arr(vec![1i64.into()]);
    let long = arr(vec![1i64.into(), 2i64.into()]);
    assert_eq!(
        mismatch(&short, &long).unwrap(),
        ("root[<missing 1>]".into(), "root[1]".into())
    );
    let m1 = map(vec![("k".into(), 1i64.into())]);
    let m2 = map(vec![("j".into(), 1i64.into())]);
    assert_eq!(
        mismatch(&m1, &m2).unwrap(),
        ("root[\"k\"]".into(), "root[<missing \"k\">]".into())
    );
    let nested = |x: i64| {
        map(vec![(
            "body".into(),
            arr(vec![0i64.into(), node("v", x, Any::none()).into()]),
        )])
    };
    assert_eq!(
        mismatch(&nested(1), &nested(2)).unwrap().0,
        "root[\"body\"][1].value"
    );
    // Different types are different at the root.
    assert_eq!(
        mismatch(&1i64.into(), &"1".into()).unwrap(),
        ("root".into(), "root".into())
    );
}

#[test]
fn field_options_ignore_and_identity() {
    // `comment` is ignored; `params` is a definition site for variables.
    let (x, y) = (var("x"), var("y"));
    let fa = func(vec![x.clone()], vec![1i64.into(), x.clone()], "comment a");
    let fb = func(vec![y.clone()], vec![1i64.into(), y.clone()], "comment b");
    assert!(eq(&fa, &fb));
    assert_eq!(hash(&fa), hash(&fb));
    // Used inconsistently: fun(x, y){x, x} is not fun(a, b){a, b}.
    let (a, b) = (var("a"), var("b"));
    let f1 = func(vec![x.clone(), y.clone()], vec![x.clone(), x.clone()], "");
    let f2 = func(vec![a.clone(), b.clone()], vec![a.clone(), b.clone()], "");
    assert!(!eq(&f1, &f2));
    // Free variables (not defined) are equal only to themselves, unless mapped.
    assert!(!eq(&x, &y));
    assert_ne!(hash(&x), hash(&y));
    assert!(eq(&x, &x));
    let mapped = Options {
        map_free_vars: true,
        ..Options::default()
    };
    assert!(structural_equal(&x.view(), &y.view(), mapped).unwrap());
    assert_eq!(
        structural_hash(&x.view(), mapped).unwrap(),
        structural_hash(&y.view(), mapped).unwrap()
    );
    // An identity field: the same target object, not an equal one.
    let t1 = node("t", 1, Any::none()).into();
    let t2 = node("t", 1, Any::none()).into();
    assert!(eq(&t1, &t2));
    assert!(eq(&reference(&t1, "a"), &reference(&t1, "a")));
    assert!(!eq(&reference(&t1, "a"), &reference(&t2, "a")));
    assert_eq!(hash(&reference(&t1, "a")), hash(&reference(&t1, "a")));
}

#[test]
fn cycles_compare_and_hash_without_recursing_for_ever() {
    // a -> a and b -> b, and a 2-cycle of the same contents.
    let a = node("n", 1, Any::none());
    a.next.set(a.clone().into());
    let b = node("n", 1, Any::none());
    b.next.set(b.clone().into());
    let (av, bv): (Any, Any) = (a.clone().into(), b.clone().into());
    assert!(eq(&av, &bv));
    assert_eq!(hash(&av), hash(&bv));
    let c = node("n", 2, Any::none());
    c.next.set(c.clone().into());
    assert!(!eq(&av, &c.clone().into()));
    let (p, q) = (node("n", 1, Any::none()), node("n", 1, Any::none()));
    p.next.set(q.clone().into());
    q.next.set(p.clone().into());
    assert!(!eq(&av, &p.clone().into()), "a 1-cycle is not a 2-cycle");
    // A List that holds itself.
    let l1 = list(vec![1i64.into()]);
    l1.append(l1.clone().into());
    let l2 = list(vec![1i64.into()]);
    l2.append(l2.clone().into());
    assert!(eq(&l1.clone().into(), &l2.clone().into()));
    assert_eq!(hash(&l1.clone().into()), hash(&l2.clone().into()));
    // Break the cycles so the objects are freed.
    for n in [&a, &b, &c, &p, &q] {
        n.next.set(Any::none());
    }
    l1.clear();
    l2.clear();
}

#[test]
fn sharing_does_not_count_for_trees() {
    let s: Any = node("s", 1, Any::none()).into();
    let shared = arr(vec![s.clone(), s.clone()]);
    let copies = arr(vec![
        node("s", 1, Any::none()).into(),
        node("s", 1, Any::none()).into(),
    ]);
    assert!(eq(&shared, &copies));
    assert_eq!(hash(&shared), hash(&copies));
}

#[test]
fn tensors_by_dtype_shape_and_data() {
    let t = |v: &[f32]| Any::from(Tensor::from_slice(v, &[v.len() as i64]).unwrap());
    let (a, b, c) = (t(&[1.0, 2.0]), t(&[1.0, 2.0]), t(&[1.0, 3.0]));
    assert!(eq(&a, &b));
    assert_eq!(hash(&a), hash(&b));
    assert!(!eq(&a, &c));
    let skip = Options {
        skip_tensor_content: true,
        ..Options::default()
    };
    assert!(structural_equal(&a.view(), &c.view(), skip).unwrap());
    assert_eq!(
        structural_hash(&a.view(), skip).unwrap(),
        structural_hash(&c.view(), skip).unwrap()
    );
    // A strided view compares by its elements in order.
    let base = Tensor::from_slice(&[1.0f32, 9.0, 2.0, 9.0], &[4]).unwrap();
    let strided = base.slice_step(0, 0, 4, 2).unwrap();
    assert!(eq(&strided.into(), &a));
}

#[test]
fn deep_nesting_is_a_recursion_error_not_a_crash() {
    // Lists nested 200000 deep, compared on a thread with a small stack.
    let chain = |n: usize| {
        let all: Vec<_> = (0..n).map(|_| list(vec![])).collect();
        for w in all.windows(2) {
            w[0].append(w[1].clone().into());
        }
        all
    };
    let (a, b) = (chain(200_000), chain(200_000));
    let (ra, rb): (Any, Any) = (a[0].clone().into(), b[0].clone().into());
    let err = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            let e = structural_equal(&ra.view(), &rb.view(), Options::default()).unwrap_err();
            let h = structural_hash(&ra.view(), Options::default()).unwrap_err();
            (e, h)
        })
        .unwrap()
        .join()
        .unwrap();
    for e in [err.0, err.1] {
        assert_eq!(e.kind(), "RecursionError");
        assert!(e.message().contains("nested too deeply"), "{}", e.message());
    }
    // Emptied one by one so that freeing them does not recurse either.
    for l in a.iter().chain(&b) {
        l.clear();
    }
}
