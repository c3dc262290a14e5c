//! A Rust host loading the kernels plugin: `kernels.*` land in the host's function registry, run, and
//! report what they chose; nothing is probed at load.

#[path = "../../../tests/support/plugins.rs"]
mod plugins;

use rffi_core::{get_global_func, Any, Module, Tensor};
use std::path::PathBuf;
use std::process::Command;

fn plugin() -> PathBuf {
    let dir = plugins::profile_dir();
    let release = dir.file_name().is_some_and(|n| n == "release");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", "rffi-kernels-plugin", "--target-dir"])
        .arg(plugins::nested_target_dir())
        .current_dir(plugins::workspace());
    if release {
        cmd.arg("--release");
    }
    assert!(
        cmd.status().unwrap().success(),
        "building the kernels plugin failed"
    );
    dir.join("librffi_kernels_plugin.so")
}

#[test]
fn the_plugin_registers_kernels_in_the_host() {
    let m = Module::load(plugin()).expect("loading the kernels plugin");
    let names = m.function_names().unwrap();
    for op in [
        "kernels.add",
        "kernels.softmax",
        "kernels.matmul",
        "kernels.describe",
    ] {
        assert!(names.iter().any(|n| n == op), "{op} not in {names:?}");
    }
    let add = get_global_func("kernels.add").unwrap();
    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let r = add.call(&[Any::from(&a), Any::from(&a)]).unwrap();
    assert_eq!(
        r.try_as::<Tensor>().unwrap().to_vec::<f32>().unwrap(),
        [2.0, 4.0, 6.0]
    );
    // Destination-passing returns None; errors cross with their kind and message.
    let out = Tensor::from_slice(&[0.0f32; 3], &[3]).unwrap();
    assert!(add
        .call(&[Any::from(&a), Any::from(2.0f64), Any::from(&out)])
        .unwrap()
        .is_none());
    assert_eq!(out.to_vec::<f32>().unwrap(), [3.0, 4.0, 5.0]);
    let b = Tensor::from_slice(&[1.0f32; 2], &[2]).unwrap();
    let e = add.call(&[Any::from(&a), Any::from(&b)]).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(
        e.message().contains("shapes do not broadcast"),
        "{}",
        e.message()
    );
    // Scopes through the control functions.
    let push = get_global_func("kernels.push_scope").unwrap();
    let pop = get_global_func("kernels.pop_scope").unwrap();
    let token = push
        .call(&[Any::from("add"), Any::none(), Any::none()])
        .unwrap();
    let e = add.call(&[Any::from(&a), Any::from(&a)]).unwrap_err();
    assert!(
        e.message().contains("disabled by a kernels scope"),
        "{}",
        e.message()
    );
    pop.call(&[token]).unwrap();
    add.call(&[Any::from(&a), Any::from(&a)]).unwrap();
    let set_backend = get_global_func("kernels.set_backend").unwrap();
    let e = set_backend.call(&[Any::from("tpu")]).unwrap_err();
    assert!(
        e.message().contains("valid backends: cuda, cpu"),
        "{}",
        e.message()
    );
    let text = get_global_func("kernels.describe")
        .unwrap()
        .call(&[])
        .unwrap();
    let d: serde_json::Value = serde_json::from_str(&text.try_as::<String>().unwrap()).unwrap();
    assert_eq!(d["selection"]["cpu"]["chosen"], "cpu");
    let ops = get_global_func("kernels.list_ops")
        .unwrap()
        .call(&[])
        .unwrap();
    let ops: serde_json::Value = serde_json::from_str(&ops.try_as::<String>().unwrap()).unwrap();
    assert_eq!(ops.as_array().unwrap().len(), rffi_kernels::Op::ALL.len());
}
