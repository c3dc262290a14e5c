//! The controller: owns the links to every worker, hands out register ids, broadcasts commands,
//! and turns answers into results or errors.
//!
//! Waiting needs no message when the workers are on this host: every worker counts the frames it
//! has finished in the session's progress block (`progress`), so a sync compares those counts
//! with the frames sent, and sleeps on a futex until they match. Only a worker that holds a
//! failure is asked for it (a `Sync` command, answered with the error). Workers connected from
//! elsewhere (a `SocketSession`) are synced by messages: a `Sync` to each, and its answers.
//!
//! Failures are reported, never waited on: a worker's error comes back with the next answer and is
//! raised naming its rank, command and function; a worker that ended (its process exited, socket
//! EOF, a closed mailbox) is reaped and reported with its exit status, and the session then
//! refuses further work with that same error.

use crate::codec::{WireError, Writer};
use crate::peer::Peer;
use crate::process::WorkerProgram;
use crate::progress::Progress;
use crate::protocol::{Command, Reg};
use crate::shm_tensor::{self, SharedTensor};
use crate::transport::{LinkError, SocketLink};
use rffi_core::error::frame;
use rffi_core::{DataType, Error, Result};
use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

mod waits;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct State {
    peers: Vec<Peer>,
    next_reg: Reg,
    free_regs: Vec<Reg>,
    seq: u64,
    /// Frames sent to each worker (a sync waits until each has finished as many).
    sent: Vec<u64>,
    /// `sent` when each worker's last sync ended.
    synced: Vec<u64>,
    /// A sync by messages in progress: its sequence number and the ranks yet to answer.
    awaiting: Option<(u64, Vec<usize>)>,
    /// A fetch in progress: its sequence number, register and rank.
    awaiting_fetch: Option<(u64, Reg, usize)>,
    /// Failures that came with answers nobody waited for any more (an interrupted fetch).
    stashed: Option<(usize, WireError)>,
    /// Set once a worker has ended: every later operation raises it.
    dead: Option<(String, String)>,
    shut: bool,
    writer: Writer,
}

/// The descriptors sent with a command.
pub enum Fds<'a> {
    None,
    /// The same descriptors to every worker.
    Same(&'a [OwnedFd]),
    /// Worker r gets `fds[r]` (as the frame's descriptor 0).
    OnePerWorker(&'a [OwnedFd]),
}

impl Fds<'_> {
    fn for_rank(&self, r: usize) -> Vec<BorrowedFd<'_>> {
        match self {
            Fds::None => Vec::new(),
            Fds::Same(fds) => fds.iter().map(AsFd::as_fd).collect(),
            Fds::OnePerWorker(fds) => vec![fds[r].as_fd()],
        }
    }
}

/// The shared core of a session; DRefs hold it to free their registers.
pub struct Controller {
    state: Mutex<State>,
    /// Registers whose last handle went away, freed on every worker with the next command (so a
    /// handle dropped during garbage collection never does I/O).
    released: Mutex<Vec<Reg>>,
    /// The controller's side of the tensors `empty` made in shared memory, by register.
    shared: Mutex<HashMap<Reg, Arc<SharedTensor>>>,
    /// Where workers on this host count their progress; `None` for workers connected from
    /// elsewhere, whose host data also travels inline in the frames.
    progress: Option<Progress>,
    num_workers: usize,
    failed_rank: Mutex<Option<usize>>,
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
    /// A controller of `peers`: on this host (`local`), every worker gets the progress block
    /// with its first command; otherwise host data travels inline and syncs are messages.
    fn new(peers: Vec<Peer>, local: bool) -> Result<Controller> {
        let n = peers.len();
        let (progress, fd) = match local {
            true => {
                let (p, fd) = Progress::create(n)?;
                (Some(p), Some(fd))
            }
            false => (None, None),
        };
        let ctl = Controller {
            num_workers: n,
            state: Mutex::new(State {
                peers,
                next_reg: 0,
                free_regs: Vec::new(),
                seq: 0,
                sent: vec![0; n],
                synced: vec![0; n],
                awaiting: None,
                awaiting_fetch: None,
                stashed: None,
                dead: None,
                shut: false,
                writer: Writer::default(),
            }),
            released: Mutex::new(Vec::new()),
            shared: Mutex::new(HashMap::new()),
            progress,
            failed_rank: Mutex::new(None),
        };
        if let Some(fd) = fd {
            let mut st = lock(&ctl.state);
            let all = ctl.all();
            let fds = [fd];
            ctl.send_to(&mut st, &all, &Command::Attach { fd: 0 }, &Fds::Same(&fds))?;
        }
        Ok(ctl)
    }

