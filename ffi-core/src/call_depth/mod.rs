//! The guard against C-stack overflow in deep native round trips (a callback calling a function
//! calling the callback again, ten thousand levels down). Checked where the runtime enters a C
//! callback (`foreign::call_c`), which every such round trip passes through, whatever language
//! the callback is written in.
//!
//! Two limits, either of which raises a RecursionError (Python maps it to its own):
//! - the call depth: C callbacks entered and not yet returned on this thread, at most
//!   `max_call_depth()` (default `RFFI_DEFAULT_MAX_CALL_DEPTH`; the environment variable
//!   `RFFI_MAX_CALL_DEPTH`, `RFFISetMaxCallDepth` or the global function `ffi.SetMaxCallDepth`
//!   change it);
//! - the C stack left to this thread: a callback is not entered with less than `reserve` bytes
//!   left (a quarter of the stack, at most 256 KiB), which protects threads with small stacks
//!   and callbacks with large frames (a Python callback uses far more stack than a C one), both of
//!   which a fixed depth cannot. Code running on another stack (a fiber's or coroutine's, a
//!   signal stack), below the thread's own, has only the depth limit: its size is unknown.
//!
//! The fast path (`thread_slot::fast_guard`, `Guard::admits`) is a read of the thread pointer, a
//! compare that finds this thread's guard, and two compares; everything else is out of line.
//!
//! The same per-thread guard counts the panic-catching boundaries a thread is inside
//! (`catching`), which is how the panic hook knows to stay quiet for a panic the runtime is about
//! to turn into an error, and the object deleters running nested on the thread with the releases
//! queued past their limit (`releasing`, `queued`: `object.rs`, `release_last_strong`).

use std::panic::{catch_unwind, AssertUnwindSafe};

mod thread_slot;

use crate::abi::RFFI_DEFAULT_MAX_CALL_DEPTH;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

pub(crate) use thread_slot::{fast_guard, thread_blocks, with_guard};

/// The environment variable read (once, on the first callback entered) for the maximum depth.
pub const MAX_CALL_DEPTH_ENV: &str = "RFFI_MAX_CALL_DEPTH";

/// The limit; 0 until the environment variable has been read (so that the first callback takes
/// the slow path, which reads it).
static MAX_DEPTH: AtomicU32 = AtomicU32::new(0);

/// The most stack a callback is refused to be entered with less than.
const MAX_RESERVE: usize = 256 * 1024;

/// One thread's depth and stack bounds. Only the owning thread reads or writes them (atomics
/// with relaxed order, which compile to plain loads and stores, only because a guard in the slot
/// table is reachable from every thread).
pub(crate) struct Guard {
    /// C callbacks entered and not yet returned on this thread.
    depth: AtomicU32,
    /// The lowest stack address a callback may be entered at: `usize::MAX` until this thread's
    /// stack has been measured, 0 when it cannot be.
    floor: AtomicUsize,
    /// The lowest address of this thread's stack. Below it the code runs on another stack (a
    /// fiber's, a signal stack) whose size is unknown: only the depth limit applies there.
    low: AtomicUsize,
    /// Boundaries that turn panics into errors (`catching`) entered and not yet left.
    catching: AtomicU32,
    /// Object deleters running nested on this thread.
    pub(crate) releasing: AtomicU32,
    /// Releases queued while `releasing` was at its limit (null: none).
    pub(crate) queued: AtomicPtr<crate::object::Queued>,
}

