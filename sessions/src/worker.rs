//! A worker: runs the controller's commands against its own process's function registry and keeps the
//! register file that DRefs name.
//!
//! A worker never dies of what a command does: every error and panic is caught per command and
//! kept as the first pending failure, which the next `Sync` or `Fetch` answer carries back.

use crate::codec::{Resolve, Value, WireError, Writer};
use crate::progress::Progress;
use crate::protocol::{Command, Reg, Reply};
use crate::shm_tensor;
use crate::transport::{Link, LinkError};
use rffi_core::abi::*;
use rffi_core::error::catch_panic;
use rffi_core::{
    get_global_func, register_global, Any, Array, DataType, Error, Function, Map, Module, Result,
    Shape, Tensor,
};
use std::cell::Cell;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

thread_local! {
    static CURRENT: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

/// `(rank, world size)` of the worker running on this thread, if any.
pub fn current() -> Option<(usize, usize)> {
    CURRENT.with(Cell::get)
}

fn current_or_err(what: &str) -> Result<(usize, usize)> {
    current().ok_or_else(|| {
        Error::runtime_error(format!(
            "`{what}` is only meaningful on a session worker (this thread is not one)"
        ))
    })
}

// Functions every worker offers, as Disco's `runtime.disco.worker_id` and friends do.
register_global!("session.worker_rank", || -> Result<i64> {
    Ok(current_or_err("session.worker_rank")?.0 as i64)
});
register_global!("session.world_size", || -> Result<i64> {
    Ok(current_or_err("session.world_size")?.1 as i64)
});

/// What the worker does after a command.
pub enum Step {
    Continue,
    /// Answer with this reply and the descriptors its values name.
    Reply(Reply, Vec<OwnedFd>),
    /// Answer with this reply, then a frame of the tensor's bytes (`CopyOut`).
    ReplyWithBytes(Reply, Tensor),
    /// `CopyIn`: the bytes for the tensor in `reg` are the next frame (see `copy_in`).
    ReadBytes {
        seq: u64,
        reg: Reg,
    },
    Shutdown,
}

pub struct Worker {
    rank: usize,
    world: usize,
    /// `None`: empty (never set, freed, or its command failed).
    regs: Vec<Option<Any>>,
    /// The function name of a register holding a function, for error messages.
    names: Vec<Option<String>>,
    pending: Option<WireError>,
    /// Where finished frames are counted (set by the first command, `Attach`).
    progress: Option<Progress>,
    /// Whether the controller is in this process (a worker thread): only then is the address of
    /// a `Copy` a pointer this worker may follow.
    shares_memory: bool,
}

/// The descriptors of the frame being served, and the worker's registers, for the values of a
/// command.
struct FrameContext<'a> {
    worker: &'a Worker,
    fds: &'a [OwnedFd],
}

/// Descriptor `i` of a frame.
fn frame_fd(fds: &[OwnedFd], i: u32) -> Result<&OwnedFd> {
    fds.get(i as usize).ok_or_else(|| {
        Error::value_error(format!(
            "malformed session frame: descriptor #{i} of {} is missing",
            fds.len()
        ))
    })
}

impl Resolve for FrameContext<'_> {
    fn register(&self, r: u64) -> Result<Any> {
        self.worker.get(r)
    }
    fn tensor(&self, fd: u32, shape: &[i64], dtype: DataType) -> Result<Any> {
        // Private: each worker works on its own copy of a host tensor.
        Ok(shm_tensor::open(frame_fd(self.fds, fd)?, shape, dtype, false)?.into())
    }
}

impl Worker {
    pub fn new(rank: usize, world: usize) -> Worker {
        Worker {
            rank,
            world,
            regs: Vec::new(),
            names: Vec::new(),
            pending: None,
            progress: None,
            shares_memory: false,
        }
    }

