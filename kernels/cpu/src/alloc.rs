//! Outputs of the allocating form when the host installed no environment allocator.
//!
//! Large buffers are 2 MiB aligned and advised for transparent huge pages, as numpy does: a
//! fresh 64 MiB output then faults in 32 pages instead of 16384, which on this kind of machine
//! is most of the cost of an allocating `add`. Small ones come from rffi's own allocator.

use rffi_core::abi::kDLCPU;
use rffi_core::error::kind;
use rffi_core::{DataType, Device, Error, Result, Tensor};
use std::alloc::Layout;

const HUGE: usize = 2 << 20;

pub fn empty(shape: &[i64], dtype: DataType, device: Device) -> Result<Tensor> {
    let numel = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d.max(0)));
    let bytes = numel
        .and_then(|n| (n as usize).checked_mul(dtype.bytes_per_element()))
        .filter(|&b| b <= isize::MAX as usize / 2);
    match bytes {
        Some(b) if b >= HUGE && device.device_type() == kDLCPU => huge(b, shape, dtype, device),
        _ => Tensor::empty(shape, dtype, device),
    }
}

fn huge(bytes: usize, shape: &[i64], dtype: DataType, device: Device) -> Result<Tensor> {
    let layout = Layout::from_size_align(bytes.next_multiple_of(HUGE), HUGE)
        .map_err(|e| Error::value_error(format!("kernels: cannot lay out {bytes} bytes: {e}")))?;
    // SAFETY: a non-zero size. The memory is uninitialized; every kernel writes all of its
    // output before the tensor is returned, and a failed call drops it unread.
    let data = unsafe { std::alloc::alloc(layout) };
    if data.is_null() {
        return Err(Error::new(
            kind::MEMORY_ERROR,
            format!(
                "kernels: cannot allocate {bytes} bytes for a {dtype} tensor of shape {shape:?}"
            ),
        ));
    }
    // SAFETY: advice on memory we own; failure (no THP support) only loses the speed-up.
    unsafe { libc::madvise(data.cast(), layout.size(), libc::MADV_HUGEPAGE) };
    let addr = data as usize;
    let release = Box::new(move || {
        // SAFETY: allocated above with this layout, released once by the tensor's deleter.
        unsafe { std::alloc::dealloc(addr as *mut u8, layout) }
    });
    // SAFETY: a compact buffer of `bytes` bytes, freed by `release` only.
    unsafe { rffi_kernels::alloc::wrap_allocation(data.cast(), shape, dtype, device, release) }
}
