//! The raised-error slot of the calling convention: a failed call (-1) leaves its error here, per
//! thread, for the caller to take (`RFFIErrorMoveFromRaised`).

use super::Error;
use crate::object::ObjectRef;
use std::cell::Cell;
use std::ptr::NonNull;

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
}
