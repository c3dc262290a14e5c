//! Which panics the runtime turns into errors, so that the panic hook (`error::install_panic_hook`)
//! prints those not at all: the error carries the message and the site to whoever handles it.
//!
//! Three kinds of boundary catch panics, and each is known to the hook its own way:
//! - `error::catch_panic` (a plugin's init, a session worker's commands, the kernel backends'
//!   probes and CUDA/NCCL calls, code built on rffi)
//!   counts itself in this thread's guard while it runs (`call_depth::catching`);
//! - the call of a Rust function (`function::body::rust_call::<F>`) and the C entry points
//!   (`capi::boundary::guard`), the hot paths (a few nanoseconds each), do nothing at call time.
//!   On a panic the hook walks the thread's stack (frames unresolved: no symbolizing) for the
//!   frame of a `rust_call` instance, whose addresses are recorded here when a Function of it is
//!   made, or of an exported C entry point of this image (`RFFI...`), every one of which catches.

use rustc_hash::FxHashSet;
use std::sync::RwLock;

/// The entry addresses of the catching frames (`rust_call` instances) made so far.
static CATCHING_FRAMES: RwLock<Option<FxHashSet<usize>>> = RwLock::new(None);

/// Records `entry`, the address of a function that catches every panic of the code it calls.
pub(crate) fn record_catching_frame(entry: usize) {
    let known = CATCHING_FRAMES
        .read()
        .is_ok_and(|f| f.as_ref().is_some_and(|s| s.contains(&entry)));
    if !known {
        if let Ok(mut frames) = CATCHING_FRAMES.write() {
            frames.get_or_insert_with(FxHashSet::default).insert(entry);
        }
    }
}

/// Whether a panic on this thread now is caught by the runtime and turned into an error.
pub(crate) fn caught_here() -> bool {
    if crate::call_depth::catching_panics() {
        return true;
    }
    // Not blocking: a panic while the set is being written (by this thread or another) is
    // reported as not caught, which prints it: the safe answer.
    let Ok(frames) = CATCHING_FRAMES.try_read() else {
        return false;
    };
    let Some(frames) = frames.as_ref() else {
        return false;
    };
    let mut found = false;
    backtrace::trace(|frame| {
        let entry = frame.symbol_address() as usize;
        found = frames.contains(&entry) || is_c_entry(entry);
        !found
    });
    found
}

/// Whether `entry` is the start of an exported C entry point of this image (`RFFI...`: the C ABI
/// of `librffi.so`, each of which catches panics).
#[cfg(unix)]
fn is_c_entry(entry: usize) -> bool {
    use std::ffi::{c_void, CStr};
    fn symbol_at(addr: *const c_void) -> Option<libc::Dl_info> {
        let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        // SAFETY: dladdr only reads the loader's tables and fills `info`.
        let found = unsafe { libc::dladdr(addr, info.as_mut_ptr()) } != 0;
        // SAFETY: filled by a successful dladdr (zeroed otherwise, which is a valid Dl_info).
        found.then(|| unsafe { info.assume_init() })
    }
    let Some(info) = symbol_at(entry as *const c_void) else {
        return false;
    };
    let ours = symbol_at(is_c_entry as *const c_void).map(|i| i.dli_fbase);
    if info.dli_saddr as usize != entry || info.dli_sname.is_null() || ours != Some(info.dli_fbase)
    {
        return false;
    }
    // SAFETY: a symbol name from the loader: NUL-terminated, alive while the image is loaded.
    unsafe { CStr::from_ptr(info.dli_sname) }
        .to_bytes()
        .starts_with(b"RFFI")
}

#[cfg(not(unix))]
fn is_c_entry(_entry: usize) -> bool {
    false
}
