//! The controller's end of one worker: a thread with its mailboxes, a process with its socket, or
//! a worker someone else started (a Ray actor) connected by a socket.

use crate::process::{describe_status, spawn, Child, WorkerProgram};
use crate::transport::{Link, SocketLink, ThreadLink};
use crate::worker::serve;
use rffi_core::{Error, Result};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub(crate) enum Peer {
    Thread {
        link: ThreadLink,
        join: Option<JoinHandle<std::result::Result<(), String>>>,
    },
    Process {
        link: SocketLink,
        child: Child,
    },
    /// Started and placed by someone else (Ray); `what` says which and where, for messages.
    Connected {
        link: SocketLink,
        what: String,
    },
}

impl Peer {
    /// Worker `rank` of `world` on a new thread of this process.
    pub(crate) fn thread(rank: usize, world: usize) -> Result<Peer> {
        let (ours, theirs) = ThreadLink::pair();
        let join = std::thread::Builder::new()
            .name(format!("rffi-worker-{rank}"))
            .spawn(move || serve(rank, world, &theirs))
            .map_err(|e| Error::runtime_error(format!("cannot start worker thread {rank}: {e}")))?;
        Ok(Peer::Thread {
            link: ours,
            join: Some(join),
        })
    }

    /// Worker `rank` of `world` as a process of `program`.
    pub(crate) fn process(program: &WorkerProgram, rank: usize, world: usize) -> Result<Peer> {
        let (child, link) = spawn(program, rank, world)?;
        Ok(Peer::Process { link, child })
    }

    pub(crate) fn link(&self) -> &dyn Link {
        match self {
            Peer::Thread { link, .. } => link,
            Peer::Process { link, .. } | Peer::Connected { link, .. } => link,
        }
    }

    /// The process id of a worker process this controller started.
    pub(crate) fn pid(&self) -> Option<i32> {
        match self {
            Peer::Process { child, .. } => Some(child.pid()),
            Peer::Thread { .. } | Peer::Connected { .. } => None,
        }
    }

    /// The socket of a worker process or a connected worker (the controller's end).
    pub(crate) fn socket(&self) -> Option<i32> {
        match self {
            Peer::Process { link, .. } | Peer::Connected { link, .. } => Some(link.raw_fd()),
            Peer::Thread { .. } => None,
        }
    }

    /// Whether the worker is still running (a process not yet ended, a thread not returned).
    pub(crate) fn alive(&self) -> bool {
        match self {
            Peer::Process { child, .. } => child.try_status().is_none(),
            Peer::Thread { join, .. } => join.as_ref().is_some_and(|j| !j.is_finished()),
            // Seen by the end of its connection only.
            Peer::Connected { .. } => true,
        }
    }

    /// Once its link has closed: how the worker ended, in words (reaping a process).
    pub(crate) fn how_it_ended(&mut self, rank: usize) -> String {
        match self {
            Peer::Process { child, .. } => format!(
                "worker {rank} (pid {}) {}",
                child.pid(),
                describe_status(child.wait_timeout(Duration::from_secs(2)))
            ),
            Peer::Thread { join, .. } => {
                let why = match join.take().map(JoinHandle::join) {
                    Some(Ok(Err(msg))) => msg,
                    Some(Err(_)) => "it panicked".into(),
                    _ => "it stopped".into(),
                };
                format!("worker {rank} (a thread of the controller) ended: {why}")
            }
            // Not our child: its exit status is whoever started it's to tell.
            Peer::Connected { what, .. } => format!(
                "worker {rank} ({what}) closed its connection: its process ended or the network \
                 failed"
            ),
        }
    }

    /// Closes the link (a worker stops at its end) and waits for the worker: a thread is joined,
    /// a process that is still running at `deadline` is killed; either way it is reaped. A
    /// connected worker stops at the end of its socket; its starter reaps it.
    pub(crate) fn stop(self, deadline: Instant) {
        match self {
            Peer::Thread { link, join } => {
                drop(link);
                if let Some(j) = join {
                    let _ = j.join();
                }
            }
            Peer::Process { link, child } => {
                drop(link);
                let left = deadline.saturating_duration_since(Instant::now());
                if child.wait_timeout(left).is_none() {
                    child.kill_and_reap();
                }
            }
            Peer::Connected { link, .. } => drop(link),
        }
    }
}
