//! Traversals: walks (pre and post order, skip, interrupt, definition regions) and maps (copy on
//! write, in place when handed the root, variables mapped once for all their uses).

use crate::types::*;
use rffi_core::abi::*;
use rffi_core::reflection::{get_field, Obj, ObjectDef, ObjectHeader};
use rffi_core::structural::{
    set_eq_hash_kind, structural_map, structural_walk, Callback, Order, StructuralKey,
    VisitInterrupt,
};
use rffi_core::{Any, Array, Function, Map};
use std::sync::{Arc, Mutex};

rffi_core::object_type! {
    /// A variable with a value: what a map can change.
    pub struct Slot("test_traverse.Slot") {
        pub value: i64,
    }
}

rffi_core::object_type! {
    /// A binding: `var` is a simple definition, `body` uses it.
    pub struct Let("test_traverse.Let") {
        #[structural_eq_def_simple]
        pub var: Any,
        pub body: Array,
    }
}

fn slot(value: i64) -> Any {
    static KIND: std::sync::Once = std::sync::Once::new();
    KIND.call_once(|| set_eq_hash_kind(Slot::type_index(), kRFFISEqHashKindFreeVar).unwrap());
    Obj::new(Slot {
        base: ObjectHeader::default(),
        value,
    })
    .into()
}

type Trace = Arc<Mutex<Vec<String>>>;

/// A callback for values of `type_index` that records `label:value` and returns None.
fn record(trace: &Trace, type_index: i32, label: &'static str) -> Callback {
    let t = trace.clone();
    Callback {
        type_index,
        func: Function::from_typed(move |v: Any| {
            let text = if let Ok(i) = v.try_as::<i64>() {
                i.to_string()
            } else if let Ok(a) = v.try_as::<Array>() {
                a.len().to_string()
            } else {
                v.view().type_name()
            };
            t.lock().unwrap().push(format!("{label}:{text}"));
        }),
        with_region: false,
        with_mode: false,
    }
}

fn taken(trace: &Trace) -> Vec<String> {
    std::mem::take(&mut *trace.lock().unwrap())
}

#[test]
fn walks_in_pre_and_post_order() {
    let trace = Trace::default();
    let root = arr(vec![arr(vec![1i64.into()]), 2i64.into()]);
    let cbs = || {
        vec![
            record(&trace, kRFFIArray, "array"),
            record(&trace, kRFFIInt, "int"),
        ]
    };
    assert!(structural_walk(&root.view(), cbs(), Order::Pre)
        .unwrap()
        .is_none());
    assert_eq!(taken(&trace), ["array:2", "array:1", "int:1", "int:2"]);
    structural_walk(&root.view(), cbs(), Order::Post).unwrap();
    assert_eq!(taken(&trace), ["int:1", "array:1", "int:2", "array:2"]);
}

#[test]
fn walks_map_values_not_keys_and_skips_ignored_fields() {
    let trace = Trace::default();
    let f = func(vec![var("x")], vec![7i64.into()], "a comment");
    let root = arr(vec![map(vec![("key".into(), 3i64.into())]), f]);
    let any_str = record(&trace, kRFFIStr, "str");
    structural_walk(
        &root.view(),
        vec![any_str, record(&trace, kRFFIInt, "int")],
        Order::Pre,
    )
    .unwrap();
    // Neither the map's key, the Func's comment nor the Var's name (both ignored) is visited.
    assert_eq!(taken(&trace), ["int:3", "int:7"]);
}

#[test]
fn a_callback_skips_children_or_stops_the_walk() {
    let trace = Trace::default();
    let root = arr(vec![arr(vec![1i64.into()]), 2i64.into(), 3i64.into()]);
    let t = trace.clone();
    let skip_arrays = Callback {
        type_index: kRFFIArray,
        func: Function::from_typed(move |v: Any| {
            t.lock()
                .unwrap()
                .push(format!("array:{}", v.try_as::<Array>().unwrap().len()));
            1i64 // WalkResult.SKIP
        }),
        with_region: false,
        with_mode: false,
    };
    structural_walk(&root.view(), vec![skip_arrays], Order::Pre).unwrap();
    assert_eq!(taken(&trace), ["array:3"]);

    let stop_at_two = Callback {
        type_index: kRFFIInt,
        func: Function::from_typed(|v: i64| -> Any {
            if v == 2 {
                VisitInterrupt::new("found".into()).into()
            } else {
                Any::none()
            }
        }),
        with_region: false,
        with_mode: false,
    };
    let hit = structural_walk(&root.view(), vec![stop_at_two], Order::Pre)
        .unwrap()
        .expect("interrupted");
    let payload = get_field(hit.view().as_object().unwrap(), "value").unwrap();
    assert_eq!(payload.try_as::<String>().unwrap(), "found");

    let bad = Callback {
        type_index: kRFFIInt,
        func: Function::from_typed(|_: i64| "not a signal"),
        with_region: false,
        with_mode: false,
    };
    let err = structural_walk(&root.view(), vec![bad], Order::Pre).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(
        err.message().contains("structural_walk callback"),
        "{}",
        err.message()
    );
}

