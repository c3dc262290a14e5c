//! Collectives as `Session` methods: each broadcasts the `ccl.*` call of the same name to every
//! worker and returns at once (failures come back at the next sync or fetch, as for any call).

use super::{registry, shm};
use crate::dref::DRef;
use crate::session::Session;
use rffi_core::{Any, Array, Error, Result};

impl Session {
    /// Joins the workers into a communicator: `"shm"` (shared memory, this host, CPU tensors) or
    /// `"nccl"` (one rank per GPU: worker i on `device_ids[i]`; empty: the GPU the session put it
    /// on, else GPU i). Waits until every worker has joined.
    pub fn init_ccl(&self, backend: &str, device_ids: &[i32]) -> Result<()> {
        match backend {
            "shm" => {
                if !device_ids.is_empty() {
                    return Err(Error::value_error(
                        "init_ccl(\"shm\") takes no device ids (it works on CPU tensors)",
                    ));
                }
                self.init_ccl_shm(shm::DEFAULT_SLOT)
            }
            "nccl" => {
                if !device_ids.is_empty() && device_ids.len() != self.num_workers() {
                    return Err(Error::value_error(format!(
                        "init_ccl(\"nccl\"): {} device ids for {} workers",
                        device_ids.len(),
                        self.num_workers()
                    )));
                }
                // Made here, sent to every worker before any waits: NCCL's init returns only
                // once every rank has joined.
                let id = super::nccl::unique_id()?;
                let ids = Array::new(device_ids.iter().map(|d| Any::from(*d as i64)).collect());
                self.get_global_func("ccl.init_nccl")?
                    .call(&[Any::from(id), Any::from(ids)])?;
                self.sync()
            }
            other => Err(Error::value_error(format!(
                "init_ccl: unknown backend {other:?}; expected \"shm\" or \"nccl\""
            ))),
        }
    }

    /// `init_ccl("shm")` with data slots of `slot_bytes` per worker (collectives move data in
    /// chunks of this size; the default is 4 MiB).
    pub fn init_ccl_shm(&self, slot_bytes: usize) -> Result<()> {
        let seg = shm::create(self.num_workers(), slot_bytes)?;
        self.get_global_func("ccl.init_shm")?
            .call(&[Any::from(seg.name.as_str())])?;
        // Every worker has mapped the file once the sync returns; then its name can go.
        let r = self.sync();
        drop(seg);
        r
    }

    fn ccl_call(&self, name: &str, args: &[Any]) -> Result<()> {
        self.get_global_func(name)?.call(args)?;
        Ok(())
    }

    /// `dst = op(src of every worker)` on every worker; `op` is sum, prod, min, max or avg.
    pub fn allreduce(&self, src: &DRef, dst: &DRef, op: &str) -> Result<()> {
        self.ccl_call("ccl.allreduce", &[src.into(), dst.into(), op.into()])
    }

    /// Every worker's `dst` = the `src` of workers 0, 1, ... one after the other.
    pub fn allgather(&self, src: &DRef, dst: &DRef) -> Result<()> {
        self.ccl_call("ccl.allgather", &[src.into(), dst.into()])
    }

    /// Worker i's `dst` = part i of `op(src of every worker)`.
    pub fn reduce_scatter(&self, src: &DRef, dst: &DRef, op: &str) -> Result<()> {
        self.ccl_call("ccl.reduce_scatter", &[src.into(), dst.into(), op.into()])
    }

    /// Every worker's `dst` = worker 0's `src`.
    pub fn broadcast_from_worker_0(&self, src: &DRef, dst: &DRef) -> Result<()> {
        self.ccl_call("ccl.broadcast_from_worker_0", &[src.into(), dst.into()])
    }

    /// Worker i's `dst` = part i of worker 0's `src`.
    pub fn scatter_from_worker_0(&self, src: &DRef, dst: &DRef) -> Result<()> {
        self.ccl_call("ccl.scatter_from_worker_0", &[src.into(), dst.into()])
    }

    /// Worker 0's `dst` = the `src` of workers 0, 1, ... one after the other.
    pub fn gather_to_worker_0(&self, src: &DRef, dst: &DRef) -> Result<()> {
        self.ccl_call("ccl.gather_to_worker_0", &[src.into(), dst.into()])
    }

    /// Worker i sends its `src` to worker `peers[i]` (negative: worker i sends nothing); each
    /// send returns once the peer's matching `recv` has taken the data.
    pub fn send(&self, src: &DRef, peers: &[i64]) -> Result<()> {
        self.check_peers("ccl.send", peers)?;
        self.ccl_call("ccl.send", &[src.into(), peer_list(peers)])
    }

    /// Worker i receives into its `dst` from worker `peers[i]` (negative: nothing).
    pub fn recv(&self, dst: &DRef, peers: &[i64]) -> Result<()> {
        self.check_peers("ccl.recv", peers)?;
        self.ccl_call("ccl.recv", &[dst.into(), peer_list(peers)])
    }

    /// A send's or recv's peers, checked before any worker sees them (a ValueError at once): one
    /// entry per worker, each negative (nothing to do) or another worker of the session. A bad
    /// entry reaching the workers would fail its own worker only, and the worker exchanging with
    /// it would wait (with NCCL, on the GPU, with no timeout).
    fn check_peers(&self, what: &str, peers: &[i64]) -> Result<()> {
        let world = self.num_workers();
        registry::check_peer_count(what, peers.len(), world)?;
        for (rank, &p) in peers.iter().enumerate() {
            registry::check_peer(what, rank, p, world)?;
        }
        Ok(())
    }
}

fn peer_list(peers: &[i64]) -> Any {
    Any::from(Array::new(peers.iter().map(|p| Any::from(*p)).collect()))
}