impl Guard {
    pub(crate) const fn new() -> Guard {
        Guard {
            depth: AtomicU32::new(0),
            floor: AtomicUsize::new(usize::MAX),
            low: AtomicUsize::new(0),
            catching: AtomicU32::new(0),
            releasing: AtomicU32::new(0),
            queued: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// Back to the state of a thread that has entered no callback.
    fn reset(&self) {
        self.depth.store(0, Ordering::Relaxed);
        self.floor.store(usize::MAX, Ordering::Relaxed);
        self.low.store(0, Ordering::Relaxed);
        self.catching.store(0, Ordering::Relaxed);
        self.releasing.store(0, Ordering::Relaxed);
    }

    /// Whether a callback may be entered one level deeper from here without the full check:
    /// the depth under the limit and the stack pointer above the floor. `false` sends the
    /// caller to `enter`, which measures the stack on a thread's first callback and says why a
    /// call is refused.
    #[inline(always)]
    pub(crate) fn admits(&self) -> bool {
        self.depth.load(Ordering::Relaxed) < MAX_DEPTH.load(Ordering::Relaxed)
            && stack_pointer() >= self.floor.load(Ordering::Relaxed)
    }

    /// The bookkeeping around a call `admits` let through (plain load and store: only this
    /// thread touches its depth).
    #[inline(always)]
    pub(crate) fn push(&self) {
        let depth = self.depth.load(Ordering::Relaxed);
        self.depth.store(depth + 1, Ordering::Relaxed);
    }

    #[inline(always)]
    pub(crate) fn pop(&self) {
        let depth = self.depth.load(Ordering::Relaxed);
        self.depth.store(depth - 1, Ordering::Relaxed);
    }

    /// Runs `call` one level deeper, or returns the error that refuses it. `describe` names the
    /// callee in the error.
    #[inline(always)]
    pub(crate) fn enter(
        &self,
        describe: impl FnOnce() -> String,
        call: impl FnOnce() -> i32,
    ) -> Result<i32> {
        let depth = self.depth.load(Ordering::Relaxed);
        let sp = stack_pointer();
        if depth >= MAX_DEPTH.load(Ordering::Relaxed) || sp < self.floor.load(Ordering::Relaxed) {
            self.check(depth, sp, describe)?;
        }
        self.depth.store(depth + 1, Ordering::Relaxed);
        let rc = call();
        self.depth.store(depth, Ordering::Relaxed);
        Ok(rc)
    }

    #[cold]
    #[inline(never)]
    fn check(&self, depth: u32, sp: usize, describe: impl FnOnce() -> String) -> Result<()> {
        let limit = max_call_depth()?;
        if self.floor.load(Ordering::Relaxed) == usize::MAX {
            let (low, size) = stack_bounds().unwrap_or((0, 0));
            self.low.store(low, Ordering::Relaxed);
            let floor = if size == 0 { 0 } else { low + reserve(size) };
            self.floor.store(floor, Ordering::Relaxed);
        }
        if depth >= limit {
            return Err(Error::new(
                "RecursionError",
                format!(
                    "maximum call depth {limit} exceeded when calling {}; change the limit with \
                     the environment variable {MAX_CALL_DEPTH_ENV}, RFFISetMaxCallDepth or the \
                     global function `ffi.SetMaxCallDepth`",
                    describe()
                ),
            ));
        }
        if sp < self.floor.load(Ordering::Relaxed) && sp >= self.low.load(Ordering::Relaxed) {
            let (low, size) = stack_bounds().unwrap_or((0, 0));
            return Err(Error::new(
                "RecursionError",
                format!(
                    "C stack nearly exhausted when calling {} at call depth {depth}: {} KiB of \
                     this thread's {} KiB stack left (callbacks need {} KiB); run deep recursion \
                     on a thread with a larger stack (the call depth limit, {limit}, is set by \
                     {MAX_CALL_DEPTH_ENV}, RFFISetMaxCallDepth or `ffi.SetMaxCallDepth`)",
                    describe(),
                    sp.saturating_sub(low) / 1024,
                    size / 1024,
                    reserve(size) / 1024
                ),
            ));
        }
        Ok(())
    }
}

/// Runs `f`, catching a panic, as a boundary that turns panics into errors: while `f` runs, a panic
/// on this thread is known to be caught here (`catching_panics`). Costs the guard lookup of the
/// fast path and two stores.
#[inline(always)]
pub(crate) fn catching<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    // The guard first, then one `catch_unwind`: with a single call site `f` stays inlined.
    let guard = match fast_guard() {
        Some(guard) => guard as *const Guard,
        None => guard_slow(),
    };
    // SAFETY: a static guard, or this thread's (`thread_slot::guard_ptr`), which lives until the
    // thread exits, so through this call.
    let counter = unsafe { &(*guard).catching };
    let outer = counter.load(Ordering::Relaxed);
    counter.store(outer + 1, Ordering::Relaxed);
    #[allow(clippy::disallowed_methods)] // this is `catch_panic`'s own catch
    let r = catch_unwind(AssertUnwindSafe(f));
    counter.store(outer, Ordering::Relaxed);
    r
}

/// This thread's guard when it has no slot yet (it claims one here); installs the panic hook,
/// which the quiet boundaries rely on. A thread whose thread locals are being destroyed has no
/// guard left: it counts in a shared one that the hook never reads (its panics print).
#[cold]
#[inline(never)]
fn guard_slow() -> *const Guard {
    static DETACHED: Guard = Guard::new();
    crate::error::install_panic_hook();
    let guard = thread_slot::guard_ptr();
    if guard.is_null() {
        &DETACHED
    } else {
        guard
    }
}

/// This thread's guard, for counting nested object releases; `None` while the thread's thread
/// locals are being destroyed (no guard is left then).
#[inline(always)]
pub(crate) fn release_guard() -> Option<&'static Guard> {
    match fast_guard() {
        Some(guard) => Some(guard),
        None => release_guard_slow(),
    }
}

#[cold]
#[inline(never)]
fn release_guard_slow() -> Option<&'static Guard> {
    let guard = thread_slot::guard_ptr();
    // SAFETY: a static guard, or this thread's thread local, which lives until the thread exits;
    // a release returns before its thread does.
    (!guard.is_null()).then(|| unsafe { &*guard })
}

