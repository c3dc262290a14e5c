//! Errors: the `Error` object (kind, message, traceback), the thread-local "raised" slot of the
//! calling convention, and conversions from `anyhow::Error` and panics.
//!
//! Tracebacks are stored most recent call first as `  File "<file>", line <n>, in <function>` lines
//! so each layer can append its frames while the error unwinds. Raising must stay cheap: the native
//! backtrace is captured unresolved (`backtrace::Backtrace::new_unresolved`) and only symbolized (which can
//! take ~100 ms the first time) when someone asks for the traceback. The raise site comes from
//! `#[track_caller]`, so the function that raised is named with its file and line even in a build
//! without debug info.
//!
//! This module holds the `Error` object; `body` the layout of the errors this runtime makes (the
//! ABI cell, its strings, the traceback's parts) and the cell's `update_backtrace` entry;
//! `traceback` the frame lines and the rendering of native backtraces; `catch` the turning of
//! panics into errors; `raised` the thread-local slot.

mod body;
mod catch;
mod raised;
mod traceback;

pub(crate) use body::byte_array_bytes;
pub use catch::catch_panic;
pub(crate) use catch::install_panic_hook;
pub(crate) use raised::has_raised;
pub use raised::{set_raised, take_raised};
pub use traceback::frame;

use crate::abi::{
    kRFFIBacktraceUpdateModeRender, kRFFIBacktraceUpdateModeReplace, kRFFIError, RFFIByteArray,
    RFFIErrorCell, RFFIObjectHandle,
};
use crate::object::{alloc_object, body, static_object_type, ObjectRef};
use backtrace::Backtrace;
use body::{byte_array, caller_site, lock, update_backtrace, ErrorBody, Site, Trace};
use std::cell::UnsafeCell;
use std::panic::Location;
use std::sync::Mutex;
use traceback::{backtrace_setting, native_capture_enabled, native_frames, render_native};

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
    fn foreign_errors_have_no_rust_location() {
        let e = Error::new_foreign("ValueError", "from C");
        assert!(!e.backtrace().contains("src/error/"));
        assert_eq!(e.to_string(), "ValueError: from C");
    }
}
