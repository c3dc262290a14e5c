//! GPU memory of an NCCL rank: new tensors on its GPU and copies between them and the host, on
//! the runtime's current stream for the GPU (the one the collectives use), so a copy, the
//! collective that reads it and the copy back run in order without waits in between.
//!
//! The loader through NCCL uses these: worker 0 copies its host shards to its GPU and scatters
//! them; every worker receives into tensors made here.

use super::nccl::{guarded, NcclComm};
use cudarc::driver::{result, sys};
use rffi_core::{DataType, Device, Error, Result, Tensor};

fn driver_err(what: &str, e: result::DriverError) -> Error {
    Error::runtime_error(format!("{what}: the CUDA driver failed with {e:?}"))
}

impl NcclComm {
    fn cu_stream(&self) -> sys::CUstream {
        rffi_core::stream::current_stream(self.device()).cast()
    }

    /// A new tensor of `shape` and `dtype` on this rank's GPU: from the environment allocator
    /// when the host installed one (a framework's caching allocator), else `cuMemAlloc`, freed
    /// when the last reference dies.
    pub fn empty(&self, shape: &[i64], dtype: DataType) -> Result<Tensor> {
        let device = self.device();
        if rffi_core::tensor::env_allocator().is_some() {
            return Tensor::empty(shape, dtype, device);
        }
        let what = "allocating GPU memory";
        let elem = (dtype.bits() as usize * dtype.lanes() as usize).div_ceil(8);
        let bytes = shape
            .iter()
            .try_fold(elem, |n, &d| {
                usize::try_from(d).ok().and_then(|d| n.checked_mul(d))
            })
            .ok_or_else(|| {
                Error::value_error(format!(
                    "{what}: shape {shape:?} has a negative size or too many elements"
                ))
            })?;
        self.enter(what)?;
        let ctx = self.context();
        guarded(what, || {
            // SAFETY: this rank's context is current on the thread (`enter`).
            let ptr = unsafe { result::malloc_sync(bytes.max(1)) }
                .map_err(|e| driver_err("cuMemAlloc", e))?;
            let release = Box::new(move || {
                let _ = rffi_core::error::catch_panic(move || {
                    // The tensor may die on any thread: free in the GPU's own context (kept
                    // alive by `ctx`), then give the thread back the context it had.
                    let prev = result::ctx::get_current().ok().flatten();
                    // SAFETY: `ptr` was allocated above in `ctx` and is freed once (the deleter
                    // runs once); the contexts set are live (`ctx` retains its own).
                    unsafe {
                        let _ = result::ctx::set_current(ctx.cu_ctx());
                        let _ = result::free_sync(ptr);
                        let _ = result::ctx::set_current(prev.unwrap_or(std::ptr::null_mut()));
                    }
                });
            });
            // SAFETY: `ptr` holds `bytes` bytes on this GPU, valid until `release` runs.
            unsafe {
                rffi_kernels::alloc::wrap_allocation(
                    ptr as *mut std::ffi::c_void,
                    shape,
                    dtype,
                    device,
                    release,
                )
            }
        })
    }

    /// A copy of the contiguous host tensor `host` on this rank's GPU, enqueued on the current
    /// stream (the host memory is staged by the driver before the call returns).
    pub fn upload(&self, host: &Tensor) -> Result<Tensor> {
        let what = "copying to the GPU";
        if host.device() != Device::cpu() || !host.is_contiguous() {
            return Err(Error::value_error(format!(
                "{what}: expected a contiguous CPU tensor, got one on {}",
                host.device().type_name()
            )));
        }
        let out = self.empty(host.shape(), host.dtype())?;
        self.enter(what)?;
        let stream = self.cu_stream();
        guarded(what, || {
            // SAFETY: `host` is a contiguous CPU tensor of `nbytes` bytes.
            let src = unsafe {
                std::slice::from_raw_parts(host.element_ptr().cast::<u8>(), host.nbytes())
            };
            // SAFETY: `out` holds `nbytes` bytes on this GPU, whose context is current.
            unsafe { result::memcpy_htod_async(out.element_ptr() as u64, src, stream) }
                .map_err(|e| driver_err("cuMemcpyHtoDAsync", e))
        })?;
        Ok(out)
    }

    /// A host copy of `t`, a contiguous tensor on this rank's GPU, once the work queued on the
    /// current stream before it (a collective writing `t`) has finished.
    pub fn download(&self, t: &Tensor) -> Result<Tensor> {
        let what = "copying from the GPU";
        let host = Tensor::alloc_cpu(t.shape(), t.dtype())?;
        self.enter(what)?;
        let stream = self.cu_stream();
        guarded(what, || {
            // SAFETY: `host` is a fresh contiguous CPU tensor of `nbytes` bytes.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(host.element_ptr().cast::<u8>(), host.nbytes())
            };
            // SAFETY: `t` holds `nbytes` bytes on this GPU (the caller made it with `empty`);
            // the stream is synchronized before `host` is read.
            unsafe {
                result::memcpy_dtoh_async(dst, t.element_ptr() as u64, stream)
                    .map_err(|e| driver_err("cuMemcpyDtoHAsync", e))?;
                result::stream::synchronize(stream)
                    .map_err(|e| driver_err("cuStreamSynchronize", e))
            }
        })?;
        Ok(host)
    }

    /// Waits until the work queued on the current stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        let what = "waiting for the GPU";
        self.enter(what)?;
        let stream = self.cu_stream();
        guarded(what, || {
            // SAFETY: this rank's context is current; the stream belongs to its GPU.
            unsafe { result::stream::synchronize(stream) }
                .map_err(|e| driver_err("cuStreamSynchronize", e))
        })
    }
}
