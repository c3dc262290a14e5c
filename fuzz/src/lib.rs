//! The bodies of rffi's fuzz targets: each `run(data)` turns arbitrary bytes into one hostile use
//! of the runtime and checks what must hold (no crash, the documented error, references and
//! deleters balanced, results that agree with an independent model).
//!
//! The libFuzzer binaries in `fuzz_targets/` are one-line wrappers around these, built by
//! `cargo fuzz` (see `make fuzz`); `ffi-core/tests/fuzz_regressions.rs` includes this file by
//! path and replays every saved input under `fuzz/regressions/` with a plain `cargo test`, so a
//! finding stays fixed. (`session_frames.rs` is not part of this library: see its header.)
// Callers hand these functions arbitrary bytes; every unsafe block says what makes it sound.
#![deny(unsafe_op_in_unsafe_fn)]
// The ABI's constants keep their C names (`kRFFIInt`), and are matched on.
#![allow(non_upper_case_globals)]

pub mod callback;
pub mod containers;
pub mod dlpack;
pub mod input;
pub mod json_graph;
pub mod pool;
pub mod saved;
pub mod strings;
pub mod values;

/// The body of a fuzz target.
pub type Target = fn(&[u8]);

/// Every fuzz target, by the name of its libFuzzer binary.
pub const TARGETS: [(&str, Target); 6] = [
    ("dtype_device", strings::run),
    ("dlpack_import", dlpack::run),
    ("any_args", values::run),
    ("callback_results", callback::run),
    ("containers", containers::run),
    ("json_graph", json_graph::run),
];
