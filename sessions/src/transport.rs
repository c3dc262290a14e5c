//! Frame transports between a controller and a worker: in-memory mailboxes for workers in threads,
//! a Unix socket for workers in processes (`socket_link`). Both move whole frames (the protocol's
//! encoded bytes) together with the file descriptors that travel with them: shared-memory tensors
//! are passed as descriptors, never by name, so nothing of theirs is left in `/dev/shm`.
//!
//! A receiver may spin briefly before it sleeps (see `spin_budget`): a round trip is well under a
//! microsecond of work, and a futex or poll wake-up costs several. Idle workers sleep.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use crate::socket_link::{socket_pair, SocketLink};

/// Frames larger than this are refused (a corrupt length must not allocate gigabytes).
pub const MAX_FRAME: usize = 1 << 30;

/// Descriptors one frame may carry.
pub const MAX_FDS: usize = 4096;

#[derive(Debug)]
pub enum LinkError {
    /// The other end is gone (EOF, a closed mailbox, a reset socket).
    Closed,
    Io(io::Error),
}

pub type LinkResult<T> = std::result::Result<T, LinkError>;

/// A received frame: its bytes and the descriptors sent with it, in the order they were given.
#[derive(Debug, Default)]
pub struct Frame {
    pub bytes: Vec<u8>,
    pub fds: Vec<OwnedFd>,
}

