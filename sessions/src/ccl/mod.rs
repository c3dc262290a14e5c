//! Collectives between the workers of a session (`ccl.*` global functions on each worker, and
//! the same names as `Session` methods).
//!
//! `init_ccl("shm")` joins the workers through one shared-memory file on this host (CPU tensors);
//! `init_ccl("nccl", device_ids)` joins them into an NCCL communicator, one rank per GPU, through
//! cudarc (the library is loaded on first use, so rffi builds and runs without it). Each worker
//! keeps its communicator in a thread-local: a worker serves every command on one thread.
//!
//! Both backends share the argument checks here, so a shape or dtype mismatch between `src` and
//! `dst` is an error before anything is transferred.

pub mod nccl;
mod nccl_mem;
pub mod reduce;
pub mod registry;
pub mod session_api;
pub mod shm;
mod shm_data;
mod shm_p2p;
pub mod testing;

use rffi_core::{DataType, Device, Error, Result, Tensor};
use std::cell::RefCell;
use std::time::Duration;

pub use registry::link;

/// A reduction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// The sum (`"sum"`).
    Sum,
    /// The product (`"prod"`).
    Prod,
    /// The minimum (`"min"`).
    Min,
    /// The maximum (`"max"`).
    Max,
    /// The mean over ranks (`"avg"`).
    Avg,
}

impl Op {
    /// The reduction named `s`; a ValueError naming `what` and the names it knows otherwise.
    pub fn parse(s: &str, what: &str) -> Result<Op> {
        Ok(match s {
            "sum" => Op::Sum,
            "prod" => Op::Prod,
            "min" => Op::Min,
            "max" => Op::Max,
            "avg" => Op::Avg,
            _ => {
                return Err(Error::value_error(format!(
                    "{what}: unknown reduction {s:?}; expected one of sum, prod, min, max, avg"
                )))
            }
        })
    }

    /// A number identifying the reduction (compared between ranks).
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// The collective a call runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Every rank gets the reduction of every rank's tensor.
    AllReduce(Op),
    /// Every rank gets every rank's tensor, concatenated in rank order.
    AllGather,
    /// Every rank gets its part of the reduction.
    ReduceScatter(Op),
    /// Every rank gets worker 0's tensor.
    Broadcast,
    /// Every rank gets its part of worker 0's tensor.
    Scatter,
    /// Worker 0 gets every rank's tensor, concatenated in rank order.
    Gather,
}

impl Kind {
    /// The global function name of the collective (`"ccl.allreduce"`, ...), for messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::AllReduce(_) => "ccl.allreduce",
            Kind::AllGather => "ccl.allgather",
            Kind::ReduceScatter(_) => "ccl.reduce_scatter",
            Kind::Broadcast => "ccl.broadcast_from_worker_0",
            Kind::Scatter => "ccl.scatter_from_worker_0",
            Kind::Gather => "ccl.gather_to_worker_0",
        }
    }

    /// A number identifying the collective and its reduction (compared between ranks).
    pub fn code(self) -> u32 {
        match self {
            Kind::AllReduce(op) => 1 + 16 * op.code(),
            Kind::AllGather => 2,
            Kind::ReduceScatter(op) => 3 + 16 * op.code(),
            Kind::Broadcast => 4,
            Kind::Scatter => 5,
            Kind::Gather => 6,
        }
    }
}

/// The element types collectives accept.
pub const DTYPES: &str = "float32, float16, bfloat16, int32, int64, uint8";

/// Whether collectives take `dt` ([`DTYPES`]); a TypeError naming `what` otherwise.
pub fn check_dtype(dt: DataType, what: &str) -> Result<()> {
    let ok = dt.lanes() == 1
        && matches!(
            (dt.code(), dt.bits()),
            (2, 32) | (2, 16) | (4, 16) | (0, 32) | (0, 64) | (1, 8)
        );
    if ok {
        Ok(())
    } else {
        Err(Error::type_error(format!(
            "{what}: collectives take {DTYPES} tensors, got {dt}"
        )))
    }
}

