//! The controller: owns the links to every worker, hands out register ids, broadcasts commands,
//! and turns answers into results or errors.
//!
//! Failures are reported, never waited on: a worker's error comes back with the next answer and is
//! raised naming its rank, command and function; a worker that ended (socket EOF, a closed
//! mailbox) is reaped and reported with its exit status, and the session then refuses further
//! work with that same error.

use crate::codec::{Value, WireError, Writer};
use crate::peer::Peer;
use crate::process::WorkerProgram;
use crate::protocol::{Command, Reg, Reply};
use crate::shm_tensor::Segment;
use crate::transport::{LinkError, SocketLink};
use rffi_core::error::frame;
use rffi_core::{Error, Result};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct State {
    peers: Vec<Peer>,
    next_reg: Reg,
    free_regs: Vec<Reg>,
    seq: u64,
    /// A sync in progress: its sequence number and the ranks yet to answer.
    awaiting: Option<(u64, Vec<usize>)>,
    /// A fetch in progress: its sequence number, register and rank.
    awaiting_fetch: Option<(u64, Reg, usize)>,
    /// Failures that came with answers nobody waited for any more (an interrupted sync).
    stashed: Option<(usize, WireError)>,
    /// Set once a worker has ended: every later operation raises it.
    dead: Option<(String, String)>,
    shut: bool,
    writer: Writer,
    /// Shared-memory segments of tensors sent since the last full sync (unlinked at the next).
    segments: Vec<Segment>,
}

/// The shared core of a session; DRefs hold it to free their registers.
pub struct Controller {
    state: Mutex<State>,
    /// Registers whose last handle went away, freed on every worker with the next command (so a
    /// handle dropped during garbage collection never does I/O).
    released: Mutex<Vec<Reg>>,
    num_workers: usize,
    failed_rank: Mutex<Option<usize>>,
    /// Workers may be on other hosts: host tensors travel inline in frames, not through this
    /// host's shared memory, and worker 0's host copies carry their bytes.
    inline_data: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The error raised for worker `rank`'s failure: its kind, a message naming the rank, command and
/// function, and the worker's traceback under a frame for the worker.
fn worker_error(rank: usize, w: &WireError) -> Error {
    let what = if w.function.is_empty() {
        w.command.clone()
    } else {
        format!("{} `{}`", w.command, w.function)
    };
    let e = Error::with_backtrace(
        &w.kind,
        format!("worker {rank}: {what} failed: {}", w.message),
        &w.backtrace,
    );
    e.append_backtrace(&frame(&format!("<rffi session worker {rank}>"), 0, &what));
    e
}

impl Controller {
    fn new(peers: Vec<Peer>, inline_data: bool) -> Controller {
        Controller {
            num_workers: peers.len(),
            inline_data,
            state: Mutex::new(State {
                peers,
                next_reg: 0,
                free_regs: Vec::new(),
                seq: 0,
                awaiting: None,
                awaiting_fetch: None,
                stashed: None,
                dead: None,
                shut: false,
                writer: Writer::default(),
                segments: Vec::new(),
            }),
            released: Mutex::new(Vec::new()),
            failed_rank: Mutex::new(None),
        }
    }

    /// `n` workers, each a thread of this process.
    pub fn threads(n: usize) -> Result<Controller> {
        check_count(n)?;
        let peers = (0..n)
            .map(|rank| Peer::thread(rank, n))
            .collect::<Result<_>>()?;
        Ok(Controller::new(peers, false))
    }

    /// Worker 0 in a thread of this process, workers 1.. as processes of `program`.
    pub fn processes(n: usize, program: &WorkerProgram) -> Result<Controller> {
        check_count(n)?;
        let mut peers = vec![Peer::thread(0, n)?];
        for rank in 1..n {
            peers.push(Peer::process(program, rank, n)?);
        }
        Ok(Controller::new(peers, false))
    }

