//! Device memory: temporaries in stream order, scratch kept per stream, outputs.

use super::{device_state, err, guarded};
use cudarc::driver::{result, sys};
use rffi_core::error::catch_panic;
use rffi_core::{Device, Result};
use std::sync::Mutex;

/// Zeroes `bytes` bytes at `ptr` in stream order.
///
/// # Safety
/// `ptr` .. `ptr + bytes` is device memory that the work on `stream` may write.
pub unsafe fn zero_async(ptr: u64, bytes: usize, stream: sys::CUstream) -> Result<()> {
    // SAFETY: forwarded contract.
    unsafe { result::memset_d8_async(ptr, 0, bytes, stream) }.map_err(|e| err("cuMemsetD8Async", e))
}

/// Device memory for temporaries, allocated and freed in stream order.
pub struct Scratch {
    pub ptr: u64,
    bytes: usize,
    stream: sys::CUstream,
}

impl Scratch {
    pub fn new(bytes: usize, stream: sys::CUstream) -> Result<Scratch> {
        // SAFETY: a stream-ordered allocation used only on `stream`.
        let ptr = unsafe { result::malloc_async(stream, bytes.max(1)) }
            .map_err(|e| err("cuMemAllocAsync", e))?;
        Ok(Scratch { ptr, bytes, stream })
    }

    /// Zeroes `bytes` bytes from offset `at`, in stream order.
    pub fn zero(&self, at: usize, bytes: usize) -> Result<()> {
        assert!(at + bytes <= self.bytes, "zeroing past the scratch");
        // SAFETY: within this allocation, which only `stream`'s work uses.
        unsafe { zero_async(self.ptr + at as u64, bytes, self.stream) }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let (ptr, stream) = (self.ptr, self.stream);
        let _ = catch_panic(move || {
            // SAFETY: allocated on this stream; freed after the work queued on it.
            unsafe { result::free_async(ptr, stream) }
        });
    }
}

/// Device memory kept per (device, stream) for one-pass reductions: a region of u32 counters that
/// is zero between kernels (the kernel that counts sets each counter back to 0), then room for
/// partials. A call reuses it with no allocation and no memset; one that needs more frees it and
/// allocates a larger one in stream order, zeroing its counters once. The lock is held while `f`
/// enqueues its work, so a growth on another thread cannot free memory that a launch not yet
/// enqueued would use; every use is ordered on its stream.
///
/// `f` gets the partials' address; counter `o` (o < counters / 4) is at that address - 4 (o + 1).
pub fn with_kept_scratch<R>(
    ordinal: i32,
    stream: sys::CUstream,
    counters: usize,
    partials: usize,
    f: impl FnOnce(u64) -> Result<R>,
) -> Result<R> {
    struct Kept {
        ordinal: i32,
        stream: usize,
        ptr: u64,
        counters: usize,
        partials: usize,
    }
    static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let at = kept
        .iter()
        .position(|k| k.ordinal == ordinal && k.stream == stream as usize);
    let fits = at.is_some_and(|i| kept[i].counters >= counters && kept[i].partials >= partials);
    let i = match at {
        Some(i) if fits => i,
        _ => {
            let (old_c, old_p, old_ptr) = at.map_or((0, 0, 0), |i| {
                (kept[i].counters, kept[i].partials, kept[i].ptr)
            });
            let c = counters.max(old_c).max(256).next_power_of_two();
            let p = partials.max(old_p).max(4096).next_power_of_two();
            // SAFETY: a stream-ordered allocation used only on `stream`.
            let ptr = unsafe { result::malloc_async(stream, c + p) }
                .map_err(|e| err("cuMemAllocAsync", e))?;
            // SAFETY: the counters lie within the allocation just made, used only on `stream`.
            if let Err(e) = unsafe { zero_async(ptr, c, stream) } {
                // SAFETY: allocated above on this stream, never used.
                let _ = unsafe { result::free_async(ptr, stream) };
                return Err(e);
            }
            if old_ptr != 0 {
                // SAFETY: allocated on this stream; freed after the work queued on it.
                let _ = unsafe { result::free_async(old_ptr, stream) };
            }
            let k = Kept {
                ordinal,
                stream: stream as usize,
                ptr,
                counters: c,
                partials: p,
            };
            match at {
                Some(i) => {
                    kept[i] = k;
                    i
                }
                None => {
                    kept.push(k);
                    kept.len() - 1
                }
            }
        }
    };
    let k = &kept[i];
    f(k.ptr + k.counters as u64)
}

/// Allocates a device buffer for an output when the host has no environment allocator; freed
/// (synchronously, in the device's context) when the tensor dies.
pub fn alloc_output(bytes: usize, device: Device) -> Result<(u64, Box<dyn FnOnce() + Send>)> {
    guarded("allocating an output", || {
        let state = device_state(device.index())?;
        // SAFETY: the device's context is current (the dispatcher's guard).
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| err("cuMemAlloc", e))?;
        let ctx = state.ctx;
        let release = Box::new(move || {
            let ctx = ctx;
            let _ = catch_panic(move || {
                // SAFETY: free the buffer in its own context (the deleter may run on any thread).
                unsafe {
                    let prev = result::ctx::get_current().ok().flatten();
                    let _ = result::ctx::set_current(ctx.0);
                    let _ = result::free_sync(ptr);
                    let _ = result::ctx::set_current(prev.unwrap_or(std::ptr::null_mut()));
                }
            });
        });
        Ok((ptr, release as Box<dyn FnOnce() + Send>))
    })
}
