//! Waiting on workers: for their progress (a sync), for an answer (a fetch, a failure), and the
//! host copies that wait for worker 0; and noticing a worker that ended meanwhile.

use super::{Controller, Fds, State};
use crate::codec::{Resolve, Value, WireError};
use crate::protocol::{Command, Reg, Reply};
use crate::shm_tensor;
use crate::transport::{spin_until, Frame, LinkError};
use rffi_core::{Any, DataType, Error, Result};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// How often a waiting controller checks that the workers it waits for are still alive.
const LIVENESS_CHECK: Duration = Duration::from_millis(10);

/// Tensors in an answer: the answer frame's descriptors, which this process now owns alone.
struct AnswerContext<'a>(&'a [OwnedFd]);

impl Resolve for AnswerContext<'_> {
    fn register(&self, _: u64) -> Result<Any> {
        Err(Error::type_error(
            "a fetched value cannot refer to a register",
        ))
    }
    fn tensor(&self, fd: u32, shape: &[i64], dtype: DataType) -> Result<Any> {
        let fd = self.0.get(fd as usize).ok_or_else(|| {
            Error::runtime_error("a worker's answer lacks the descriptor of a tensor")
        })?;
        Ok(shm_tensor::open(fd, shape, dtype, true)?.into())
    }
}

impl Controller {
    /// The next frame from worker `rank`, waiting at most until `deadline`.
    fn read_frame(
        &self,
        st: &mut State,
        rank: usize,
        deadline: Option<Instant>,
    ) -> Result<Option<Frame>> {
        let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        match st.peers[rank].link().recv(timeout) {
            Ok(f) => Ok(f),
            Err(LinkError::Closed) => Err(self.worker_gone(st, rank)),
            Err(LinkError::Io(e)) => Err(Error::runtime_error(format!(
                "reading from worker {rank} failed: {e}"
            ))),
        }
    }

    /// Waits for `rank`'s answer to `seq`, at most until `deadline`; `Ok(None)` on timeout. The
    /// answer comes with the descriptors of the tensors in it.
    fn wait_reply(
        &self,
        st: &mut State,
        rank: usize,
        seq: u64,
        deadline: Option<Instant>,
    ) -> Result<Option<(Reply, Vec<OwnedFd>)>> {
        loop {
            let Some(frame) = self.read_frame(st, rank, deadline)? else {
                return Ok(None);
            };
            let reply = Reply::decode(&frame.bytes)?;
            if reply.seq() == seq {
                return Ok(Some((reply, frame.fds)));
            }
            // An answer to a sync or fetch that was given up (an interrupted one): keep its
            // failure, and do not wait for it again.
            let stale = reply.seq();
            if let Some((s, ranks)) = &mut st.awaiting {
                if *s == stale {
                    ranks.retain(|r| *r != rank);
                }
            }
            if st.awaiting_fetch.is_some_and(|(s, _, _)| s == stale) {
                st.awaiting_fetch = None;
            }
            let err = match reply {
                Reply::Done { error, .. } => error,
                Reply::Fetched { result, .. } => result.err(),
            };
            if let (Some(e), None) = (err, &st.stashed) {
                st.stashed = Some((rank, e));
            }
        }
    }

    fn next_seq(st: &mut State) -> u64 {
        st.seq += 1;
        st.seq
    }

    /// Waits until each of `ranks` has finished every frame sent to it, at most until
    /// `deadline` (`Ok(false)` then). A worker that ended meanwhile is an error.
    fn wait_progress(
        &self,
        st: &mut State,
        ranks: &[usize],
        deadline: Option<Instant>,
    ) -> Result<bool> {
        let progress = self.progress.as_ref().expect("workers on this host");
        let targets: Vec<u64> = (0..self.num_workers)
            .map(|r| if ranks.contains(&r) { st.sent[r] } else { 0 })
            .collect();
        let met = || ranks.iter().all(|&r| progress.done(r) >= targets[r]);
        let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if met() || spin_until(met, left()) {
            return Ok(true);
        }
        loop {
            let slice = left().map_or(LIVENESS_CHECK, |l| l.min(LIVENESS_CHECK));
            if slice.is_zero() {
                return Ok(false);
            }
            if progress.wait(&targets, slice) {
                return Ok(true);
            }
            for &r in ranks {
                if progress.done(r) < targets[r] && !st.peers[r].alive() {
                    return Err(self.worker_gone(st, r));
                }
            }
        }
    }

