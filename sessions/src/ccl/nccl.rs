//! The NCCL backend, through cudarc's `nccl` module with the library loaded on first use: rffi
//! builds and runs without CUDA or NCCL, and asking for NCCL without it is an error naming the
//! library files looked for.
//!
//! The controller makes the unique id (`unique_id`) and every worker joins with it (`join`): the
//! worker binds its GPU's primary context (the one PyTorch and the CUDA runtime use) to its
//! thread and calls `ncclCommInitRank`, which returns once every rank has joined. Collectives run
//! on the runtime's current stream for the device (`rffi_core::stream::current_stream`), so they
//! are ordered with the kernels the same worker launches; they return once enqueued.

use super::{elem_size, Kind, Op, Plan};
use cudarc::driver::CudaContext;
use cudarc::nccl::{result, sys};
use rffi_core::error::catch_panic;
use rffi_core::{DataType, Device, Error, Result, Tensor};
use std::ffi::c_void;
use std::sync::Arc;

/// Runs `f`, turning a panic (cudarc panics when a library or a symbol is missing) into an error,
/// quietly, the way every rffi boundary does (`catch_panic`).
pub(super) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_panic(f).unwrap_or_else(|e| Err(e.context(what)))
}

fn library_error(lib: &str, what: &str) -> Error {
    Error::runtime_error(format!(
        "{what}: NCCL needs the {lib} library, which could not be loaded (looked for {}); \
         install it or add its folder to LD_LIBRARY_PATH",
        cudarc::get_lib_name_candidates(lib).join(", ")
    ))
}

/// Whether the CUDA driver and NCCL libraries can be loaded; an error naming the missing one.
pub fn check_libraries(what: &str) -> Result<()> {
    // SAFETY: these only try to dlopen the libraries.
    let driver = catch_panic(|| unsafe { cudarc::driver::sys::is_culib_present() });
    if !driver.unwrap_or(false) {
        return Err(library_error("cuda", what));
    }
    // SAFETY: as above.
    let nccl = catch_panic(|| unsafe { sys::is_culib_present() });
    if !nccl.unwrap_or(false) {
        return Err(library_error("nccl", what));
    }
    Ok(())
}

fn nccl_err(what: &str, e: result::NcclError) -> Error {
    Error::runtime_error(format!("{what}: NCCL failed with {:?}", e.0))
}

/// A new NCCL unique id, as the 128 bytes the workers join with.
pub fn unique_id() -> Result<Vec<u8>> {
    check_libraries("init_ccl(\"nccl\")")?;
    guarded("ncclGetUniqueId", || {
        let id = result::get_uniqueid().map_err(|e| nccl_err("ncclGetUniqueId", e))?;
        Ok(id.internal.iter().map(|c| *c as u8).collect())
    })
}

/// One rank of an NCCL communicator.
pub struct NcclComm {
    comm: sys::ncclComm_t,
    ctx: Arc<CudaContext>,
    device: i32,
    rank: usize,
    world: usize,
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        let comm = self.comm;
        let _ = guarded("ncclCommDestroy", || {
            // SAFETY: destroying the communicator made in `join`, once.
            let _ = unsafe { result::comm_destroy(comm) };
            Ok(())
        });
    }
}

fn nccl_type(dt: DataType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t::*;
    match (dt.code(), dt.bits()) {
        (2, 32) => ncclFloat32,
        (2, 16) => ncclFloat16,
        (4, 16) => ncclBfloat16,
        (0, 32) => ncclInt32,
        (0, 64) => ncclInt64,
        _ => ncclUint8,
    }
}

fn nccl_op(op: Op) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t::*;
    match op {
        Op::Sum => ncclSum,
        Op::Prod => ncclProd,
        Op::Min => ncclMin,
        Op::Max => ncclMax,
        Op::Avg => ncclAvg,
    }
}

fn ptr(t: Option<&Tensor>) -> *mut c_void {
    t.map_or(std::ptr::null_mut(), Tensor::element_ptr)
}

impl NcclComm {
    /// Joins the communicator of `id` as `rank` of `world` on GPU `device`.
    pub fn join(id: &[u8], rank: usize, world: usize, device: i32) -> Result<NcclComm> {
        let what = "ccl.init_nccl";
        check_libraries(what)?;
        let id: [u8; 128] = id.try_into().map_err(|_| {
            Error::value_error(format!(
                "{what} argument #0: an NCCL unique id has 128 bytes, got {}",
                id.len()
            ))
        })?;
        if device < 0 {
            return Err(Error::value_error(format!(
                "{what}: device id {device} is negative"
            )));
        }
        guarded(what, || {
            let ctx = CudaContext::new(device as usize).map_err(|e| {
                Error::runtime_error(format!("{what}: cannot use GPU {device}: {e:?}"))
            })?;
            let id = sys::ncclUniqueId {
                internal: id.map(|b| b as std::ffi::c_char),
            };
            let mut comm = std::mem::MaybeUninit::uninit();
            // SAFETY: `comm` is written by a successful init; the id is the controller's.
            let comm = unsafe {
                result::comm_init_rank(comm.as_mut_ptr(), world as i32, id, rank as i32)
                    .map_err(|e| nccl_err("ncclCommInitRank", e))?;
                comm.assume_init()
            };
            Ok(NcclComm {
                comm,
                ctx,
                device,
                rank,
                world,
            })
        })
    }

