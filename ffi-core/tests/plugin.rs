//! A Rust host (this test binary links rffi-core statically) loading real plugins: the example
//! Rust plugin (its own copy of rffi-core, forwarding to ours) and C plugins.

#[path = "../../tests/support/plugins.rs"]
mod plugins;

use rffi_core::{get_global_func, Any, Array, Function, Module, ObjectType};
use std::sync::atomic::{AtomicUsize, Ordering};

fn rust_plugin() -> Module {
    Module::load(plugins::rust_plugin()).expect("loading the Rust plugin")
}

#[test]
fn plugin_functions_land_in_the_host_function_registry() {
    let m = rust_plugin();
    let add = get_global_func("rust_plugin.add").expect("registered in the host");
    assert_eq!(
        add.call(&[2i64.into(), 40i64.into()])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        42
    );
    let names = m.function_names().unwrap();
    for n in [
        "rust_plugin.add",
        "rust_plugin.map",
        "rust_plugin.abi_version",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} not in {names:?}");
    }
    // Registered from the plugin's init function, and reachable by its last dotted part.
    let v = m
        .get_function("abi_version")
        .unwrap()
        .unwrap()
        .call(&[])
        .unwrap();
    let ours = rffi_core::version();
    assert_eq!(
        v.try_as::<String>().unwrap(),
        format!("{}.{}.{}", ours.major, ours.minor, ours.patch)
    );
    let greet = m.get_function("rust_plugin.greet").unwrap().unwrap();
    let r = greet.call(&[Any::from("host")]).unwrap();
    assert_eq!(r.try_as::<String>().unwrap(), "hello, host, from Rust");
    assert!(m.get_function("no_such_function").unwrap().is_none());
}

#[test]
fn loading_twice_gives_the_same_module() {
    let a = rust_plugin();
    let b = rust_plugin();
    assert!(a.as_object().same_as(b.as_object()));
    assert!(get_global_func("rust_plugin.add").is_some());
}

#[test]
fn plugin_errors_carry_their_traceback_to_the_host() {
    rust_plugin();
    let div = get_global_func("rust_plugin.checked_div").unwrap();
    let e = div.call(&[1i64.into(), 0i64.into()]).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_eq!(e.message(), "cannot divide 1 by 0");
    let bt = e.backtrace();
    let first = bt.lines().next().unwrap_or_default();
    assert!(first.contains("examples/rust-plugin/src/lib.rs"), "{bt}");
    assert!(first.ends_with("in rust_plugin.checked_div"), "{bt}");
    // The error went through the host's raised slot; nothing is left in it.
    assert!(rffi_core::error::take_raised().is_none());
}

#[test]
fn plugin_calls_a_host_callback() {
    rust_plugin();
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let square = Function::from_typed(|x: i64| {
        CALLS.fetch_add(1, Ordering::SeqCst);
        x * x
    });
    let map = get_global_func("rust_plugin.map").unwrap();
    let items = Array::new(vec![1i64.into(), 2i64.into(), 3i64.into()]);
    let out: Array = map
        .call(&[square.into(), items.into()])
        .unwrap()
        .try_as()
        .unwrap();
    let got: Vec<i64> = out.iter().map(|v| v.try_as().unwrap()).collect();
    assert_eq!(got, [1, 4, 9]);
    assert_eq!(CALLS.load(Ordering::SeqCst), 3);
}

#[test]
fn plugin_type_registration_uses_the_host_table() {
    rust_plugin();
    let f = get_global_func("rust_plugin.point_type_index").unwrap();
    let index = f.call(&[]).unwrap().try_as::<i32>().unwrap();
    assert!(index >= rffi_core::abi::kRFFIDynObjectBegin);
    assert_eq!(
        rffi_core::type_registry::type_key_to_index("rust_plugin.Point"),
        Some(index)
    );
}

#[test]
fn plugin_object_types_are_reflected_in_the_host() {
    use rffi_core::reflection::{call_method, get_field, set_field};
    rust_plugin();
    let make = get_global_func("rust_plugin.make_counter").unwrap();
    let c = make.call(&["hits".into(), 5i64.into()]).unwrap();
    let c = c.into_object().unwrap();
    let index = rffi_core::type_registry::type_key_to_index("rust_plugin.Counter").unwrap();
    assert_eq!(c.type_index(), index);
    assert_eq!(
        get_field(&c, "name").unwrap().try_as::<String>().unwrap(),
        "hits"
    );
    set_field(&c, "count", &rffi_core::Any::from(10i64).view()).unwrap();
    let n = call_method(&c, "increment", &[rffi_core::Any::from(2i64).view()]).unwrap();
    assert_eq!(n.try_as::<i64>().unwrap(), 12);
    let e = set_field(&c, "name", &rffi_core::Any::from("x").view()).unwrap_err();
    assert_eq!(e.kind(), "AttributeError");
}

#[test]
fn plugin_sees_the_host_current_stream() {
    rust_plugin();
    let f = get_global_func("rust_plugin.current_stream").unwrap();
    let dev = rffi_core::Device::cuda(1);
    let stream = 0x5eed_usize as *mut std::ffi::c_void;
    let _guard = rffi_core::stream::use_stream(dev, stream);
    let seen = f
        .call(&[dev.into()])
        .unwrap()
        .try_as::<rffi_core::OpaquePtr>()
        .unwrap();
    assert_eq!(seen.0, stream);
    let other = f.call(&[rffi_core::Device::cuda(0).into()]).unwrap();
    assert!(other.try_as::<rffi_core::OpaquePtr>().unwrap().0.is_null());
}