    /// An error for the first of `ranks` that has ended: a thread that returned, or a process
    /// whose socket was closed (one `poll` for all of them).
    fn check_alive(&self, st: &mut State, ranks: &[usize]) -> Result<()> {
        let mut polled = Vec::new();
        for &r in ranks {
            match st.peers[r].socket() {
                Some(fd) => polled.push((
                    r,
                    libc::pollfd {
                        fd,
                        events: 0,
                        revents: 0,
                    },
                )),
                None if !st.peers[r].alive() => return Err(self.worker_gone(st, r)),
                None => {}
            }
        }
        if polled.is_empty() {
            return Ok(());
        }
        let mut fds: Vec<libc::pollfd> = polled.iter().map(|p| p.1).collect();
        // SAFETY: `fds` holds valid pollfds; a zero timeout never blocks.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        let hung = |p: &libc::pollfd| p.revents & (libc::POLLHUP | libc::POLLERR) != 0;
        match fds.iter().position(hung) {
            Some(i) => Err(self.worker_gone(st, polled[i].0)),
            None => Ok(()),
        }
    }

    /// Once `ranks` have finished what was sent: an error if one has ended, else the first
    /// failure any of them holds (asked for with a `Sync`), or one kept from an answer nobody
    /// waited for. `ask_processes`: ask every worker process too (an answer, or the end of its
    /// socket, is the only sure sign of life of an idle process: one killed a moment ago may
    /// not have closed its socket yet).
    fn failures(
        &self,
        st: &mut State,
        ranks: &[usize],
        ask_processes: bool,
    ) -> Result<Option<(usize, WireError)>> {
        self.check_alive(st, ranks)?;
        // The answer to a fetch given up on is in its worker's link by now; take its failure.
        if let Some((seq, _, r)) = st.awaiting_fetch.filter(|f| ranks.contains(&f.2)) {
            if let Some((Reply::Fetched { result: Err(e), .. }, _)) =
                self.wait_reply(st, r, seq, None)?
            {
                st.stashed.get_or_insert((r, e));
            }
            st.awaiting_fetch = None;
        }
        let mut first = st.stashed.take();
        for &r in ranks {
            let ask = ask_processes && st.peers[r].socket().is_some();
            if !ask && !self.progress.as_ref().is_some_and(|p| p.failed(r)) {
                continue;
            }
            let seq = Self::next_seq(st);
            self.send_to(st, &[r], &Command::Sync { seq }, &Fds::None)?;
            match self.wait_reply(st, r, seq, None)? {
                Some((Reply::Done { error, .. }, _)) => {
                    if let (Some(e), None) = (error, &first) {
                        first = Some((r, e));
                    }
                }
                _ => {
                    return Err(Error::runtime_error(format!(
                        "worker {r} answered a sync with something else"
                    )))
                }
            }
        }
        Ok(first)
    }

    /// Waits for `ranks` (every worker when `None`) up to `timeout`, then raises the first
    /// failure among them. `Ok(false)`: not finished yet; call again to keep waiting.
    ///
    /// A sync with nothing sent since the last one asks the worker processes (one message
    /// each), so a worker that ended while idle is reported by it too.
    pub fn sync(&self, only_worker_0: bool, timeout: Option<Duration>) -> Result<bool> {
        let mut st = self.usable()?;
        let ranks = if only_worker_0 { vec![0] } else { self.all() };
        if self.progress.is_none() {
            return self.sync_by_messages(&mut st, ranks, timeout);
        }
        let idle = ranks.iter().all(|&r| st.sent[r] == st.synced[r]);
        let deadline = timeout.map(|t| Instant::now() + t);
        if !self.wait_progress(&mut st, &ranks, deadline)? {
            return Ok(false);
        }
        let first = self.failures(&mut st, &ranks, idle);
        for &r in &ranks {
            st.synced[r] = st.sent[r];
        }
        match first? {
            Some((rank, e)) => Err(self.raise(rank, &e)),
            None => Ok(true),
        }
    }