    /// `n` workers, each a thread of this process.
    pub fn threads(n: usize) -> Result<Controller> {
        check_count(n)?;
        let peers = (0..n)
            .map(|rank| Peer::thread(rank, n))
            .collect::<Result<_>>()?;
        Controller::new(peers, true)
    }

    /// Worker 0 in a thread of this process, workers 1.. as processes of `program`.
    pub fn processes(n: usize, program: &WorkerProgram) -> Result<Controller> {
        check_count(n)?;
        let mut peers = vec![Peer::thread(0, n)?];
        for rank in 1..n {
            peers.push(Peer::process(program, rank, n)?);
        }
        Controller::new(peers, true)
    }

    /// Workers already running somewhere (started by Ray, say), worker i connected by the
    /// stream socket `workers[i].0` and described by `workers[i].1` in messages.
    pub fn connected(workers: Vec<(SocketLink, String)>) -> Result<Controller> {
        check_count(workers.len())?;
        let peers = workers
            .into_iter()
            .map(|(link, what)| Peer::Connected { link, what })
            .collect();
        Controller::new(peers, false)
    }

    pub fn num_workers(&self) -> usize {
        self.num_workers
    }

    /// Whether host data travels inline (workers may be on other hosts; see `connected`).
    pub fn inline_data(&self) -> bool {
        self.progress.is_none()
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

    /// Called when a handle's last reference goes; no I/O here. The controller's mappings of a
    /// shared tensor go now, the workers' with the next command.
    pub fn release(&self, reg: Reg) {
        let shared = lock(&self.shared).remove(&reg);
        drop(shared);
        lock(&self.released).push(reg);
    }

    /// The controller's side of the shared tensor in `reg`, if `empty` made one there.
    pub fn shared_tensor(&self, reg: Reg) -> Option<Arc<SharedTensor>> {
        lock(&self.shared).get(&reg).cloned()
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

    /// Sends `cmd` (with `fds`) to `ranks`, preceded in the same frame by a Free of the registers
    /// released since the last command (to every worker).
    fn send_to(&self, st: &mut State, ranks: &[usize], cmd: &Command, fds: &Fds<'_>) -> Result<()> {
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
                result = self.send_frame(st, &others, &w.buf, "free", &Fds::None);
            }
            if let Command::Free { regs } = free {
                st.free_regs.extend(regs);
            }
        }
        if result.is_ok() {
            cmd.encode(&mut w);
            result = self.send_frame(st, ranks, &w.buf, cmd.name(), fds);
        }
        st.writer = w;
        result
    }

    fn send_frame(
        &self,
        st: &mut State,
        ranks: &[usize],
        frame: &[u8],
        what: &str,
        fds: &Fds<'_>,
    ) -> Result<()> {
        for &r in ranks {
            match st.peers[r].link().send_with(frame, &fds.for_rank(r)) {
                Ok(()) => st.sent[r] += 1,
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
        self.broadcast_new_with(make, &Fds::None)
    }

    /// `broadcast_new`, sending `fds` with the command.
    pub fn broadcast_new_with(
        &self,
        make: impl FnOnce(Reg) -> Command,
        fds: &Fds<'_>,
    ) -> Result<Reg> {
        let mut st = self.usable()?;
        let reg = st.free_regs.pop().unwrap_or_else(|| {
            st.next_reg += 1;
            st.next_reg - 1
        });
        let all = self.all();
        if let Err(e) = self.send_to(&mut st, &all, &make(reg), fds) {
            st.free_regs.push(reg);
            return Err(e);
        }
        Ok(reg)
    }

    /// A new tensor on every worker, in shared memory the controller maps too (CPU tensors of
    /// at least one byte; others are made by each worker alone).
    pub fn empty(&self, shape: &[i64], dtype: DataType, device: rffi_core::Device) -> Result<Reg> {
        let make = |fd| {
            move |reg| Command::Empty {
                reg,
                shape: shape.to_vec(),
                dtype,
                device,
                fd,
            }
        };
        let shareable = !self.inline_data()
            && device == rffi_core::Device::cpu()
            && shm_tensor::nbytes(shape, dtype).is_ok_and(|n| n > 0);
        if !shareable {
            return self.broadcast_new(make(None));
        }
        let (tensor, fds) = SharedTensor::create(self.num_workers, shape, dtype)?;
        let reg = self.broadcast_new_with(make(Some(0)), &Fds::OnePerWorker(&fds))?;
        lock(&self.shared).insert(reg, Arc::new(tensor));
        Ok(reg)
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
        drop(st);
        let deadline = Instant::now() + Duration::from_secs(2);
        for p in peers {
            p.stop(deadline);
        }
        // The workers' mappings went with them; the controller's go now.
        lock(&self.shared).clear();
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