/// Whether a panic on this thread now happens inside `catching`, so becomes an error.
pub(crate) fn catching_panics() -> bool {
    match fast_guard() {
        Some(guard) => guard.catching.load(Ordering::Relaxed) != 0,
        None => with_guard(|guard| guard.catching.load(Ordering::Relaxed) != 0),
    }
}

/// The maximum call depth in effect (reading `RFFI_MAX_CALL_DEPTH` the first time). A value of
/// the variable that is not an integer from 1 to 2^31-1 is a ValueError naming it.
pub fn max_call_depth() -> Result<u32> {
    let limit = MAX_DEPTH.load(Ordering::Relaxed);
    if limit != 0 {
        return Ok(limit);
    }
    let from_env = match std::env::var(MAX_CALL_DEPTH_ENV) {
        Err(_) => RFFI_DEFAULT_MAX_CALL_DEPTH,
        Ok(text) => parse_limit(text.trim()).ok_or_else(|| {
            Error::value_error(format!(
                "{MAX_CALL_DEPTH_ENV}={text:?} is not a call depth (an integer from 1 to {})",
                i32::MAX
            ))
        })?,
    };
    // Lose gracefully to a concurrent `set_max_call_depth`.
    let _ = MAX_DEPTH.compare_exchange(0, from_env, Ordering::Relaxed, Ordering::Relaxed);
    Ok(MAX_DEPTH.load(Ordering::Relaxed))
}

fn parse_limit(text: &str) -> Option<u32> {
    text.parse::<i64>().ok().and_then(checked_limit)
}

fn checked_limit(n: i64) -> Option<u32> {
    (1..=i64::from(i32::MAX)).contains(&n).then_some(n as u32)
}

/// Sets the maximum call depth for every thread; returns the previous one. `limit` must be from
/// 1 to 2^31-1 (a ValueError otherwise).
pub fn set_max_call_depth(limit: i64) -> Result<u32> {
    let Some(limit) = checked_limit(limit) else {
        return Err(Error::value_error(format!(
            "the maximum call depth must be an integer from 1 to {}, not {limit}",
            i32::MAX
        )));
    };
    // An invalid environment variable is replaced, not reported, by an explicit setting.
    let previous = max_call_depth().unwrap_or(RFFI_DEFAULT_MAX_CALL_DEPTH);
    MAX_DEPTH.store(limit, Ordering::Relaxed);
    Ok(previous)
}

/// The lowest stack address deep recursion of the runtime's own (structural operations over a
/// nested value) may reach on this thread: its stack's bottom plus the reserve a callback keeps,
/// or 0 when the stack's bounds are unknown.
pub(crate) fn recursion_floor() -> usize {
    thread_local! {
        // Measured once per thread: finding a thread's stack can read /proc (the main thread's).
        static BOUNDS: core::cell::Cell<Option<Option<(usize, usize)>>> =
            const { core::cell::Cell::new(None) };
    }
    let bounds = BOUNDS.with(|b| {
        if b.get().is_none() {
            b.set(Some(stack_bounds()));
        }
        b.get().flatten()
    });
    match bounds {
        Some((low, size)) if (low..low + size).contains(&stack_pointer()) => low + reserve(size),
        _ => 0,
    }
}

/// The current stack pointer. Not the address of a local: AddressSanitizer's use-after-return
/// detection moves address-taken locals to a heap "fake stack", which would read as a stack
/// already exhausted.
#[inline(always)]
pub(crate) fn stack_pointer() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let sp: usize;
        // SAFETY: copies the stack pointer register; touches no memory and no flags.
        unsafe {
            core::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }
    #[cfg(target_arch = "aarch64")]
    {
        let sp: usize;
        // SAFETY: as above.
        unsafe {
            core::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let marker = 0u8;
        core::hint::black_box(core::ptr::addr_of!(marker)) as usize
    }
}

/// The stack to keep free below a callback's entry, for a stack of `size` bytes.
fn reserve(size: usize) -> usize {
    (size / 4).min(MAX_RESERVE)
}

/// This thread's stack: lowest address and size (Linux; `None` elsewhere or on failure).
#[cfg(target_os = "linux")]
fn stack_bounds() -> Option<(usize, usize)> {
    // SAFETY: pthread_getattr_np fills a zeroed attribute object for the calling thread, which
    // pthread_attr_destroy then releases; getstack only reads it.
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = core::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (rc == 0 && !addr.is_null() && size > 0).then_some((addr as usize, size))
    }
}

#[cfg(not(target_os = "linux"))]
fn stack_bounds() -> Option<(usize, usize)> {
    None
}

crate::function_registry::register_builtin!("ffi.SetMaxCallDepth", |limit: i64| -> Result<i64> {
    set_max_call_depth(limit).map(i64::from)
});

crate::function_registry::register_builtin!("ffi.GetMaxCallDepth", || -> Result<i64> {
    max_call_depth().map(i64::from)
});
