//! JSON graphs: round trips are the identity under structural equality; sharing and cycles
//! survive; what cannot be written or read is a clear error.

use crate::types::*;
use rffi_core::reflection::get_field;
use rffi_core::structural::{from_json_graph, to_json_graph};
use rffi_core::{Any, Array, DataType, Device, Function, Shape, Tensor};

fn round_trip(v: &Any) -> Any {
    let text = to_json_graph(&v.view(), None).unwrap();
    from_json_graph(&text).unwrap_or_else(|e| panic!("{}: {text}", e.message()))
}

#[test]
fn values_round_trip() {
    let t = Tensor::from_slice(&[1i32, -2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let values: Vec<Any> = vec![
        Any::none(),
        true.into(),
        (-(1i64 << 62)).into(),
        i64::MAX.into(),
        2.5.into(),
        1e300.into(),
        f64::INFINITY.into(),
        "".into(),
        "a \"quoted\"\n\u{1f600} string".into(),
        Any::from(&b"\x00\xff bytes"[..]),
        DataType::float(32).into(),
        Device::cuda(1).into(),
        Shape::new(&[1, 2, 3]).into(),
        t.clone().into(),
        t.slice(1, 1, 3).unwrap().into(),
        arr(vec![
            1i64.into(),
            arr(vec![]),
            list(vec!["x".into()]).into(),
        ]),
        map(vec![("a".into(), 1i64.into()), (2i64.into(), Any::none())]),
        dict(vec![("k".into(), arr(vec![2.5.into()]))]),
        pair(1i64.into(), node("n", 3, "tail".into()).into()),
        func(vec![var("x")], vec![1i64.into()], "c"),
    ];
    for v in &values {
        let back = round_trip(v);
        assert!(eq(v, &back), "{v:?} came back as {back:?}");
        assert_eq!(back.type_index(), v.type_index());
    }
    let nan = round_trip(&f64::NAN.into()).try_as::<f64>().unwrap();
    assert!(nan.is_nan());
}

#[test]
fn format_has_version_nodes_and_shared_nodes() {
    let s: Any = node("s", 1, Any::none()).into();
    let root = arr(vec![s.clone(), s.clone(), 42i64.into(), 42i64.into()]);
    let text = to_json_graph(&root.view(), None).unwrap();
    assert!(text.contains(r#""version":1"#), "{text}");
    assert!(text.contains(r#""type":"test_structural.Node""#), "{text}");
    // The int field is written in place; the object once.
    assert!(text.contains(r#""value":1"#), "{text}");
    assert_eq!(text.matches("test_structural.Node").count(), 1, "{text}");
    let back = round_trip(&root);
    let items = back.try_as::<Array>().unwrap();
    let (a, b) = (
        items.get(0).unwrap().to_owned().unwrap(),
        items.get(1).unwrap().to_owned().unwrap(),
    );
    assert!(same(&a, &b));
    // Metadata rides along.
    let meta = map(vec![("version".into(), "1.0".into())]);
    let text = to_json_graph(&Any::from(1i64).view(), Some(&meta.view())).unwrap();
    assert!(text.contains(r#""metadata":{"version":"1.0"}"#), "{text}");
}

#[test]
fn cycles_round_trip() {
    let first_of = |array: &Any| {
        let array = array.try_as::<Array>().unwrap();
        array.get(0).unwrap().to_owned().unwrap()
    };
    let a = node("a", 1, Any::none());
    a.next.set(arr(vec![a.clone().into()]));
    let back = round_trip(&a.clone().into());
    assert!(eq(&back, &a.clone().into()));
    let next = get_field(back.view().as_object().unwrap(), "next").unwrap();
    assert!(same(&first_of(&next), &back));
    clear_field(&back, "next");
    // Starting from the Array: the node is rebuilt after it, and its slot filled in.
    let root = a.next.get();
    let back = round_trip(&root);
    assert!(eq(&back, &root));
    a.next.set(Any::none());
    clear_field(&first_of(&back), "next");
}

#[test]
fn what_cannot_be_written_is_named() {
    let f: Any = Function::from_typed(|x: i64| x).into();
    let root = map(vec![("items".into(), arr(vec![1i64.into(), f]))]);
    let e = to_json_graph(&root.view(), None).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(e.message().contains("`ffi.Function`"), "{}", e.message());
    assert!(
        e.message().contains(r#"root["items"][1]"#),
        "{}",
        e.message()
    );
    let dev = Any::from(rffi_core::OpaquePtr(core::ptr::null_mut()));
    assert!(to_json_graph(&dev.view(), None).is_err());
}

#[test]
fn malformed_graphs_are_value_errors() {
    let bad = [
        "",
        "not json",
        "[]",
        r#"{"nodes": []}"#,
        r#"{"root_index": 0}"#,
        r#"{"root_index": 1, "nodes": [{"type": "int", "data": 1}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "int", "data": "x"}]}"#,
        r#"{"root_index": 0, "nodes": [{"data": 1}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "ffi.Array", "data": [5]}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "ffi.Array", "data": [0]}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "ffi.Map", "data": [0]}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "no.such.Type", "data": {}}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "ffi.Bytes", "data": "%%%"}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "ffi.Tensor", "data": {"dtype": "float32", "shape": [1000000000000], "data": ""}}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "test_structural.Node", "data": {"value": 1}}]}"#,
        r#"{"version": 99, "root_index": 0, "nodes": [{"type": "None"}]}"#,
    ];
    // The node type must be registered before its name is looked up.
    let _ = node("warm", 0, Any::none());
    for text in bad {
        let e = from_json_graph(text)
            .err()
            .unwrap_or_else(|| panic!("accepted: {text}"));
        assert!(
            matches!(e.kind().as_str(), "ValueError" | "TypeError"),
            "{text}: {} {}",
            e.kind(),
            e.message()
        );
        assert!(
            e.message().contains("from_json_graph_str"),
            "{text}: {}",
            e.message()
        );
    }
    // tvm-ffi's graphs (no version) read.
    let v = from_json_graph(r#"{"root_index": 0, "nodes": [{"type": "int", "data": 5}]}"#).unwrap();
    assert_eq!(v.try_as::<i64>().unwrap(), 5);
}

/// A graph of 300 000 nested nodes (each an Array of the next, in text of a few MiB: nesting the
/// JSON parser never sees) is refused by the rebuild's depth guard with a RecursionError naming
/// the reader, before the stack runs out; in a List chain as well, which is built before its
/// items.
#[test]
fn graphs_deeper_than_the_stack_are_recursion_errors() {
    for ty in ["ffi.Array", "ffi.List"] {
        let n = 300_000;
        let mut nodes: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"type": "{ty}", "data": [{}]}}"#, i + 1))
            .collect();
        nodes.push(r#"{"type": "int", "data": 1}"#.into());
        let text = format!(r#"{{"root_index": 0, "nodes": [{}]}}"#, nodes.join(","));
        let e = from_json_graph(&text).unwrap_err();
        assert_eq!(e.kind(), "RecursionError", "{}", e.message());
        assert!(
            e.message()
                .starts_with("from_json_graph_str: the value is nested too deeply"),
            "{}",
            e.message()
        );
    }
}

/// A Dict or Map node whose keys repeat (two String nodes "k", or one node twice): the later
/// value replaced the earlier, so a node the graph had built could be left unreachable, and a
/// Dict holding itself that way was never freed (the `json_graph` fuzz target's LeakSanitizer
/// replay found it). No writer makes such a graph: it is a ValueError.
#[test]
fn repeated_keys_are_value_errors() {
    let texts = [
        r#"{"root_index": 0, "nodes": [{"type": "ffi.Dict", "data": [1, 2, 3, 2]},
            {"type": "ffi.String", "data": "k"}, {"type": "int", "data": 1},
            {"type": "ffi.String", "data": "k"}]}"#,
        r#"{"root_index": 0, "nodes": [{"type": "ffi.Dict", "data": [0, 1, 0, 2]},
            {"type": "ffi.Dict", "data": [1, 1]}, {"type": "int", "data": 1}]}"#,
    ];
    for text in texts {
        let e = from_json_graph(text).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert_eq!(
            e.message(),
            "from_json_graph_str: entry 1 of a Dict repeats the key of an earlier entry"
        );
    }
    let map = r#"{"root_index": 0, "nodes": [{"type": "ffi.Map", "data": [1, 1, 1, 1]},
        {"type": "int", "data": 7}]}"#;
    let e = from_json_graph(map).unwrap_err();
    assert_eq!(
        e.message(),
        "from_json_graph_str: an entry of a Map repeats the key of an earlier entry"
    );
}
