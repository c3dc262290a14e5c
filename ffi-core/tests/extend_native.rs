//! Run-time types (what Python's `py_class` registers) extending a type declared in Rust: the
//! native fields stay the Rust struct's, the run-time fields live in the same object, the Rust
//! contents are dropped exactly once, and every reflection path (fields, methods, isinstance,
//! copies, JSON graphs) sees one object.

use rffi_core::reflection::{
    call_method, create_object, create_with_fields, get_field, set_field, Mut, Obj, ObjectDef,
};
use rffi_core::structural::{deep_copy, from_json_graph, to_json_graph};
use rffi_core::type_registry::{is_instance, type_info};
use rffi_core::{get_global_func, Any, Array, ObjectRef};

rffi_core::object_type! {
    /// A native base with a frozen field, a writable one, and one holding an object.
    pub struct Base("test_extend.Base") {
        pub id: i64,
        #[default = 0.5]
        pub weight: Mut<f64>,
        #[default_factory = || Array::new(vec![])]
        pub items: Mut<Array>,
    }
    methods {
        "describe" => |b: Obj<Base>| format!("{}:{}", b.id, b.weight.get());
    }
}

fn register(key: &str, parent: i32, fields: &str) -> i32 {
    get_global_func("ffi.TypeRegisterValueType")
        .unwrap()
        .call(&[key.into(), (parent as i64).into(), fields.into()])
        .unwrap()
        .try_as::<i64>()
        .unwrap() as i32
}

const CHILD_FIELDS: &str = r#"[{"name":"tag","type_schema":"{\"type\":\"ffi.String\"}"},
                               {"name":"extra","type_schema":"{\"type\":\"Any\"}"}]"#;

fn child() -> i32 {
    register("test_extend.Child", Base::type_index(), CHILD_FIELDS)
}

fn make(index: i32, items: &Array) -> ObjectRef {
    let items = Any::from(items.clone());
    create_with_fields(
        index,
        &[
            ("id", Any::from(7i64).view()),
            ("items", items.view()),
            (
                "tag",
                Any::from("a tag long enough to be a heap string").view(),
            ),
        ],
        &|i| format!("Child() value #{i}"),
    )
    .unwrap()
}

#[test]
fn child_objects_hold_native_and_runtime_fields() {
    let ci = child();
    // SAFETY: registry metadata.
    let size = unsafe { (*type_info(ci).unwrap().metadata).total_size } as usize;
    let base = core::mem::size_of::<Base>().next_multiple_of(8);
    assert_eq!(
        size,
        base + 8 + 2 * 16,
        "native part, its deleter, two value slots"
    );
    assert!(is_instance(ci, Base::type_index()));

    let items = Array::new(vec![Any::from(1i64)]);
    let obj = make(ci, &items);
    assert_eq!(obj.type_index(), ci);
    assert_eq!(get_field(&obj, "id").unwrap().try_as::<i64>().unwrap(), 7);
    assert_eq!(
        get_field(&obj, "weight").unwrap().try_as::<f64>().unwrap(),
        0.5
    );
    assert_eq!(
        get_field(&obj, "tag").unwrap().try_as::<String>().unwrap(),
        "a tag long enough to be a heap string"
    );
    assert!(get_field(&obj, "extra").unwrap().is_none());
    // Native setters and checks still apply to the native part; the value slots take theirs.
    set_field(&obj, "weight", &Any::from(2i64).view()).unwrap();
    assert_eq!(
        get_field(&obj, "weight").unwrap().try_as::<f64>().unwrap(),
        2.0
    );
    assert_eq!(
        set_field(&obj, "id", &Any::from(1i64).view())
            .unwrap_err()
            .kind(),
        "AttributeError"
    );
    let e = set_field(&obj, "tag", &Any::from(3i64).view()).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    // Rust sees its own struct, and calls its methods on the child.
    let as_base = Obj::<Base>::downcast(obj.clone()).unwrap();
    assert_eq!(as_base.id, 7);
    assert_eq!(as_base.weight.get(), 2.0);
    assert_eq!(
        call_method(&obj, "describe", &[])
            .unwrap()
            .try_as::<String>()
            .unwrap(),
        "7:2"
    );
    // An Array held by the native field and by a run-time slot is released by both.
    let held = Any::from(items.clone()).into_object().unwrap();
    set_field(&obj, "items", &Any::from(items.clone()).view()).unwrap();
    set_field(&obj, "extra", &Any::from(items.clone()).view()).unwrap();
    assert_eq!(held.strong_count(), 4); // `items`, `held`, the field, the slot
    drop((obj, as_base));
    assert_eq!(held.strong_count(), 2);
}

#[test]
fn a_child_needs_the_native_fields_without_defaults() {
    let ci = child();
    let e = create_object(ci).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message()
            .contains("needs a value for field `id` of `test_extend.Base`"),
        "{}",
        e.message()
    );
    let e = create_with_fields(ci, &[("id", Any::from("x").view())], &|i| {
        format!("Child() value #{i}")
    })
    .unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message().starts_with("Child() value #0: "),
        "{}",
        e.message()
    );
}

#[test]
fn grandchildren_copies_and_json_graphs() {
    let ci = child();
    let gi = register(
        "test_extend.GrandChild",
        ci,
        r#"[{"name":"level","type_schema":"{\"type\":\"int\"}"}]"#,
    );
    assert!(is_instance(gi, Base::type_index()) && is_instance(gi, ci));
    let obj = create_with_fields(
        gi,
        &[
            ("id", Any::from(3i64).view()),
            ("tag", Any::from("t").view()),
            ("level", Any::from(2i64).view()),
        ],
        &|i| format!("#{i}"),
    )
    .unwrap();
    assert_eq!(
        call_method(&obj, "describe", &[])
            .unwrap()
            .try_as::<String>()
            .unwrap(),
        "3:0.5"
    );
    let copy = deep_copy(&Any::from(obj.clone()).view())
        .unwrap()
        .into_object()
        .unwrap();
    assert!(!copy.same_as(&obj));
    assert_eq!(copy.type_index(), gi);
    for name in ["id", "tag", "level"] {
        assert_eq!(
            format!("{:?}", get_field(&copy, name).unwrap()),
            format!("{:?}", get_field(&obj, name).unwrap())
        );
    }
    let json = to_json_graph(&Any::from(obj).view(), None).unwrap();
    let back = from_json_graph(&json).unwrap().into_object().unwrap();
    assert_eq!(back.type_index(), gi);
    assert_eq!(
        get_field(&back, "level").unwrap().try_as::<i64>().unwrap(),
        2
    );
    assert_eq!(get_field(&back, "id").unwrap().try_as::<i64>().unwrap(), 3);
}
