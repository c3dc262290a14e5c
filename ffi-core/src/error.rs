//! Errors: the `Error` object (kind, message, traceback), the thread-local "raised" slot of the
//! calling convention, and conversions from `anyhow::Error` and panics.
//!
//! Tracebacks are stored most recent call first as `  File "<file>", line <n>, in <function>` lines
//! so each layer can append its frames while the error unwinds. Raising must stay cheap: the native
//! backtrace is captured unresolved (`backtrace::Backtrace::new_unresolved`) and only symbolized (which can
//! take ~100 ms the first time) when someone asks for the traceback. The raise site comes from
//! `#[track_caller]`, so the function that raised is named with its file and line even in a build
//! without debug info.

use crate::abi::{
    kRFFIBacktraceUpdateModeRender, kRFFIBacktraceUpdateModeReplace, kRFFIError, RFFIByteArray,
    RFFIErrorCell, RFFIObjectHandle,
};
use crate::object::{alloc_object, body, static_object_type, ObjectRef};
use backtrace::Backtrace;
use std::borrow::Cow;
use std::cell::{Cell, UnsafeCell};
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// The result of a runtime operation: an [`Error`] on failure.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Error kinds with a fixed meaning across bindings (Python maps them to its built-in exceptions).
pub mod kind {
    /// An argument has the right type but a wrong value.
    pub const VALUE_ERROR: &str = "ValueError";
    /// A value has the wrong type (an argument, a field write, a conversion).
    pub const TYPE_ERROR: &str = "TypeError";
    /// A key, name or type key that is not there.
    pub const KEY_ERROR: &str = "KeyError";
    /// An index out of range.
    pub const INDEX_ERROR: &str = "IndexError";
    /// A field or method that is not there, or a frozen field written.
    pub const ATTRIBUTE_ERROR: &str = "AttributeError";
    /// A failure that fits no other kind (a panic, a failed system call).
    pub const RUNTIME_ERROR: &str = "RuntimeError";
    /// An operation a backend or type does not support.
    pub const NOT_IMPLEMENTED_ERROR: &str = "NotImplementedError";
    /// An allocation that failed.
    pub const MEMORY_ERROR: &str = "MemoryError";
    /// A check of an invariant that failed.
    pub const ASSERTION_ERROR: &str = "AssertionError";
}

/// An owned reference to an Error object (type index 67).
#[derive(Clone)]
#[repr(transparent)]
pub struct Error(ObjectRef);
static_object_type!(Error, kRFFIError, "ffi.Error");

/// Body of errors made by this runtime. The ABI cell comes first; its byte arrays point into the
/// strings that follow, and `trace` guards the one part that changes after creation.
#[repr(C)]
struct ErrorBody {
    cell: UnsafeCell<RFFIErrorCell>,
    kind: Box<str>,
    message: Box<str>,
    trace: Mutex<Trace>,
}

