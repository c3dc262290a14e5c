//! Object types with fields and methods: declared in Rust with `object_type!`, registered from
//! field tables as C does, and reached by name.

use rffi_core::abi::*;
use rffi_core::reflection::{
    all_fields, call_method, create_object, find_field, get_field, member_name, set_field, Mut,
    Obj, ObjectDef, ObjectHeader,
};
use rffi_core::type_registry::{is_instance, type_info, type_key_to_index};
use rffi_core::{get_global_func, Any, AnyView, Array, Function, ObjectRef};

rffi_core::object_type! {
    /// A shape for tests.
    /// Second doc line.
    pub struct Shape("test_reflection.Shape") {
        /// Its name.
        pub name: String,
        #[default = 1.5]
        #[kw_only]
        pub scale: Mut<f64>,
        pub parts: Mut<Array>,
    }
    methods {
        "describe" => |s: Obj<Shape>| format!("{} x{}", s.name, s.scale.get());
        #[static_method]
        "unit" => || Obj::new(Shape {
            base: ObjectHeader::default(),
            name: "unit".into(),
            scale: Mut::new(1.0),
            parts: Mut::new(Array::new(vec![])),
        });
    }
}

rffi_core::object_type! {
    pub struct Square("test_reflection.Square"): Shape {
        pub side: i64,
    }
    methods {
        "area" => |s: Obj<Square>| s.side * s.side;
    }
}

/// The bytes of a type registry string.
fn text(ba: &RFFIByteArray) -> &'static [u8] {
    // SAFETY: strings of the type registry live as long as the process.
    unsafe { std::slice::from_raw_parts(ba.data.cast::<u8>(), ba.size) }
}

fn shape(name: &str) -> Obj<Shape> {
    Obj::new(Shape {
        base: ObjectHeader::default(),
        name: name.into(),
        scale: Mut::new(2.0),
        parts: Mut::new(Array::new(vec![Any::from(1i64)])),
    })
}

fn square(side: i64) -> Obj<Square> {
    Obj::new(Square {
        base: Shape {
            base: ObjectHeader::default(),
            name: "sq".into(),
            scale: Mut::new(1.0),
            parts: Mut::new(Array::new(vec![])),
        },
        side,
    })
}

#[test]
fn rust_type_fields_are_read_by_name_and_checked_on_write() {
    let s = shape("tri");
    let o = s.as_object();
    assert_eq!(
        get_field(o, "name").unwrap().try_as::<String>().unwrap(),
        "tri"
    );
    assert_eq!(get_field(o, "scale").unwrap().try_as::<f64>().unwrap(), 2.0);
    // A writable field takes a value of its type (an int widens to a float) ...
    set_field(o, "scale", &Any::from(3i64).view()).unwrap();
    assert_eq!(s.scale.get(), 3.0);
    // ... and refuses another, naming the field and both types.
    let e = set_field(o, "scale", &Any::from("big").view()).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(
        e.message(),
        "cannot set field `scale` of `test_reflection.Shape`: expected float, got str"
    );
    // A plain field is frozen; an unknown one is an AttributeError.
    let e = set_field(o, "name", &Any::from("x").view()).unwrap_err();
    assert_eq!(e.kind(), "AttributeError");
    assert!(e.message().contains("frozen"), "{}", e.message());
    let e = get_field(o, "nope").unwrap_err();
    assert_eq!(e.kind(), "AttributeError");
    assert!(e.message().contains("test_reflection.Shape") && e.message().contains("nope"));
}

