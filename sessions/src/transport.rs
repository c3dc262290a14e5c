//! Frame transports between a controller and a worker: in-memory mailboxes for workers in threads,
//! a Unix socket for workers in processes. Both move whole frames (the protocol's encoded bytes).
//!
//! A receiver may spin briefly before it sleeps (see `spin_budget`): a round trip is well under a
//! microsecond of work, and a futex or poll wake-up costs several. Idle workers sleep.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Frames larger than this are refused (a corrupt length must not allocate gigabytes).
pub const MAX_FRAME: usize = 1 << 30;

#[derive(Debug)]
pub enum LinkError {
    /// The other end is gone (EOF, a closed mailbox, a reset socket).
    Closed,
    Io(io::Error),
}

pub type LinkResult<T> = std::result::Result<T, LinkError>;

/// One end of a frame channel.
pub trait Link: Send + Sync {
    fn send(&self, frame: &[u8]) -> LinkResult<()>;
    /// The next frame, waiting at most `timeout` (`None`: until one comes); `Ok(None)` on timeout.
    fn recv(&self, timeout: Option<Duration>) -> LinkResult<Option<Vec<u8>>>;
}

/// How long a receiver spins before it sleeps: `RFFI_SESSION_SPIN_US`, else 10 µs on machines
/// with 8 or more cores and none on smaller ones. Spinning turns a round trip of a few
/// microseconds into one of about one when the other side has a core of its own, but on a
/// machine with more busy threads than cores it takes the core the other side needs
/// (docs/SESSIONS.md has the figures).
fn spin_budget() -> Duration {
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

/// Spins until `ready()` or the budget is spent.
fn spin_until(ready: impl Fn() -> bool, timeout: Option<Duration>) -> bool {
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
    frames: VecDeque<Vec<u8>>,
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

    fn push(&self, frame: Vec<u8>) -> LinkResult<()> {
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

    fn pop(&self, timeout: Option<Duration>) -> LinkResult<Option<Vec<u8>>> {
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
    fn send(&self, frame: &[u8]) -> LinkResult<()> {
        self.outbox.push(frame.to_vec())
    }
    fn recv(&self, timeout: Option<Duration>) -> LinkResult<Option<Vec<u8>>> {
        self.inbox.pop(timeout)
    }
}

/// Frames at least this large are sent without a staging copy and received straight into a
/// buffer of their own size (a host tensor travelling inline to a `RaySession` worker); smaller
/// ones share one read buffer, so a burst of pipelined commands costs one read.
const LARGE_FRAME: usize = 256 * 1024;

/// A stream socket carrying frames as `u32` length + payload.
pub struct SocketLink {
    fd: OwnedFd,
    rx: Mutex<Received>,
}

/// What a socket has received and not yet handed out.
#[derive(Default)]
struct Received {
    /// Bytes read, from the start of the next frame's length on.
    buf: Vec<u8>,
    /// A large frame being read into its own buffer, and its length.
    large: Option<(Vec<u8>, usize)>,
}

impl SocketLink {
    pub fn new(fd: OwnedFd) -> SocketLink {
        SocketLink {
            fd,
            rx: Mutex::new(Received::default()),
        }
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Reads what is available into `rx` (`wait`: block in poll up to `timeout` first): into
    /// the large frame in progress, up to its end, else into the shared buffer. Returns whether
    /// bytes came.
    fn fill(&self, rx: &mut Received, wait: Option<Option<Duration>>) -> LinkResult<bool> {
        if let Some(timeout) = wait {
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, ms) };
            if n < 0 {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::Interrupted {
                    Ok(false)
                } else {
                    Err(LinkError::Io(e))
                };
            }
            if n == 0 {
                return Ok(false);
            }
        }
        let (buf, spare) = match &mut rx.large {
            Some((frame, n)) => {
                let left = *n - frame.len();
                (frame, left)
            }
            None => {
                rx.buf.reserve(64 * 1024);
                let spare = rx.buf.capacity() - rx.buf.len();
                (&mut rx.buf, spare)
            }
        };
        if spare == 0 {
            return Ok(false); // a complete large frame: `take_frame` hands it out
        }
        let old = buf.len();
        // SAFETY: reading at most `spare` bytes into the uninitialized tail of `buf`, which has
        // room for them; the length is set to what the kernel wrote.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().add(old).cast(),
                spare,
                libc::MSG_DONTWAIT,
            )
        };
        if n > 0 {
            // SAFETY: the kernel initialized `n` bytes past `old`.
            unsafe { buf.set_len(old + n as usize) };
            return Ok(true);
        }
        if n == 0 {
            return Err(LinkError::Closed);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(false),
            Some(libc::ECONNRESET) => Err(LinkError::Closed),
            _ => Err(LinkError::Io(e)),
        }
    }

    /// The next complete frame, if one has come. A large frame whose start has come moves to a
    /// buffer of its own size, which `fill` completes.
    fn take_frame(rx: &mut Received) -> LinkResult<Option<Vec<u8>>> {
        if let Some((frame, n)) = &rx.large {
            if frame.len() < *n {
                return Ok(None);
            }
            return Ok(rx.large.take().map(|(f, _)| f));
        }
        let buf = &mut rx.buf;
        if buf.len() < 4 {
            return Ok(None);
        }
        let n = u32::from_le_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
        if n > MAX_FRAME {
            return Err(LinkError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("frame of {n} bytes exceeds the limit"),
            )));
        }
        if buf.len() < 4 + n {
            if n >= LARGE_FRAME {
                // The buffer holds this frame's start and nothing after it.
                let mut frame = Vec::with_capacity(n);
                frame.extend_from_slice(&buf[4..]);
                buf.clear();
                buf.shrink_to(64 * 1024);
                rx.large = Some((frame, n));
            }
            return Ok(None);
        }
        let frame = buf[4..4 + n].to_vec();
        buf.drain(..4 + n);
        Ok(Some(frame))
    }
}

