//! The Rust API: `ThreadSession::new(n)`, `ProcessSession::new(n)` and `SocketSession::new(..)`
//! make a `Session`; the Python classes (and `RaySession`, over `SocketSession`) are thin layers
//! over the `session.*` functions built on it.

use crate::codec::{located, Value};
use crate::controller::{Controller, Fds};
use crate::dref::{DFunction, DModule, DRef};
use crate::process::WorkerProgram;
use crate::protocol::Command;
use crate::shm_tensor;
use crate::transport::{SocketLink, MAX_FRAME};
use rffi_core::ObjectType;
use rffi_core::{AnyView, DataType, Device, Error, Result, Tensor};
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// A controller and its workers. Dropping it (or `shutdown`) stops and reaps every worker.
pub struct Session {
    ctl: Arc<Controller>,
}

/// Sessions whose workers are threads of this process.
pub struct ThreadSession;

/// Sessions whose worker 0 is a thread of this process and whose other workers are processes.
pub struct ProcessSession;

/// Sessions over workers that someone else started (Ray actors, a launcher), each already
/// connected by a stream socket (TCP across hosts) and serving with `worker::serve`. Host tensors
/// and worker 0's copies travel inline in the frames.
pub struct SocketSession;

impl ThreadSession {
    /// A session of `num_workers` workers, each a thread of this process sharing its function registry.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(num_workers: usize) -> Result<Session> {
        Ok(Session {
            ctl: Arc::new(Controller::threads(num_workers)?),
        })
    }
}

impl ProcessSession {
    /// Workers 1.. run the native `rffi-worker` (see `WorkerProgram::native`).
    #[allow(clippy::new_ret_no_self)]
    pub fn new(num_workers: usize) -> Result<Session> {
        Self::with_program(num_workers, &WorkerProgram::native()?)
    }

    /// Workers 1.. run `program` (for example a Python interpreter running `rffi.worker`).
    pub fn with_program(num_workers: usize, program: &WorkerProgram) -> Result<Session> {
        Ok(Session {
            ctl: Arc::new(Controller::processes(num_workers, program)?),
        })
    }
}

impl SocketSession {
    /// Worker i is connected by `workers[i].0` and described by `workers[i].1` in messages
    /// ("Ray actor 1a2b... on 10.0.0.2, pid 1234").
    #[allow(clippy::new_ret_no_self)]
    pub fn new(workers: Vec<(OwnedFd, String)>) -> Result<Session> {
        let links = workers
            .into_iter()
            .map(|(fd, what)| (SocketLink::new(fd), what))
            .collect();
        Ok(Session {
            ctl: Arc::new(Controller::connected(links)?),
        })
    }
}

/// The most tensor bytes one call carries inline (a frame also holds the command around them).
const INLINE_MAX: usize = MAX_FRAME - (1 << 20);

/// `n` host bytes as the length of a frame of their own, if one can carry them.
fn frame_len(n: u64, what: &str) -> Result<usize> {
    usize::try_from(n)
        .ok()
        .filter(|n| *n <= MAX_FRAME)
        .ok_or_else(|| {
            Error::value_error(format!(
                "{what}: {n} bytes are more than a session frame carries to or from a worker on \
                 another host ({MAX_FRAME})"
            ))
        })
}

