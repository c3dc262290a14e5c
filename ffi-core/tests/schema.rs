//! Type schemas: JSON round trips, the converter (widening, element conversion, paths to what
//! does not fit), typed closures' recorded signatures, and metadata of global functions.

use rffi_core::{
    get_global_func, get_global_func_metadata, register_global_func, set_global_func_metadata, Any,
    AnyView, Array, Dict, Function, List, Map, TypeSchema,
};

fn schema(text: &str) -> TypeSchema {
    TypeSchema::from_json(text).unwrap()
}

#[test]
fn json_round_trip_and_python_spelling() {
    let s = TypeSchema::Map(
        Box::new(TypeSchema::Str),
        Box::new(TypeSchema::Optional(Box::new(TypeSchema::List(Box::new(
            TypeSchema::Float,
        ))))),
    );
    assert_eq!(TypeSchema::from_json(&s.to_json()).unwrap(), s);
    assert_eq!(s.render(), "Map[str, Optional[List[float]]]");
    // tvm-ffi's "Variant" reads as a Union.
    let u = schema(r#"{"type":"Variant","args":[{"type":"int"},{"type":"ffi.String"}]}"#);
    assert_eq!(u.render(), "Union[int, str]");
    assert!(TypeSchema::from_json("{").is_err());
    assert!(TypeSchema::from_json(r#"{"args":[]}"#).is_err());
}

#[test]
fn converter_widens_converts_elements_and_names_the_path() {
    let f = TypeSchema::Float;
    assert_eq!(
        f.convert(&Any::from(2i64).view())
            .unwrap()
            .try_as::<f64>()
            .unwrap(),
        2.0
    );
    let e = f.convert(&Any::from("x").view()).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(e.message(), "expected float, got str");

    let list_of_float = schema(r#"{"type":"ffi.List","args":[{"type":"float"}]}"#);
    let arr = Any::from(Array::new(vec![1i64.into(), 2.5f64.into()]));
    let out = list_of_float.convert(&arr.view()).unwrap();
    let out: List = out.try_as().unwrap();
    assert_eq!(out.get_item(0).unwrap().try_as::<f64>().unwrap(), 1.0);
    assert_eq!(
        out.get_item(0).unwrap().type_index(),
        rffi_core::abi::kRFFIFloat
    );

    let bad = Any::from(Array::new(vec![1i64.into(), "two".into()]));
    let e = list_of_float.convert(&bad.view()).unwrap_err();
    assert_eq!(e.message(), "expected float at [1], got str");

    let nested = schema(
        r#"{"type":"ffi.Map","args":[{"type":"ffi.String"},{"type":"ffi.Array","args":[{"type":"int"}]}]}"#,
    );
    let m = Map::new(vec![(
        "k".into(),
        Array::new(vec![1i64.into(), 1.5f64.into()]).into(),
    )])
    .unwrap();
    let e = nested.convert(&Any::from(m).view()).unwrap_err();
    assert_eq!(e.message(), r#"expected int at ["k"][1], got float"#);

    let opt = schema(r#"{"type":"Optional","args":[{"type":"int"}]}"#);
    assert!(opt.convert(&Any::none().view()).unwrap().is_none());
    assert!(opt.convert(&Any::from(true).view()).is_ok());
    let tuple = schema(r#"{"type":"Tuple","args":[{"type":"int"},{"type":"ffi.String"}]}"#);
    let e = tuple
        .convert(&Any::from(Array::new(vec![1i64.into()])).view())
        .unwrap_err();
    assert!(
        e.message().contains("a sequence of 1 items"),
        "{}",
        e.message()
    );
    let obj = schema(r#"{"type":"testing.TestPoint"}"#);
    let p = get_global_func("testing.make_point")
        .unwrap()
        .call(&[1i64.into(), 2i64.into()])
        .unwrap();
    assert!(obj.convert(&p.view()).is_ok());
    assert!(obj.convert(&Any::from(1i64).view()).is_err());
}

#[test]
fn typed_closures_record_their_schema() {
    let f = Function::from_typed(|a: i64, b: Option<String>, c: f64| -> f64 {
        a as f64 + c + b.map_or(0.0, |s| s.len() as f64)
    });
    assert_eq!(
        f.signature().unwrap().render(),
        "Callable[[int, Optional[str], float], float]"
    );
    register_global_func("test_schema.f", f.clone(), true).unwrap();
    let meta = get_global_func_metadata("test_schema.f").unwrap();
    assert!(
        meta.starts_with(r#"{"type_schema":"{\"type\":\"ffi.Function\""#),
        "{meta}"
    );
    // A wrong argument names the function, the position, both types, and the signature.
    let e = f.call(&[1i64.into(), Any::none(), "x".into()]).unwrap_err();
    assert_eq!(
        e.message(),
        "Mismatched type on argument #2 when calling `test_schema.f`: expected float but got str \
         (signature: test_schema.f(_0: int, _1: Optional[str], _2: float) -> float)"
    );
    // A packed function has no schema; metadata attached later wins.
    let p = Function::from_packed(|_| Ok(Any::none()));
    assert!(p.signature().is_none());
    register_global_func("test_schema.p", p, true).unwrap();
    assert_eq!(get_global_func_metadata("test_schema.p").unwrap(), "{}");
    set_global_func_metadata("test_schema.p", r#"{"doc":"packed","arg_names":["x"]}"#).unwrap();
    assert!(get_global_func_metadata("test_schema.p")
        .unwrap()
        .contains("packed"));
    let e = set_global_func_metadata("test_schema.p", r#"{"type_schema":"{oops"}"#).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(get_global_func_metadata("test_schema.nothing").is_none());
}

#[test]
fn nonblocking_declarations_are_in_the_metadata() {
    // The runtime's own functions that return promptly say so; the others do not.
    let nop = get_global_func_metadata("testing.nop").unwrap();
    assert_eq!(nop, r#"{"nonblocking":true}"#);
    let add_one = get_global_func_metadata("testing.add_one").unwrap();
    assert!(
        add_one.starts_with(r#"{"type_schema":"#) && add_one.ends_with(r#","nonblocking":true}"#),
        "{add_one}"
    );
    // `testing.apply` calls the function it is given: non-blocking when that function is.
    let apply = get_global_func_metadata("testing.apply").unwrap();
    assert_eq!(apply, r#"{"nonblocking":"with_arguments"}"#);
    for name in [
        "testing.raise_error",
        "ffi.ListAppend",
        "ffi.GetGlobalFuncMetadata",
    ] {
        let meta = get_global_func_metadata(name).unwrap();
        assert!(!meta.contains("nonblocking"), "{name}: {meta}");
    }
    // The declaration belongs to the function object: another function registered under a
    // declared name is not declared, and the same object under another name still is.
    let echo = get_global_func("testing.echo").unwrap();
    register_global_func("test_schema.echo_alias", echo, true).unwrap();
    assert!(get_global_func_metadata("test_schema.echo_alias")
        .unwrap()
        .contains(r#""nonblocking":true"#));
    register_global_func(
        "test_schema.echo_alias",
        Function::from_packed(|_| Ok(Any::none())),
        true,
    )
    .unwrap();
    assert_eq!(
        get_global_func_metadata("test_schema.echo_alias").unwrap(),
        "{}"
    );
    // Anyone may declare a function by attaching the key; other values are refused.
    let declared = |name: &str| {
        let f = get_global_func("ffi.GetGlobalFuncNonblocking").unwrap();
        f.call(&[name.into()]).unwrap().try_as::<i64>().unwrap()
    };
    assert_eq!(declared("test_schema.echo_alias"), 0);
    set_global_func_metadata("test_schema.echo_alias", r#"{"nonblocking": true}"#).unwrap();
    assert_eq!(declared("test_schema.echo_alias"), 1);
    set_global_func_metadata(
        "test_schema.echo_alias",
        r#"{"doc": "x", "nonblocking": "with_arguments"}"#,
    )
    .unwrap();
    assert_eq!(declared("test_schema.echo_alias"), 2);
    let e =
        set_global_func_metadata("test_schema.echo_alias", r#"{"nonblocking": 1}"#).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_eq!(declared("test_schema.echo_alias"), 2);
    assert_eq!(declared("testing.nop"), 1);
    assert_eq!(declared("testing.apply"), 2);
    assert_eq!(declared("testing.raise_error"), 0);
    let missing = get_global_func("ffi.GetGlobalFuncNonblocking")
        .unwrap()
        .call(&["test_schema.nothing".into()])
        .unwrap_err();
    assert_eq!(missing.kind(), "KeyError");
}

#[test]
fn list_and_dict_are_shared_and_mutable() {
    let l = List::new(vec![1i64.into()]);
    let alias = l.clone();
    alias.append(2i64.into());
    l.insert(0, 0i64.into());
    assert_eq!(l.len(), 3);
    assert_eq!(l.pop(None).unwrap().try_as::<i64>().unwrap(), 2);
    l.set_item(-1, "one".into()).unwrap();
    assert_eq!(
        alias.get_item(1).unwrap().try_as::<String>().unwrap(),
        "one"
    );
    assert_eq!(l.get_item(5).unwrap_err().kind(), "IndexError");
    assert_eq!(
        List::new(vec![]).pop(None).unwrap_err().kind(),
        "IndexError"
    );
    // The ABI cell follows the items.
    // SAFETY: a List's RFFISeqCell is at offset 24.
    let cell = unsafe {
        &*rffi_core::ObjectType::as_object(&l)
            .as_ptr()
            .add(1)
            .cast::<rffi_core::abi::RFFISeqCell>()
    };
    assert_eq!(cell.size, 2);
    l.clear();
    assert!(l.is_empty());

    let d = Dict::new(vec![("a".into(), 1i64.into())]).unwrap();
    d.set_item("b".into(), 2i64.into()).unwrap();
    d.set_item("a".into(), 3i64.into()).unwrap();
    let keys: Vec<String> = d.items().iter().map(|(k, _)| k.try_as().unwrap()).collect();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(
        d.pop(&Any::from("a").view())
            .unwrap()
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        3
    );
    assert!(d.pop(&Any::from("a").view()).unwrap().is_none());
    assert_eq!(
        d.get_item(&Any::from("zz").view()).unwrap_err().kind(),
        "KeyError"
    );
    assert_eq!(d.len(), 1);
    // Through the function registry, as bindings and C use them.
    let append = get_global_func("ffi.ListAppend").unwrap();
    append.call(&[l.clone().into(), 7i64.into()]).unwrap();
    assert_eq!(l.items().len(), 1);
    let setitem = get_global_func("ffi.DictSetItem").unwrap();
    let e = setitem
        .call(&[d.clone().into(), List::new(vec![]).into(), 1i64.into()])
        .map(|_| ());
    assert!(e.is_ok(), "objects hash by identity");
}

#[test]
fn a_signature_checks_and_converts_every_call() {
    use rffi_core::checked_call::with_signature;
    // An untyped (packed) function, as another language's would be, given a signature.
    let inner = Function::from_packed(|args: &[AnyView<'_>]| -> rffi_core::Result<Any> {
        let x = args[0].try_as::<f64>()?;
        let n = args.get(1).map_or(Ok(1), |v| v.try_as::<i64>())?;
        Ok(if n < 0 {
            Any::from("negative")
        } else {
            Any::from(x * n as f64)
        })
    });
    let sig = schema(
        r#"{"type":"ffi.Function","args":[{"type":"float"},{"type":"float"},{"type":"int"}]}"#,
    );
    let f = with_signature(inner, "demo.times", &sig, vec!["x".into(), "n".into()], 1).unwrap();
    assert_eq!(f.name(), Some("demo.times"));
    // int → float widening on the way in.
    assert_eq!(
        f.call(&[2i64.into(), 3i64.into()])
            .unwrap()
            .try_as::<f64>()
            .unwrap(),
        6.0
    );
    assert_eq!(
        f.call(&[2.5f64.into()]).unwrap().try_as::<f64>().unwrap(),
        2.5
    );
    let e = f.call(&["a".into()]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(
        e.message(),
        "Mismatched type on argument #0 (`x`) when calling `demo.times`: expected float, got str \
         (signature: demo.times(x: float, n: int) -> float)"
    );
    let e = f.call(&[]).unwrap_err();
    assert!(e
        .message()
        .starts_with("`demo.times` expects 1 to 2 arguments but 0 were given"));
    let e = f
        .call(&[1i64.into(), 1i64.into(), 1i64.into()])
        .unwrap_err();
    assert!(e.message().contains("but 3 were given"), "{}", e.message());
    // The result is checked too.
    let e = f.call(&[1i64.into(), (-1i64).into()]).unwrap_err();
    assert!(
        e.message()
            .contains("returned a value that does not fit its signature: expected float, got str"),
        "{}",
        e.message()
    );
    // Only a function schema with arguments can check calls.
    let bad = with_signature(
        Function::from_typed(|| 1i64),
        "demo.bad",
        &schema(r#"{"type":"int"}"#),
        vec![],
        0,
    );
    assert!(bad
        .unwrap_err()
        .message()
        .contains("must be a function schema"));
    // Through the global function, from metadata JSON, as bindings call it.
    let make = rffi_core::get_global_func("ffi.FunctionWithSignature").unwrap();
    let meta = format!(
        r#"{{"type_schema":{},"arg_names":["a"]}}"#,
        rffi_core::schema::json_quote(
            r#"{"type":"ffi.Function","args":[{"type":"int"},{"type":"int"}]}"#
        )
    );
    let g = make
        .call(&[
            Function::from_typed(|a: i64| a + 1).into(),
            "demo.inc".into(),
            meta.into(),
            1i64.into(),
        ])
        .unwrap()
        .try_as::<Function>()
        .unwrap();
    assert_eq!(g.call(&[1i64.into()]).unwrap().try_as::<i64>().unwrap(), 2);
    assert!(g
        .call(&[1.5f64.into()])
        .unwrap_err()
        .message()
        .contains("argument #0 (`a`)"));
}

#[test]
fn a_container_that_already_fits_is_kept_itself() {
    let same = |a: &Any, b: &Any| {
        a.view()
            .as_object()
            .unwrap()
            .same_as(b.view().as_object().unwrap())
    };
    let ints = schema(r#"{"type":"ffi.Array","args":[{"type":"int"}]}"#);
    let arr = Any::from(Array::new(vec![1i64.into(), 2i64.into()]));
    assert!(same(&ints.convert(&arr.view()).unwrap(), &arr));
    // Items that convert (int -> float), or another container type: a new container.
    let floats = schema(r#"{"type":"ffi.Array","args":[{"type":"float"}]}"#);
    assert!(!same(&floats.convert(&arr.view()).unwrap(), &arr));
    let list = schema(r#"{"type":"ffi.List","args":[{"type":"int"}]}"#);
    let as_list = list.convert(&arr.view()).unwrap();
    assert!(as_list.try_as::<List>().is_ok());
    assert!(same(&list.convert(&as_list.view()).unwrap(), &as_list));

    let table = schema(r#"{"type":"ffi.Dict","args":[{"type":"ffi.String"},{"type":"int"}]}"#);
    let d = Any::from(Dict::new(vec![("k".into(), 1i64.into())]).unwrap());
    assert!(same(&table.convert(&d.view()).unwrap(), &d));
    let m = Any::from(Map::new(vec![("k".into(), 1i64.into())]).unwrap());
    let as_dict = table.convert(&m.view()).unwrap();
    assert!(as_dict.try_as::<Dict>().is_ok() && !same(&as_dict, &m));
}
