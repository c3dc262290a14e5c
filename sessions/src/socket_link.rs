//! Frames over a Unix stream socket: a header (`u32` payload length, `u32` descriptor count), the
//! payload, and the descriptors as `SCM_RIGHTS` ancillary data sent with the frame's bytes.
//!
//! The kernel attaches passed descriptors to the bytes of the `sendmsg` that carried them and
//! hands them out with the first read of those bytes, so the receiver queues descriptors as they
//! come and gives a frame the number its header announces once all its bytes are in.

use crate::transport::{Frame, Link, LinkError, LinkResult, MAX_FDS, MAX_FRAME};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The kernel's limit of descriptors in one message (`SCM_MAX_FD`).
const FDS_PER_MSG: usize = 253;
const HEADER: usize = 8;
/// Frames at least this large (a host tensor's bytes for a worker on another host) are sent
/// without a staging copy and read straight into a buffer of their own size; smaller ones share
/// one read buffer, so a burst of pipelined commands costs one read.
const LARGE_FRAME: usize = 256 * 1024;

struct Incoming {
    buf: Vec<u8>,
    fds: VecDeque<OwnedFd>,
    /// Room for the control message of one read.
    control: Vec<u64>,
    /// A large frame being read into its own buffer: its bytes so far, length and descriptors.
    large: Option<(Vec<u8>, usize, usize)>,
}

/// A stream socket carrying frames with descriptors.
pub struct SocketLink {
    fd: OwnedFd,
    incoming: Mutex<Incoming>,
    /// Frames from several threads must not interleave their bytes.
    sending: Mutex<()>,
}

fn bad(what: String) -> LinkError {
    LinkError::Io(io::Error::new(io::ErrorKind::InvalidData, what))
}

/// An aligned buffer for control messages carrying up to `n` descriptors.
fn cmsg_buffer(n: usize) -> Vec<u64> {
    // SAFETY: CMSG_SPACE only computes a size.
    let bytes = unsafe { libc::CMSG_SPACE((n * std::mem::size_of::<i32>()) as u32) } as usize;
    vec![0u64; bytes.div_ceil(8)]
}

impl SocketLink {
    /// A link over the connected stream socket `fd` (owned from here on).
    pub fn new(fd: OwnedFd) -> SocketLink {
        SocketLink {
            fd,
            incoming: Mutex::new(Incoming {
                buf: Vec::new(),
                fds: VecDeque::new(),
                control: cmsg_buffer(FDS_PER_MSG),
                large: None,
            }),
            sending: Mutex::new(()),
        }
    }

