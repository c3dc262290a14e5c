//! Builds the C programs under `tests/c/` against the generated header and `librffi.so`, runs them,
//! and checks they pass: the C ABI as a C compiler and a C caller see it.

#[path = "../../tests/support/plugins.rs"]
mod plugins;

use plugins::workspace;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding `librffi.so` for this build profile (`target/<profile>`).
fn lib_dir() -> PathBuf {
    let dir = plugins::profile_dir();
    assert!(
        dir.join("librffi.so").exists(),
        "librffi.so not found in {}; build it with `cargo build -p rffi-c`",
        dir.display()
    );
    dir
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// Compiles `src` with `compiler` and `flags`, links the runtime, and returns the executable.
fn build(compiler: &str, src: &str, flags: &[&str]) -> PathBuf {
    let ws = workspace();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(Path::new(src).file_stem().unwrap());
    let lib = lib_dir();
    let status = Command::new(compiler)
        .args(flags)
        .args(["-Wall", "-Wextra", "-Werror", "-I"])
        .arg(ws.join("include"))
        .arg(ws.join(src))
        .arg("-o")
        .arg(&out)
        .arg("-L")
        .arg(&lib)
        .arg("-lrffi")
        .arg("-lpthread")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(status.success(), "{compiler} failed on {src}");
    out
}

fn run(exe: &Path) -> String {
    run_with(exe, &[])
}

/// Runs `exe` with `args`, under the command in `RFFI_TEST_RUNNER` when it is set (`make
/// sanitize` sets `valgrind --error-exitcode=1 --leak-check=full ...`, so a memory error or a
/// definite leak fails the test like a failed check).
fn run_with(exe: &Path, args: &[&Path]) -> String {
    let runner = std::env::var("RFFI_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    let mut cmd = match words.next() {
        Some(program) => {
            let mut cmd = Command::new(program);
            cmd.args(words).arg(exe);
            cmd
        }
        None => Command::new(exe),
    };
    let out = cmd.args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !runner.is_empty() {
        // The runner's verdict, for the record (`cargo test -- --nocapture` shows it).
        let stderr = String::from_utf8_lossy(&out.stderr);
        for line in stderr.lines().filter(|l| {
            l.contains("ERROR SUMMARY")
                || l.contains("definitely lost")
                || l.contains("in use at exit")
        }) {
            eprintln!("{}: {line}", exe.file_name().unwrap().to_string_lossy());
        }
    }
    assert!(
        out.status.success(),
        "{} failed:\n{stdout}\n{}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn layout_static_asserts() {
    run(&build(&cc(), "tests/c/layout.c", &["-std=c11"]));
}

#[test]
fn header_compiles_as_cxx11() {
    run(&build("c++", "tests/c/header_cpp.cc", &["-std=c++11"]));
}

#[test]
fn core_abi_from_c() {
    let out = run(&build(
        &cc(),
        "tests/c/test_core.c",
        &["-std=c99", "-pedantic"],
    ));
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn every_entry_point_refuses_bad_inputs() {
    // -rdynamic: the allocator test expects the runtime to name its callbacks by symbol.
    let out = run(&build(
        &cc(),
        "tests/c/test_bad_inputs.c",
        &["-std=c99", "-pedantic", "-rdynamic"],
    ));
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn foreign_callbacks_held_to_the_calling_convention() {
    let out = run(&build(
        &cc(),
        "tests/c/test_foreign.c",
        &["-std=c99", "-pedantic"],
    ));
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn object_types_from_c() {
    let out = run(&build(
        &cc(),
        "tests/c/test_objects.c",
        &["-std=c99", "-pedantic"],
    ));
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn type_attributes_and_extended_native_types_from_c() {
    let out = run(&build(
        &cc(),
        "tests/c/test_type_ext.c",
        &["-std=c99", "-pedantic"],
    ));
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn structural_operations_from_c() {
    let out = run(&build(
        &cc(),
        "tests/c/test_structural.c",
        &["-std=c99", "-pedantic"],
    ));
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn plugins_loaded_by_a_c_host() {
    let lib = lib_dir();
    let exe = build(&cc(), "tests/c/test_plugins.c", &["-std=c99"]);
    let rust_plugin = plugins::rust_plugin();
    let c_plugin = plugins::c_plugin("examples/c-plugin/plugin.c", &[]);
    // Links librffi.so without an rpath: it must resolve by SONAME to the host's copy.
    let linked = plugins::c_plugin(
        "tests/c/plugins/linked.c",
        &["-L", lib.to_str().unwrap(), "-lrffi"],
    );
    let bad_version = plugins::c_plugin("tests/c/plugins/bad_version.c", &[]);
    let not_a_library = Path::new(env!("CARGO_TARGET_TMPDIR")).join("text_file.so");
    std::fs::write(&not_a_library, "not an ELF file").unwrap();
    let out = run_with(
        &exe,
        &[
            &rust_plugin,
            &c_plugin,
            &linked,
            &bad_version,
            &not_a_library,
        ],
    );
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn sessions_from_c() {
    let out = run(&build(
        &cc(),
        "tests/c/test_sessions.c",
        &["-std=c99", "-pedantic"],
    ));
    assert!(out.contains(" 0 failed"), "{out}");
}

#[test]
fn tensors_from_c() {
    let out = run(&build(
        &cc(),
        "tests/c/test_tensor.c",
        &["-std=c99", "-pedantic"],
    ));
    assert!(out.contains(" 0 failed"), "{out}");
}

/// A program that includes the official `<dlpack/dlpack.h>` first (a stand-in with the same
/// guard and definitions) and then our header, as C11 and as C++11: the header's own DLPack block
/// must step aside and the API must work with the official types.
#[test]
fn header_after_official_dlpack_h() {
    let include = format!(
        "-I{}",
        workspace().join("tests/c/dlpack_official").display()
    );
    let out = run(&build(
        &cc(),
        "tests/c/dlpack_first.c",
        &["-std=c11", &include],
    ));
    assert!(out.contains("dlpack_first: ok"), "{out}");
    // Sequential on purpose: both builds write the same executable.
    let out = run(&build(
        "c++",
        "tests/c/dlpack_first.c",
        &["-x", "c++", "-std=c++11", &include],
    ));
    assert!(out.contains("dlpack_first: ok"), "{out}");
}