    /// The GPU this rank works on.
    pub fn device(&self) -> Device {
        Device::cuda(self.device)
    }

    /// This rank's GPU context (the device's primary context).
    pub(super) fn context(&self) -> Arc<CudaContext> {
        self.ctx.clone()
    }

    fn stream(&self) -> sys::cudaStream_t {
        rffi_core::stream::current_stream(self.device()).cast()
    }

    pub(super) fn enter(&self, what: &str) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| {
            Error::runtime_error(format!("{what}: binding GPU {}: {e:?}", self.device))
        })
    }

    /// Enqueues a collective whose local arguments were checked into `plan`.
    pub fn run(&mut self, what: &str, plan: Result<Plan<'_>>) -> Result<()> {
        let p = plan?;
        self.enter(what)?;
        let (comm, stream, n) = (self.comm, self.stream(), p.count);
        let ty = nccl_type(p.dtype);
        let (src, dst) = (ptr(p.src), ptr(p.dst));
        let es = elem_size(p.dtype);
        let fail = |e| nccl_err(what, e);
        guarded(what, || {
            // SAFETY: `plan` checked that the tensors are contiguous on this communicator's GPU,
            // of `dtype`, and hold the element counts each collective reads and writes.
            unsafe {
                match p.kind {
                    Kind::AllReduce(op) => {
                        result::all_reduce(src, dst, n, ty, nccl_op(op), comm, stream)
                    }
                    Kind::AllGather => result::all_gather(src, dst, n, ty, comm, stream),
                    Kind::ReduceScatter(op) => {
                        result::reduce_scatter(src, dst, n, ty, nccl_op(op), comm, stream)
                    }
                    Kind::Broadcast => {
                        let from = if self.rank == 0 { src } else { dst };
                        result::broadcast(from, dst, n, ty, 0, comm, stream)
                    }
                    Kind::Scatter => {
                        result::group_start().map_err(fail)?;
                        if self.rank == 0 {
                            for r in 0..self.world {
                                let at = src.cast::<u8>().add(r * n * es).cast();
                                result::send(at, n, ty, r as i32, comm, stream).map_err(fail)?;
                            }
                        }
                        result::recv(dst, n, ty, 0, comm, stream).map_err(fail)?;
                        result::group_end()
                    }
                    Kind::Gather => {
                        result::group_start().map_err(fail)?;
                        result::send(src, n, ty, 0, comm, stream).map_err(fail)?;
                        if self.rank == 0 {
                            for r in 0..self.world {
                                let at = dst.cast::<u8>().add(r * n * es).cast();
                                result::recv(at, n, ty, r as i32, comm, stream).map_err(fail)?;
                            }
                        }
                        result::group_end()
                    }
                }
            }
            .map_err(fail)?;
            Ok(())
        })
    }

    /// Sends `t` to rank `peer` on the current stream.
    pub fn send(&mut self, t: Result<&Tensor>, peer: usize) -> Result<()> {
        let t = t?;
        self.enter("ccl.send")?;
        let (n, ty) = (t.numel() as usize, nccl_type(t.dtype()));
        let (comm, stream) = (self.comm, self.stream());
        guarded("ccl.send", || {
            // SAFETY: a checked contiguous tensor on this GPU of `n` elements of `ty`.
            unsafe { result::send(t.element_ptr(), n, ty, peer as i32, comm, stream) }
                .map_err(|e| nccl_err("ccl.send", e))?;
            Ok(())
        })
    }

    /// Receives into `t` from rank `peer` on the current stream.
    pub fn recv(&mut self, t: Result<&Tensor>, peer: usize) -> Result<()> {
        let t = t?;
        self.enter("ccl.recv")?;
        let (n, ty) = (t.numel() as usize, nccl_type(t.dtype()));
        let (comm, stream) = (self.comm, self.stream());
        guarded("ccl.recv", || {
            // SAFETY: as in `send`; the tensor is writable (checked).
            unsafe { result::recv(t.element_ptr(), n, ty, peer as i32, comm, stream) }
                .map_err(|e| nccl_err("ccl.recv", e))?;
            Ok(())
        })
    }
}

/// A GPU's primary context, retained and bound to a worker's thread.
pub struct GpuBinding {
    _ctx: Arc<CudaContext>,
}

impl GpuBinding {
    /// Makes GPU `device`'s primary context current on this thread (a RuntimeError naming the
    /// library files looked for when CUDA is missing).
    pub fn bind(device: i32) -> Result<GpuBinding> {
        let what = "placing a worker on a GPU";
        // SAFETY: only tries to dlopen the library.
        let present = catch_panic(|| unsafe { cudarc::driver::sys::is_culib_present() });
        if !present.unwrap_or(false) {
            return Err(Error::runtime_error(format!(
                "{what}: the CUDA driver library could not be loaded (looked for {})",
                cudarc::get_lib_name_candidates("cuda").join(", ")
            )));
        }
        if device < 0 {
            return Err(Error::value_error(format!(
                "{what}: GPU {device} is negative"
            )));
        }
        guarded(what, || {
            let ctx = CudaContext::new(device as usize).map_err(|e| {
                Error::runtime_error(format!("{what}: cannot use GPU {device}: {e:?}"))
            })?;
            Ok(GpuBinding { _ctx: ctx })
        })
    }
}