    /// A worker that shares the controller's address space (a thread of its process), which
    /// `Copy` commands need.
    pub fn sharing_memory(mut self, shares: bool) -> Worker {
        self.shares_memory = shares;
        self
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn world(&self) -> usize {
        self.world
    }

    /// How many registers hold a value (for tests of freeing).
    pub fn live_registers(&self) -> usize {
        self.regs.iter().filter(|a| a.is_some()).count()
    }

    /// The size of the register file, empty registers included (for tests of its growth).
    pub fn registers(&self) -> usize {
        self.regs.len()
    }

    fn get(&self, reg: Reg) -> Result<Any> {
        self.regs
            .get(reg as usize)
            .and_then(Option::clone)
            .ok_or_else(|| {
                Error::value_error(format!(
                    "register {reg} is empty on worker {} (its value was freed, or the command \
                     that made it failed)",
                    self.rank
                ))
            })
    }

    /// Checks that a command may fill `reg`: one of the registers or the next new one. The
    /// controller hands out register ids in order (reusing freed ones), so the file grows one
    /// register at a time; any other id comes from a corrupt or hostile frame, and must not make
    /// the worker allocate a file of that size.
    fn check_target(&self, reg: Reg) -> Result<()> {
        let len = self.regs.len();
        if reg > len as u64 {
            return Err(Error::value_error(format!(
                "malformed session frame: register {reg} is out of order on worker {}: it has \
                 {len} registers, so a command may fill one of them or register {len}",
                self.rank
            )));
        }
        Ok(())
    }

    /// Fills `reg`, checked by `check_target` (so the file grows by one register at most).
    fn set(&mut self, reg: Reg, value: Option<Any>, name: Option<String>) {
        let i = reg as usize;
        if self.regs.len() == i {
            self.regs.push(None);
            self.names.push(None);
        }
        self.regs[i] = value;
        self.names[i] = name;
    }

    fn function_name(&self, reg: Reg) -> String {
        self.names
            .get(reg as usize)
            .and_then(|n| n.clone())
            .unwrap_or_else(|| format!("<register {reg}>"))
    }

    fn fail(&mut self, e: &Error, function: &str, command: &str) {
        if self.pending.is_none() {
            self.pending = Some(WireError::from_error(e, function, command));
        }
    }

    /// Counts `done` frames as finished (with the pending failure, if any) where the controller
    /// looks.
    pub fn report(&self, done: u64) {
        if let Some(p) = &self.progress {
            p.report(self.rank, done, self.pending.is_some());
        }
    }

    /// Runs one command of a frame carrying `fds`, catching every error and panic.
    pub fn handle(&mut self, cmd: Command, fds: &[OwnedFd]) -> Step {
        let name = cmd.name();
        let function = match &cmd {
            Command::GetGlobalFunc { name, .. } | Command::ModuleGetFunction { name, .. } => {
                name.clone()
            }
            Command::LoadModule { path, .. } => path.clone(),
            Command::Call { func, .. } => self.function_name(*func),
            _ => String::new(),
        };
        let reg = match &cmd {
            Command::GetGlobalFunc { reg, .. }
            | Command::LoadModule { reg, .. }
            | Command::ModuleGetFunction { reg, .. }
            | Command::Call { reg, .. }
            | Command::Empty { reg, .. } => Some(*reg),
            _ => None,
        };
        if let Some(Err(e)) = reg.map(|r| self.check_target(r)) {
            self.fail(&e, &function, name);
            return Step::Continue;
        }
        let err = match catch_panic(|| self.run(cmd, fds)).and_then(|r| r) {
            Ok(step) => return step,
            Err(e) => e,
        };
        // The result register of a failed command is cleared, so a later use of it names the
        // failure instead of reading a stale value.
        if let Some(r) = reg {
            self.set(r, None, None);
        }
        self.fail(&err, &function, name);
        Step::Continue
    }

    fn run(&mut self, cmd: Command, fds: &[OwnedFd]) -> Result<Step> {
        match cmd {
            Command::Attach { fd } => {
                self.progress = Some(Progress::open(frame_fd(fds, fd)?, self.world)?);
            }
            Command::GetGlobalFunc { reg, name } => {
                let f = get_global_func(&name).ok_or_else(|| {
                    Error::key_error(format!("global function `{name}` is not registered"))
                })?;
                self.set(reg, Some(f.into()), Some(name));
            }
            Command::LoadModule { reg, path } => {
                let m = Module::load(&path)?;
                self.set(reg, Some(m.into()), None);
            }
            Command::ModuleGetFunction { reg, module, name } => {
                let m: Module = self.get(module)?.try_as()?;
                let f = m.get_function(&name)?.ok_or_else(|| {
                    Error::key_error(format!(
                        "module {} has no function `{name}`",
                        m.path().unwrap_or_default()
                    ))
                })?;
                self.set(reg, Some(f.into()), Some(name));
            }
            Command::Call { reg, func, args } => {
                let f: Function = self.get(func)?.try_as().map_err(|e| {
                    Error::type_error(format!(
                        "register {func} is not a function: {}",
                        e.message()
                    ))
                })?;
                let ctx = FrameContext { worker: self, fds };
                let args = args
                    .into_iter()
                    .map(|a| a.into_any(&ctx))
                    .collect::<Result<Vec<_>>>()?;
                let out = f.call(&args)?;
                self.set(reg, Some(out), None);
            }
            Command::Empty {
                reg,
                shape,
                dtype,
                device,
                fd,
            } => {
                let t = match fd {
                    // Shared with the controller's mapping (see `shm_tensor::SharedTensor`).
                    Some(i) => shm_tensor::open(frame_fd(fds, i)?, &shape, dtype, true)?,
                    None => Tensor::empty(&shape, dtype, device)?,
                };
                self.set(reg, Some(t.into()), None);
            }
            Command::Free { regs } => {
                for r in regs {
                    if (r as usize) < self.regs.len() {
                        self.set(r, None, None);
                    }
                }
            }
            Command::Sync { seq } => {
                let error = self.pending.take();
                return Ok(Step::Reply(Reply::Done { seq, error }, Vec::new()));
            }
            Command::Fetch { seq, reg } => {
                let mut out = Vec::new();
                let result = match self.pending.take() {
                    Some(e) => Err(e),
                    None => self
                        .get(reg)
                        .and_then(|v| to_value(&v, self.progress.is_some(), &mut out))
                        .map_err(|e| WireError::from_error(&e, "", "fetch")),
                };
                if result.is_err() {
                    out.clear();
                }
                return Ok(Step::Reply(Reply::Fetched { seq, result }, out));
            }
            Command::Copy {
                seq,
                reg,
                addr,
                nbytes,
                to_worker,
            } => {
                let r = self.copy(reg, addr, nbytes, to_worker);
                return Ok(self.copy_done(seq, r, to_worker));
            }
            Command::CopyIn { seq, reg, .. } => return Ok(Step::ReadBytes { seq, reg }),
            Command::CopyOut { seq, reg, nbytes } => {
                let failed = |e: Error| WireError::from_error(&e, "", "copy_from_worker_0");
                let result = match self.pending.take() {
                    Some(e) => Err(e),
                    None => self.host_copy_tensor(reg, nbytes).map_err(failed),
                };
                return Ok(match result {
                    Ok(t) => {
                        let result = Ok(Value::Int(nbytes as i64));
                        Step::ReplyWithBytes(Reply::Fetched { seq, result }, t)
                    }
                    Err(e) => Step::Reply(
                        Reply::Fetched {
                            seq,
                            result: Err(e),
                        },
                        Vec::new(),
                    ),
                });
            }
            Command::Shutdown => return Ok(Step::Shutdown),
        }
        Ok(Step::Continue)
    }

    /// `CopyIn`'s second half: `data` (the frame after the command) into the tensor in `reg`.
    pub fn copy_in(&mut self, seq: u64, reg: Reg, data: &[u8]) -> Step {
        let r = self.host_copy_tensor(reg, data.len() as u64).map(|t| {
            if !data.is_empty() {
                // SAFETY: the tensor is contiguous, on the CPU, and `data.len()` bytes long
                // (checked); the two buffers never overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        data.as_ptr(),
                        t.element_ptr().cast::<u8>(),
                        data.len(),
                    )
                }
            }
        });
        self.copy_done(seq, r, true)
    }

    /// The answer to a host copy: its failure, else the first pending one.
    fn copy_done(&mut self, seq: u64, r: Result<()>, to_worker: bool) -> Step {
        if let Err(e) = &r {
            let what = if to_worker {
                "copy_to_worker_0"
            } else {
                "copy_from_worker_0"
            };
            self.fail(e, "", what);
        }
        let error = self.pending.take();
        Step::Reply(Reply::Done { seq, error }, Vec::new())
    }

    /// The tensor in `reg`, checked as the target of a host copy of `nbytes` bytes.
    fn host_copy_tensor(&self, reg: Reg, nbytes: u64) -> Result<Tensor> {
        let t: Tensor = self.get(reg)?.try_as()?;
        if !t.is_contiguous() || t.device() != rffi_core::Device::cpu() {
            return Err(Error::value_error(
                "the worker tensor of a host copy must be a contiguous CPU tensor",
            ));
        }
        if t.nbytes() as u64 != nbytes {
            return Err(Error::value_error(format!(
                "the host array has {nbytes} bytes but the worker tensor {:?} {} has {}",
                t.shape(),
                t.dtype(),
                t.nbytes()
            )));
        }
        Ok(t)
    }

    fn copy(&self, reg: Reg, addr: u64, nbytes: u64, to_worker: bool) -> Result<()> {
        if self.rank != 0 {
            return Err(Error::runtime_error(
                "host copies go to worker 0 only (it shares the controller's memory)",
            ));
        }
        if !self.shares_memory {
            // The address is the controller's: in another process it points at nothing of ours.
            return Err(Error::value_error(
                "malformed session frame: a host copy by address reached a worker in another \
                 process than the controller (its copies travel in frames: CopyIn, CopyOut)",
            ));
        }
        let t = self.host_copy_tensor(reg, nbytes)?;
        let dst = t.element_ptr().cast::<u8>();
        // SAFETY: the controller passes the address of a live host buffer of `nbytes` bytes that
        // it keeps alive until this command is answered; the tensor has `nbytes` bytes too, and
        // the two never overlap (one is the worker's own allocation).
        unsafe {
            if to_worker {
                std::ptr::copy_nonoverlapping(addr as *const u8, dst, nbytes as usize);
            } else {
                std::ptr::copy_nonoverlapping(dst, addr as *mut u8, nbytes as usize);
            }
        }
        Ok(())
    }
}