    /// The socket's descriptor (still owned by the link).
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// One `sendmsg` of `data` with `fds` attached; returns the bytes sent.
    fn send_some(&self, data: &[u8], fds: &[BorrowedFd<'_>]) -> LinkResult<usize> {
        let mut iov = libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        let mut control = cmsg_buffer(fds.len());
        // SAFETY: a zeroed msghdr is valid; its pointers are set to live buffers below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = control.len() * 8;
            // SAFETY: the control buffer has room for one header and `fds.len()` descriptors
            // (sized by CMSG_SPACE above), so the first header and its data are inside it.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN((fds.len() * 4) as u32) as usize;
                let data = libc::CMSG_DATA(c).cast::<i32>();
                for (i, fd) in fds.iter().enumerate() {
                    data.add(i).write_unaligned(fd.as_raw_fd());
                }
                msg.msg_controllen = libc::CMSG_SPACE((fds.len() * 4) as u32) as usize;
            }
        }
        loop {
            // SAFETY: `msg` points at live buffers; MSG_NOSIGNAL turns a dead peer into EPIPE
            // instead of a SIGPIPE that would kill a host that did not ignore it.
            let n = unsafe { libc::sendmsg(self.fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
            if n >= 0 {
                return Ok(n as usize);
            }
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
                }
                Some(libc::EPIPE) | Some(libc::ECONNRESET) => return Err(LinkError::Closed),
                _ => return Err(LinkError::Io(e)),
            }
        }
    }

    /// Reads what is available into `inc` (`wait`: block up to `timeout` first; with no
    /// timeout the read itself blocks, one system call instead of a poll and a read).
    /// Returns whether bytes came.
    fn fill(&self, inc: &mut Incoming, wait: Option<Option<Duration>>) -> LinkResult<bool> {
        let blocking = wait == Some(None);
        if let Some(Some(timeout)) = wait.filter(|_| !blocking) {
            let timeout = Some(timeout);
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
        // Into the large frame in progress (up to its end), else into the shared buffer.
        let (target, room) = match &mut inc.large {
            Some((bytes, n, _)) => {
                let room = *n - bytes.len();
                (bytes, room)
            }
            None => {
                inc.buf.reserve(64 * 1024);
                let room = inc.buf.capacity() - inc.buf.len();
                (&mut inc.buf, room)
            }
        };
        if room == 0 {
            return Ok(false); // a complete large frame: `take_frame` hands it out
        }
        let old = target.len();
        let mut iov = libc::iovec {
            // SAFETY: pointing at the uninitialized tail of the target, which has `room` bytes.
            iov_base: unsafe { target.as_mut_ptr().add(old) }.cast(),
            iov_len: room,
        };
        // SAFETY: a zeroed msghdr is valid; its pointers are set to live buffers here.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = inc.control.as_mut_ptr().cast();
        msg.msg_controllen = inc.control.len() * 8;
        let flags = if blocking {
            libc::MSG_CMSG_CLOEXEC
        } else {
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC
        };
        // SAFETY: `msg` describes live buffers; the kernel writes at most their sizes.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, flags) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(false),
                Some(libc::ECONNRESET) => Err(LinkError::Closed),
                _ => Err(LinkError::Io(e)),
            };
        }
        // SAFETY: walking the control messages the kernel wrote into the control buffer; each
        // SCM_RIGHTS message holds descriptors that are now ours.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let count = ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / 4;
                    let data = libc::CMSG_DATA(c).cast::<i32>();
                    for i in 0..count {
                        inc.fds
                            .push_back(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(bad("descriptors sent with a frame were lost".into()));
        }
        if n == 0 {
            return Err(LinkError::Closed);
        }
        let target = match &mut inc.large {
            Some((bytes, _, _)) => bytes,
            None => &mut inc.buf,
        };
        // SAFETY: the kernel initialized `n` bytes past `old`.
        unsafe { target.set_len(old + n as usize) };
        Ok(true)
    }

    /// The next complete frame, if one has come. A large frame whose start has come moves to a
    /// buffer of its own size, which `fill` completes.
    fn take_frame(inc: &mut Incoming) -> LinkResult<Option<Frame>> {
        if let Some((bytes, n, _)) = &inc.large {
            if bytes.len() < *n {
                return Ok(None);
            }
            let (bytes, _, nfds) = inc.large.take().expect("checked");
            return Self::with_fds(inc, bytes, nfds).map(Some);
        }
        if inc.buf.len() < HEADER {
            return Ok(None);
        }
        let word = |i: usize| u32::from_le_bytes(inc.buf[i..i + 4].try_into().expect("4")) as usize;
        let (n, nfds) = (word(0), word(4));
        if n > MAX_FRAME || nfds > MAX_FDS {
            return Err(bad(format!(
                "a frame of {n} bytes and {nfds} descriptors exceeds the limits"
            )));
        }
        if inc.buf.len() < HEADER + n {
            if n >= LARGE_FRAME {
                // The buffer holds this frame's start and nothing after it.
                let mut bytes = Vec::with_capacity(n);
                bytes.extend_from_slice(&inc.buf[HEADER..]);
                inc.buf.clear();
                inc.buf.shrink_to(64 * 1024);
                inc.large = Some((bytes, n, nfds));
            }
            return Ok(None);
        }
        let bytes = inc.buf[HEADER..HEADER + n].to_vec();
        inc.buf.drain(..HEADER + n);
        Self::with_fds(inc, bytes, nfds).map(Some)
    }

    /// A frame of `bytes` with the `nfds` descriptors that came with it.
    fn with_fds(inc: &mut Incoming, bytes: Vec<u8>, nfds: usize) -> LinkResult<Frame> {
        if inc.fds.len() < nfds {
            return Err(bad(format!(
                "a frame announced {nfds} descriptors but {} came with it",
                inc.fds.len()
            )));
        }
        let fds = inc.fds.drain(..nfds).collect();
        Ok(Frame { bytes, fds })
    }

    /// Sends all of `data`, without descriptors.
    fn send_all(&self, data: &[u8]) -> LinkResult<()> {
        let mut sent = 0;
        while sent < data.len() {
            sent += self.send_some(&data[sent..], &[])?;
        }
        Ok(())
    }
}

impl Link for SocketLink {
    fn send_with(&self, frame: &[u8], fds: &[BorrowedFd<'_>]) -> LinkResult<()> {
        if frame.len() > MAX_FRAME || fds.len() > MAX_FDS {
            return Err(LinkError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a frame of {} bytes and {} descriptors exceeds the limits",
                    frame.len(),
                    fds.len()
                ),
            )));
        }
        let mut header = [0u8; HEADER];
        header[..4].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        header[4..].copy_from_slice(&(fds.len() as u32).to_le_bytes());
        let _one_at_a_time = self.sending.lock().unwrap_or_else(|e| e.into_inner());
        if fds.is_empty() && frame.len() >= LARGE_FRAME {
            // No staging copy of a large frame.
            self.send_all(&header)?;
            return self.send_all(frame);
        }
        let mut data = Vec::with_capacity(HEADER + frame.len());
        data.extend_from_slice(&header);
        data.extend_from_slice(frame);
        let (mut sent, mut fd_at) = (0, 0);
        while sent < data.len() {
            let chunk = &fds[fd_at..(fd_at + FDS_PER_MSG).min(fds.len())];
            // Descriptors beyond one message's limit ride on the next bytes, one byte each.
            let upto = if fd_at + chunk.len() < fds.len() {
                sent + 1
            } else {
                data.len()
            };
            sent += self.send_some(&data[sent..upto], chunk)?;
            fd_at += chunk.len();
        }
        if fd_at < fds.len() {
            return Err(bad(format!(
                "{} descriptors need a frame of more than {} bytes",
                fds.len(),
                data.len()
            )));
        }
        Ok(())
    }

    fn recv(&self, timeout: Option<Duration>) -> LinkResult<Option<Frame>> {
        let mut inc = self.incoming.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = Self::take_frame(&mut inc)? {
            return Ok(Some(f));
        }
        // Spin on non-blocking reads first (see the transport docs), then sleep in poll.
        let start = Instant::now();
        let budget = crate::transport::spin_budget();
        let budget = timeout.map_or(budget, |t| t.min(budget));
        while start.elapsed() < budget {
            if self.fill(&mut inc, None)? {
                if let Some(f) = Self::take_frame(&mut inc)? {
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
            self.fill(&mut inc, Some(left))?;
            if let Some(f) = Self::take_frame(&mut inc)? {
                return Ok(Some(f));
            }
        }
    }
}

/// A connected pair of stream sockets, both close-on-exec.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
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
