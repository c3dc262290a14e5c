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

use core::cell::UnsafeCell;
use core::ptr::NonNull;
use std::alloc::Layout;
use std::thread::LocalKey;

/// Blocks kept per thread and size.
const CAPACITY: usize = 32;

/// Freed blocks of `SIZE` bytes aligned to `ALIGN`, owned by this cache.
pub(super) struct FreeBlocks<const SIZE: usize, const ALIGN: usize> {
    len: usize,
    blocks: [*mut u8; CAPACITY],
}

impl<const SIZE: usize, const ALIGN: usize> FreeBlocks<SIZE, ALIGN> {
    pub(super) const fn new() -> Self {
        FreeBlocks {
            len: 0,
            blocks: [core::ptr::null_mut(); CAPACITY],
        }
    }

    /// The layout of every block.
    pub(super) const LAYOUT: Layout = match Layout::from_size_align(SIZE, ALIGN) {
        Ok(layout) => layout,
        Err(_) => panic!("invalid block layout"),
    };
}

impl<const SIZE: usize, const ALIGN: usize> Drop for FreeBlocks<SIZE, ALIGN> {
    fn drop(&mut self) {
        for &block in &self.blocks[..self.len] {
            // SAFETY: every cached block came from the global allocator with `LAYOUT` (see
            // `alloc`/`free`) and is owned by the cache alone.
            unsafe { std::alloc::dealloc(block, Self::LAYOUT) };
        }
        self.len = 0;
    }
}

/// A thread's cache of one block size.
pub(super) type Cache<const SIZE: usize, const ALIGN: usize> =
    LocalKey<UnsafeCell<FreeBlocks<SIZE, ALIGN>>>;

/// A block of `FreeBlocks::<SIZE, ALIGN>::LAYOUT`: a cached one if this thread has any, else a
/// fresh one (aborting through `handle_alloc_error` if there is no memory, as `Box` does).
/// Release it with `free` on the same cache.
#[inline]
pub(super) fn alloc<const SIZE: usize, const ALIGN: usize>(
    cache: &'static Cache<SIZE, ALIGN>,
) -> NonNull<u8> {
    // During thread teardown the cache may be gone; the global allocator still works.
    let cached = cache
        .try_with(|c| {
            // SAFETY: the cache is only touched by this thread, in this function and `free`,
            // neither of which calls out while it holds the reference.
            let c = unsafe { &mut *c.get() };
            if c.len == 0 {
                return None;
            }
            c.len -= 1;
            // SAFETY: entries below `len` are cached blocks; the block now leaves the cache.
            NonNull::new(unsafe { *c.blocks.get_unchecked(c.len) })
        })
        .ok()
        .flatten();
    match cached {
        Some(block) => block,
        None => alloc_fresh::<SIZE, ALIGN>(),
    }
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
/// `block` came from `alloc` on a cache of the same `SIZE` and `ALIGN` (any thread's), and is
/// not used afterwards.
#[inline]
pub(super) unsafe fn free<const SIZE: usize, const ALIGN: usize>(
    cache: &'static Cache<SIZE, ALIGN>,
    block: NonNull<u8>,
) {
    let kept = cache
        .try_with(|c| {
            // SAFETY: as in `alloc`.
            let c = unsafe { &mut *c.get() };
            if c.len == CAPACITY {
                return false;
            }
            // SAFETY: `len < CAPACITY`; the cache takes over the block.
            unsafe { *c.blocks.get_unchecked_mut(c.len) = block.as_ptr() };
            c.len += 1;
            true
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: forwarded contract: a block of `LAYOUT` from the global allocator.
        unsafe { std::alloc::dealloc(block.as_ptr(), FreeBlocks::<SIZE, ALIGN>::LAYOUT) };
    }
}
