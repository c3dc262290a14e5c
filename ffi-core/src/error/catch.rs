//! Panics turned into errors: the panic hook that records where a panic happened, `catch_panic`,
//! `Error::from_panic`, and `Error::context` for a boundary that caught a failure.

use super::body::Site;
use super::traceback::native_capture_enabled;
use super::{kind, Error, Result};
use backtrace::Backtrace;
use std::borrow::Cow;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
