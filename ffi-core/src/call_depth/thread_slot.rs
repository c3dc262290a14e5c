//! Where a thread's call-depth guard and tensor block caches live, found on the fast path without
//! a thread-local access.
//!
//! Why not a plain thread local: librffi.so is usually loaded with dlopen (by Python, by C hosts
//! that load it at run time), so a Rust thread local in it is reached through `__tls_get_addr`
//! (the general-dynamic TLS model), which measured about 2 ns per callback entry, more than the
//! rest of the guard. The initial-exec model would avoid that call, but it makes every image that
//! links rffi-core (librffi.so and each Rust plugin) take its whole TLS block from glibc's small
//! static-TLS reserve when it is dlopen'ed, and fail to load ("cannot allocate memory in static
//! TLS block") once the reserve is spent.
//!
//! Instead: a fixed table of `SLOTS` guards in static memory, indexed by a hash of the thread
//! pointer (the address of the thread's control block, which the ELF TLS ABI keeps in `fs:0` on
//! x86-64 and in `tpidr_el0` on AArch64; it is unique among live threads). A thread claims the
//! slot its hash names on its first callback, if that slot is free, and holds it until it exits.
//! The fast path is a register read, a multiply and one compare of the slot's owner with the
//! thread pointer. A thread whose slot is taken keeps its guard in an ordinary thread local and
//! always takes the slow path (as fast as before this table existed). Each thread decides once
//! which guard it uses, so its depth is never split between two.
//!
//! Lifetimes: a thread-local destructor frees the slot when its thread exits (giving the cached
//! blocks back to the allocator first), so a later thread that reuses the thread pointer finds it
//! free; callbacks entered during thread teardown, after that destructor, count from a fresh
//! guard. In the child of a `fork`, a pthread_atfork handler frees the slots of the threads that
//! did not survive.

use super::Guard;
use crate::tensor::ThreadBlocks;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// log2 of the number of slots.
const SLOT_BITS: u32 = 6;
const SLOTS: usize = 1 << SLOT_BITS;

/// `Slot::owner` of a free slot, and of one being claimed (no thread pointer is 0 or 1).
const FREE: usize = 0;
const CLAIMING: usize = 1;

/// A guard and the thread that owns it, on a cache line of its own (threads update their depth
/// on every callback).
#[repr(align(64))]
struct Slot {
    owner: AtomicUsize,
    guard: Guard,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        owner: AtomicUsize::new(FREE),
        guard: Guard::new(),
    }
}; SLOTS];

/// The block caches of each slot's thread, beside the table rather than in it: the guard's
/// slot stays one cache line, as the callback entry wants.
static BLOCKS: [ThreadBlocks; SLOTS] = [const { ThreadBlocks::new() }; SLOTS];

/// The thread pointer, where the platform's TLS ABI defines one that user code may read.
#[inline(always)]
fn thread_pointer() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let tp: usize;
        // SAFETY: the x86-64 ELF TLS ABI stores the thread pointer at offset 0 of the block `fs`
        // points to, for every thread; this reads that word and nothing else.
        unsafe {
            core::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) tp,
                options(nostack, readonly, preserves_flags, pure)
            )
        };
        Some(tp)
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        let tp: usize;
        // SAFETY: reads the thread pointer register; touches no memory.
        unsafe {
            core::arch::asm!(
                "mrs {}, tpidr_el0",
                out(reg) tp,
                options(nomem, nostack, preserves_flags, pure)
            )
        };
        Some(tp)
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        None
    }
}

/// The index of the slot a thread pointer hashes to (Fibonacci hashing: thread control blocks
/// lie a stack size apart, which the multiply spreads over the table).
#[inline(always)]
fn index_of(tp: usize) -> usize {
    (tp as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize >> (usize::BITS - SLOT_BITS)
}

/// The index of this thread's slot, if it owns one.
#[inline(always)]
fn own_index() -> Option<usize> {
    let tp = thread_pointer()?;
    let i = index_of(tp);
    (TABLE[i].owner.load(Ordering::Relaxed) == tp).then_some(i)
}

/// This thread's guard when it owns a slot; `None` sends the caller to `with_guard`.
#[inline(always)]
pub(crate) fn fast_guard() -> Option<&'static Guard> {
    own_index().map(|i| &TABLE[i].guard)
}

/// This thread's block caches when it owns a slot; `None`: use the global allocator. (A thread
/// claims its slot on its first callback or object release, so the tensor paths find it.)
#[inline(always)]
pub(crate) fn thread_blocks() -> Option<&'static ThreadBlocks> {
    own_index().map(|i| &BLOCKS[i])
}

/// Which guard a thread uses, decided on its first callback.
#[derive(Clone, Copy)]
enum Choice {
    Undecided,
    /// The index of the slot it owns.
    Slot(usize),
    Own,
}