/// A checked call: the tensors this rank passes and the element count of one rank's share.
pub struct Plan<'a> {
    /// The collective.
    pub kind: Kind,
    /// What this rank sends (None where it sends nothing).
    pub src: Option<&'a Tensor>,
    /// Where this rank receives (None where it receives nothing).
    pub dst: Option<&'a Tensor>,
    /// The element type of both tensors.
    pub dtype: DataType,
    /// Elements each rank contributes (allreduce: all of them; allgather: the src; scatter: the dst).
    pub count: usize,
}

fn describe(t: &Tensor) -> String {
    format!("{:?} {}", t.shape(), t.dtype())
}

fn check_tensor(t: &Tensor, what: &str, arg: &str, device: Device, write: bool) -> Result<()> {
    check_layout(t, what, arg, device, write)?;
    check_dtype(t.dtype(), &format!("{what} {arg}"))
}

/// The device, contiguity and (for an output) writability a collective needs.
fn check_layout(t: &Tensor, what: &str, arg: &str, device: Device, write: bool) -> Result<()> {
    if t.device() != device {
        return Err(Error::value_error(format!(
            "{what} {arg}: the tensor is on {}:{} but this communicator works on {}:{}",
            t.device().type_name(),
            t.device().index(),
            device.type_name(),
            device.index()
        )));
    }
    if !t.is_contiguous() {
        return Err(Error::value_error(format!(
            "{what} {arg}: the tensor must be contiguous"
        )));
    }
    if write && t.read_only() {
        return Err(Error::value_error(format!(
            "{what} {arg}: the tensor is read-only"
        )));
    }
    Ok(())
}

/// Checks `src` and `dst` of a collective on rank `rank` of `world` against each other, before
/// anything moves.
pub fn plan<'a>(
    kind: Kind,
    src: Option<&'a Tensor>,
    dst: Option<&'a Tensor>,
    rank: usize,
    world: usize,
    device: Device,
) -> Result<Plan<'a>> {
    let what = kind.name();
    let root = rank == 0;
    // Which tensors this rank must pass.
    let (need_src, need_dst) = match kind {
        Kind::Broadcast | Kind::Scatter => (root, true),
        Kind::Gather => (true, root),
        _ => (true, true),
    };
    let src = src.filter(|_| need_src || matches!(kind, Kind::Broadcast));
    let dst = dst.filter(|_| need_dst);
    if need_src && src.is_none() {
        return Err(Error::type_error(format!(
            "{what} argument #0 (src): expected a tensor on worker {rank}, got None"
        )));
    }
    if need_dst && dst.is_none() {
        return Err(Error::type_error(format!(
            "{what} argument #1 (dst): expected a tensor on worker {rank}, got None"
        )));
    }
    if let Some(s) = src {
        check_tensor(s, what, "argument #0 (src)", device, false)?;
    }
    if let Some(d) = dst {
        check_tensor(d, what, "argument #1 (dst)", device, true)?;
    }
    let w = world as i64;
    let mismatch = |expected: &str| {
        Error::value_error(format!(
            "{what}: src {} and dst {} do not fit on worker {rank} of {world}: {expected}",
            src.map_or("None".into(), describe),
            dst.map_or("None".into(), describe),
        ))
    };
    if let (Some(s), Some(d)) = (src, dst) {
        if s.dtype() != d.dtype() {
            return Err(mismatch("they must have the same dtype"));
        }
        let ok = match kind {
            Kind::AllReduce(_) | Kind::Broadcast => s.shape() == d.shape(),
            Kind::AllGather | Kind::Gather => d.numel() == w * s.numel(),
            Kind::ReduceScatter(_) | Kind::Scatter => s.numel() == w * d.numel(),
        };
        if !ok {
            return Err(mismatch(match kind {
                Kind::AllReduce(_) | Kind::Broadcast => "they must have the same shape",
                Kind::AllGather | Kind::Gather => "dst must hold world size x the elements of src",
                _ => "src must hold world size x the elements of dst",
            }));
        }
    }
    let (dtype, count) = match kind {
        Kind::AllGather | Kind::Gather => {
            let s = src.expect("checked");
            (s.dtype(), s.numel())
        }
        _ => {
            let d = dst.expect("checked");
            (d.dtype(), d.numel())
        }
    };
    Ok(Plan {
        kind,
        src,
        dst,
        dtype,
        count: count as usize,
    })
}