/// One end of a frame channel.
pub trait Link: Send + Sync {
    /// Sends a frame with descriptors (the receiver gets its own duplicates of them).
    fn send_with(&self, frame: &[u8], fds: &[BorrowedFd<'_>]) -> LinkResult<()>;
    /// The next frame, waiting at most `timeout` (`None`: until one comes); `Ok(None)` on timeout.
    fn recv(&self, timeout: Option<Duration>) -> LinkResult<Option<Frame>>;

    fn send(&self, frame: &[u8]) -> LinkResult<()> {
        self.send_with(frame, &[])
    }

    /// Whether both ends are in one process (so an address one sends is valid for the other):
    /// only then does a worker honour `Copy`, whose `addr` is a pointer of the controller.
    fn shares_address_space(&self) -> bool {
        false
    }
}

/// How long a receiver spins before it sleeps: `RFFI_SESSION_SPIN_US`, else 10 µs on machines
/// with 8 or more cores and none on smaller ones. Spinning turns a round trip of a few
/// microseconds into one of about one when the other side has a core of its own, but on a
/// machine with more busy threads than cores it takes the core the other side needs
/// (docs/SESSIONS.md has the figures).
pub fn spin_budget() -> Duration {
    static SPIN: OnceLock<Duration> = OnceLock::new();
    *SPIN.get_or_init(|| {
        let default = match std::thread::available_parallelism() {
            Ok(n) if n.get() >= 8 => 10,
            _ => 0,
        };
        let us = std::env::var("RFFI_SESSION_SPIN_US")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(default);
        Duration::from_micros(us)
    })
}

/// Spins until `ready()` or the budget (capped by `timeout`) is spent.
pub fn spin_until(ready: impl Fn() -> bool, timeout: Option<Duration>) -> bool {
    let budget = timeout.map_or(spin_budget(), |t| t.min(spin_budget()));
    if budget.is_zero() {
        return ready();
    }
    let start = Instant::now();
    let mut i = 0u32;
    loop {
        if ready() {
            return true;
        }
        i += 1;
        if i % 32 == 0 && start.elapsed() >= budget {
            return false;
        }
        std::hint::spin_loop();
    }
}

#[derive(Default)]
struct Queue {
    frames: VecDeque<Frame>,
    sleeping: bool,
}

/// A one-way queue of frames between threads.
#[derive(Default)]
pub struct Mailbox {
    q: Mutex<Queue>,
    cv: Condvar,
    len: AtomicUsize,
    closed: AtomicBool,
}

impl Mailbox {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, frame: Frame) -> LinkResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LinkError::Closed);
        }
        let mut q = self.lock();
        q.frames.push_back(frame);
        self.len.fetch_add(1, Ordering::Release);
        let wake = q.sleeping;
        drop(q);
        if wake {
            self.cv.notify_one();
        }
        Ok(())
    }

    fn pop(&self, timeout: Option<Duration>) -> LinkResult<Option<Frame>> {
        spin_until(
            || self.len.load(Ordering::Acquire) > 0 || self.closed.load(Ordering::Acquire),
            timeout,
        );
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut q = self.lock();
        loop {
            if let Some(f) = q.frames.pop_front() {
                self.len.fetch_sub(1, Ordering::Release);
                return Ok(Some(f));
            }
            if self.closed.load(Ordering::Acquire) {
                return Err(LinkError::Closed);
            }
            q.sleeping = true;
            q = match deadline {
                None => self.cv.wait(q).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        q.sleeping = false;
                        return Ok(None);
                    }
                    self.cv
                        .wait_timeout(q, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
            q.sleeping = false;
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _q = self.lock();
        self.cv.notify_all();
    }
}

/// One end of a pair of mailboxes; dropping it closes both directions.
pub struct ThreadLink {
    inbox: Arc<Mailbox>,
    outbox: Arc<Mailbox>,
}

impl ThreadLink {
    /// The two ends of a new channel.
    pub fn pair() -> (ThreadLink, ThreadLink) {
        let a = Arc::new(Mailbox::default());
        let b = Arc::new(Mailbox::default());
        (
            ThreadLink {
                inbox: a.clone(),
                outbox: b.clone(),
            },
            ThreadLink {
                inbox: b,
                outbox: a,
            },
        )
    }
}

impl Drop for ThreadLink {
    fn drop(&mut self) {
        self.inbox.close();
        self.outbox.close();
    }
}

impl Link for ThreadLink {
    fn send_with(&self, frame: &[u8], fds: &[BorrowedFd<'_>]) -> LinkResult<()> {
        if fds.len() > MAX_FDS {
            return Err(LinkError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a frame carries at most {MAX_FDS} descriptors"),
            )));
        }
        // The receiver owns duplicates, as it would after a descriptor passed over a socket.
        let fds = fds
            .iter()
            .map(|fd| fd.try_clone_to_owned())
            .collect::<io::Result<Vec<_>>>()
            .map_err(LinkError::Io)?;
        self.outbox.push(Frame {
            bytes: frame.to_vec(),
            fds,
        })
    }
    fn recv(&self, timeout: Option<Duration>) -> LinkResult<Option<Frame>> {
        self.inbox.pop(timeout)
    }
    fn shares_address_space(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsFd;

    fn exchange(a: Arc<dyn Link>, b: &dyn Link) {
        // Sent from another thread: a large frame fills the socket buffer before it is read.
        let t = std::thread::spawn(move || {
            a.send(b"hello").unwrap_or_else(|_| panic!("send"));
            a.send(&vec![7u8; 500_000])
                .unwrap_or_else(|_| panic!("send"));
            let mut files = Vec::new();
            for i in 0..3u8 {
                let mut f = tempfile();
                f.write_all(&[b'a' + i]).unwrap();
                files.push(f);
            }
            let fds: Vec<BorrowedFd<'_>> = files.iter().map(|f| f.as_fd()).collect();
            a.send_with(b"with fds", &fds)
                .unwrap_or_else(|_| panic!("send"));
            a.send(b"after").unwrap_or_else(|_| panic!("send"));
            a
        });
        assert_eq!(b.recv(None).unwrap().unwrap().bytes, b"hello");
        assert_eq!(b.recv(None).unwrap().unwrap().bytes.len(), 500_000);
        let f = b.recv(None).unwrap().unwrap();
        assert_eq!(f.bytes, b"with fds");
        assert_eq!(f.fds.len(), 3);
        for (i, fd) in f.fds.into_iter().enumerate() {
            let mut file = std::fs::File::from(fd);
            file.rewind().unwrap();
            let mut s = String::new();
            file.read_to_string(&mut s).unwrap();
            assert_eq!(s.as_bytes(), [b'a' + i as u8]);
        }
        let f = b.recv(None).unwrap().unwrap();
        assert_eq!((f.bytes.as_slice(), f.fds.len()), (b"after".as_slice(), 0));
        assert!(b.recv(Some(Duration::from_millis(5))).unwrap().is_none());
        drop(t.join().unwrap());
        assert!(matches!(b.recv(None), Err(LinkError::Closed)));
        assert!(matches!(b.send(b"x"), Err(LinkError::Closed)));
    }

    /// A growable file to pass (the runtime's `memfd` is sealed at its size).
    fn tempfile() -> std::fs::File {
        use std::os::fd::FromRawFd;
        // SAFETY: a new anonymous file with a valid name, owned from here on.
        let fd = unsafe { libc::memfd_create(c"rffi-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0, "{}", io::Error::last_os_error());
        // SAFETY: as above.
        std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    #[test]
    fn thread_link_moves_frames_and_reports_close() {
        let (a, b) = ThreadLink::pair();
        exchange(Arc::new(a), &b);
    }

    #[test]
    fn socket_link_moves_frames_and_reports_close() {
        let (x, y) = socket_pair().unwrap();
        exchange(Arc::new(SocketLink::new(x)), &SocketLink::new(y));
    }

    #[test]
    fn many_descriptors_travel_in_order() {
        let (x, y) = socket_pair().unwrap();
        let (a, b) = (SocketLink::new(x), SocketLink::new(y));
        let files: Vec<std::fs::File> = (0..300)
            .map(|i: u32| {
                let mut f = tempfile();
                f.write_all(&i.to_le_bytes()).unwrap();
                f
            })
            .collect();
        let fds: Vec<BorrowedFd<'_>> = files.iter().map(|f| f.as_fd()).collect();
        let t = std::thread::spawn(move || b.recv(None).unwrap().unwrap());
        a.send_with(&[1u8; 2000], &fds).unwrap();
        let f = t.join().unwrap();
        assert_eq!(f.fds.len(), 300);
        for (i, fd) in f.fds.into_iter().enumerate() {
            let mut file = std::fs::File::from(fd);
            file.rewind().unwrap();
            let mut v = [0u8; 4];
            file.read_exact(&mut v).unwrap();
            assert_eq!(u32::from_le_bytes(v), i as u32);
        }
    }
}
