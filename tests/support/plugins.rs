//! Builds the plugins the cross-language tests load: the example Rust plugin (a workspace member,
//! built here with cargo into this test's own target directory, so it is never stale) and C
//! plugins compiled with `cc`. Included with `#[path]` by the tests that need it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/<profile>` of the running test binary.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The `--target-dir` a nested `cargo build` needs for its output to land in `profile_dir()`:
/// the directory above `<profile>`, or, when cargo builds for an explicit target
/// (`CARGO_BUILD_TARGET`, inherited by the nested cargo, as in `make sanitize`), the one above
/// `<triple>/<profile>`.
pub fn nested_target_dir() -> PathBuf {
    let up = if std::env::var_os("CARGO_BUILD_TARGET").is_some() {
        2
    } else {
        1
    };
    profile_dir().ancestors().nth(up).unwrap().to_path_buf()
}

/// The example Rust plugin's shared library, freshly built for this test's profile.
pub fn rust_plugin() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = profile_dir();
        let release = dir.file_name().is_some_and(|n| n == "release");
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "build",
            "-q",
            "-p",
            "rffi-example-rust-plugin",
            "--target-dir",
        ])
        .arg(nested_target_dir())
        .current_dir(workspace());
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cannot run cargo");
        assert!(status.success(), "building the example Rust plugin failed");
        dir.join("librffi_example_rust_plugin.so")
    })
    .clone()
}

/// Compiles a C file (relative to the workspace) into a shared library in the test scratch dir.
/// The library's name carries the extra flags, so two builds of one source with different flags
/// never overwrite each other; each build writes a file of its own and renames it into place, so
/// a test that has the library loaded never sees it rewritten under it.
pub fn c_plugin(src: &str, extra: &[&str]) -> PathBuf {
    let ws = workspace();
    let stem = Path::new(src)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let flags: String = extra
        .iter()
        .flat_map(|f| ["_".to_string(), f.trim_start_matches('-').to_string()])
        .collect::<String>()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let out = dir.join(format!("lib{stem}{flags}.so"));
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!("lib{stem}{flags}.so.{}.{n}", std::process::id()));
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-shared", "-fPIC", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I",
        ])
        .arg(ws.join("include"))
        .args(extra)
        .arg(ws.join(src))
        .arg("-o")
        .arg(&tmp)
        .status()
        .expect("cannot run cc");
    assert!(status.success(), "cc failed on {src}");
    std::fs::rename(&tmp, &out).expect("cannot move the built plugin into place");
    out
}
