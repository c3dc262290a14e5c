//! The shared-memory backend: the workers of one host map one `/dev/shm` file holding a barrier,
//! a descriptor per rank and call, and per rank two data slots plus a point-to-point slot.
//!
//! A collective first posts each rank's descriptor (kind, dtype, count, or the rank's own error)
//! and meets at a barrier; every rank then checks them all, so a mismatch between ranks or a rank
//! whose arguments were bad is an error on every rank before any data moves, and the communicator
//! stays usable. Data then moves in slot-sized chunks, each behind one barrier; alternating slot
//! halves (and descriptor copies) make one barrier per chunk enough.
//!
//! Waits never hang: each rank holds an open-file-description lock on its own byte of the file,
//! which the kernel drops when the process dies, so a waiting rank sees a dead peer within ~10 ms;
//! anything else is bounded by `RFFI_CCL_TIMEOUT_S`. After either, the communicator is marked
//! broken on every rank (a barrier's count is lost) until `init_ccl` is called again.

use super::{timeout, Plan};
use crate::futex;
use rffi_core::{Error, Result};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

const MAGIC: u64 = 0x7266_6669_6363_6c31; // "rfficcl1"
const OFF_WORLD: usize = 8;
const OFF_SLOT: usize = 16;
const OFF_ARRIVED: usize = 64;
const OFF_GEN: usize = 128;
const OFF_BROKEN: usize = 192;
/// Bumped by every change a rank may wait for; waiting ranks sleep on it (a futex).
const OFF_EVENT: usize = 256;
/// How many ranks sleep on the event word (wakers make a system call only when some do).
const OFF_SLEEPERS: usize = 320;
const RANK_BASE: usize = 4096;
const RANK_AREA: usize = 2048;
// Within a rank's area.
const R_JOINED: usize = 0;
const R_DESC: usize = 64; // two descriptors of DESC bytes
const DESC: usize = 256;
pub(super) const R_P2P: usize = 576;
pub(super) const R_ACK: usize = 832;
/// Why this rank broke the communicator, for the ranks that were waiting on it.
const R_BROKEN_WHY: usize = 1024;
const MSG_MAX: usize = 150;
/// Lock bytes live far past the end of the file (locks may cover bytes that do not exist).
const LOCK_OFF: i64 = 1 << 40;
/// The default size of a data slot.
pub const DEFAULT_SLOT: usize = 4 << 20;
/// The most ranks a shared-memory communicator takes.
pub const MAX_WORLD: usize = 1024;

fn data_off(world: usize) -> usize {
    (RANK_BASE + world * RANK_AREA).next_multiple_of(4096)
}

fn file_len(world: usize, slot: usize) -> usize {
    data_off(world) + world * 3 * slot
}

fn os_err(what: &str, name: &str) -> Error {
    Error::runtime_error(format!(
        "ccl (shm): {what} {name} failed: {}",
        std::io::Error::last_os_error()
    ))
}

/// The communicator's file; unlinked when dropped (once every rank has mapped it).
pub struct Segment {
    /// The file's path.
    pub name: String,
}

impl Drop for Segment {
    fn drop(&mut self) {
        if let Ok(c) = CString::new(self.name.as_str()) {
            // SAFETY: unlinking a path we created.
            unsafe { libc::unlink(c.as_ptr()) };
        }
    }
}

/// Creates the file for `world` ranks (the controller does, then unlinks it once every worker
/// has mapped it).
pub fn create(world: usize, slot: usize) -> Result<Segment> {
    if world == 0 || world > MAX_WORLD {
        return Err(Error::value_error(format!(
            "ccl (shm): {world} workers; the shared-memory backend takes 1 to {MAX_WORLD}"
        )));
    }
    if slot < 8 * world || slot % 8 != 0 {
        return Err(Error::value_error(format!(
            "ccl (shm): a slot of {slot} bytes is too small for {world} workers"
        )));
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let seg = Segment {
        name: format!("/dev/shm/rffi-ccl-{pid}-{}", NEXT.fetch_add(1, Relaxed)),
    };
    let c = CString::new(seg.name.as_str()).expect("no NUL");
    // SAFETY: creating a new file at a valid path.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(os_err("creating", &seg.name));
    }
    // SAFETY: we own the new descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut head = [0u8; 24];
    head[..8].copy_from_slice(&MAGIC.to_le_bytes());
    head[OFF_WORLD..OFF_WORLD + 8].copy_from_slice(&(world as u64).to_le_bytes());
    head[OFF_SLOT..OFF_SLOT + 8].copy_from_slice(&(slot as u64).to_le_bytes());
    // SAFETY: sizing (sparse: pages cost memory only once touched) and writing our own file.
    let ok = unsafe {
        libc::ftruncate(fd.as_raw_fd(), file_len(world, slot) as libc::off_t) == 0
            && libc::pwrite(fd.as_raw_fd(), head.as_ptr().cast(), head.len(), 0) == 24
    };
    if !ok {
        return Err(os_err("sizing", &seg.name));
    }
    Ok(seg)
}

