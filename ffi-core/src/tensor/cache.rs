//! Per-thread caches of freed memory blocks of one fixed size: tensor objects of up to
//! `SMALL_NDIM` dimensions, and the managed tensors DLPack export hands out.
//!
//! Importing, exporting and releasing tensors is a hot path of every framework boundary (each
//! call that passes a tensor may do it), and there the general-purpose allocator's `malloc` and
//! `free` cost more than the rest of the work together. A thread keeps up to `CAPACITY` freed
//! blocks per size and hands them out again, as CPython's free lists do; blocks go back to the
//! global allocator when the cache is full and when the thread exits. Blocks freed on another
//! thread than the one that allocated them simply join that thread's cache: every block of a
//! cache has the same layout and came from the global allocator.
//!
//! The caches live beside the thread's call-depth guard in the thread-slot table
//! (`call_depth::thread_blocks`), not in thread locals: librffi.so is usually dlopen'ed, where a
//! thread local costs a `__tls_get_addr` call, and an import plus a release took two of them. A
//! thread without a slot (before its first release, or when another thread holds the slot its
//! thread pointer names) uses the global allocator directly.

use super::dlpack::ExportBlocks;
use super::layout::SmallBlocks;
use core::cell::UnsafeCell;
use core::ptr::NonNull;
use std::alloc::Layout;

/// Blocks kept per thread and size.
const CAPACITY: usize = 32;

/// Freed blocks of `SIZE` bytes aligned to `ALIGN`, owned by this cache.
pub(super) struct FreeBlocks<const SIZE: usize, const ALIGN: usize> {
    /// The block freed last (null: none), apart from the rest: the next `alloc` takes it with
    /// one load, not two loads that each wait for the last `free`'s stores.
    top: *mut u8,
    len: usize,
    blocks: [*mut u8; CAPACITY],
}

impl<const SIZE: usize, const ALIGN: usize> FreeBlocks<SIZE, ALIGN> {
    pub(super) const fn new() -> Self {
        FreeBlocks {
            top: core::ptr::null_mut(),
            len: 0,
            blocks: [core::ptr::null_mut(); CAPACITY],
        }
    }

    /// The layout of every block.
    pub(super) const LAYOUT: Layout = match Layout::from_size_align(SIZE, ALIGN) {
        Ok(layout) => layout,
        Err(_) => panic!("invalid block layout"),
    };

    fn drain(&mut self) {
        let top = core::mem::replace(&mut self.top, core::ptr::null_mut());
        for &block in self.blocks[..self.len]
            .iter()
            .chain((!top.is_null()).then_some(&top))
        {
            // SAFETY: every cached block came from the global allocator with `LAYOUT` (see
            // `alloc`/`free`) and is owned by the cache alone.
            unsafe { std::alloc::dealloc(block, Self::LAYOUT) };
        }
        self.len = 0;
    }
}

/// A thread's caches, one per block size, in its thread slot.
pub(crate) struct ThreadBlocks {
    pub(super) small_tensors: UnsafeCell<SmallBlocks>,
    pub(super) exports: UnsafeCell<ExportBlocks>,
}

// SAFETY: a slot's caches are only touched by the thread that owns the slot, in `alloc`, `free`
// and `drain` (which call nothing while they hold a reference); ownership passes between threads
// through the slot's owner word (a Release store when a thread gives the slot up, an Acquire
// claim by the next), so each owner sees its predecessor's writes.
unsafe impl Sync for ThreadBlocks {}

impl ThreadBlocks {
    pub(crate) const fn new() -> Self {
        ThreadBlocks {
            small_tensors: UnsafeCell::new(SmallBlocks::new()),
            exports: UnsafeCell::new(ExportBlocks::new()),
        }
    }

    /// How many blocks are cached (the owner's view).
    #[cfg(test)]
    pub(crate) fn cached(&self) -> usize {
        let count = |top: *mut u8, len: usize| len + usize::from(!top.is_null());
        // SAFETY: the tests call this from the owning thread, or once the slot is free.
        unsafe {
            let (t, e) = (&*self.small_tensors.get(), &*self.exports.get());
            count(t.top, t.len) + count(e.top, e.len)
        }
    }

    /// Gives every cached block back to the global allocator (the slot's thread is exiting).
    ///
    /// # Safety
    /// Called by the slot's owner, with no `alloc` or `free` of this slot running.
    pub(crate) unsafe fn drain(&self) {
        // SAFETY: forwarded contract: this thread alone touches the caches now.
        unsafe {
            (*self.small_tensors.get()).drain();
            (*self.exports.get()).drain();
        }
    }
}

/// Which cache (`B`, a `FreeBlocks`) of a thread's blocks a call uses.
pub(super) type Pick<B> = fn(&ThreadBlocks) -> &UnsafeCell<B>;

/// A block of `FreeBlocks::<SIZE, ALIGN>::LAYOUT`: a cached one if this thread has any, else a
/// fresh one (aborting through `handle_alloc_error` if there is no memory, as `Box` does).
/// Release it with `free` on the same cache.
#[inline(always)]
pub(super) fn alloc<const SIZE: usize, const ALIGN: usize>(
    pick: Pick<FreeBlocks<SIZE, ALIGN>>,
) -> NonNull<u8> {
    if let Some(blocks) = crate::call_depth::thread_blocks() {
        // SAFETY: this thread owns the slot; nothing else touches its caches while this
        // reference lives (see `ThreadBlocks`).
        let c = unsafe { &mut *pick(blocks).get() };
        if let Some(block) = NonNull::new(c.top) {
            c.top = if c.len == 0 {
                core::ptr::null_mut()
            } else {
                c.len -= 1;
                // SAFETY: entries below `len` are cached blocks; this one moves to the top.
                unsafe { *c.blocks.get_unchecked(c.len) }
            };
            return block;
        }
    }
    alloc_fresh::<SIZE, ALIGN>()
}

#[inline(never)]
fn alloc_fresh<const SIZE: usize, const ALIGN: usize>() -> NonNull<u8> {
    let layout = FreeBlocks::<SIZE, ALIGN>::LAYOUT;
    // SAFETY: the layouts used here are non-zero sized (tensor objects, managed tensors).
    let block = unsafe { std::alloc::alloc(layout) };
    NonNull::new(block).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

/// Gives a block back: into this thread's cache if it has room, else to the global allocator.
///
/// # Safety
/// `block` came from `alloc` with the same `pick` (on any thread), and is not used afterwards.
#[inline(always)]
pub(super) unsafe fn free<const SIZE: usize, const ALIGN: usize>(
    pick: Pick<FreeBlocks<SIZE, ALIGN>>,
    block: NonNull<u8>,
) {
    if let Some(blocks) = crate::call_depth::thread_blocks() {
        // SAFETY: as in `alloc`.
        let c = unsafe { &mut *pick(blocks).get() };
        if c.top.is_null() {
            c.top = block.as_ptr();
            return;
        }
        if c.len != CAPACITY {
            // SAFETY: `len < CAPACITY`; the old top joins the rest, the block is the new top.
            unsafe { *c.blocks.get_unchecked_mut(c.len) = c.top };
            c.len += 1;
            c.top = block.as_ptr();
            return;
        }
    }
    // SAFETY: forwarded contract: a block of `LAYOUT` from the global allocator.
    unsafe { std::alloc::dealloc(block.as_ptr(), FreeBlocks::<SIZE, ALIGN>::LAYOUT) };
}