    /// A sync of workers that cannot share this host's memory: a `Sync` to each of `ranks`
    /// (unless one is in progress), answered once it has run everything before. `Ok(false)`
    /// after `timeout` with the sync still in progress; the next call goes on waiting for it.
    fn sync_by_messages(
        &self,
        st: &mut State,
        ranks: Vec<usize>,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        if st.awaiting.is_none() {
            let seq = Self::next_seq(st);
            self.send_to(st, &ranks, &Command::Sync { seq }, &Fds::None)?;
            st.awaiting = Some((seq, ranks));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let (seq, mut ranks) = st.awaiting.take().expect("set above");
        let mut first: Option<(usize, WireError)> = st.stashed.take();
        while let Some(&rank) = ranks.first() {
            match self.wait_reply(st, rank, seq, deadline)? {
                Some((Reply::Done { error, .. }, _)) => {
                    if let (Some(e), None) = (error, &first) {
                        first = Some((rank, e));
                    }
                    ranks.remove(0);
                }
                Some(_) => {
                    return Err(Error::runtime_error(format!(
                        "worker {rank} answered a sync with a fetch result"
                    )))
                }
                None => {
                    st.awaiting = Some((seq, ranks));
                    st.stashed = first;
                    return Ok(false);
                }
            }
        }
        match first {
            Some((rank, e)) => Err(self.raise(rank, &e)),
            None => Ok(true),
        }
    }

    /// The value of `reg` on worker `rank`.
    pub fn fetch(&self, reg: Reg, rank: usize) -> Result<Any> {
        Ok(self.fetch_timeout(reg, rank, None)?.expect("no timeout"))
    }

    /// `fetch`, waiting at most `timeout`: `Ok(None)` when the answer has not come yet (the
    /// fetch stays in progress, and the next call for the same register and rank goes on
    /// waiting for it). A tensor comes back as a new host tensor holding a copy.
    pub fn fetch_timeout(
        &self,
        reg: Reg,
        rank: usize,
        timeout: Option<Duration>,
    ) -> Result<Option<Any>> {
        if rank >= self.num_workers {
            return Err(Error::index_error(format!(
                "worker rank {rank} is out of range for a session of {} workers",
                self.num_workers
            )));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        if let Some(shared) = self.shared_tensor(reg) {
            // Read from the controller's own mapping once the worker is done with it.
            let mut st = self.usable()?;
            if !self.wait_progress(&mut st, &[rank], deadline)? {
                return Ok(None);
            }
            if let Some((r, e)) = self.failures(&mut st, &[rank], false)? {
                return Err(self.raise(r, &e));
            }
            return Ok(Some(shared.read(rank)?.into()));
        }
        let mut st = self.usable()?;
        let seq = match st.awaiting_fetch.take() {
            Some((seq, r, k)) if r == reg && k == rank => seq,
            _ => {
                let seq = Self::next_seq(&mut st);
                self.send_to(&mut st, &[rank], &Command::Fetch { seq, reg }, &Fds::None)?;
                seq
            }
        };
        let Some((reply, fds)) = self.wait_reply(&mut st, rank, seq, deadline)? else {
            st.awaiting_fetch = Some((seq, reg, rank));
            return Ok(None);
        };
        if let Some((r, e)) = st.stashed.take() {
            return Err(self.raise(r, &e));
        }
        match reply {
            Reply::Fetched { result: Ok(v), .. } => v.into_any(&AnswerContext(&fds)).map(Some),
            Reply::Fetched { result: Err(e), .. } => Err(self.raise(rank, &e)),
            _ => Err(Error::runtime_error(format!(
                "worker {rank} answered a fetch with something else"
            ))),
        }
    }

    /// Copies between host memory at `addr` and worker 0's tensor in `reg`, in command order:
    /// a tensor `empty` made is copied here, one `memcpy` into or out of the controller's
    /// mapping once worker 0 has finished what was sent to it; any other is copied by worker 0.
    ///
    /// # Safety
    /// `addr` must be valid for `nbytes` bytes (readable, or writable when copying from the
    /// worker) until this returns.
    pub unsafe fn copy_worker_0(
        &self,
        reg: Reg,
        addr: u64,
        nbytes: u64,
        to_worker: bool,
    ) -> Result<()> {
        if let Some(shared) = self.shared_tensor(reg) {
            if shared.nbytes as u64 != nbytes {
                return Err(Error::value_error(format!(
                    "the host array has {nbytes} bytes but the worker tensor {:?} {} has {}",
                    shared.shape, shared.dtype, shared.nbytes
                )));
            }
            let mut st = self.usable()?;
            self.wait_progress(&mut st, &[0], None)?;
            if let Some((r, e)) = self.failures(&mut st, &[0], false)? {
                return Err(self.raise(r, &e));
            }
            let (host, worker) = (addr as *mut u8, shared.ptr(0));
            // SAFETY: both hold `nbytes` bytes (checked above and by the caller's contract);
            // worker 0 has finished every command sent to it and no other can be sent while we
            // hold the state, so nothing else touches its tensor; a host array never overlaps
            // the controller's own mapping.
            unsafe {
                if to_worker {
                    std::ptr::copy_nonoverlapping(host, worker, nbytes as usize);
                } else {
                    std::ptr::copy_nonoverlapping(worker, host, nbytes as usize);
                }
            }
            return Ok(());
        }
        let cmd = |seq| Command::Copy {
            seq,
            reg,
            addr,
            nbytes,
            to_worker,
        };
        self.host_copy(cmd, None, None)
    }

    /// Writes `data` into worker 0's tensor in `reg`, sent over worker 0's connection (worker 0
    /// in another process, perhaps on another host).
    pub fn copy_in(&self, reg: Reg, data: &[u8]) -> Result<()> {
        let nbytes = data.len() as u64;
        self.host_copy(|seq| Command::CopyIn { seq, reg, nbytes }, Some(data), None)
    }

    /// Reads worker 0's tensor in `reg` into `out`, over worker 0's connection.
    pub fn copy_out(&self, reg: Reg, out: &mut [u8]) -> Result<()> {
        let nbytes = out.len() as u64;
        self.host_copy(|seq| Command::CopyOut { seq, reg, nbytes }, None, Some(out))
    }

    /// Sends a host copy to worker 0 (`send`: the bytes that follow the command, in a frame of
    /// their own) and waits for its answer (`recv`: where the bytes that follow the answer go).
    /// Waited for without a timeout: a copy from host memory reads an address that must outlive
    /// it.
    fn host_copy(
        &self,
        make: impl FnOnce(u64) -> Command,
        send: Option<&[u8]>,
        recv: Option<&mut [u8]>,
    ) -> Result<()> {
        let mut st = self.usable()?;
        let seq = Self::next_seq(&mut st);
        let cmd = make(seq);
        self.send_to(&mut st, &[0], &cmd, &Fds::None)?;
        if let Some(bytes) = send {
            self.send_frame(&mut st, &[0], bytes, cmd.name(), &Fds::None)?;
        }
        match self.wait_reply(&mut st, 0, seq, None)? {
            Some((Reply::Done { error: Some(e), .. }, _))
            | Some((Reply::Fetched { result: Err(e), .. }, _)) => return Err(self.raise(0, &e)),
            Some((Reply::Done { error: None, .. }, _)) if recv.is_none() => {}
            Some((
                Reply::Fetched {
                    result: Ok(Value::Int(n)),
                    ..
                },
                _,
            )) if recv.as_ref().is_some_and(|out| out.len() as i64 == n) => {
                let out = recv.expect("checked");
                let bytes = self
                    .read_frame(&mut st, 0, None)?
                    .expect("no timeout")
                    .bytes;
                if bytes.len() != out.len() {
                    return Err(Error::runtime_error(format!(
                        "worker 0 sent {} bytes for a copy of {}",
                        bytes.len(),
                        out.len()
                    )));
                }
                out.copy_from_slice(&bytes);
            }
            _ => {
                return Err(Error::runtime_error(format!(
                    "worker 0 answered {} with something else",
                    cmd.name()
                )))
            }
        }
        match st.stashed.take() {
            Some((r, e)) => Err(self.raise(r, &e)),
            None => Ok(()),
        }
    }
}
