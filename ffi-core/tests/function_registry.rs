//! The global function registry: static registration, override rules, and concurrent use.

use rffi_core::{get_global_func, list_global_func_names, register_global_func, Any, Function};
use std::sync::Arc;

rffi_core::register_global!("test_registry.static_mul", |a: i64, b: i64| a * b);

#[test]
fn static_registration_is_collected() {
    let f = get_global_func("test_registry.static_mul").expect("collected at start");
    assert_eq!(f.name(), Some("test_registry.static_mul"));
    let r = f.call(&[Any::from(6i64), Any::from(7i64)]).unwrap();
    assert_eq!(r.try_as::<i64>().unwrap(), 42);
    let names = list_global_func_names();
    for expected in [
        "testing.nop",
        "testing.echo",
        "testing.add_one",
        "testing.apply",
        "testing.raise_error",
        "testing.object_use_count",
        "test_registry.static_mul",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected} missing");
    }
}

#[test]
fn duplicate_needs_override_and_lookup_returns_same_object() {
    let f = Function::from_typed(|| 1i64);
    register_global_func("test_registry.dup", f.clone(), false).unwrap();
    let e = register_global_func("test_registry.dup", Function::from_typed(|| 2i64), false)
        .unwrap_err();
    assert_eq!(e.kind(), "KeyError");
    assert!(e.message().contains("test_registry.dup"));
    let got = get_global_func("test_registry.dup").unwrap();
    assert!(got.as_object().same_as(f.as_object()));
    register_global_func("test_registry.dup", Function::from_typed(|| 2i64), true).unwrap();
    let r = get_global_func("test_registry.dup")
        .unwrap()
        .call(&[])
        .unwrap();
    assert_eq!(r.try_as::<i64>().unwrap(), 2);
    assert!(rffi_core::remove_global_func("test_registry.dup"));
    assert!(!rffi_core::remove_global_func("test_registry.dup"));
    assert!(get_global_func("test_registry.dup").is_none());
    assert_eq!(
        register_global_func("", f, false).unwrap_err().kind(),
        "ValueError"
    );
}

use rffi_core::ObjectType;

#[test]
fn eight_threads_register_look_up_and_call() {
    const THREADS: usize = 8;
    const ROUNDS: i64 = 400;
    let barrier = Arc::new(std::sync::Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let add_one = get_global_func("testing.add_one").unwrap();
                for i in 0..ROUNDS {
                    let name = format!("test_registry.t{t}.f{}", i % 10);
                    let k = i;
                    register_global_func(&name, Function::from_typed(move |x: i64| x + k), true)
                        .unwrap();
                    // Another thread's names are being replaced concurrently; ours must hold.
                    let f = get_global_func(&name).unwrap();
                    let r = f.call(&[Any::from(1i64)]).unwrap().try_as::<i64>().unwrap();
                    assert_eq!(r, 1 + k);
                    let r = add_one
                        .call(&[Any::from(i)])
                        .unwrap()
                        .try_as::<i64>()
                        .unwrap();
                    assert_eq!(r, i + 1);
                    if i % 50 == 0 {
                        let _ = list_global_func_names();
                    }
                    if i % 3 == 0 {
                        assert!(rffi_core::remove_global_func(&name));
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let left = list_global_func_names()
        .into_iter()
        .filter(|n| n.starts_with("test_registry.t"))
        .count();
    assert!(left <= THREADS * 10);
}

/// Names enter the runtime through one check: function names, type keys and error kinds that are
/// empty or hold a NUL byte are refused, naming what was wrong.
#[test]
fn names_with_nul_or_empty_are_refused_everywhere() {
    let f = Function::from_typed(|| 1i64);
    for name in ["", "a\0b", "\0", "tail\0"] {
        let e = register_global_func(name, f.clone(), true).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(
            e.message().starts_with("a global function name "),
            "{}",
            e.message()
        );
        assert!(get_global_func(name).is_none());
        let e = rffi_core::type_registry::get_or_alloc_type_index(name).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(e.message().starts_with("a type key "), "{}", e.message());
        let raise = get_global_func("testing.raise_error").unwrap();
        let e = raise.call(&[Any::from(name), Any::from("m")]).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(e.message().starts_with("an error kind "), "{}", e.message());
    }
    let e = register_global_func("x\0y", f, false).unwrap_err();
    assert_eq!(
        e.message(),
        "a global function name \"x\\0y\" contains a NUL byte (at 1)"
    );
}