/// File and line of a raise site.
type Site = (Cow<'static, str>, u32);

fn caller_site(l: &'static Location<'static>) -> Site {
    (Cow::Borrowed(l.file()), l.line())
}

#[derive(Default)]
struct Trace {
    /// Where the error was raised: `#[track_caller]` or the panic site.
    location: Option<Site>,
    /// The frame for `location`, once a function boundary names the function.
    location_frame: String,
    /// Captured, not yet symbolized.
    native: Option<Backtrace>,
    native_text: String,
    /// Frames added by outer layers (or the whole text, after a replace).
    appended: String,
    /// `location_frame + native_text + appended`; the cell's `backtrace` points here.
    combined: String,
}

impl Trace {
    fn rebuild(&mut self) {
        self.combined.clear();
        self.combined.push_str(&self.location_frame);
        self.combined.push_str(&self.native_text);
        self.combined.push_str(&self.appended);
    }
}

impl Drop for ErrorBody {
    fn drop(&mut self) {
        let cell = self.cell.get_mut();
        for h in [cell.cause_chain, cell.extra_context] {
            if let Some(p) = NonNull::new(h.cast()) {
                // SAFETY: the cell owns one reference to each non-null handle.
                drop(unsafe { ObjectRef::from_raw(p) });
            }
        }
    }
}

// SAFETY: the raw pointers in the cell point into the body's own immutable strings or into
// `trace.combined`, which only changes under the mutex; handles are owned references.
unsafe impl Send for ErrorBody {}
// SAFETY: as above.
unsafe impl Sync for ErrorBody {}

fn byte_array(s: &str) -> RFFIByteArray {
    RFFIByteArray {
        data: s.as_ptr().cast(),
        size: s.len(),
    }
}

/// # Safety
/// `ba` must describe `size` readable bytes (or be empty) for the lifetime `'a`.
pub(crate) unsafe fn byte_array_bytes<'a>(ba: &RFFIByteArray) -> &'a [u8] {
    if ba.size == 0 {
        return &[];
    }
    // SAFETY: forwarded contract.
    unsafe { std::slice::from_raw_parts(ba.data.cast(), ba.size) }
}

/// `RFFI_BACKTRACE`: unset (native frames captured, noise hidden), `0` (no native capture), or
/// `full` (every native frame kept, also those without a source location).
fn backtrace_setting() -> u8 {
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
fn native_capture_enabled() -> bool {
    backtrace_setting() != 2
}

impl Error {
    /// A new error raised here (the caller's location is recorded).
    #[track_caller]
    pub fn new(kind: &str, message: impl Into<String>) -> Error {
        let native = native_capture_enabled().then(Backtrace::new_unresolved);
        Self::build(
            kind,
            message.into(),
            Some(caller_site(Location::caller())),
            native,
            "",
        )
    }

    /// A new error raised by foreign code through the C API: the native frames of its caller are
    /// captured, but no Rust location (the C entry point's own line would only be noise).
    pub(crate) fn new_foreign(kind: &str, message: impl Into<String>) -> Error {
        let native = native_capture_enabled().then(Backtrace::new_unresolved);
        Self::build(kind, message.into(), None, native, "")
    }

    /// An error with a given traceback text and no native capture (errors made for foreign code).
    pub fn with_backtrace(kind: &str, message: impl Into<String>, backtrace: &str) -> Error {
        Self::build(kind, message.into(), None, None, backtrace)
    }

    fn build(
        kind: &str,
        message: String,
        location: Option<Site>,
        native: Option<Backtrace>,
        backtrace: &str,
    ) -> Error {
        let mut trace = Trace {
            location,
            native,
            appended: backtrace.to_owned(),
            ..Trace::default()
        };
        trace.rebuild();
        let kind: Box<str> = kind.into();
        let message: Box<str> = message.into();
        let cell = RFFIErrorCell {
            kind: byte_array(&kind),
            message: byte_array(&message),
            backtrace: byte_array(&trace.combined),
            update_backtrace: Some(update_backtrace),
            cause_chain: std::ptr::null_mut(),
            extra_context: std::ptr::null_mut(),
        };
        // The strings' heap buffers do not move when the body is moved into the object.
        Error(alloc_object(
            kRFFIError,
            ErrorBody {
                cell: UnsafeCell::new(cell),
                kind,
                message,
                trace: Mutex::new(trace),
            },
        ))
    }

    /// A `ValueError` raised here (the caller's location is its first frame).
    #[track_caller]
    pub fn value_error(message: impl Into<String>) -> Error {
        Error::new(kind::VALUE_ERROR, message)
    }
    /// A `TypeError` raised here (the caller's location is its first frame).
    #[track_caller]
    pub fn type_error(message: impl Into<String>) -> Error {
        Error::new(kind::TYPE_ERROR, message)
    }
    /// A `RuntimeError` raised here (the caller's location is its first frame).
    #[track_caller]
    pub fn runtime_error(message: impl Into<String>) -> Error {
        Error::new(kind::RUNTIME_ERROR, message)
    }
    /// A `KeyError` raised here (the caller's location is its first frame).
    #[track_caller]
    pub fn key_error(message: impl Into<String>) -> Error {
        Error::new(kind::KEY_ERROR, message)
    }
    /// An `IndexError` raised here (the caller's location is its first frame).
    #[track_caller]
    pub fn index_error(message: impl Into<String>) -> Error {
        Error::new(kind::INDEX_ERROR, message)
    }

    fn cell(&self) -> *mut RFFIErrorCell {
        self.0.cell_ptr()
    }

    /// The body, if this runtime made the error (foreign errors only have the ABI cell).
    fn own_body(&self) -> Option<&ErrorBody> {
        // SAFETY: every Error object starts with the ABI cell; an `update_backtrace` equal to ours
        // marks a body laid out as `ErrorBody` by `build`.
        unsafe {
            let ours: unsafe extern "C" fn(RFFIObjectHandle, *const RFFIByteArray, i32) =
                update_backtrace;
            (*self.cell())
                .update_backtrace
                .is_some_and(|f| std::ptr::fn_addr_eq(f, ours))
                .then(|| body::<ErrorBody>(&self.0))
        }
    }

    fn cell_str(&self, field: impl Fn(&RFFIErrorCell) -> RFFIByteArray) -> String {
        // SAFETY: the cell's byte arrays describe memory owned by the live object.
        let bytes = unsafe { byte_array_bytes(&field(&*self.cell())) };
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// The error's kind (`ValueError`, ... or a custom one).
    pub fn kind(&self) -> String {
        match self.own_body() {
            Some(b) => b.kind.to_string(),
            None => self.cell_str(|c| c.kind),
        }
    }

    /// The error's message.
    pub fn message(&self) -> String {
        match self.own_body() {
            Some(b) => b.message.to_string(),
            None => self.cell_str(|c| c.message),
        }
    }

    /// The traceback, most recent call first, with native frames symbolized on first request.
    pub fn backtrace(&self) -> String {
        let Some(body) = self.own_body() else {
            // An error from another image (a plugin's copy of this runtime renders its pending
            // native frames on this request; other libraries append nothing).
            self.update("", kRFFIBacktraceUpdateModeRender);
            return self.cell_str(|c| c.backtrace);
        };
        let mut trace = lock(&body.trace);
        if let Some(mut bt) = trace.native.take() {
            bt.resolve();
            let site = trace.location.as_ref().map(|(f, l)| (f.as_ref(), *l));
            trace.native_text = render_native(&native_frames(&bt), site, backtrace_setting() == 3);
        }
        if trace.location_frame.is_empty() {
            if let Some((file, line)) = &trace.location {
                trace.location_frame = frame(file, *line, "<native>");
            }
        }
        trace.rebuild();
        self.repoint(&trace);
        trace.combined.clone()
    }

    /// Names the function the error was raised in, once; called where a call returns an error.
    pub(crate) fn note_function(&self, name: &str) {
        if let Some(body) = self.own_body() {
            let mut trace = lock(&body.trace);
            if let (Some((file, line)), true) = (&trace.location, trace.location_frame.is_empty()) {
                trace.location_frame = frame(file, *line, name);
                trace.rebuild();
                self.repoint(&trace);
            }
        }
    }

    /// Adds frames of an outer layer (most recent first, one `  File ...` line each).
    pub fn append_backtrace(&self, frames: &str) {
        self.update(frames, crate::abi::kRFFIBacktraceUpdateModeAppend);
    }

    /// Replaces the whole traceback.
    pub fn replace_backtrace(&self, text: &str) {
        self.update(text, kRFFIBacktraceUpdateModeReplace);
    }

    fn update(&self, text: &str, mode: i32) {
        let ba = byte_array(text);
        // SAFETY: calling the object's own update function (ours or the foreign library's) on it.
        unsafe {
            if let Some(f) = (*self.cell()).update_backtrace {
                f(self.0.as_ptr().cast(), &ba, mode);
            }
        }
    }

    fn repoint(&self, trace: &Trace) {
        // SAFETY: called with the trace lock held; the cell is only written under that lock.
        unsafe { (*self.cell()).backtrace = byte_array(&trace.combined) };
    }

    /// The Error object's address (this reference keeps it alive).
    pub fn as_raw(&self) -> *mut crate::abi::RFFIObject {
        self.0.as_ptr()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

unsafe extern "C" fn update_backtrace(
    handle: RFFIObjectHandle,
    text: *const RFFIByteArray,
    mode: i32,
) {
    let Some(ptr) = NonNull::new(handle.cast()) else {
        return;
    };
    // Foreign callers may pass garbage text: treat NULL as empty, never panic across the ABI.
    let _ = catch_panic(|| {
        // SAFETY: the handle is a live Error made by `build` (this function is only installed
        // there) and the caller holds a reference for the duration of the call.
        let err = std::mem::ManuallyDrop::new(Error(unsafe { ObjectRef::from_raw(ptr) }));
        // SAFETY: a non-null `text` describes readable bytes per the ABI.
        let bytes = unsafe { text.as_ref().map(|t| byte_array_bytes(t)).unwrap_or(&[]) };
        let text = String::from_utf8_lossy(bytes);
        if let Some(body) = err.own_body() {
            if mode == kRFFIBacktraceUpdateModeRender {
                err.backtrace();
                return;
            }
            let mut trace = lock(&body.trace);
            if mode == kRFFIBacktraceUpdateModeReplace {
                *trace = Trace {
                    appended: text.into_owned(),
                    ..Trace::default()
                };
            } else {
                trace.appended.push_str(&text);
            }
            trace.rebuild();
            err.repoint(&trace);
        }
    });
}

/// One traceback line.
pub fn frame(file: &str, line: u32, function: &str) -> String {
    format!("  File \"{file}\", line {line}, in {function}\n")
}

/// One frame of a captured native backtrace: its symbol (demangled, Rust or C++), and its source
/// location if the binary's debug info has it.
struct NativeFrame {
    symbol: String,
    location: Option<(String, u32)>,
}

/// The frames of a resolved backtrace, from the `backtrace` crate's structured symbols (an
/// inlined function is a symbol of its own, listed before the function it was inlined into).
fn native_frames(bt: &Backtrace) -> Vec<NativeFrame> {
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
fn render_native(frames: &[NativeFrame], site: Option<(&str, u32)>, full: bool) -> String {
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
        && (["/error.rs", "/function.rs"]
            .iter()
            .any(|f| file.ends_with(f))
            || file.contains("/capi/"))
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

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::error::Error for Error {}

impl From<anyhow::Error> for Error {
    /// Keeps the whole context chain in the message; the kind is that of the first rffi `Error`
    /// in the chain, else `RuntimeError`.
    #[track_caller]
    fn from(e: anyhow::Error) -> Error {
        if let Some(inner) = e.downcast_ref::<Error>() {
            if e.chain().count() == 1 {
                return inner.clone();
            }
        }
        let kind = e
            .chain()
            .find_map(|c| c.downcast_ref::<Error>().map(Error::kind))
            .unwrap_or_else(|| kind::RUNTIME_ERROR.to_owned());
        Error::new(&kind, format!("{e:#}"))
    }
}

// ---- Panics ----

thread_local! {
    /// Where the last panic on this thread happened, recorded by our hook for `from_panic`.
    static PANIC_SITE: std::cell::RefCell<Option<Site>> = const { std::cell::RefCell::new(None) };
}

/// Installs (once) a panic hook that records the panic's location for the error it becomes. A
/// panic inside a boundary that turns it into an error (`catch_panic`) prints nothing: the error
/// carries its message and site to whoever handles it. Any other panic goes on to the hook that
/// was there before, which prints it as usual.
pub(crate) fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let site = info
                .location()
                .map(|l| (Cow::Owned(l.file().to_owned()), l.line()));
            let _ = PANIC_SITE.try_with(|s| *s.borrow_mut() = site);
            if !crate::panics::caught_here() {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into a RuntimeError (`Error::from_panic`: the panic's message, and
/// its site in the traceback). Every rffi boundary that turns panics into errors catches them
/// this way, and so can code built on rffi: a panic caught here prints nothing, since the error
/// reports it; a panic anywhere else prints as usual.
#[inline(always)]
pub fn catch_panic<R>(f: impl FnOnce() -> R) -> Result<R> {
    crate::call_depth::catching(f).map_err(Error::from_panic)
}

impl Error {
    /// Turns a caught panic payload into a RuntimeError.
    pub fn from_panic(payload: Box<dyn std::any::Any + Send>) -> Error {
        let msg = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_owned()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "Rust panic with a non-string payload".to_owned()
        };
        let site = PANIC_SITE.with(|s| s.borrow_mut().take());
        let native = native_capture_enabled().then(Backtrace::new_unresolved);
        Self::build(
            kind::RUNTIME_ERROR,
            format!("panic: {msg}"),
            site,
            native,
            "",
        )
    }

    /// The same error with `what: ` before its message, its kind and traceback kept: how a
    /// boundary says what it was doing when it caught a failure (`catch_panic(f)` then
    /// `.context("loading libfoo")`).
    pub fn context(&self, what: &str) -> Error {
        let message = format!("{what}: {}", self.message());
        Error::with_backtrace(&self.kind(), message, &self.backtrace())
    }
}

// ---- The raised-error slot of the calling convention ----

thread_local! {
    static RAISED: Cell<Option<NonNull<crate::abi::RFFIObject>>> = const { Cell::new(None) };
}

/// Stores `err` as this thread's raised error (replacing any earlier one).
pub fn set_raised(err: Error) {
    if let Some(host) = crate::host::host() {
        return host.set_raised(&err);
    }
    let new = err.0.into_raw();
    if let Some(old) = RAISED.with(|s| s.replace(Some(new))) {
        // SAFETY: the slot owned one reference to the replaced error.
        drop(unsafe { ObjectRef::from_raw(old) });
    }
}

/// Whether this thread has a raised error waiting (the slot is left as it is).
pub(crate) fn has_raised() -> bool {
    if let Some(host) = crate::host::host() {
        return host.has_raised();
    }
    RAISED.with(|s| s.get().is_some())
}

/// Takes this thread's raised error, leaving the slot empty.
pub fn take_raised() -> Option<Error> {
    if let Some(host) = crate::host::host() {
        return host.take_raised();
    }
    // SAFETY: the slot owns one reference, which moves to the caller.
    RAISED
        .with(|s| s.take())
        .map(|p| Error(unsafe { ObjectRef::from_raw(p) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_message_and_location_frame() {
        let e = Error::value_error("bad value");
        let line = line!() - 1;
        assert_eq!(e.kind(), "ValueError");
        assert_eq!(e.message(), "bad value");
        e.note_function("my.func");
        let bt = e.backtrace();
        let first = bt.lines().next().unwrap();
        assert_eq!(
            first,
            format!("  File \"{}\", line {line}, in my.func", file!())
        );
        assert_eq!(e.to_string(), "ValueError: bad value");
    }

    #[test]
    fn append_and_replace_keep_order() {
        let e = Error::with_backtrace("KeyError", "k", "  File \"a\", line 1, in inner\n");
        e.append_backtrace("  File \"b\", line 2, in outer\n");
        assert_eq!(
            e.backtrace(),
            "  File \"a\", line 1, in inner\n  File \"b\", line 2, in outer\n"
        );
        e.replace_backtrace("X\n");
        assert_eq!(e.backtrace(), "X\n");
        // The ABI cell sees the same text.
        assert_eq!(e.cell_str(|c| c.backtrace), "X\n");
    }

    #[test]
    fn context_keeps_kind_and_traceback() {
        let line = line!() + 1;
        let e = catch_panic(|| panic!("no libfoo")).unwrap_err();
        let e = e.context("loading foo");
        assert_eq!(e.kind(), "RuntimeError");
        assert_eq!(e.message(), "loading foo: panic: no libfoo");
        let site = format!("  File \"{}\", line {line}", file!());
        assert!(e.backtrace().starts_with(&site), "{}", e.backtrace());
        let k = Error::key_error("x").context("looking up");
        assert_eq!(
            (k.kind().as_str(), k.message().as_str()),
            ("KeyError", "looking up: x")
        );
    }

    #[test]
    fn anyhow_chain_is_kept() {
        use anyhow::Context;
        let r: anyhow::Result<()> = Err(anyhow::anyhow!("root cause")).context("outer step");
        let e = Error::from(r.unwrap_err());
        assert_eq!(e.kind(), "RuntimeError");
        assert_eq!(e.message(), "outer step: root cause");
        let typed: anyhow::Error = Error::key_error("missing").into();
        let e = Error::from(typed.context("looking up"));
        assert_eq!(e.kind(), "KeyError");
        assert_eq!(e.message(), "looking up: KeyError: missing");
    }

    #[test]
    fn raised_slot_moves_ownership() {
        assert!(take_raised().is_none());
        let e = Error::runtime_error("boom");
        let probe = e.clone();
        set_raised(e);
        assert_eq!(probe.0.strong_count(), 2);
        set_raised(Error::runtime_error("second"));
        assert_eq!(probe.0.strong_count(), 1);
        assert_eq!(take_raised().unwrap().message(), "second");
        assert!(take_raised().is_none());
    }

    #[test]
    fn native_frames_without_noise() {
        let f = |symbol: &str, at: Option<(&str, u32)>| NativeFrame {
            symbol: symbol.to_owned(),
            location: at.map(|(file, line)| (file.to_owned(), line)),
        };
        let frames = [
            f(
                "rffi_core::error::Error::new",
                Some(("ffi-core/src/error.rs", 150)),
            ),
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
        assert!(!full.contains("error.rs") && !full.contains("rt.rs"));
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
                .is_some_and(|(file, _)| file.ends_with("error.rs"))));
    }

    #[test]
    fn foreign_errors_have_no_rust_location() {
        let e = Error::new_foreign("ValueError", "from C");
        assert!(!e.backtrace().contains("error.rs"));
        assert_eq!(e.to_string(), "ValueError: from C");
    }

    #[test]
    fn strip_hash_only_strips_hashes() {
        assert_eq!(strip_hash("a::b::h0123456789abcdef"), "a::b");
        assert_eq!(strip_hash("a::hello"), "a::hello");
    }
}
