//! Panics at this library's entry points. Every entry catches them (`catch`), and the error it
//! raises says what panicked, where: `rffi: panic in the fast call path: <message> (at
//! <file>:<line>)`. Nothing is printed: this library's panic hook (its own copy of std's, which
//! the host's hooks and other libraries' never see) keeps the site for the catch instead. A panic
//! outside every `catch` (which ends the process) is still printed, by the default hook.

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// The site of this thread's panic being unwound (set by the hook, taken by `catch`).
    static SITE: RefCell<Option<String>> = const { RefCell::new(None) };
    /// How many `catch` calls this thread is inside.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
}

/// Replaces the printing default hook with one that records the site of a panic that a `catch`
/// will catch, and prints the others (once per process).
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let print = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // `try_with`: a panic while the thread's locals are being destroyed has no slots.
            if CATCHING.try_with(Cell::get).unwrap_or(0) == 0 {
                return print(info);
            }
            let site = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            let _ = SITE.try_with(|s| *s.borrow_mut() = site);
        }))
    });
}

/// Runs `f`, turning a panic into its message: the payload's text (a `&str` or `String`, as
/// `panic!` makes) and the site.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    CATCHING.with(|c| c.set(c.get() + 1));
    let caught = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    caught.map_err(|payload| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        match SITE.try_with(|s| s.borrow_mut().take()).ok().flatten() {
            Some(site) => format!("{text} (at {site})"),
            None => text,
        }
    })
}

/// "rffi: panic in `entry`: `message`" as a C string (a NUL in the message becomes `\0`).
pub(crate) fn describe(entry: &str, message: &str) -> CString {
    let text = format!("rffi: panic in {entry}: {message}").replace('\0', "\\0");
    CString::new(text).expect("NULs replaced")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_site() {
        assert_eq!(catch(|| 5), Ok(5));
        let line = line!() + 1;
        let e = catch(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(e, format!("boom 7 (at {}:{line})", file!()));
        let e = catch(|| std::panic::panic_any(3u8)).unwrap_err();
        assert!(e.starts_with("a panic without a message (at "), "{e}");
        assert_eq!(
            describe("a native builtin", "x\0y").to_str().unwrap(),
            "rffi: panic in a native builtin: x\\0y"
        );
    }
}