/// A broadcast or scatter from worker 0 that moves `dst`'s bytes whatever its dtype: neither
/// computes on the elements, so the loader sends every safetensors dtype this way. `src` is
/// worker 0's (`dst`'s bytes, times the world size for a scatter).
pub fn byte_plan<'a>(
    kind: Kind,
    src: Option<&'a Tensor>,
    dst: &'a Tensor,
    rank: usize,
    world: usize,
    device: Device,
) -> Result<Plan<'a>> {
    let what = kind.name();
    let per = match kind {
        Kind::Broadcast => 1,
        Kind::Scatter => world,
        _ => unreachable!("byte plans are broadcasts and scatters"),
    };
    let check = |t: &Tensor, arg: &str, write: bool| check_layout(t, what, arg, device, write);
    check(dst, "argument #1 (dst)", true)?;
    let src = src.filter(|_| rank == 0);
    match src {
        Some(s) => {
            check(s, "argument #0 (src)", false)?;
            if s.nbytes() != per * dst.nbytes() {
                return Err(Error::value_error(format!(
                    "{what}: src {} and dst {} do not fit on worker {rank} of {world}: src                      must hold {per} x the bytes of dst",
                    describe(s),
                    describe(dst)
                )));
            }
        }
        None if rank == 0 => {
            return Err(Error::type_error(format!(
                "{what} argument #0 (src): expected a tensor on worker 0, got None"
            )))
        }
        None => {}
    }
    Ok(Plan {
        kind,
        src,
        dst: Some(dst),
        dtype: DataType::uint(8),
        count: dst.nbytes(),
    })
}

/// Bytes of one element of a (checked) dtype.
pub fn elem_size(dt: DataType) -> usize {
    dt.bits() as usize / 8
}

/// How long a collective waits for its peers before giving up (`RFFI_CCL_TIMEOUT_S`, default
/// 300 s). Dead peers are noticed at once; this bounds a peer that never comes.
pub fn timeout() -> Duration {
    std::env::var("RFFI_CCL_TIMEOUT_S")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(Duration::from_secs(300), |s| {
            Duration::from_secs_f64(s.min(1e6))
        })
}

/// A worker's communicator.
pub enum Comm {
    /// Shared memory on this host, for CPU tensors (`init_ccl("shm")`).
    Shm(shm::ShmComm),
    /// NCCL, one rank per GPU (`init_ccl("nccl")`).
    Nccl(nccl::NcclComm),
}

impl Comm {
    /// Runs a collective whose local arguments were checked into `plan`, or failed to be (the
    /// shared-memory backend still tells its peers, so they fail too instead of waiting).
    pub fn run(&mut self, what: &str, plan: Result<Plan<'_>>) -> Result<()> {
        match self {
            Comm::Shm(c) => c.run(what, plan),
            Comm::Nccl(c) => c.run(what, plan),
        }
    }

    /// Sends `t` to rank `peer` (which receives it with `recv`).
    pub fn send(&mut self, t: Result<&Tensor>, peer: usize) -> Result<()> {
        match self {
            Comm::Shm(c) => c.send(t, peer),
            Comm::Nccl(c) => c.send(t, peer),
        }
    }

    /// Tells the peers that this rank cannot take part in a transfer one of them may be waiting
    /// in (the shared-memory communicator is marked broken, so they fail at once). NCCL has no
    /// such signal: a peer's enqueued transfer waits on the GPU, as NCCL's own do.
    pub fn give_up(&mut self, why: &str) {
        match self {
            Comm::Shm(c) => c.give_up(why),
            Comm::Nccl(_) => {}
        }
    }

