//! Futex waits and wakes on words of shared memory (not `FUTEX_PRIVATE`: the words live in
//! mappings that several processes share, the session's progress block and a communicator's file).

use std::sync::atomic::AtomicU32;
use std::time::Duration;

fn futex(word: &AtomicU32, op: i32, val: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs() as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: the word lives in a mapping that outlives the call; a wait returns at once when the
    // word no longer holds `val`, on a wake, a signal or the timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            val,
            tsp,
            std::ptr::null::<u32>(),
            0,
        )
    };
}

/// Sleeps while `word` holds `val`, at most `timeout` (a wake or a signal ends it early).
pub fn wait(word: &AtomicU32, val: u32, timeout: Duration) {
    futex(word, libc::FUTEX_WAIT, val, Some(timeout));
}

/// Wakes every thread sleeping on `word`.
pub fn wake_all(word: &AtomicU32) {
    futex(word, libc::FUTEX_WAKE, i32::MAX as u32, None);
}