/// The value of a register as it travels back to the controller. A tensor goes as a copy: in a
/// shared-memory file whose descriptor is added to `fds` when the controller is on this host
/// (`local`: it sent the progress block), else inline in the frame.
fn to_value(v: &Any, local: bool, fds: &mut Vec<OwnedFd>) -> Result<Value> {
    let view = v.view();
    Ok(match v.type_index() {
        kRFFITensor => {
            let t: Tensor = v.try_as()?;
            if t.device() != rffi_core::Device::cpu() {
                return Err(Error::type_error(format!(
                    "a tensor on {} cannot be fetched (only CPU tensors come back to the \
                     controller)",
                    t.device().type_name()
                )));
            }
            let (shape, dtype) = (t.shape().to_vec(), t.dtype());
            if !local {
                let data = shm_tensor::bytes_of(&t, crate::transport::MAX_FRAME - (1 << 20))?;
                return Ok(Value::Tensor { shape, dtype, data });
            }
            fds.push(shm_tensor::share(&t)?);
            let fd = (fds.len() - 1) as u32;
            Value::FdTensor { fd, shape, dtype }
        }
        kRFFIArray => Value::Array(
            v.try_as::<Array>()?
                .iter()
                .map(|x| to_value(&x.to_owned()?, local, fds))
                .collect::<Result<_>>()?,
        ),
        kRFFIMap => Value::Map(
            v.try_as::<Map>()?
                .iter()
                .map(|(k, x)| {
                    Ok((
                        to_value(&k.to_owned()?, local, fds)?,
                        to_value(&x.to_owned()?, local, fds)?,
                    ))
                })
                .collect::<Result<_>>()?,
        ),
        kRFFIShape => Value::Shape(v.try_as::<Shape>()?.as_slice().to_vec()),
        _ => Value::from_view(&view, &|_| None).map_err(|_| {
            Error::type_error(format!(
                "a value of type {} cannot be fetched from a worker",
                view.type_name()
            ))
        })?,
    })
}