#[test]
fn c_plugin_registers_through_the_table_and_exports_symbols() {
    let m = Module::load(plugins::c_plugin("examples/c-plugin/plugin.c", &[])).unwrap();
    let mul = get_global_func("c_plugin.mul").unwrap();
    assert_eq!(
        mul.call(&[6i64.into(), 7i64.into()])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        42
    );
    let e = mul.call(&[6i64.into()]).unwrap_err();
    assert_eq!(
        (e.kind().as_str(), e.message().as_str()),
        ("TypeError", "c_plugin.mul expects two ints")
    );
    let square = m.get_function("square").unwrap().expect("__rffi_square");
    assert_eq!(
        square
            .call(&[9i64.into()])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        81
    );
    assert!(m.function_names().unwrap().iter().any(|n| n == "square"));
}

#[test]
fn symbol_only_library_loads_without_init() {
    let m = Module::load(plugins::c_plugin("tests/c/plugins/symbols_only.c", &[])).unwrap();
    assert!(m.function_names().unwrap().is_empty());
    let negate = m.get_function("negate").unwrap().unwrap();
    assert_eq!(
        negate
            .call(&[5i64.into()])
            .unwrap()
            .try_as::<i64>()
            .unwrap(),
        -5
    );
    let e = negate.call(&[Any::from("x")]).unwrap_err();
    assert_eq!(e.message(), "negate expects one int");
}

/// The loader's symbols and the exported functions are separate name spaces: no name reaches
/// `rffi_plugin_version`, `rffi_plugin_init` or `rffi_plugin_host_api`, in a Rust plugin (which
/// exports the first two) or a C one (the third).
#[test]
fn loader_symbols_are_unreachable_by_name() {
    use rffi_core::abi::{
        RFFI_PLUGIN_FUNCTION_PREFIX, RFFI_PLUGIN_HOST_API_SYMBOL, RFFI_PLUGIN_INIT_SYMBOL,
        RFFI_PLUGIN_VERSION_SYMBOL,
    };
    let loader = [
        RFFI_PLUGIN_VERSION_SYMBOL,
        RFFI_PLUGIN_INIT_SYMBOL,
        RFFI_PLUGIN_HOST_API_SYMBOL,
    ];
    for s in loader {
        assert!(!s.starts_with(RFFI_PLUGIN_FUNCTION_PREFIX), "{s}");
    }
    let symbols_only =
        Module::load(plugins::c_plugin("tests/c/plugins/symbols_only.c", &[])).unwrap();
    let c_plugin = Module::load(plugins::c_plugin("examples/c-plugin/plugin.c", &[])).unwrap();
    for m in [rust_plugin(), symbols_only, c_plugin] {
        let mut names: Vec<String> = ["_version", "_init", "_host_api", "", "_", "x\0y"]
            .map(String::from)
            .into();
        for s in loader {
            names.push(s.to_owned());
            names.push(s.trim_start_matches("rffi_").to_owned());
            names.push(format!("_{s}"));
            names.push(s.replace("rffi_plugin", ""));
        }
        for n in &names {
            assert!(m.get_function(n).unwrap().is_none(), "{n:?} in {m:?}");
        }
    }
}

#[test]
fn version_mismatch_is_refused_before_init() {
    let path = plugins::c_plugin("tests/c/plugins/bad_version.c", &[]);
    let e = Module::load(&path).unwrap_err();
    assert_eq!(e.kind(), "RuntimeError");
    let ours = rffi_core::version();
    let msg = e.message();
    assert!(msg.contains("built for rffi ABI 99.0.0"), "{msg}");
    assert!(
        msg.contains(&format!(
            "provides ABI {}.{}.{}",
            ours.major, ours.minor, ours.patch
        )),
        "{msg}"
    );
    assert!(get_global_func("bad_version.never").is_none());
}

#[test]
fn failed_init_leaves_no_registration() {
    let path = plugins::c_plugin("tests/c/plugins/failing_init.c", &[]);
    let e = Module::load(&path).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(
        e.message().ends_with("failing_init: configuration missing"),
        "{}",
        e.message()
    );
    assert!(get_global_func("failing_init.registered_first").is_none());
}

#[test]
fn duplicate_name_without_override_fails_cleanly() {
    let path = plugins::c_plugin("tests/c/plugins/failing_init.c", &["-DREGISTER_DUPLICATE"]);
    // Same source, other library file name: rename so it is a distinct module.
    let dup = path.with_file_name("libduplicate_plugin.so");
    std::fs::rename(&path, &dup).unwrap();
    let before = get_global_func("testing.add_one").unwrap();
    let e = Module::load(&dup).unwrap_err();
    assert_eq!(e.kind(), "KeyError");
    assert!(e.message().contains("testing.add_one"), "{}", e.message());
    assert!(get_global_func("failing_init.registered_first").is_none());
    let after = get_global_func("testing.add_one").unwrap();
    assert!(before.as_object().same_as(after.as_object()));
}

#[test]
fn bad_libraries_fail_cleanly() {
    let e = Module::load("/no/such/plugin.so").unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(
        e.message().contains("/no/such/plugin.so"),
        "{}",
        e.message()
    );
    let text = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("not_a_library.so");
    std::fs::write(&text, "this is not an ELF file").unwrap();
    let e = Module::load(&text).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(e.message().contains("not_a_library.so"), "{}", e.message());
    // The system's reason is in the message, not just "dlopen failed".
    assert!(e.message().contains("file too short"), "{}", e.message());
}