impl Link for SocketLink {
    fn send(&self, frame: &[u8]) -> LinkResult<()> {
        if frame.len() > MAX_FRAME {
            return Err(LinkError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame too large",
            )));
        }
        let len = (frame.len() as u32).to_le_bytes();
        if frame.len() >= LARGE_FRAME {
            // No staging copy: the length, then the payload (MSG_MORE: one TCP segment).
            self.send_all(&len, libc::MSG_MORE)?;
            return self.send_all(frame, 0);
        }
        let mut data = Vec::with_capacity(4 + frame.len());
        data.extend_from_slice(&len);
        data.extend_from_slice(frame);
        self.send_all(&data, 0)
    }

    fn recv(&self, timeout: Option<Duration>) -> LinkResult<Option<Vec<u8>>> {
        let mut rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = Self::take_frame(&mut rx)? {
            return Ok(Some(f));
        }
        // Spin on non-blocking reads first (see the module docs), then sleep in poll.
        let start = Instant::now();
        let budget = timeout.map_or(spin_budget(), |t| t.min(spin_budget()));
        while start.elapsed() < budget {
            if self.fill(&mut rx, None)? {
                if let Some(f) = Self::take_frame(&mut rx)? {
                    return Ok(Some(f));
                }
            }
        }
        let deadline = timeout.map(|t| start + t);
        loop {
            let left = match deadline {
                None => None,
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(None);
                    }
                    Some(d - now)
                }
            };
            self.fill(&mut rx, Some(left))?;
            if let Some(f) = Self::take_frame(&mut rx)? {
                return Ok(Some(f));
            }
        }
    }
}

impl SocketLink {
    /// Sends all of `data` (`flags` added to each send).
    fn send_all(&self, data: &[u8], flags: i32) -> LinkResult<()> {
        let mut sent = 0;
        while sent < data.len() {
            // SAFETY: sending from a live buffer; MSG_NOSIGNAL turns a dead peer into EPIPE
            // instead of a SIGPIPE that would kill a host that did not ignore it.
            let n = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    data[sent..].as_ptr().cast(),
                    data.len() - sent,
                    libc::MSG_NOSIGNAL | flags,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) => {
                        let mut pfd = libc::pollfd {
                            fd: self.fd.as_raw_fd(),
                            events: libc::POLLOUT,
                            revents: 0,
                        };
                        // SAFETY: one valid pollfd.
                        unsafe { libc::poll(&mut pfd, 1, 100) };
                        continue;
                    }
                    Some(libc::EPIPE) | Some(libc::ECONNRESET) => return Err(LinkError::Closed),
                    _ => return Err(LinkError::Io(e)),
                }
            }
            sent += n as usize;
        }
        Ok(())
    }
}

/// A connected pair of stream sockets, both close-on-exec.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(a: Arc<dyn Link>, b: &dyn Link) {
        // Sent from another thread: a large frame fills the socket buffer before it is read.
        let t = std::thread::spawn(move || {
            a.send(b"hello").unwrap_or_else(|_| panic!("send"));
            a.send(&vec![7u8; 500_000])
                .unwrap_or_else(|_| panic!("send"));
            a
        });
        assert_eq!(b.recv(None).unwrap().unwrap(), b"hello");
        assert_eq!(b.recv(None).unwrap().unwrap().len(), 500_000);
        assert!(b.recv(Some(Duration::from_millis(5))).unwrap().is_none());
        drop(t.join().unwrap());
        assert!(matches!(b.recv(None), Err(LinkError::Closed)));
        assert!(matches!(b.send(b"x"), Err(LinkError::Closed)));
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
}
