//! repr_print: field-wise text, shared objects once, cycles marked, long parts broken.

use crate::types::*;
use rffi_core::structural::repr_print;
use rffi_core::{Any, DataType, Shape, Tensor};

fn repr(v: &Any) -> String {
    repr_print(&v.view(), 0).unwrap()
}

#[test]
fn values_and_containers() {
    let cases: Vec<(Any, &str)> = vec![
        (42i64.into(), "42"),
        (true.into(), "True"),
        (Any::none(), "None"),
        (2.5.into(), "2.5"),
        (0.0.into(), "0.0"),
        (1e20.into(), "1e+20"),
        (1e-7.into(), "1e-07"),
        ("hi \"you\"".into(), r#""hi \"you\"""#),
        (Any::from(&b"a\x00"[..]), r#"b"a\x00""#),
        (DataType::float(16).into(), "float16"),
        (Shape::new(&[5, 6]).into(), "Shape(5, 6)"),
        (arr(vec![1i64.into(), 2i64.into()]), "(1, 2)"),
        (arr(vec![42i64.into()]), "(42,)"),
        (arr(vec![]), "()"),
        (list(vec![1i64.into(), "x".into()]).into(), r#"[1, "x"]"#),
        (
            map(vec![("k".into(), arr(vec![1i64.into()]))]),
            r#"{"k": (1,)}"#,
        ),
        (
            Tensor::from_slice(&[0.0f32; 12], &[3, 4]).unwrap().into(),
            "float32[3, 4]@cpu:0",
        ),
    ];
    for (v, want) in cases {
        assert_eq!(repr(&v), want);
    }
}

#[test]
fn objects_by_fields_shared_once_cycles_marked() {
    let leaf: Any = node("leaf", 2, Any::none()).into();
    assert_eq!(
        repr(&leaf),
        r#"test_structural.Node(name="leaf", value=2, next=None)"#
    );
    // Shared: labelled at the first occurrence, named after.
    let root = arr(vec![leaf.clone(), leaf.clone()]);
    assert_eq!(
        repr(&root),
        r#"(#1=test_structural.Node(name="leaf", value=2, next=None), #1)"#
    );
    // A cycle back to an object being printed is `...`.
    let a = node("a", 1, Any::none());
    a.next.set(arr(vec![a.clone().into()]));
    assert_eq!(
        repr(&a.clone().into()),
        r#"test_structural.Node(name="a", value=1, next=(...,))"#
    );
    // A list holding itself.
    let l = list(vec![1i64.into()]);
    l.append(l.clone().into());
    assert_eq!(repr(&l.clone().into()), "[1, ...]");
    a.next.set(Any::none());
    l.clear();
    // Ignored-by-repr fields stay out? (Func's fields are all shown.)
    let f = func(vec![var("x")], vec![], "c");
    assert!(repr(&f).starts_with("test_structural.Func(params=(test_structural.Var(name=\"x\"),)"));
}

#[test]
fn long_parts_break_over_indented_lines() {
    let inner = node(
        "a fairly long name",
        12345,
        "another fairly long value".into(),
    );
    let root = node("root", 1, arr(vec![inner.into(), 2i64.into()]));
    let text = repr_print(&Any::from(root.clone()).view(), 60).unwrap();
    let want = r#"test_structural.Node(
  name="root",
  value=1,
  next=(
    test_structural.Node(
      name="a fairly long name",
      value=12345,
      next="another fairly long value",
    ),
    2,
  ),
)"#;
    assert_eq!(text, want);
    // Short enough: one line whatever the width.
    assert_eq!(repr_print(&Any::from(2i64).view(), 10).unwrap(), "2");
    assert!(!repr(&root.into()).contains('\n'));
}
