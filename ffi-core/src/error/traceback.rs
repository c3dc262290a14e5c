//! Traceback text: the frame line, the `RFFI_BACKTRACE` setting, and native backtraces rendered
//! as frame lines with the runtime's own plumbing left out.

use backtrace::Backtrace;
use std::sync::atomic::{AtomicU8, Ordering};

/// `RFFI_BACKTRACE`: unset (native frames captured, noise hidden), `0` (no native capture), or
/// `full` (every native frame kept, also those without a source location).
pub(super) fn backtrace_setting() -> u8 {
    static STATE: AtomicU8 = AtomicU8::new(0); // 0 unknown, 1 on, 2 off, 3 full
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let v = match std::env::var_os("RFFI_BACKTRACE") {
                Some(v) if v == "0" => 2,
                Some(v) if v == "full" => 3,
                _ => 1,
            };
            STATE.store(v, Ordering::Relaxed);
            v
        }
        v => v,
    }
}

/// Whether native backtraces are captured: `RFFI_BACKTRACE=0` turns them off.
pub(super) fn native_capture_enabled() -> bool {
    backtrace_setting() != 2
}

/// One traceback line.
pub fn frame(file: &str, line: u32, function: &str) -> String {
    format!("  File \"{file}\", line {line}, in {function}\n")
}

/// One frame of a captured native backtrace: its symbol (demangled, Rust or C++), and its source
/// location if the binary's debug info has it.
pub(super) struct NativeFrame {
    symbol: String,
    location: Option<(String, u32)>,
}

/// The frames of a resolved backtrace, from the `backtrace` crate's structured symbols (an
/// inlined function is a symbol of its own, listed before the function it was inlined into).
pub(super) fn native_frames(bt: &Backtrace) -> Vec<NativeFrame> {
    let mut frames = Vec::new();
    for frame in bt.frames() {
        for sym in frame.symbols() {
            let symbol = sym
                .name()
                .map(|n| format!("{n:#}")) // `:#`: without the Rust hash suffix
                .unwrap_or_else(|| "<unknown>".to_owned());
            let location = sym.filename().zip(sym.lineno()).map(|(file, line)| {
                let file = file.to_string_lossy();
                (relative_to_workspace(&file).to_owned(), line)
            });
            frames.push(NativeFrame { symbol, location });
        }
    }
    frames
}

/// A path of this runtime's own sources relative to its workspace, as `file!()` writes the raise
/// site (debug info holds them absolute, under the build machine's checkout).
fn relative_to_workspace(file: &str) -> &str {
    let file = file.strip_prefix("./").unwrap_or(file);
    let core_dir = env!("CARGO_MANIFEST_DIR"); // <workspace>/ffi-core
    match core_dir.rsplit_once(['/', '\\']) {
        Some((workspace, _)) => file
            .strip_prefix(workspace)
            .and_then(|rest| rest.strip_prefix(['/', '\\']))
            .unwrap_or(file),
        None => file,
    }
}

/// Renders a captured backtrace (its text) as traceback lines, keeping the caller's frames and
/// dropping what is noise to a user: the runtime's own plumbing (std, core, the boundary shims,
/// the C++ API's headers), the frame of the raise site `site` (already the error's first frame),
/// and, unless `full`, frames without a source location (interpreters, stripped libraries).
pub(super) fn render_native(
    frames: &[NativeFrame],
    site: Option<(&str, u32)>,
    full: bool,
) -> String {
    const SKIP: &[&str] = &[
        "std::",
        "core::",
        "alloc::",
        "anyhow::",
        "<std::",
        "<core::",
        "<alloc::",
        "<anyhow::",
        "rust_begin_unwind",
        "__rust",
        "__libc_start",
        "_start",
    ];
    // The runtime's own call plumbing sits between every two user frames; leave it out.
    const PLUMBING: &[&str] = &["rffi_core::function::", "rffi_core::error::"];
    let mut out = String::new();
    let mut site = site;
    for f in frames {
        let symbol = strip_hash(&f.symbol);
        if SKIP.iter().any(|p| symbol.starts_with(p)) || PLUMBING.iter().any(|p| symbol.contains(p))
        {
            continue;
        }
        let Some((file, line)) = f.location.as_ref().map(|(f, l)| (f.as_str(), *l)) else {
            if full {
                out.push_str(&frame("<unknown>", 0, symbol));
            }
            continue;
        };
        // The standard library's frames, the capture's own (`backtrace` crate), and this
        // runtime's raise/call machinery.
        if file.starts_with("/rustc/") || is_backtrace_crate(file) || is_runtime_plumbing(file) {
            continue;
        }
        if !full && is_cpp_api_plumbing(file) {
            continue;
        }
        // The closure or function that raised, at the raise site's line: the location frame
        // already names it (with the registered function name).
        if let Some((site_file, site_line)) = site.take() {
            if site_line == line && same_file(site_file, file) {
                continue;
            }
        }
        out.push_str(&frame(file, line, symbol));
    }
    out
}