#[test]
fn callbacks_see_definition_regions() {
    let trace = Trace::default();
    let (x, y) = (var("x"), var("y"));
    let var_type = x.type_index();
    let root = func(vec![x.clone()], vec![x, y], "");
    let t = trace.clone();
    let kinds = Callback {
        type_index: var_type,
        func: Function::from_typed(move |v: Any, kind: i64| {
            let name = get_field(v.view().as_object().unwrap(), "name").unwrap();
            t.lock()
                .unwrap()
                .push(format!("{}:{kind}", name.try_as::<String>().unwrap()));
        }),
        with_region: true,
        with_mode: false,
    };
    structural_walk(&root.view(), vec![kinds], Order::Pre).unwrap();
    // The parameter is in a pattern definition (1); the body's are uses (0).
    assert_eq!(taken(&trace), ["x:1", "x:0", "y:0"]);
}

fn add_one() -> Callback {
    Callback {
        type_index: kRFFIInt,
        func: Function::from_typed(|v: i64| v + 1),
        with_region: false,
        with_mode: false,
    }
}

#[test]
fn maps_copy_on_write_unless_handed_the_root() {
    let inner = arr(vec![1i64.into()]);
    let root = arr(vec![inner.clone(), "text".into()]);
    let mapped = structural_map(root.clone(), vec![add_one()], Order::Post, false).unwrap();
    assert!(!same(&mapped, &root));
    assert!(eq(&root, &arr(vec![arr(vec![1i64.into()]), "text".into()])));
    assert!(eq(
        &mapped,
        &arr(vec![arr(vec![2i64.into()]), "text".into()])
    ));

    // Nothing changes: the value itself comes back.
    let keep = Callback {
        type_index: kRFFIInt,
        func: Function::from_typed(|v: i64| v),
        with_region: false,
        with_mode: false,
    };
    let unchanged = structural_map(root.clone(), vec![keep], Order::Pre, false).unwrap();
    assert!(same(&unchanged, &root));

    // Handed over with nothing else holding it: changed in place.
    let owned = arr(vec![arr(vec![1i64.into()]), 5i64.into()]);
    let address = owned.view().as_object().unwrap().as_ptr();
    let mapped = structural_map(owned, vec![add_one()], Order::Post, true).unwrap();
    assert_eq!(mapped.view().as_object().unwrap().as_ptr(), address);
    assert!(eq(&mapped, &arr(vec![arr(vec![2i64.into()]), 6i64.into()])));

    // Handed over, but shared: copied.
    let shared = arr(vec![1i64.into()]);
    let holder = arr(vec![shared.clone()]);
    let mapped = structural_map(shared.clone(), vec![add_one()], Order::Post, true).unwrap();
    assert!(!same(&mapped, &shared));
    assert!(eq(&holder, &arr(vec![arr(vec![1i64.into()])])));
}

#[test]
fn maps_keep_map_keys_and_give_a_variable_one_replacement() {
    let m = map(vec![("k".into(), 1i64.into())]);
    let rename = Callback {
        type_index: kRFFIStr,
        func: Function::from_typed(|_: String| "renamed"),
        with_region: false,
        with_mode: false,
    };
    let mapped = structural_map(m.clone(), vec![rename, add_one()], Order::Post, false).unwrap();
    let mapped: Map = mapped.try_as().unwrap();
    assert_eq!(
        mapped
            .get_item(&Any::from("k").view())
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        2
    );

    let v = slot(1);
    let body = Array::new(vec![v.clone(), v.clone()]);
    let root: Any = Obj::new(Let {
        base: ObjectHeader::default(),
        var: v.clone(),
        body,
    })
    .into();
    let mapped = structural_map(root.clone(), vec![add_one()], Order::Post, false).unwrap();
    let obj = mapped.view().as_object().unwrap().clone();
    let new_var = get_field(&obj, "var").unwrap();
    let uses: Array = get_field(&obj, "body").unwrap().try_as().unwrap();
    assert!(!same(&new_var, &v));
    let value = get_field(new_var.view().as_object().unwrap(), "value").unwrap();
    assert_eq!(value.try_as::<i64>().unwrap(), 2);
    for u in uses.iter() {
        assert!(same(&u.to_owned().unwrap(), &new_var));
    }
}

#[test]
fn structural_keys_are_one_map_key() {
    let k = |items: Vec<Any>| -> Any { StructuralKey::new(arr(items)).unwrap().into() };
    let (a, b, c) = (
        k(vec![1i64.into(), "x".into()]),
        k(vec![1i64.into(), "x".into()]),
        k(vec![2i64.into()]),
    );
    let m: Map = map(vec![
        (a.clone(), 1i64.into()),
        (b, 2i64.into()),
        (c, 3i64.into()),
    ])
    .try_as()
    .unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m.get_item(&a.view()).unwrap().try_as::<i64>().unwrap(), 2);
}