    /// Workers already running somewhere (started by Ray, say), worker i connected by the
    /// stream socket `workers[i].0` and described by `workers[i].1` in messages.
    pub fn connected(workers: Vec<(SocketLink, String)>) -> Result<Controller> {
        check_count(workers.len())?;
        let peers = workers
            .into_iter()
            .map(|(link, what)| Peer::Connected { link, what })
            .collect();
        Ok(Controller::new(peers, true))
    }

    pub fn num_workers(&self) -> usize {
        self.num_workers
    }

    /// Whether host data travels inline (workers may be on other hosts; see `connected`).
    pub fn inline_data(&self) -> bool {
        self.inline_data
    }

    /// The rank whose failure was raised last, taken (for bindings that attach it to the
    /// exception they raise).
    pub fn failed_rank(&self) -> Option<usize> {
        lock(&self.failed_rank).take()
    }

    fn raise(&self, rank: usize, w: &WireError) -> Error {
        *lock(&self.failed_rank) = Some(rank);
        worker_error(rank, w)
    }

    /// Keeps the segments of a call's tensors until every worker has mapped them.
    pub fn keep_segments(&self, segments: Vec<Segment>) {
        if !segments.is_empty() {
            lock(&self.state).segments.extend(segments);
        }
    }

    /// Called when a handle's last reference goes; no I/O here.
    pub fn release(&self, reg: Reg) {
        lock(&self.released).push(reg);
    }