#[test]
fn methods_instance_and_static_by_name() {
    let s = shape("tri");
    let d = call_method(s.as_object(), "describe", &[]).unwrap();
    assert_eq!(d.try_as::<String>().unwrap(), "tri x2");
    let unit = call_method(s.as_object(), "unit", &[]).unwrap();
    let unit = Obj::<Shape>::downcast(unit.into_object().unwrap()).unwrap();
    assert_eq!(unit.name, "unit");
    let e = call_method(s.as_object(), "describe", &[Any::from(1i64).view()]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
}

#[test]
fn inheritance_is_o1_isinstance_with_inherited_members() {
    let sq = square(3);
    let (si, qi) = (Shape::type_index(), Square::type_index());
    assert!(is_instance(qi, si) && !is_instance(si, qi));
    let info = type_info(qi).unwrap();
    assert_eq!(info.type_depth, 2);
    // SAFETY: a type registry entry with `type_depth` ancestors.
    let parent = unsafe { &**info.type_ancestors.add(1) };
    assert_eq!(parent.type_index, si);
    // Inherited field and method, own method.
    assert_eq!(
        get_field(sq.as_object(), "name")
            .unwrap()
            .try_as::<String>()
            .unwrap(),
        "sq"
    );
    assert_eq!(
        get_field(sq.as_object(), "side")
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        3
    );
    let area = call_method(sq.as_object(), "area", &[]).unwrap();
    assert_eq!(area.try_as::<i64>().unwrap(), 9);
    let d = call_method(sq.as_object(), "describe", &[]).unwrap();
    assert_eq!(d.try_as::<String>().unwrap(), "sq x1");
    // A Square is an Obj<Shape>; a Shape is not an Obj<Square>.
    assert!(Obj::<Shape>::downcast(sq.as_object().clone()).is_ok());
    assert!(Obj::<Square>::downcast(shape("x").into_object()).is_err());
    let names: Vec<_> = all_fields(qi)
        .iter()
        .map(|f| member_name(&f.name))
        .collect();
    assert_eq!(names, ["name", "scale", "parts", "side"]);
}

#[test]
fn type_info_carries_docs_flags_defaults_and_schemas() {
    let si = Shape::type_index();
    assert_eq!(type_key_to_index("test_reflection.Shape"), Some(si));
    let info = type_info(si).unwrap();
    assert_eq!(info.num_fields, 3);
    assert_eq!(info.num_methods, 2);
    // SAFETY: type registry entries.
    let meta = unsafe { &*info.metadata };
    let doc = text(&meta.doc);
    assert_eq!(doc, b"A shape for tests.\nSecond doc line.");
    // Reflection reports the real size; the runtime still never allocates a Rust type itself.
    assert_eq!(meta.total_size as usize, core::mem::size_of::<Shape>());
    let e = create_object(si).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message()
            .contains("declared in Rust cannot be created generically"),
        "{}",
        e.message()
    );
    // SAFETY: registry entries.
    let square_size = unsafe { (*type_info(Square::type_index()).unwrap().metadata).total_size };
    assert_eq!(square_size as usize, core::mem::size_of::<Square>());
    let name = find_field(si, b"name").unwrap();
    let doc = text(&name.doc);
    assert_eq!(doc, b"Its name.");
    assert_eq!(name.flags & kRFFIFieldFlagBitMaskWritable, 0);
    let scale = find_field(si, b"scale").unwrap();
    assert_ne!(scale.flags & kRFFIFieldFlagBitMaskWritable, 0);
    assert_ne!(scale.flags & kRFFIFieldFlagBitMaskKwOnly, 0);
    assert_ne!(scale.flags & kRFFIFieldFlagBitMaskHasDefault, 0);
    let d = rffi_core::reflection::default_of(scale).unwrap();
    assert_eq!(d.try_as::<f64>().unwrap(), 1.5);
    let meta = text(&scale.metadata);
    assert_eq!(meta, br#"{"type_schema":"{\"type\":\"float\"}"}"#);
}

/// A C-style type: an int64, a double, an int32 and an owned value at fixed offsets, reached
/// through the built-in accessors, made by the runtime from its total size.
#[repr(C)]
struct CPair {
    header: [u8; 24],
    a: i64,
    b: f64,
    small: i32,
    _pad: i32,
    tag: RFFIAny,
    child: RFFIObjectHandle,
}

fn field(name: &'static str, offset: usize, size: i64, index: i32, flags: i64) -> RFFIFieldInfo {
    RFFIFieldInfo {
        name: RFFIByteArray {
            data: name.as_ptr().cast(),
            size: name.len(),
        },
        doc: RFFIByteArray {
            data: core::ptr::null(),
            size: 0,
        },
        metadata: RFFIByteArray {
            data: core::ptr::null(),
            size: 0,
        },
        flags: flags | kRFFIFieldFlagBitMaskWritable,
        size,
        alignment: size.min(8),
        offset: offset as i64,
        getter: None,
        setter: core::ptr::null_mut(),
        default_value_or_factory: *Any::none().as_raw(),
        field_static_type_index: index,
    }
}

#[test]
fn table_registered_type_is_created_and_checked_by_the_runtime() {
    use core::mem::offset_of;
    let ti = rffi_core::type_registry::register_type("test_reflection.CPair", None).unwrap();
    let mut a = field(
        "a",
        offset_of!(CPair, a),
        8,
        kRFFIInt,
        kRFFIFieldFlagBitMaskHasDefault,
    );
    let seven = Any::from(7i64);
    a.default_value_or_factory = *seven.as_raw();
    let factory = Function::from_typed(|| "made".to_owned());
    let mut tag = field(
        "tag",
        offset_of!(CPair, tag),
        16,
        kRFFIAny,
        kRFFIFieldFlagBitMaskHasDefault | kRFFIFieldFlagBitMaskDefaultFromFactory,
    );
    let f = Any::from(factory);
    tag.default_value_or_factory = *f.as_raw();
    let fields = [
        a,
        field("b", offset_of!(CPair, b), 8, kRFFIFloat, 0),
        field("small", offset_of!(CPair, small), 4, kRFFIInt, 0),
        tag,
        field("child", offset_of!(CPair, child), 8, kRFFIArray, 0),
    ];
    for f in &fields {
        // SAFETY: valid descriptions for the call.
        unsafe { rffi_core::reflection::register_field(ti, f) }.unwrap();
    }
    // SAFETY: as above.
    let dup = unsafe { rffi_core::reflection::register_field(ti, &fields[0]) }.unwrap_err();
    assert!(dup.message().contains("already registered"));
    let bad = field("bad", 24, 3, kRFFIInt, 0);
    // SAFETY: as above.
    let e = unsafe { rffi_core::reflection::register_field(ti, &bad) }.unwrap_err();
    assert!(
        e.message().contains("no built-in accessor"),
        "{}",
        e.message()
    );
    // Without total_size the runtime cannot make one.
    assert_eq!(create_object(ti).unwrap_err().kind(), "TypeError");
    let meta = RFFITypeMetadata {
        doc: RFFIByteArray {
            data: core::ptr::null(),
            size: 0,
        },
        creator: None,
        total_size: core::mem::size_of::<CPair>() as i32,
        structural_eq_hash_kind: 0,
    };
    // SAFETY: as above.
    unsafe { rffi_core::reflection::register_metadata(ti, &meta) }.unwrap();

    let obj = create_object(ti).unwrap();
    assert_eq!(get_field(&obj, "a").unwrap().try_as::<i64>().unwrap(), 7);
    assert_eq!(
        get_field(&obj, "tag").unwrap().try_as::<String>().unwrap(),
        "made"
    );
    assert!(get_field(&obj, "child").unwrap().is_none());
    set_field(&obj, "b", &Any::from(2i64).view()).unwrap();
    assert_eq!(get_field(&obj, "b").unwrap().try_as::<f64>().unwrap(), 2.0);
    let e = set_field(&obj, "small", &Any::from(1i64 << 40).view()).unwrap_err();
    assert!(
        e.message().contains("out of range for 32 bits"),
        "{}",
        e.message()
    );
    set_field(&obj, "small", &Any::from(-5i64).view()).unwrap();
    assert_eq!(
        get_field(&obj, "small").unwrap().try_as::<i64>().unwrap(),
        -5
    );
    // An object field takes its type (or None) and holds a reference.
    let arr = Array::new(vec![Any::from(1i64)]);
    set_field(&obj, "child", &Any::from(arr.clone()).view()).unwrap();
    assert_eq!(rffi_core::ObjectType::as_object(&arr).strong_count(), 2);
    let e = set_field(&obj, "child", &Any::from(1.5f64).view()).unwrap_err();
    assert!(e.message().contains("ffi.Array or None") && e.message().contains("float"));
    set_field(
        &obj,
        "tag",
        &AnyView::from(&Any::from("a long string, kept")),
    )
    .unwrap();
    drop(obj);
    // The generic deleter released the owned fields.
    assert_eq!(rffi_core::ObjectType::as_object(&arr).strong_count(), 1);
}

#[test]
fn builtin_test_types_from_the_function_registry() {
    let p = get_global_func("testing.make_point")
        .unwrap()
        .call(&[1i64.into(), 2i64.into()])
        .unwrap();
    let p: ObjectRef = p.into_object().unwrap();
    assert_eq!(
        call_method(&p, "sum", &[])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        3
    );
    let ti = type_key_to_index("testing.TestPoint3").unwrap();
    let init = rffi_core::reflection::static_method(ti, "__ffi_init__").unwrap();
    let p3 = init
        .call(&[1i64.into(), 2i64.into(), 0.5f64.into()])
        .unwrap();
    let p3 = p3.into_object().unwrap();
    assert!(is_instance(p3.type_index(), p.type_index()));
    assert_eq!(
        call_method(&p3, "sum", &[])
            .unwrap()
            .try_as::<f64>()
            .unwrap(),
        3.5
    );
    assert_eq!(
        call_method(&p3, "shift", &[Any::from(10i64).view()])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        12
    );
    assert_eq!(
        get_field(&p3, "label").unwrap().try_as::<String>().unwrap(),
        "3d"
    );
}

#[test]
fn frozen_value_type_fields_are_set_only_when_the_object_is_made() {
    let register = get_global_func("ffi.TypeRegisterValueType").unwrap();
    let fields = r#"[{"name":"id","type_schema":"{\"type\":\"int\"}","frozen":true},
                     {"name":"note","type_schema":"{\"type\":\"ffi.String\"}"}]"#;
    let ti = register
        .call(&["test_reflection.Frozen".into(), Any::none(), fields.into()])
        .unwrap()
        .try_as::<i64>()
        .unwrap() as i32;
    // SAFETY: registry entries.
    let size = unsafe { (*type_info(ti).unwrap().metadata).total_size };
    assert_eq!(size, 24 + 2 * 16);
    let id = find_field(ti, b"id").unwrap();
    assert_eq!(id.flags & kRFFIFieldFlagBitMaskWritable, 0);
    let note = find_field(ti, b"note").unwrap();
    assert_ne!(note.flags & kRFFIFieldFlagBitMaskWritable, 0);

    let describe = |i: usize| format!("Frozen() value #{i}");
    let obj = rffi_core::reflection::create_with_fields(
        ti,
        &[
            ("id", Any::from(7i64).view()),
            ("note", Any::from("n").view()),
        ],
        &describe,
    )
    .unwrap();
    assert_eq!(get_field(&obj, "id").unwrap().try_as::<i64>().unwrap(), 7);
    let e = set_field(&obj, "id", &Any::from(8i64).view()).unwrap_err();
    assert_eq!(e.kind(), "AttributeError");
    assert!(e
        .message()
        .contains("`id` of `test_reflection.Frozen`: it is frozen"));
    set_field(&obj, "note", &Any::from("m").view()).unwrap();
    // A value that does not fit names what the caller described, and both types.
    let e = rffi_core::reflection::create_with_fields(
        ti,
        &[("id", Any::from("seven").view())],
        &describe,
    )
    .unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(e.message(), "Frozen() value #0: expected int, got str");

    // The packed builtin that generated constructors call: positions name the arguments.
    let init = get_global_func("ffi.ObjectCreateInit").unwrap();
    let args: Vec<Any> = vec![
        (ti as i64).into(),
        "Frozen.__init__()".into(),
        "id".into(),
        0i64.into(),
        1i64.into(),
        "note".into(),
        (-1i64).into(),
        2i64.into(),
    ];
    let e = init.call(&args).unwrap_err();
    assert_eq!(
        e.message(),
        "Frozen.__init__() keyword argument `note`: expected str, got int"
    );
    let e = init.call(&args[..3]).unwrap_err();
    assert!(e.message().contains("(name, position, value) triples"));
}

#[test]
fn methods_carry_their_name_and_schema() {
    let si = Shape::type_index();
    let m = rffi_core::reflection::find_method(si, b"describe").unwrap();
    let md = String::from_utf8_lossy(text(&m.metadata)).into_owned();
    assert!(md.starts_with(r#"{"type_schema":"#), "{md}");
    let f = rffi_core::reflection::static_method(si, "describe").unwrap();
    assert_eq!(f.name(), Some("test_reflection.Shape.describe"));
    let extra = Any::from(1i64);
    let e = call_method(&shape("s").into_object(), "describe", &[extra.view()]).unwrap_err();
    assert!(
        e.message().contains("`test_reflection.Shape.describe`"),
        "{}",
        e.message()
    );
}