/// A thread's record of its choice, and its guard when no slot was free.
struct Holder {
    choice: Cell<Choice>,
    own: Guard,
}

impl Holder {
    fn guard(&self) -> &Guard {
        match self.choice.get() {
            Choice::Slot(i) => &TABLE[i].guard,
            Choice::Own => &self.own,
            Choice::Undecided => {
                let choice = thread_pointer()
                    .and_then(claim)
                    .map_or(Choice::Own, Choice::Slot);
                self.choice.set(choice);
                self.guard()
            }
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if let Choice::Slot(i) = self.choice.get() {
            self.choice.set(Choice::Own);
            // SAFETY: this thread owns the slot and is not inside a cache operation (they call
            // nothing); from here on its releases miss the slot and use the global allocator.
            unsafe { BLOCKS[i].drain() };
            // Release: the next owner's claim (Acquire) sees this thread's last writes.
            TABLE[i].owner.store(FREE, Ordering::Release);
        }
    }
}

thread_local! {
    static HOLDER: Holder = const {
        Holder { choice: Cell::new(Choice::Undecided), own: Guard::new() }
    };
}

/// Takes the slot `tp` hashes to if it is free; its index.
fn claim(tp: usize) -> Option<usize> {
    register_fork_handler();
    let i = index_of(tp);
    let slot = &TABLE[i];
    slot.owner
        .compare_exchange(FREE, CLAIMING, Ordering::Acquire, Ordering::Relaxed)
        .ok()?;
    slot.guard.reset();
    slot.owner.store(tp, Ordering::Release);
    Some(i)
}

/// Runs `f` with this thread's guard (the slow path: claims a slot on the thread's first call).
pub(crate) fn with_guard<R>(f: impl FnOnce(&Guard) -> R) -> R {
    let mut f = Some(f);
    match HOLDER.try_with(|h| f.take().map(|f| f(h.guard()))) {
        Ok(Some(r)) => r,
        // The thread is exiting and its thread locals are gone: count from a fresh guard.
        _ => (f.take().expect("not run without the thread local"))(&Guard::new()),
    }
}

/// This thread's guard, claiming its slot if it has none (as `with_guard`): the slot's, which is
/// static, or the thread local's, which lives until the thread exits. Null while the thread's
/// thread locals are being destroyed (no guard is left then).
pub(crate) fn guard_ptr() -> *const Guard {
    HOLDER
        .try_with(|h| h.guard() as *const Guard)
        .unwrap_or(core::ptr::null())
}

/// In a forked child only the forking thread survives: free every other slot (its owner's
/// destructor never runs there), so that a new thread reusing a dead thread's pointer does not
/// inherit its depth.
#[cfg(target_os = "linux")]
extern "C" fn free_dead_slots_after_fork() {
    let tp = thread_pointer();
    for slot in &TABLE {
        let owner = slot.owner.load(Ordering::Relaxed);
        if owner != FREE && Some(owner) != tp {
            slot.owner.store(FREE, Ordering::Relaxed);
        }
    }
}

fn register_fork_handler() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: registers a handler that only touches this module's static table; the
            // library is never unloaded, so the handler stays valid.
            unsafe { libc::pthread_atfork(None, None, Some(free_dead_slots_after_fork)) };
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot_of(tp: usize) -> &'static Slot {
        &TABLE[index_of(tp)]
    }

    #[test]
    fn a_thread_claims_a_slot_and_frees_it_when_it_exits() {
        /// Registered before HOLDER, so destroyed after it: sees the slot after the release.
        struct AfterHolder(std::sync::mpsc::Sender<bool>, usize);
        impl Drop for AfterHolder {
            fn drop(&mut self) {
                let freed = slot_of(self.1).owner.load(Ordering::Relaxed) != self.1;
                let _ = self.0.send(freed);
            }
        }
        thread_local! {
            static AFTER: std::cell::RefCell<Option<AfterHolder>> =
                const { std::cell::RefCell::new(None) };
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let claimed = std::thread::spawn(move || {
            let tp = thread_pointer()?;
            AFTER.with(|a| *a.borrow_mut() = Some(AfterHolder(tx, tp)));
            assert!(fast_guard().is_none(), "no slot before the first callback");
            let in_slot = with_guard(|g| std::ptr::eq(g, &slot_of(tp).guard));
            // A thread that got its slot finds it on the fast path; one whose slot another live
            // thread holds never does.
            let fast = fast_guard().is_some_and(|g| std::ptr::eq(g, &slot_of(tp).guard));
            assert_eq!(fast, in_slot);
            Some(in_slot)
        })
        .join()
        .unwrap();
        if claimed.is_some() {
            assert!(
                rx.recv().unwrap(),
                "the slot is free once its thread has exited"
            );
        }
    }

    #[test]
    fn threads_use_distinct_guards() {
        const THREADS: usize = 8;
        let all_in = std::sync::Arc::new(std::sync::Barrier::new(THREADS));
        let guards: Vec<usize> = (0..THREADS)
            .map(|_| {
                let all_in = all_in.clone();
                std::thread::spawn(move || {
                    let g = with_guard(|g| g as *const Guard as usize);
                    // Keep every thread (and so its guard) alive until all have one.
                    all_in.wait();
                    g
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let mut unique = guards.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), guards.len(), "{guards:x?}");
    }

    #[test]
    fn a_threads_tensor_memory_is_reused_and_given_back_when_it_exits() {
        let made = std::thread::spawn(|| {
            let tensor_at = || {
                let t = crate::tensor::Tensor::from_slice(&[1f32, 2.0], &[2]).unwrap();
                t.as_raw() as usize
            };
            tensor_at(); // its release claims this thread's slot
            let i = own_index()?;
            // The memory of a freed tensor waits in the slot's cache for the next one.
            let first = tensor_at();
            assert!(BLOCKS[i].cached() > 0);
            assert_eq!(tensor_at(), first);
            Some(i)
        })
        .join()
        .unwrap();
        let Some(i) = made else { return };
        // Given back at exit, unless a new thread has taken the slot meanwhile.
        if TABLE[i].owner.load(Ordering::Acquire) == FREE {
            assert_eq!(BLOCKS[i].cached(), 0);
        }
    }

    /// Runs `f` on a new thread whose own slot another thread (a made-up owner) already holds.
    fn on_thread_with_slot_taken<R: Send + 'static>(f: fn() -> R) -> Option<R> {
        std::thread::spawn(move || {
            let slot = slot_of(thread_pointer()?);
            let fake = 0x1000_0000usize;
            slot.owner
                .compare_exchange(FREE, fake, Ordering::Acquire, Ordering::Relaxed)
                .ok()?;
            let r = f();
            slot.owner.store(FREE, Ordering::Release);
            Some(r)
        })
        .join()
        .unwrap()
    }

    #[test]
    fn a_thread_whose_slot_is_taken_keeps_its_own_guard() {
        let Some((own, same_again, fast)) = on_thread_with_slot_taken(|| {
            let own = with_guard(|g| g as *const Guard as usize);
            let again = with_guard(|g| g as *const Guard as usize);
            (own, again == own, fast_guard().is_some())
        }) else {
            return;
        };
        assert!(same_again);
        assert!(!fast, "the fast path never finds another thread's slot");
        assert!(TABLE
            .iter()
            .all(|s| !std::ptr::eq(&s.guard, own as *const Guard)));
    }

    #[test]
    fn after_fork_only_the_forking_threads_slot_stays_taken() {
        let Some(tp) = thread_pointer() else { return };
        with_guard(|_| ());
        // A slot held by a thread that did not survive the fork (a made-up owner).
        let dead = (0..SLOTS)
            .map(|i| 0x2000_0000usize + (i << 12))
            .find(|&p| !std::ptr::eq(slot_of(p), slot_of(tp)))
            .unwrap();
        let slot = slot_of(dead);
        if slot
            .owner
            .compare_exchange(FREE, dead, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return; // a live test thread holds it
        }
        let mine = slot_of(tp).owner.load(Ordering::Relaxed) == tp;
        // A real fork: the handler runs in the child, whose only thread is this one. (Calling
        // the handler here would free the slots of the other test threads, which are alive.)
        // SAFETY: the child only loads atomics and calls _exit, which are async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let freed = slot.owner.load(Ordering::Relaxed) == FREE;
            let kept = (slot_of(tp).owner.load(Ordering::Relaxed) == tp) == mine;
            // SAFETY: ends the child without running the parent's destructors or test harness.
            unsafe { libc::_exit(if freed && kept { 0 } else { 1 }) };
        }
        slot.owner.store(FREE, Ordering::Release);
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "in the child, the dead thread's slot was not freed or the forking thread's changed \
             (status {status})"
        );
    }

    #[test]
    fn callbacks_during_thread_teardown_get_a_fresh_guard() {
        struct CallsAtExit(std::sync::mpsc::Sender<u32>);
        impl Drop for CallsAtExit {
            fn drop(&mut self) {
                // HOLDER was registered after this value, so it is destroyed before it.
                let depth = with_guard(|g| g.depth.load(Ordering::Relaxed) + 7);
                let _ = self.0.send(depth);
            }
        }
        thread_local! {
            static AT_EXIT: std::cell::RefCell<Option<CallsAtExit>> =
                const { std::cell::RefCell::new(None) };
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            AT_EXIT.with(|c| *c.borrow_mut() = Some(CallsAtExit(tx)));
            with_guard(|g| g.push());
        })
        .join()
        .unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
    }
}
