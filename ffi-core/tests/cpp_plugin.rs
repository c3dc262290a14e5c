//! A Rust host (this test binary links rffi-core statically) loading the C++ example plugin
//! (examples/cpp-plugin, built with RFFI_PLUGIN: it links no librffi.so and reaches this runtime
//! only through the table the loader hands it).

#[path = "../../tests/support/plugins.rs"]
mod plugins;

use rffi_core::{get_global_func, Any, DataType, Device, Module, Tensor};
use std::path::{Path, PathBuf};
use std::process::Command;

fn cpp_plugin() -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("libcpp_example_plugin.so");
    let ws = plugins::workspace();
    let status = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        .args([
            "-std=c++17",
            "-shared",
            "-fPIC",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-I",
        ])
        .arg(ws.join("include"))
        .arg(ws.join("examples/cpp-plugin/plugin.cc"))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("cannot run c++");
    assert!(
        status.success(),
        "c++ failed on examples/cpp-plugin/plugin.cc"
    );
    out
}

#[test]
fn cpp_plugin_in_a_rust_host() {
    let m = Module::load(cpp_plugin()).unwrap();
    let add = get_global_func("cpp_plugin.add").expect("registered at load");
    let r = add.call(&[40i64.into(), 2i64.into()]).unwrap();
    assert_eq!(r.try_as::<i64>().unwrap(), 42);
    let e = add.call(&[Any::from("40"), 2i64.into()]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message()
            .contains("argument #0 when calling `cpp_plugin.add`: expected int but got str"),
        "{}",
        e.message()
    );

    // A C++ function that writes into tensors this host made.
    let f32 = DataType::float(32);
    let x = Tensor::empty(&[3], f32, Device::cpu()).unwrap();
    let y = Tensor::empty(&[3], f32, Device::cpu()).unwrap();
    // SAFETY: fresh CPU float32 tensors that nothing else uses.
    unsafe { x.as_mut_slice::<f32>() }
        .unwrap()
        .copy_from_slice(&[1.0, 2.0, 3.0]);
    get_global_func("cpp_plugin.axpy")
        .unwrap()
        .call(&[2.0f64.into(), x.clone().into(), y.clone().into()])
        .unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { y.as_slice::<f32>() }.unwrap(), &[2.0, 4.0, 6.0]);

    // An exported function, and a C++ exception arriving as an error with the C++ frame.
    let shout = m.get_function("shout").unwrap().expect("__rffi_shout");
    let r = shout.call(&[Any::from("hi")]).unwrap();
    assert_eq!(r.try_as::<String>().unwrap(), "HI!");
    let e = shout.call(&[Any::from("")]).unwrap_err();
    assert_eq!(
        (e.kind().as_str(), e.message().as_str()),
        ("ValueError", "shout needs some text")
    );
    assert!(
        e.backtrace().contains("plugin.cc\", line"),
        "{}",
        e.backtrace()
    );
}
