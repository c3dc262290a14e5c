//! Worker processes: spawning them with their end of a socket as fd 3, telling how they ended,
//! and reaping them so none is left a zombie or an orphan.
//!
//! Children are spawned from one long-lived thread: `PR_SET_PDEATHSIG` fires when the *thread*
//! that forked a child exits, so forking from a caller's short-lived thread would kill the workers
//! of a session that is still in use. With that thread living as long as the process, the signal
//! means what it should: the controller process died. Socket EOF is the other half: a worker whose
//! controller is gone stops at its next read.

use crate::protocol::PROTOCOL_VERSION;
use crate::transport::{socket_pair, SocketLink};
use rffi_core::{Error, Result};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How to start a worker process:
/// `program args... <rank> <world> <fd> <protocol version> <controller pid>`.
#[derive(Clone, Debug)]
pub struct WorkerProgram {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl WorkerProgram {
    /// The native `rffi-worker`: `$RFFI_WORKER`, else next to the running executable (or one
    /// directory up, where cargo puts binaries beside a test's `deps/`).
    pub fn native() -> Result<WorkerProgram> {
        if let Some(p) = std::env::var_os("RFFI_WORKER") {
            return Ok(WorkerProgram {
                program: p.into(),
                args: Vec::new(),
            });
        }
        let exe = std::env::current_exe().map_err(|e| Error::runtime_error(e.to_string()))?;
        let mut tried = Vec::new();
        for dir in exe.ancestors().skip(1).take(2) {
            let p = dir.join("rffi-worker");
            if p.is_file() {
                return Ok(WorkerProgram {
                    program: p,
                    args: Vec::new(),
                });
            }
            tried.push(p.display().to_string());
        }
        Err(Error::runtime_error(format!(
            "cannot find the rffi-worker program (set RFFI_WORKER to its path); looked at {}",
            tried.join(", ")
        )))
    }
}

/// A worker process; killed and reaped on drop if still running.
pub struct Child {
    pid: libc::pid_t,
    status: Mutex<Option<i32>>,
}

type SpawnJob = Box<dyn FnOnce() + Send>;

/// Runs `f` on the process-lifetime spawner thread (see the module docs).
fn on_spawner<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnJob>>> = OnceLock::new();
    let tx = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnJob>();
        std::thread::Builder::new()
            .name("rffi-spawner".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .expect("cannot start the rffi spawner thread");
        Mutex::new(tx)
    });
    let (back, result) = mpsc::sync_channel(1);
    tx.lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(Box::new(move || {
            let _ = back.send(f());
        }))
        .expect("the rffi spawner thread is gone");
    result.recv().expect("the rffi spawner thread is gone")
}

/// Starts worker `rank` of `world`; returns the child and the controller's end of its socket.
///
/// The child gets its end of the socket by inheritance (its number is an argument) and arranges
/// the rest itself (`adopt_worker_process`), so the spawn needs no code between fork and exec and
/// the standard library can use `posix_spawn`: a few hundred microseconds instead of a fork that
/// copies the page tables of a large controller.
pub fn spawn(program: &WorkerProgram, rank: usize, world: usize) -> Result<(Child, SocketLink)> {
    let (ours, theirs) =
        socket_pair().map_err(|e| Error::runtime_error(format!("socketpair failed: {e}")))?;
    let shown = program.program.display().to_string();
    let program = program.clone();
    let spawned = on_spawner(move || {
        let fd = theirs.as_raw_fd();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // Inheritable only for this spawn: the spawner thread is the only one that spawns
        // workers, and the descriptor is closed here right after. (A fork by another thread in
        // this window would inherit it too; the worker's death signal still covers that case.)
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        let r = std::process::Command::new(&program.program)
            .args(&program.args)
            .arg(rank.to_string())
            .arg(world.to_string())
            .arg(fd.to_string())
            .arg(PROTOCOL_VERSION.to_string())
            .arg(parent.to_string())
            .stdin(Stdio::null())
            .spawn()
            .map(|c| c.id() as libc::pid_t);
        drop(theirs);
        r
    });
    let pid = spawned
        .map_err(|e| Error::runtime_error(format!("cannot start worker {rank} ({shown}): {e}")))?;
    Ok((
        Child {
            pid,
            status: Mutex::new(None),
        },
        SocketLink::new(ours),
    ))
}

/// What a worker process does first: die with its controller (`PR_SET_PDEATHSIG`, and an exit
/// if the controller is already gone), leave Ctrl-C to the controller (a terminal sends SIGINT to
/// the whole process group; an interrupted sync is the controller's to handle), and keep its
/// socket from leaking into processes it starts.
pub fn adopt_worker_process(parent: i64, fd: i32) {
    // SAFETY: plain system calls on this process's own state.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        if i64::from(libc::getppid()) != parent {
            libc::_exit(1);
        }
    }
}

impl Child {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The wait status, if the child has ended (reaping it).
    pub fn try_status(&self) -> Option<i32> {
        let mut st = self.status.lock().unwrap_or_else(|e| e.into_inner());
        if st.is_none() {
            let mut status = 0;
            // SAFETY: waiting for our own child, with a valid out-pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r == self.pid {
                *st = Some(status);
            } else if r < 0 {
                // Reaped by someone else (a SIGCHLD handler, os.wait): the status is lost.
                *st = Some(-1);
            }
        }
        *st
    }

    /// Waits up to `timeout` for the child to end.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<i32> {
        let end = Instant::now() + timeout;
        let mut pause = Duration::from_micros(50);
        loop {
            if let Some(s) = self.try_status() {
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }

    /// Kills the child (if still running) and reaps it.
    pub fn kill_and_reap(&self) -> i32 {
        if let Some(s) = self.try_status() {
            return s;
        }
        // SAFETY: signalling our own, not yet reaped, child.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        self.wait_timeout(Duration::from_secs(10)).unwrap_or(-1)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// How a child ended, in words: "exited with status 3", "was killed by signal 9 (SIGKILL)".
pub fn describe_status(status: Option<i32>) -> String {
    match status {
        None => "stopped answering (still running)".into(),
        Some(-1) => "ended (its exit status was collected elsewhere)".into(),
        Some(s) if libc::WIFEXITED(s) => format!("exited with status {}", libc::WEXITSTATUS(s)),
        Some(s) if libc::WIFSIGNALED(s) => {
            let sig = libc::WTERMSIG(s);
            format!("was killed by signal {sig} ({})", signal_name(sig))
        }
        Some(s) => format!("ended with wait status {s:#x}"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGINT => "SIGINT",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_described() {
        assert_eq!(describe_status(Some(3 << 8)), "exited with status 3");
        assert_eq!(
            describe_status(Some(libc::SIGKILL)),
            "was killed by signal 9 (SIGKILL)"
        );
    }

    #[test]
    fn a_missing_program_is_an_error_naming_it() {
        let p = WorkerProgram {
            program: "/no/such/rffi-worker".into(),
            args: vec![],
        };
        let e = spawn(&p, 1, 2).err().expect("spawn must fail");
        assert!(
            e.message().contains("/no/such/rffi-worker"),
            "{}",
            e.message()
        );
    }
}