    fn usable<'a>(&'a self) -> Result<MutexGuard<'a, State>> {
        let st = lock(&self.state);
        if st.shut {
            return Err(Error::runtime_error("the session has been shut down"));
        }
        if let Some((kind, msg)) = &st.dead {
            return Err(Error::new(kind, msg.clone()));
        }
        Ok(st)
    }

    /// Marks the session dead because worker `rank` ended, and returns the error saying so.
    fn worker_gone(&self, st: &mut State, rank: usize) -> Error {
        let how = st.peers[rank].how_it_ended(rank);
        let msg = format!("{how}; the session cannot be used any more");
        *lock(&self.failed_rank) = Some(rank);
        st.dead = Some(("RuntimeError".into(), msg.clone()));
        Error::runtime_error(msg)
    }

    /// Sends `cmd` to `ranks`, preceded in the same frame by a Free of the registers released
    /// since the last command (to every worker).
    fn send_to(&self, st: &mut State, ranks: &[usize], cmd: &Command) -> Result<()> {
        let released = std::mem::take(&mut *lock(&self.released));
        let mut w = std::mem::take(&mut st.writer);
        let mut result = Ok(());
        w.buf.clear();
        if !released.is_empty() {
            let free = Command::Free { regs: released };
            free.encode(&mut w);
            if ranks.len() != st.peers.len() {
                // Workers outside `ranks` get the Free in a frame of its own.
                let others: Vec<usize> =
                    (0..st.peers.len()).filter(|r| !ranks.contains(r)).collect();
                result = self.send_frame(st, &others, &w.buf, "free");
            }
            if let Command::Free { regs } = free {
                st.free_regs.extend(regs);
            }
        }
        if result.is_ok() {
            cmd.encode(&mut w);
            result = self.send_frame(st, ranks, &w.buf, cmd.name());
        }
        st.writer = w;
        result
    }

    fn send_frame(&self, st: &mut State, ranks: &[usize], frame: &[u8], what: &str) -> Result<()> {
        for &r in ranks {
            match st.peers[r].link().send(frame) {
                Ok(()) => {}
                Err(LinkError::Closed) => return Err(self.worker_gone(st, r)),
                Err(LinkError::Io(e)) => {
                    return Err(Error::runtime_error(format!(
                        "sending {what} to worker {r} failed: {e}"
                    )))
                }
            }
        }
        Ok(())
    }

    fn all(&self) -> Vec<usize> {
        (0..self.num_workers).collect()
    }

    /// Allocates a register and broadcasts the command that fills it.
    pub fn broadcast_new(&self, make: impl FnOnce(Reg) -> Command) -> Result<Reg> {
        let mut st = self.usable()?;
        let reg = st.free_regs.pop().unwrap_or_else(|| {
            st.next_reg += 1;
            st.next_reg - 1
        });
        let all = self.all();
        if let Err(e) = self.send_to(&mut st, &all, &make(reg)) {
            st.free_regs.push(reg);
            return Err(e);
        }
        Ok(reg)
    }

    /// Waits for `rank`'s answer to `seq`, at most until `deadline`; `Ok(None)` on timeout.
    fn wait_reply(
        &self,
        st: &mut State,
        rank: usize,
        seq: u64,
        deadline: Option<Instant>,
    ) -> Result<Option<Reply>> {
        loop {
            let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let frame = match st.peers[rank].link().recv(timeout) {
                Ok(Some(f)) => f,
                Ok(None) => return Ok(None),
                Err(LinkError::Closed) => return Err(self.worker_gone(st, rank)),
                Err(LinkError::Io(e)) => {
                    return Err(Error::runtime_error(format!(
                        "reading from worker {rank} failed: {e}"
                    )))
                }
            };
            let reply = Reply::decode(&frame)?;
            if reply.seq() == seq {
                return Ok(Some(reply));
            }
            // An answer to a wait that was given up (an interrupted sync or fetch): keep its
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

    /// Starts a sync of `ranks` (every worker when `None`) unless one is in progress, then waits
    /// up to `timeout` for it. `Ok(false)`: not finished yet; call again to keep waiting.
    pub fn sync(&self, only_worker_0: bool, timeout: Option<Duration>) -> Result<bool> {
        let mut st = self.usable()?;
        if st.awaiting.is_none() {
            let ranks = if only_worker_0 { vec![0] } else { self.all() };
            let seq = Self::next_seq(&mut st);
            self.send_to(&mut st, &ranks, &Command::Sync { seq })?;
            st.awaiting = Some((seq, ranks));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let (seq, mut ranks) = st.awaiting.take().expect("set above");
        let mut first: Option<(usize, WireError)> = st.stashed.take();
        while let Some(&rank) = ranks.first() {
            match self.wait_reply(&mut st, rank, seq, deadline) {
                Ok(Some(Reply::Done { error, .. })) => {
                    if let (Some(e), None) = (error, &first) {
                        first = Some((rank, e));
                    }
                    ranks.remove(0);
                }
                Ok(Some(Reply::Fetched { .. })) => {
                    return Err(Error::runtime_error(format!(
                        "worker {rank} answered a sync with a fetch result"
                    )))
                }
                Ok(None) => {
                    st.awaiting = Some((seq, ranks));
                    st.stashed = first;
                    return Ok(false);
                }
                Err(e) => return Err(e),
            }
        }
        if !only_worker_0 {
            // Every worker has run every earlier call: their tensors are mapped.
            st.segments.clear();
        }
        match first {
            Some((rank, e)) => Err(self.raise(rank, &e)),
            None => Ok(true),
        }
    }

    /// The value of `reg` on worker `rank`.
    pub fn fetch(&self, reg: Reg, rank: usize) -> Result<Value> {
        Ok(self.fetch_timeout(reg, rank, None)?.expect("no timeout"))
    }

    /// `fetch`, waiting at most `timeout`: `Ok(None)` when the answer has not come yet (the
    /// fetch stays in progress, and the next call for the same register and rank goes on
    /// waiting for it).
    pub fn fetch_timeout(
        &self,
        reg: Reg,
        rank: usize,
        timeout: Option<Duration>,
    ) -> Result<Option<Value>> {
        if rank >= self.num_workers {
            return Err(Error::index_error(format!(
                "worker rank {rank} is out of range for a session of {} workers",
                self.num_workers
            )));
        }
        let mut st = self.usable()?;
        let seq = match st.awaiting_fetch.take() {
            Some((seq, r, k)) if r == reg && k == rank => seq,
            _ => {
                let seq = Self::next_seq(&mut st);
                self.send_to(&mut st, &[rank], &Command::Fetch { seq, reg })?;
                seq
            }
        };
        let deadline = timeout.map(|t| Instant::now() + t);
        let Some(reply) = self.wait_reply(&mut st, rank, seq, deadline)? else {
            st.awaiting_fetch = Some((seq, reg, rank));
            return Ok(None);
        };
        if let Some((r, e)) = st.stashed.take() {
            return Err(self.raise(r, &e));
        }
        match reply {
            Reply::Fetched { result: Ok(v), .. } => Ok(Some(v)),
            Reply::Fetched { result: Err(e), .. } => Err(self.raise(rank, &e)),
            _ => Err(Error::runtime_error(format!(
                "worker {rank} answered a fetch with something else"
            ))),
        }
    }

    /// Copies between host memory at `addr` and worker 0's tensor in `reg`, in command order.
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
        self.host_copy(|seq| Command::Copy {
            seq,
            reg,
            addr,
            nbytes,
            to_worker,
        })
        .map(drop)
    }

    /// Writes `data` into worker 0's tensor in `reg`, the bytes travelling in the frame (worker 0
    /// in another process).
    pub fn copy_in(&self, reg: Reg, data: Vec<u8>) -> Result<()> {
        self.host_copy(|seq| Command::CopyIn { seq, reg, data })
            .map(drop)
    }

    /// Reads worker 0's tensor in `reg` into `out`, the bytes travelling in the frame.
    pub fn copy_out(&self, reg: Reg, out: &mut [u8]) -> Result<()> {
        let nbytes = out.len() as u64;
        match self.host_copy(|seq| Command::CopyOut { seq, reg, nbytes })? {
            Some(Value::Bytes(b)) if b.len() == out.len() => {
                out.copy_from_slice(&b);
                Ok(())
            }
            _ => Err(Error::runtime_error(
                "worker 0 answered copy_from_worker_0 with something else",
            )),
        }
    }

    /// Sends a host copy to worker 0 and waits for its answer: the bytes copied out, if any.
    /// Waited for without a timeout: a copy from host memory reads an address that must outlive
    /// it.
    fn host_copy(&self, make: impl FnOnce(u64) -> Command) -> Result<Option<Value>> {
        let mut st = self.usable()?;
        let seq = Self::next_seq(&mut st);
        let cmd = make(seq);
        self.send_to(&mut st, &[0], &cmd)?;
        let value = match self.wait_reply(&mut st, 0, seq, None)? {
            Some(Reply::Done { error: Some(e), .. })
            | Some(Reply::Fetched { result: Err(e), .. }) => return Err(self.raise(0, &e)),
            Some(Reply::Done { error: None, .. }) => None,
            Some(Reply::Fetched { result: Ok(v), .. }) => Some(v),
            None => {
                return Err(Error::runtime_error(format!(
                    "worker 0 did not answer {}",
                    cmd.name()
                )))
            }
        };
        match st.stashed.take() {
            Some((r, e)) => Err(self.raise(r, &e)),
            None => Ok(value),
        }
    }

    /// Stops every worker and reaps them; idempotent.
    pub fn shutdown(&self) {
        let mut st = lock(&self.state);
        if st.shut {
            return;
        }
        st.shut = true;
        let mut w = Writer::default();
        Command::Shutdown.encode(&mut w);
        for p in &st.peers {
            let _ = p.link().send(&w.buf);
        }
        let peers = std::mem::take(&mut st.peers);
        // Unlinked once the workers have stopped (a queued call may still map one).
        let segments = std::mem::take(&mut st.segments);
        drop(st);
        let deadline = Instant::now() + Duration::from_secs(2);
        for p in peers {
            p.stop(deadline);
        }
        drop(segments);
    }

    /// Process ids of the worker processes (for tests that kill one).
    pub fn worker_pids(&self) -> Vec<i32> {
        lock(&self.state)
            .peers
            .iter()
            .filter_map(Peer::pid)
            .collect()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn check_count(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::value_error("a session needs at least 1 worker"));
    }
    Ok(())
}
