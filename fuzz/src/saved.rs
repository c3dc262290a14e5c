//! The saved inputs of a fuzz target, which the `cargo test` replays run
//! (`ffi-core/tests/fuzz_regressions.rs`, `sessions/tests/fuzz_regressions.rs`).

use std::path::PathBuf;

/// The files under `fuzz/<kind>/<target>/` (`kind`: `regressions` or `seeds`), sorted; none when
/// the folder does not exist. Every crate that includes this file sits beside `fuzz/`.
pub fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz"))
        .join(kind)
        .join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}
