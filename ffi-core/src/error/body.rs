//! The body of the errors this runtime makes: the ABI cell first, then the strings its byte
//! arrays point into and the parts of the traceback; and the cell's `update_backtrace`, the entry
//! through which any image (a plugin, the C API) changes an error's traceback.

use super::catch::catch_panic;
use super::Error;
use crate::abi::{
    kRFFIBacktraceUpdateModeRender, kRFFIBacktraceUpdateModeReplace, RFFIByteArray, RFFIErrorCell,
    RFFIObjectHandle,
};
use crate::object::ObjectRef;
use backtrace::Backtrace;
use std::borrow::Cow;
use std::cell::UnsafeCell;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::Mutex;

/// Body of errors made by this runtime. The ABI cell comes first; its byte arrays point into the
/// strings that follow, and `trace` guards the one part that changes after creation.
#[repr(C)]
pub(super) struct ErrorBody {
    pub(super) cell: UnsafeCell<RFFIErrorCell>,
    pub(super) kind: Box<str>,
    pub(super) message: Box<str>,
    pub(super) trace: Mutex<Trace>,
}

/// File and line of a raise site.
pub(super) type Site = (Cow<'static, str>, u32);

pub(super) fn caller_site(l: &'static Location<'static>) -> Site {
    (Cow::Borrowed(l.file()), l.line())
}

#[derive(Default)]
pub(super) struct Trace {
    /// Where the error was raised: `#[track_caller]` or the panic site.
    pub(super) location: Option<Site>,
    /// The frame for `location`, once a function boundary names the function.
    pub(super) location_frame: String,
    /// Captured, not yet symbolized.
    pub(super) native: Option<Backtrace>,
    pub(super) native_text: String,
    /// Frames added by outer layers (or the whole text, after a replace).
    pub(super) appended: String,
    /// `location_frame + native_text + appended`; the cell's `backtrace` points here.
    pub(super) combined: String,
}

impl Trace {
    pub(super) fn rebuild(&mut self) {
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

pub(super) fn byte_array(s: &str) -> RFFIByteArray {
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

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) unsafe extern "C" fn update_backtrace(
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