/// Sends a contiguous CPU tensor's bytes as a frame of their own, without copying them.
fn send_tensor_bytes(link: &dyn Link, t: &Tensor) -> crate::transport::LinkResult<()> {
    let n = t.nbytes();
    let bytes = if n == 0 {
        &[][..]
    } else {
        // SAFETY: `host_copy_tensor` checked that `t` is a contiguous CPU tensor; its `n` bytes
        // stay alive while `t` is borrowed.
        unsafe { std::slice::from_raw_parts(t.element_ptr().cast::<u8>(), n) }
    };
    link.send(bytes)
}

/// Serves commands from `link` until Shutdown or until the controller goes away (which is how a
/// worker process ends when its controller dies). Returns why it stopped, when that was an error.
pub fn serve(rank: usize, world: usize, link: &dyn Link) -> std::result::Result<(), String> {
    // Every worker offers the `rffi.shard.*` functions.
    crate::shard::link();
    CURRENT.with(|c| c.set(Some((rank, world))));
    crate::ccl::link();
    let mut worker = Worker::new(rank, world).sharing_memory(link.shares_address_space());
    let mut w = Writer::default();
    let mut frames = 0u64;
    let result = loop {
        let frame = match link.recv(None) {
            Ok(Some(f)) => f,
            Ok(None) => continue,
            Err(LinkError::Closed) => break Ok(()),
            Err(LinkError::Io(e)) => break Err(format!("reading a command failed: {e}")),
        };
        let cmds = match Command::decode_all(&frame.bytes) {
            Ok(c) => c,
            // A frame we cannot read leaves us out of step with the controller: stop, so it
            // sees this worker end instead of waiting for an answer that cannot come.
            Err(e) => break Err(e.message()),
        };
        let mut stop = false;
        for cmd in cmds {
            let mut step = worker.handle(cmd, &frame.fds);
            if let Step::ReadBytes { seq, reg } = step {
                step = match link.recv(None) {
                    Ok(Some(data)) => {
                        frames += 1; // the controller counts the bytes' frame as sent
                        worker.copy_in(seq, reg, &data.bytes)
                    }
                    _ => Step::Shutdown, // the controller is gone
                };
            }
            let (reply, fds, bytes) = match step {
                Step::Continue | Step::ReadBytes { .. } => continue,
                Step::Shutdown => {
                    stop = true;
                    break;
                }
                Step::Reply(r, fds) => (r, fds, None),
                Step::ReplyWithBytes(r, t) => (r, Vec::new(), Some(t)),
            };
            w.buf.clear();
            reply.encode(&mut w);
            let fds: Vec<BorrowedFd<'_>> = fds.iter().map(AsFd::as_fd).collect();
            let mut sent = link.send_with(&w.buf, &fds);
            if let (Ok(()), Some(t)) = (&sent, bytes) {
                sent = send_tensor_bytes(link, &t);
            }
            if sent.is_err() {
                stop = true;
                break;
            }
        }
        // The frame's descriptors are closed here: what a command kept, it mapped.
        drop(frame);
        if stop {
            break Ok(());
        }
        frames += 1;
        worker.report(frames);
    };
    drop(worker);
    crate::ccl::set_comm(None);
    CURRENT.with(|c| c.set(None));
    result
}
