//! Replays every saved input of the `session_frames` fuzz target through the harness the fuzzer
//! runs (`fuzz/src/session_frames.rs`, included by path, so `make test` needs no nightly
//! toolchain): `fuzz/regressions/session_frames/*` (inputs that once failed, kept after the fix)
//! and `fuzz/seeds/session_frames/*` (the starting corpus). The named tests for each finding are
//! in `tests/hostile_frames.rs`.

#[path = "../../fuzz/src/session_frames.rs"]
mod harness;

#[path = "../../fuzz/src/saved.rs"]
mod saved;

fn replay(kind: &str) -> usize {
    let files = saved::inputs(kind, "session_frames");
    for file in &files {
        let data = std::fs::read(file).unwrap();
        // A plain catch: a failing input's panic prints, showing why it fails.
        #[allow(clippy::disallowed_methods)]
        let outcome = std::panic::catch_unwind(|| harness::run(&data));
        assert!(outcome.is_ok(), "{} fails", file.display());
    }
    files.len()
}

#[test]
fn every_saved_regression_input_passes() {
    replay("regressions");
}

#[test]
fn every_seed_input_passes() {
    assert!(
        replay("seeds") > 0,
        "no seed inputs under fuzz/seeds/session_frames"
    );
}