/// One rank's end of the shared-memory communicator.
pub struct ShmComm {
    base: *mut u8,
    len: usize,
    fd: OwnedFd,
    pub(super) rank: usize,
    pub(super) world: usize,
    pub(super) slot: usize,
    data: usize,
    op_seq: u64,
    pub(super) phase: u64,
    broken: Option<String>,
}

impl Drop for ShmComm {
    fn drop(&mut self) {
        self.flag(R_JOINED).store(0, Release);
        // SAFETY: unmapping our own mapping; the lock goes with the descriptor.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn lock_cmd(fd: i32, cmd: i32, ty: i32, rank: usize) -> Option<libc::flock> {
    // SAFETY: a zeroed flock is a valid argument once its fields are set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = ty as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = LOCK_OFF + rank as i64;
    fl.l_len = 1;
    // SAFETY: fcntl with a valid descriptor and flock.
    (unsafe { libc::fcntl(fd, cmd, &mut fl) } == 0).then_some(fl)
}

impl ShmComm {
    /// Maps the file `name` as rank `rank` of `world` and meets the other ranks.
    pub fn join(name: &str, rank: usize, world: usize) -> Result<ShmComm> {
        if !name.starts_with("/dev/shm/rffi-ccl-") || name.contains("..") {
            return Err(Error::value_error(format!(
                "ccl.init_shm: {name:?} is not a collective communicator's file"
            )));
        }
        let c = CString::new(name).map_err(|_| Error::value_error("NUL in a file name"))?;
        // SAFETY: opening a path.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("opening", name));
        }
        // SAFETY: we own the new descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut head = [0u8; 24];
        // SAFETY: reading into a local buffer.
        let n = unsafe { libc::pread(fd.as_raw_fd(), head.as_mut_ptr().cast(), 24, 0) };
        let word = |o: usize| u64::from_le_bytes(head[o..o + 8].try_into().unwrap());
        if n != 24 || word(0) != MAGIC {
            return Err(Error::value_error(format!(
                "ccl.init_shm: {name} is not a communicator file"
            )));
        }
        let (w, slot) = (word(OFF_WORLD) as usize, word(OFF_SLOT) as usize);
        if w != world || slot == 0 {
            return Err(Error::value_error(format!(
                "ccl.init_shm: {name} was made for {w} workers, this session has {world}"
            )));
        }
        let len = file_len(world, slot);
        // SAFETY: a shared mapping of the whole file, whose size the creator set to `len`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_err("mapping", name));
        }
        let mut comm = ShmComm {
            base: p.cast(),
            len,
            fd,
            rank,
            world,
            slot,
            data: data_off(world),
            op_seq: 0,
            phase: 0,
            broken: None,
        };
        if lock_cmd(comm.fd.as_raw_fd(), libc::F_OFD_SETLK, libc::F_WRLCK, rank).is_none() {
            return Err(os_err("locking", name));
        }
        comm.flag(R_JOINED).store(1, Release);
        comm.barrier("init_ccl")?;
        Ok(comm)
    }

    fn at<T>(&self, off: usize) -> *mut T {
        debug_assert!(off + std::mem::size_of::<T>() <= self.len);
        // SAFETY: every offset used is inside the mapping (fixed header layout).
        unsafe { self.base.add(off).cast() }
    }

    pub(super) fn atomic32(&self, off: usize) -> &AtomicU32 {
        // SAFETY: 4-aligned offsets in the live shared mapping; only accessed atomically.
        unsafe { &*self.at::<AtomicU32>(off) }
    }

    pub(super) fn atomic64(&self, off: usize) -> &AtomicU64 {
        // SAFETY: 8-aligned offsets in the live shared mapping; only accessed atomically.
        unsafe { &*self.at::<AtomicU64>(off) }
    }

    pub(super) fn area(&self, r: usize) -> usize {
        RANK_BASE + r * RANK_AREA
    }

    fn flag(&self, off: usize) -> &AtomicU32 {
        self.atomic32(self.area(self.rank) + off)
    }

    /// Writes a short message (and its length) at `off` of the mapping.
    pub(super) fn put_msg(&self, off: usize, msg: &str) {
        let b = &msg.as_bytes()[..msg.len().min(MSG_MAX)];
        self.atomic32(off).store(b.len() as u32, Relaxed);
        // SAFETY: `MSG_MAX` bytes after the length word are reserved for the message.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.at::<u8>(off + 4), b.len()) };
    }

    pub(super) fn get_msg(&self, off: usize) -> String {
        let n = (self.atomic32(off).load(Relaxed) as usize).min(MSG_MAX);
        // SAFETY: as in `put_msg`.
        let b = unsafe { std::slice::from_raw_parts(self.at::<u8>(off + 4), n) };
        String::from_utf8_lossy(b).into_owned()
    }

    fn alive(&self, r: usize) -> bool {
        if self.atomic32(self.area(r) + R_JOINED).load(Acquire) == 0 {
            // Not joined yet (init in progress): only the timeout covers it.
            return true;
        }
        match lock_cmd(self.fd.as_raw_fd(), libc::F_OFD_GETLK, libc::F_WRLCK, r) {
            Some(fl) => fl.l_type as i32 != libc::F_UNLCK,
            None => true,
        }
    }

    pub(super) fn usable(&self) -> Result<()> {
        if let Some(why) = &self.broken {
            return Err(Error::runtime_error(format!(
                "ccl (shm): the communicator is broken ({why}); call init_ccl again"
            )));
        }
        Ok(())
    }

    /// Marks the communicator broken on every rank, so that a peer waiting for this one fails
    /// at once instead of at the timeout.
    pub(super) fn give_up(&mut self, why: &str) {
        self.break_with(why.to_string());
    }

    fn break_with(&mut self, why: String) -> Error {
        self.put_msg(self.area(self.rank) + R_BROKEN_WHY, &why);
        self.atomic32(OFF_BROKEN)
            .store(1 + self.rank as u32, Release);
        self.notify();
        self.broken = Some(why.clone());
        Error::runtime_error(format!(
            "ccl (shm): {why}; the communicator is broken: call init_ccl again"
        ))
    }

    /// Waits until `done` holds, watching for dead peers (`peer`, or every rank), a broken
    /// communicator and the timeout. `done` may also find that the wait can never end (`Err`).
    pub(super) fn wait(
        &mut self,
        what: &str,
        peer: Option<usize>,
        done: impl Fn(&Self) -> std::result::Result<bool, String>,
    ) -> Result<()> {
        let start = Instant::now();
        let limit = timeout();
        let mut next_check = start + Duration::from_millis(10);
        let mut spins = 0u32;
        loop {
            match done(self) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(why) => return Err(self.break_with(why)),
            }
            spins += 1;
            if spins < 256 {
                std::hint::spin_loop();
                continue;
            }
            let now = Instant::now();
            let b = self.atomic32(OFF_BROKEN).load(Acquire);
            if b != 0 {
                // A reason of our own (a peer that sent to us while we send to it) comes first.
                if let Err(why) = done(self) {
                    return Err(self.break_with(why));
                }
                let giver = (b - 1) as usize;
                let why = if giver < self.world {
                    self.get_msg(self.area(giver) + R_BROKEN_WHY)
                } else {
                    format!("rank {giver} is outside the communicator")
                };
                return Err(self.break_with(format!(
                    "worker {giver} gave up on it ({why}) while worker {} waited in {what}",
                    self.rank
                )));
            }
            if now >= next_check {
                next_check = now + Duration::from_millis(10);
                let dead = match peer {
                    Some(p) => (!self.alive(p)).then_some(p),
                    None => (0..self.world).find(|&r| r != self.rank && !self.alive(r)),
                };
                if let Some(d) = dead {
                    return Err(self.break_with(format!(
                        "worker {d} is gone (its process ended or it left the communicator) \
                         while worker {} waited in {what}",
                        self.rank
                    )));
                }
            }
            if now - start >= limit {
                return Err(self.break_with(format!(
                    "worker {} waited {:.1} s in {what} for its peers (RFFI_CCL_TIMEOUT_S)",
                    self.rank,
                    limit.as_secs_f64()
                )));
            }
            // Sleep until a peer changes something (see `notify`), at most until the next check
            // of the peers; the word is read before `done`, so no change in between is missed.
            let sleepers = self.atomic32(OFF_SLEEPERS);
            sleepers.fetch_add(1, SeqCst);
            let seen = self.atomic32(OFF_EVENT).load(SeqCst);
            if matches!(done(self), Ok(false)) {
                let left = next_check.saturating_duration_since(now);
                futex::wait(
                    self.atomic32(OFF_EVENT),
                    seen,
                    left.max(Duration::from_micros(1)),
                );
            }
            sleepers.fetch_sub(1, SeqCst);
        }
    }

    /// Tells waiting ranks that something they may wait for changed (after the change).
    pub(super) fn notify(&self) {
        self.atomic32(OFF_EVENT).fetch_add(1, SeqCst);
        if self.atomic32(OFF_SLEEPERS).load(SeqCst) > 0 {
            futex::wake_all(self.atomic32(OFF_EVENT));
        }
    }

    pub(super) fn barrier(&mut self, what: &str) -> Result<()> {
        let gen = self.atomic32(OFF_GEN).load(Acquire);
        if self.atomic32(OFF_ARRIVED).fetch_add(1, AcqRel) + 1 == self.world as u32 {
            self.atomic32(OFF_ARRIVED).store(0, Relaxed);
            self.atomic32(OFF_GEN).fetch_add(1, Release);
            self.notify();
            return Ok(());
        }
        self.wait(what, None, |c| Ok(c.atomic32(OFF_GEN).load(Acquire) != gen))
    }

    fn desc(&self, r: usize, seq: u64) -> usize {
        self.area(r) + R_DESC + (seq % 2) as usize * DESC
    }

    /// Posts this rank's descriptor (or its error), meets the others, and checks them all.
    fn handshake(&mut self, what: &str, mine: std::result::Result<[u64; 3], &Error>) -> Result<()> {
        self.op_seq += 1;
        let seq = self.op_seq;
        let d = self.desc(self.rank, seq);
        match mine {
            Ok(v) => {
                for (i, x) in v.iter().enumerate() {
                    self.atomic64(d + 8 + 8 * i).store(*x, Relaxed);
                }
                self.atomic32(d + 32).store(0, Relaxed);
            }
            Err(e) => {
                self.atomic32(d + 32).store(1, Relaxed);
                self.put_msg(d + 36, &format!("{}: {}", e.kind(), e.message()));
            }
        }
        self.atomic64(d).store(seq, Release);
        self.barrier(what)?;
        if let Err(e) = mine {
            return Err(e.clone());
        }
        let mine = mine.expect("checked");
        for k in 0..self.world {
            let dk = self.desc(k, seq);
            if self.atomic64(dk).load(Acquire) != seq {
                return Err(self.break_with(format!("worker {k} is out of step in {what}")));
            }
            if self.atomic32(dk + 32).load(Relaxed) != 0 {
                let msg = self.get_msg(dk + 36);
                let (kind, text) = msg.split_once(": ").unwrap_or(("RuntimeError", &msg));
                return Err(Error::new(
                    kind,
                    format!("{what}: worker {k} failed before the transfer: {text}"),
                ));
            }
            let theirs: Vec<u64> = (0..3)
                .map(|i| self.atomic64(dk + 8 + 8 * i).load(Relaxed))
                .collect();
            if theirs != mine {
                return Err(Error::value_error(format!(
                    "{what}: the workers disagree: worker {} passes {} and worker {k} passes {}",
                    self.rank,
                    show(&mine),
                    show(&theirs)
                )));
            }
        }
        Ok(())
    }

    pub(super) fn slot_ptr(&self, r: usize, half: usize) -> *mut u8 {
        self.at(self.data + (r * 3 + half) * self.slot)
    }

    /// Runs a collective whose local arguments were checked into `plan` (or failed to be).
    pub fn run(&mut self, what: &str, plan: Result<Plan<'_>>) -> Result<()> {
        self.usable()?;
        let mine = match &plan {
            Ok(p) => Ok([p.kind.code() as u64, dtype_word(p), p.count as u64]),
            Err(e) => Err(e),
        };
        self.handshake(what, mine)?;
        self.transfer(&plan.expect("checked by the handshake"))
    }
}

fn dtype_word(p: &Plan<'_>) -> u64 {
    p.dtype.raw_word()
}

fn show(v: &[u64]) -> String {
    format!(
        "{} elements of {}",
        v[2],
        rffi_core::DataType::from_raw_word(v[1])
    )
}

/// A dtype as one word and back (for the descriptors).
pub(super) trait RawWord {
    fn raw_word(self) -> u64;
}

impl RawWord for rffi_core::DataType {
    fn raw_word(self) -> u64 {
        self.code() as u64 | (self.bits() as u64) << 8 | (self.lanes() as u64) << 16
    }
}

pub(super) trait FromRawWord {
    fn from_raw_word(w: u64) -> rffi_core::DataType;
}

impl FromRawWord for rffi_core::DataType {
    fn from_raw_word(w: u64) -> rffi_core::DataType {
        rffi_core::DataType::new(w as u8, (w >> 8) as u8, (w >> 16) as u16)
    }
}
