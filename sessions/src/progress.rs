//! How far each worker has got, in a shared-memory block the controller and every worker map, so
//! a sync needs no message: a worker counts the frames it has finished and flags a pending
//! failure; the controller compares the counts with the frames it sent.
//!
//! The controller sleeps on a futex in the block. Before sleeping it writes what it waits for
//! (a frame count per worker) and sets `sleeping`; a worker that finishes a frame wakes it only
//! when every count is reached, so a sync of N workers costs the controller one wake-up, and a
//! worker that finishes while nobody waits makes no system call at all. The two sides order their
//! stores and loads sequentially consistently (a worker stores its count, then reads `sleeping`;
//! the controller stores `sleeping`, then reads the counts), so one of them always sees the
//! other: no wake-up is lost.

use crate::futex;
use crate::shm_tensor::{memfd, Mapping};
use rffi_core::{Error, Result};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::time::Duration;

const MAGIC: u64 = 0x7266_6669_7072_6f67; // "rffiprog"
const OFF_MAGIC: usize = 0;
const OFF_WORLD: usize = 8;
const OFF_WAKE: usize = 64;
const OFF_SLEEPING: usize = 68;
const RANK_BASE: usize = 128;
/// Per rank: a line the worker writes (done, failed) and one the controller writes (target).
const RANK_AREA: usize = 128;
const R_DONE: usize = 0;
const R_FAILED: usize = 8;
const R_TARGET: usize = 64;

fn size(world: usize) -> usize {
    RANK_BASE + world * RANK_AREA
}

/// The progress block of a session.
pub struct Progress {
    map: Mapping,
    world: usize,
}

impl Progress {
    /// A new block for `world` workers, and the descriptor to hand each of them.
    pub fn create(world: usize) -> Result<(Progress, OwnedFd)> {
        let fd = memfd("rffi-progress", size(world))?;
        let p = Progress {
            map: Mapping::new(fd.as_fd(), size(world), true)?,
            world,
        };
        p.word64(OFF_MAGIC).store(MAGIC, Relaxed);
        p.word64(OFF_WORLD).store(world as u64, Relaxed);
        Ok((p, fd))
    }

    /// A worker's mapping of the block its controller made.
    pub fn open(fd: &OwnedFd, world: usize) -> Result<Progress> {
        crate::shm_tensor::check_sealed(fd.as_fd())?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat on our descriptor; the struct is read only when it succeeded.
        let ok = unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } == 0;
        // SAFETY: initialized when fstat succeeded.
        if !ok || unsafe { st.assume_init() }.st_size as usize != size(world) {
            return Err(Error::value_error(
                "the session's progress block has the wrong size",
            ));
        }
        let p = Progress {
            map: Mapping::new(fd.as_fd(), size(world), true)?,
            world,
        };
        if p.word64(OFF_MAGIC).load(Relaxed) != MAGIC
            || p.word64(OFF_WORLD).load(Relaxed) != world as u64
        {
            return Err(Error::value_error(
                "the descriptor is not this session's progress block",
            ));
        }
        Ok(p)
    }

    fn word64(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off + 8 <= self.map.len() && off % 8 == 0);
        // SAFETY: an aligned offset inside the live shared mapping, only accessed atomically.
        unsafe { &*self.map.as_ptr().add(off).cast::<AtomicU64>() }
    }

    fn word32(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off + 4 <= self.map.len() && off % 4 == 0);
        // SAFETY: as in `word64`.
        unsafe { &*self.map.as_ptr().add(off).cast::<AtomicU32>() }
    }

    fn rank(&self, r: usize, off: usize) -> usize {
        RANK_BASE + r * RANK_AREA + off
    }

    /// Frames worker `r` has finished.
    pub fn done(&self, r: usize) -> u64 {
        self.word64(self.rank(r, R_DONE)).load(Acquire)
    }

    /// Whether worker `r` holds a failure not yet reported (valid once `done` is read).
    pub fn failed(&self, r: usize) -> bool {
        self.word32(self.rank(r, R_FAILED)).load(Relaxed) != 0
    }

    /// Worker `r` has finished `done` frames and holds a failure or not.
    pub fn report(&self, r: usize, done: u64, failed: bool) {
        self.word32(self.rank(r, R_FAILED))
            .store(failed as u32, Relaxed);
        self.word64(self.rank(r, R_DONE)).store(done, SeqCst);
        if self.word32(OFF_SLEEPING).load(SeqCst) != 0 && self.targets_met() {
            let wake = self.word32(OFF_WAKE);
            wake.fetch_add(1, SeqCst);
            futex::wake_all(wake);
        }
    }

    fn targets_met(&self) -> bool {
        (0..self.world).all(|k| {
            self.word64(self.rank(k, R_DONE)).load(SeqCst)
                >= self.word64(self.rank(k, R_TARGET)).load(SeqCst)
        })
    }

    /// The controller: sleeps up to `slice` unless every worker has reached `targets[r]` frames.
    /// Returns whether they all have.
    pub fn wait(&self, targets: &[u64], slice: Duration) -> bool {
        for (r, t) in targets.iter().enumerate() {
            self.word64(self.rank(r, R_TARGET)).store(*t, SeqCst);
        }
        let wake = self.word32(OFF_WAKE);
        let seen = wake.load(SeqCst);
        self.word32(OFF_SLEEPING).store(1, SeqCst);
        let met = self.targets_met() || {
            futex::wait(wake, seen, slice);
            self.targets_met()
        };
        self.word32(OFF_SLEEPING).store(0, SeqCst);
        met
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_worker_wakes_the_waiting_controller_once_all_are_done() {
        let (ctl, fd) = Progress::create(2).unwrap();
        let w = Progress::open(&fd, 2).unwrap();
        assert!(ctl.wait(&[0, 0], Duration::ZERO));
        assert!(!ctl.wait(&[1, 1], Duration::from_millis(1)));
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            w.report(0, 1, false);
            std::thread::sleep(Duration::from_millis(20));
            w.report(1, 1, true);
        });
        let start = Instant::now();
        while !ctl.wait(&[1, 1], Duration::from_secs(5)) {}
        assert!(start.elapsed() < Duration::from_secs(2));
        assert!(!ctl.failed(0) && ctl.failed(1));
        assert_eq!(ctl.done(1), 1);
        t.join().unwrap();
        assert!(Progress::open(&fd, 3).is_err());
    }
}
