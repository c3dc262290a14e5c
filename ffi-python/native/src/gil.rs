//! The GIL around native calls, and how a Python callback gets it back.
//!
//! A call from Python releases the GIL around the native function (`PyEval_SaveThread` /
//! `PyEval_RestoreThread`, ~400 instructions and six atomic lock operations on CPython 3.11,
//! 20–50 ns) unless the Function keeps it (see `call`). A call that releases it records, for its
//! thread, the thread state it released. A Python callback that the native function runs on the
//! same thread then needs no `PyGILState_Ensure` lookups: it sees that this thread still holds
//! the GIL (the innermost call kept it: no hand-off at all), or takes it back with the recorded
//! state and releases it again when done. With nothing recorded (every call on the thread kept
//! the GIL), a callback whose thread's own state is the current one holds the GIL already: the
//! check `PyGILState_Ensure` starts with, without its counting in and out. A callback on any
//! other thread (a native thread, which the native function may be waiting for) goes through
//! `PyGILState_Ensure`/`Release`, so a call that released the GIL never deadlocks with it.

use super::cpython::*;
use std::cell::Cell;
use std::ffi::{c_int, c_void};

thread_local! {
    /// The thread state released by the innermost call from Python on this thread that released
    /// the GIL (NULL when none runs): the state this thread runs Python with.
    static CALLER: Cell<*mut c_void> = const { Cell::new(std::ptr::null_mut()) };
}

/// Runs `call` (a native call that cannot unwind) from Python, the GIL released around it when
/// `release` and this thread's state recorded for the callbacks it makes (see the module). A
/// call that keeps the GIL records nothing, which spares the most frequent calls two
/// thread-local accesses: its callbacks find the GIL held through an outer call's record, or
/// through `PyGILState_Ensure`.
///
/// # Safety
/// GIL held; `call` must not touch Python objects when `release` (it runs without the GIL).
#[inline(always)]
pub(crate) unsafe fn call_from_python<R>(api: &Api, release: bool, call: impl FnOnce() -> R) -> R {
    // SAFETY: GIL held on entry; when released, it is taken back with the same thread state
    // before returning; `call` does not unwind (a C ABI call), so the record is always restored.
    unsafe {
        if release {
            let ts = (api.PyEval_SaveThread)();
            let outer = CALLER.replace(ts);
            let r = call();
            CALLER.set(outer);
            (api.PyEval_RestoreThread)(ts);
            r
        } else {
            call()
        }
    }
}

/// How a callback got the GIL, undone by [`leave`].
pub(crate) enum Entered {
    /// This thread held it already (the calling Function kept it, or native code took it back).
    Held,
    /// Taken back with the thread state the call released it with.
    Restored,
    /// Through `PyGILState_Ensure` (another thread, or a call from outside the native path).
    Ensured(c_int),
}

/// Takes the GIL for a callback on the current thread.
///
/// # Safety
/// The interpreter is initialized; the GIL is not held by this thread through a thread state
/// other than the recorded one.
#[inline(always)]
pub(crate) unsafe fn enter(api: &Api) -> Entered {
    let ts = CALLER.get();
    // SAFETY: reading the current thread state, or this thread's own (its PyGILState record),
    // never blocks or fails; `ts` is this thread's own state (recorded by a call running on it),
    // so restoring it attaches this thread.
    unsafe {
        // The thread state holding the GIL (CPython < 3.12), or this thread's attached one.
        let current = (api.PyThreadState_GetUnchecked)();
        if !ts.is_null() {
            if current == ts {
                return Entered::Held;
            }
            if current.is_null() {
                (api.PyEval_RestoreThread)(ts);
                return Entered::Restored;
            }
        } else if !current.is_null() && current == (api.PyGILState_GetThisThreadState)() {
            return Entered::Held;
        }
        Entered::Ensured((api.PyGILState_Ensure)())
    }
}

/// Gives the GIL back as [`enter`] took it.
///
/// # Safety
/// GIL held, as `entered` says it was taken, on the same thread.
#[inline(always)]
pub(crate) unsafe fn leave(api: &Api, entered: Entered) {
    // SAFETY: undoing `enter` on the same thread.
    unsafe {
        match entered {
            Entered::Held => {}
            Entered::Restored => {
                (api.PyEval_SaveThread)();
            }
            Entered::Ensured(state) => (api.PyGILState_Release)(state),
        }
    }
}