/// Broadcasts a call of `f` with `args` (DRef objects among them become register references).
pub(crate) fn call(ctl: &Arc<Controller>, f: &DRef, args: &[AnyView<'_>]) -> Result<DRef> {
    if !Arc::ptr_eq(f.controller(), ctl) {
        return Err(Error::value_error(
            "the function belongs to another session",
        ));
    }
    // Host tensors go as descriptors of shared-memory copies, sent with the call.
    let fds = std::cell::RefCell::new(Vec::new());
    let object = |obj: &rffi_core::ObjectRef| {
        if let Some(d) = DRef::from_object(obj) {
            return Some(if Arc::ptr_eq(d.controller(), ctl) {
                Ok(Value::Ref(d.register()))
            } else {
                Err(Error::value_error("a DRef of another session"))
            });
        }
        let t = Tensor::from_object(obj.clone()).ok()?;
        if ctl.inline_data() {
            return Some(
                shm_tensor::bytes_of(&t, INLINE_MAX).map(|data| Value::Tensor {
                    shape: t.shape().to_vec(),
                    dtype: t.dtype(),
                    data,
                }),
            );
        }
        Some(shm_tensor::share(&t).map(|fd| {
            let mut fds = fds.borrow_mut();
            fds.push(fd);
            Value::FdTensor {
                fd: (fds.len() - 1) as u32,
                shape: t.shape().to_vec(),
                dtype: t.dtype(),
            }
        }))
    };
    let values = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            Value::from_view(a, &object).map_err(|e| located(e, &format!("argument #{i}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let func = f.register();
    let fds = fds.into_inner();
    let make = |reg| Command::Call {
        reg,
        func,
        args: values,
    };
    let reg = if fds.is_empty() {
        ctl.broadcast_new(make)?
    } else {
        ctl.broadcast_new_with(make, &Fds::Same(&fds))?
    };
    Ok(DRef::new(ctl.clone(), reg))
}

impl Session {
    /// The number of workers.
    pub fn num_workers(&self) -> usize {
        self.ctl.num_workers()
    }

    /// The global function `name` on every worker (a missing name is a KeyError at the next sync).
    pub fn get_global_func(&self, name: &str) -> Result<DFunction> {
        let reg = self.ctl.broadcast_new(|reg| Command::GetGlobalFunc {
            reg,
            name: name.to_string(),
        })?;
        Ok(DFunction(DRef::new(self.ctl.clone(), reg)))
    }

    /// Loads a plugin or module on every worker.
    pub fn load_module(&self, path: &str) -> Result<DModule> {
        let reg = self.ctl.broadcast_new(|reg| Command::LoadModule {
            reg,
            path: path.to_string(),
        })?;
        Ok(DModule(DRef::new(self.ctl.clone(), reg)))
    }

    /// Calls `f` on every worker (see `DFunction::call`), with arguments as views.
    pub fn call(&self, f: &DFunction, args: &[AnyView<'_>]) -> Result<DRef> {
        call(&self.ctl, &f.0, args)
    }

    /// A new tensor on every worker. On the CPU each worker's tensor is in shared memory that
    /// the controller maps too, so host copies to and from it are one `memcpy` here.
    pub fn empty(&self, shape: &[i64], dtype: DataType, device: Device) -> Result<DRef> {
        let reg = self.ctl.empty(shape, dtype, device)?;
        Ok(DRef::new(self.ctl.clone(), reg))
    }

    fn check_host(&self, host: &Tensor, dst: &DRef, what: &str) -> Result<(u64, u64)> {
        if !Arc::ptr_eq(dst.controller(), &self.ctl) {
            return Err(Error::value_error(format!(
                "{what}: the DRef belongs to another session"
            )));
        }
        if host.device() != Device::cpu() || !host.is_contiguous() {
            return Err(Error::value_error(format!(
                "{what}: the host array must be a contiguous CPU array, got {:?} on {}",
                host.shape(),
                host.device().type_name()
            )));
        }
        Ok((host.element_ptr() as u64, host.nbytes() as u64))
    }

    /// Copies a host array into worker 0's tensor `dst` (one memcpy: into the controller's
    /// mapping of a tensor `empty` made, or by worker 0, which shares this process's memory;
    /// inline in the frame for a connected worker 0). Waits for the copy, after every earlier
    /// command of worker 0.
    pub fn copy_to_worker_0(&self, host: &Tensor, dst: &DRef) -> Result<()> {
        let (addr, n) = self.check_host(host, dst, "copy_to_worker_0")?;
        if self.ctl.inline_data() {
            let n = frame_len(n, "copy_to_worker_0")?;
            let data = if n == 0 {
                &[][..]
            } else {
                // SAFETY: `host` is a contiguous CPU array of `n` bytes, borrowed for the whole
                // call, which waits for the copy.
                unsafe { std::slice::from_raw_parts(addr as *const u8, n) }
            };
            return self.ctl.copy_in(dst.register(), data);
        }
        // SAFETY: `host` is borrowed for the whole call, which waits for the copy.
        unsafe { self.ctl.copy_worker_0(dst.register(), addr, n, true) }
    }

    /// Copies worker 0's tensor `src` into a writable host array.
    pub fn copy_from_worker_0(&self, host: &Tensor, src: &DRef) -> Result<()> {
        let (addr, n) = self.check_host(host, src, "copy_from_worker_0")?;
        if host.read_only() {
            return Err(Error::value_error(
                "copy_from_worker_0: the host array is read-only",
            ));
        }
        if self.ctl.inline_data() {
            let n = frame_len(n, "copy_from_worker_0")?;
            let out = if n == 0 {
                &mut [][..]
            } else {
                // SAFETY: `host` is a writable contiguous CPU array of `n` bytes, borrowed for
                // the whole call, and nothing else reads or writes it meanwhile.
                unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, n) }
            };
            return self.ctl.copy_out(src.register(), out);
        }
        // SAFETY: as in `copy_to_worker_0`; the array is writable.
        unsafe { self.ctl.copy_worker_0(src.register(), addr, n, false) }
    }

    /// Waits for every worker to finish what was sent; raises the first failure.
    pub fn sync(&self) -> Result<()> {
        self.ctl.sync(false, None).map(|_| ())
    }

    /// Waits for worker 0 only.
    pub fn sync_worker_0(&self) -> Result<()> {
        self.ctl.sync(true, None).map(|_| ())
    }

    /// Stops and reaps every worker; idempotent. Later operations are errors.
    pub fn shutdown(&self) {
        self.ctl.shutdown();
    }

    /// The rank whose failure was raised last (taken: a second call answers `None`).
    pub fn failed_rank(&self) -> Option<usize> {
        self.ctl.failed_rank()
    }

    /// Process ids of the worker processes.
    pub fn worker_pids(&self) -> Vec<i32> {
        self.ctl.worker_pids()
    }

    pub(crate) fn controller(&self) -> &Arc<Controller> {
        &self.ctl
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.ctl.shutdown();
    }
}