    /// Receives into `t` what rank `peer` sends.
    pub fn recv(&mut self, t: Result<&Tensor>, peer: usize) -> Result<()> {
        match self {
            Comm::Shm(c) => c.recv(t, peer),
            Comm::Nccl(c) => c.recv(t, peer),
        }
    }

    /// The device whose tensors the communicator moves.
    pub fn device(&self) -> Device {
        match self {
            Comm::Shm(_) => Device::cpu(),
            Comm::Nccl(c) => c.device(),
        }
    }

    /// A new tensor on the communicator's device.
    pub fn empty(&self, shape: &[i64], dtype: DataType) -> Result<Tensor> {
        match self {
            Comm::Shm(_) => Tensor::empty(shape, dtype, Device::cpu()),
            Comm::Nccl(c) => c.empty(shape, dtype),
        }
    }

    /// The contiguous host tensor `host` on the communicator's device (itself on the CPU).
    pub fn upload(&self, host: &Tensor) -> Result<Tensor> {
        match self {
            Comm::Shm(_) => Ok(host.clone()),
            Comm::Nccl(c) => c.upload(host),
        }
    }

    /// `t` (on the communicator's device) on the host, once the collectives before have run.
    pub fn download(&self, t: &Tensor) -> Result<Tensor> {
        match self {
            Comm::Shm(_) => Ok(t.clone()),
            Comm::Nccl(c) => c.download(t),
        }
    }

    /// Waits until the collectives this rank has enqueued have finished (shared memory: they
    /// have when they return).
    pub fn synchronize(&self) -> Result<()> {
        match self {
            Comm::Shm(_) => Ok(()),
            Comm::Nccl(c) => c.synchronize(),
        }
    }
}

/// Checks the tensor of a send or receive.
pub fn check_p2p(t: &Tensor, what: &str, device: Device, write: bool) -> Result<()> {
    check_tensor(t, what, "argument #0", device, write)
}

thread_local! {
    static COMM: RefCell<Option<Comm>> = const { RefCell::new(None) };
}

/// Replaces this worker's communicator.
pub fn set_comm(c: Option<Comm>) {
    let old = COMM.with(|s| s.replace(c));
    drop(old);
}

/// Runs `f` with this worker's communicator.
pub fn with_comm<T>(what: &str, f: impl FnOnce(&mut Comm) -> Result<T>) -> Result<T> {
    COMM.with(|s| {
        let mut s = s.try_borrow_mut().map_err(|_| {
            Error::runtime_error(format!(
                "{what}: this worker's communicator is busy (a collective called from inside \
                 a load through it)"
            ))
        })?;
        let c = s.as_mut().ok_or_else(|| {
            Error::runtime_error(format!(
                "{what}: no communicator on this worker: call init_ccl(\"shm\") or \
                 init_ccl(\"nccl\", ...) on the session first"
            ))
        })?;
        f(c)
    })
}

thread_local! {
    /// The device the session put this worker on (`ProcessSession(..., device="cuda")`), and for
    /// a GPU the retained context that keeps it bound.
    static PLACED: RefCell<Option<(Device, Option<nccl::GpuBinding>)>> = const { RefCell::new(None) };
}

/// The device the session put this worker on, if any.
pub fn worker_device() -> Option<Device> {
    PLACED.with(|p| p.borrow().as_ref().map(|(d, _)| *d))
}

/// Puts this worker on `device` (a GPU's primary context is bound to the worker's thread).
pub fn place_worker(device: Device) -> Result<()> {
    let binding = match device.type_name() {
        "cpu" => None,
        "cuda" => Some(nccl::GpuBinding::bind(device.index())?),
        other => {
            return Err(Error::value_error(format!(
                "workers can be placed on cpu or cuda devices, not {other}"
            )))
        }
    };
    PLACED.with(|p| *p.borrow_mut() = Some((device, binding)));
    Ok(())
}
