//! The panic hook: a panic that rffi turns into an error prints nothing (the error carries its
//! message and site), every other panic prints as it always does. Each case runs in a child
//! process (this test binary again), whose stderr is the evidence.

use rffi_core::error::catch_panic;
use rffi_core::{Error, Function, Result};
use std::process::{Command, Output};

const CASE: &str = "RFFI_PANIC_HOOK_CASE";

fn run_case(case: &str) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CASE, case)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

/// Does nothing unless run as a case's child process.
#[test]
fn child() {
    let Ok(case) = std::env::var(CASE) else {
        return;
    };
    let f = Function::from_typed(|message: String| -> Result<()> { panic!("{message}") });
    match case.as_str() {
        "caught" => {
            // Through a function call, a registered one, and `catch_panic` itself.
            let e = f.call(&["boom in a call".into()]).unwrap_err();
            assert_eq!(e.kind(), "RuntimeError");
            assert!(e.message().contains("boom in a call"), "{}", e.message());
            rffi_core::register_global_func("test_panic_hook.f", f, false).unwrap();
            let g = rffi_core::get_global_func("test_panic_hook.f").unwrap();
            let e = g.call(&["boom by name".into()]).unwrap_err();
            assert!(e.message().contains("boom by name"));
            let e: Error = catch_panic(|| panic!("boom in catch_panic")).unwrap_err();
            assert!(e.message().contains("boom in catch_panic"));
            // On another thread too, and nested inside a call that succeeds.
            std::thread::spawn(move || {
                let outer = Function::from_typed(move || -> Result<i64> {
                    assert!(g.call(&["boom nested".into()]).is_err());
                    Ok(1)
                });
                assert_eq!(outer.call(&[]).unwrap().try_as::<i64>().unwrap(), 1);
            })
            .join()
            .unwrap();
        }
        "uncaught" => {
            let _ = f; // the runtime is set up (its hook installed) before the panic
            let r = std::thread::spawn(|| panic!("loud panic outside rffi")).join();
            assert!(r.is_err());
            // After a caught one, the thread's state is back to printing.
            assert!(catch_panic(|| panic!("quiet")).is_err());
            #[allow(clippy::disallowed_methods)] // a catch outside rffi, which prints
            let r = std::panic::catch_unwind(|| panic!("loud again after a caught one"));
            assert!(r.is_err());
        }
        other => panic!("unknown case {other}"),
    }
}

#[test]
fn caught_panics_print_nothing() {
    let out = run_case("caught");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

#[test]
fn other_panics_still_print() {
    let out = run_case("uncaught");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("loud panic outside rffi"),
        "stderr: {stderr}"
    );
    assert!(
        stderr.contains("loud again after a caught one"),
        "stderr: {stderr}"
    );
    assert!(!stderr.contains("quiet"), "stderr: {stderr}");
}