fn is_backtrace_crate(file: &str) -> bool {
    let file = file.replace('\\', "/");
    file.contains("/backtrace-0.") && file.contains("/src/")
}

/// Whether two spellings of a source path name the same file (`./a/b.rs`, `a/b.rs`, `/x/a/b.rs`).
fn same_file(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches("./"), b.trim_start_matches("./"));
    a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
}

/// Frames inside the C++ API's headers (`include/rffi/cpp/*.hpp`): its call and conversion
/// plumbing, with mangled names, between the user's C++ frame and the callee.
fn is_cpp_api_plumbing(file: &str) -> bool {
    let file = file.replace('\\', "/");
    file.contains("rffi/cpp/") && file.ends_with(".hpp")
}

/// Frames of this runtime's own error and call machinery, by source file: symbols alone do not
/// tell in builds whose debug info only has line tables (they print as `new<..>`, `{closure#0}`).
fn is_runtime_plumbing(file: &str) -> bool {
    let file = file.replace('\\', "/");
    ["ffi-core/src/", "rffi-core-"]
        .iter()
        .any(|root| file.contains(root))
        && ["/error/", "/function/", "/capi/"]
            .iter()
            .any(|dir| file.contains(dir))
}

/// `path::to::fn::h0123456789abcdef` -> `path::to::fn`.
fn strip_hash(sym: &str) -> &str {
    match sym.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            head
        }
        _ => sym,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_frames_without_noise() {
        let f = |symbol: &str, at: Option<(&str, u32)>| NativeFrame {
            symbol: symbol.to_owned(),
            location: at.map(|(file, line)| (file.to_owned(), line)),
        };
        let frames = [
            f(
                "rffi_core::error::Error::new",
                Some(("ffi-core/src/error/mod.rs", 150)),
            ),
            // Line tables only: the symbol does not tell, the runtime's source file does.
            f("new<&str>", Some(("ffi-core/src/error/mod.rs", 160))),
            f(
                "testing::{{closure}}",
                Some(("ffi-core/src/testing.rs", 39)),
            ),
            f(
                "rffi::Function::CallPacked(RFFIAny const*, int) const",
                Some(("include/rffi/cpp/function.hpp", 204)),
            ),
            f("main", Some(("/src/app/host.cc", 9))),
            f("_PyEval_EvalFrameDefault", None),
            f(
                "std::rt::lang_start::h0123456789abcdef",
                Some(("/rustc/abc/library/std/src/rt.rs", 1)),
            ),
        ];
        let site = Some(("ffi-core/src/testing.rs", 39));
        // The raise site's own frame, the C++ API's plumbing, frames without a location, std
        // and the runtime's machinery are dropped.
        assert_eq!(
            render_native(&frames, site, false),
            "  File \"/src/app/host.cc\", line 9, in main\n"
        );
        // A frame at another line of the raise site's file is kept.
        assert!(
            render_native(&frames, Some(("ffi-core/src/testing.rs", 40)), false)
                .contains("testing.rs\", line 39")
        );
        // RFFI_BACKTRACE=full keeps the C++ API's frames and frames without a location.
        let full = render_native(&frames, site, true);
        assert!(full.contains("function.hpp") && full.contains("_PyEval_EvalFrameDefault"));
        assert!(!full.contains("src/error/") && !full.contains("rt.rs"));
    }

    #[test]
    fn native_frames_come_resolved_with_names_and_locations() {
        #[inline(never)]
        fn capture_here() -> Backtrace {
            let mut bt = Backtrace::new_unresolved();
            bt.resolve();
            bt
        }
        assert_eq!(
            relative_to_workspace(concat!(env!("CARGO_MANIFEST_DIR"), "/src/testing.rs")),
            "ffi-core/src/testing.rs"
        );
        assert_eq!(
            relative_to_workspace("/elsewhere/app.cc"),
            "/elsewhere/app.cc"
        );
        let frames = native_frames(&capture_here());
        assert!(frames.iter().any(|f| f.symbol.contains("capture_here")
            && f.location
                .as_ref()
                .is_some_and(|(file, _)| file.ends_with("error/traceback.rs"))));
    }

    #[test]
    fn strip_hash_only_strips_hashes() {
        assert_eq!(strip_hash("a::b::h0123456789abcdef"), "a::b");
        assert_eq!(strip_hash("a::hello"), "a::hello");
    }
}
