//! Point-to-point transfers of the shared-memory backend: a rendezvous through the sender's own
//! slot. The sender posts a chunk (peer, sizes, dtype, or its own error) and waits for the
//! receiver's acknowledgement, which may carry the receiver's error instead; so a bad tensor at
//! either end fails both ends, and two workers sending to each other are told so instead of
//! waiting forever.

use super::shm::{FromRawWord, RawWord, ShmComm, R_ACK, R_P2P};
use rffi_core::{Error, Result, Tensor};
use std::sync::atomic::Ordering::*;

impl ShmComm {
    fn p2p(&self, r: usize) -> usize {
        self.area(r) + R_P2P
    }

    fn ack(&self, r: usize) -> usize {
        self.area(r) + R_ACK
    }

    /// Sends `t` (or, when the local checks failed, that error) to `peer`; returns when `peer`
    /// has taken the last chunk.
    pub fn send(&mut self, t: Result<&Tensor>, peer: usize) -> Result<()> {
        self.usable()?;
        let me = self.p2p(self.rank);
        let ack = self.ack(self.rank);
        let (ptr, total, dt) = match &t {
            Ok(t) => (t.element_ptr().cast::<u8>(), t.nbytes(), t.dtype()),
            Err(_) => (std::ptr::null_mut(), 0, rffi_core::DataType::uint(8)),
        };
        let mut sent = 0;
        loop {
            let len = self.slot.min(total - sent);
            if len > 0 {
                // SAFETY: `t` holds `total` bytes; the p2p slot holds `slot` >= `len`; the
                // receiver reads it only between our `ready` and its `ack`.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr.add(sent), self.slot_ptr(self.rank, 2), len)
                };
            }
            self.atomic64(me + 8).store(peer as u64, Relaxed);
            self.atomic64(me + 16).store(total as u64, Relaxed);
            self.atomic64(me + 24).store(dt.raw_word(), Relaxed);
            self.atomic64(me + 32).store(len as u64, Relaxed);
            match &t {
                Ok(_) => self.atomic32(me + 40).store(0, Relaxed),
                Err(e) => {
                    self.atomic32(me + 40).store(1, Relaxed);
                    self.put_msg(me + 44, &format!("{}: {}", e.kind(), e.message()));
                }
            }
            let seq = self.atomic64(me).load(Relaxed) + 1;
            self.atomic64(me).store(seq, Release);
            self.notify();
            self.wait("ccl.send", Some(peer), |c| {
                if c.atomic64(c.ack(c.rank)).load(Acquire) >= seq {
                    return Ok(true);
                }
                // The peer waits in a send to us: neither can go on.
                let theirs = c.p2p(peer);
                if c.atomic64(theirs).load(Acquire) > c.atomic64(c.ack(peer)).load(Acquire)
                    && c.atomic64(theirs + 8).load(Relaxed) == c.rank as u64
                {
                    return Err(format!(
                        "workers {} and {} both send to each other; a send waits for the \
                         matching recv, so order them (one sends while the other receives)",
                        c.rank.min(peer),
                        c.rank.max(peer)
                    ));
                }
                Ok(false)
            })?;
            if let Err(e) = &t {
                return Err(e.clone());
            }
            if self.atomic32(ack + 8).load(Relaxed) != 0 {
                let msg = self.get_msg(ack + 12);
                let (kind, text) = msg.split_once(": ").unwrap_or(("RuntimeError", &msg));
                return Err(Error::new(
                    kind,
                    format!("ccl.send: worker {peer} refused the data: {text}"),
                ));
            }
            sent += len;
            if sent >= total {
                return Ok(());
            }
        }
    }

    /// Receives from `peer` into `t` (or, when the local checks failed, takes the peer's data
    /// and answers with that error so the sender does not wait).
    pub fn recv(&mut self, t: Result<&Tensor>, peer: usize) -> Result<()> {
        self.usable()?;
        let theirs = self.p2p(peer);
        let ack = self.ack(peer);
        let me = self.rank as u64;
        let mut got = 0usize;
        loop {
            self.wait("ccl.recv", Some(peer), |c| {
                let ready = c.atomic64(theirs).load(Acquire);
                Ok(ready > c.atomic64(ack).load(Acquire)
                    && c.atomic64(theirs + 8).load(Relaxed) == me)
            })?;
            let seq = self.atomic64(theirs).load(Acquire);
            let answer = |c: &Self, err: Option<&Error>| {
                match err {
                    None => c.atomic32(ack + 8).store(0, Relaxed),
                    Some(e) => {
                        c.atomic32(ack + 8).store(1, Relaxed);
                        c.put_msg(ack + 12, &format!("{}: {}", e.kind(), e.message()));
                    }
                }
                c.atomic64(ack).store(seq, Release);
                c.notify();
            };
            if self.atomic32(theirs + 40).load(Relaxed) != 0 {
                let msg = self.get_msg(theirs + 44);
                answer(self, None);
                let (kind, text) = msg.split_once(": ").unwrap_or(("RuntimeError", &msg));
                return Err(Error::new(
                    kind,
                    format!("ccl.recv: worker {peer} failed before sending: {text}"),
                ));
            }
            let total = self.atomic64(theirs + 16).load(Relaxed) as usize;
            let dt = self.atomic64(theirs + 24).load(Relaxed);
            let len = self.atomic64(theirs + 32).load(Relaxed) as usize;
            let check = t.as_ref().map_err(|e| e.clone()).and_then(|t| {
                if t.nbytes() != total || t.dtype().raw_word() != dt {
                    Err(Error::value_error(format!(
                        "ccl.recv: worker {peer} sends {total} bytes of {} but worker {me} \
                         receives into {:?} {} ({} bytes)",
                        rffi_core::DataType::from_raw_word(dt),
                        t.shape(),
                        t.dtype(),
                        t.nbytes()
                    )))
                } else {
                    Ok(t.element_ptr().cast::<u8>())
                }
            });
            match check {
                Err(e) => {
                    answer(self, Some(&e));
                    return Err(e);
                }
                Ok(ptr) => {
                    // SAFETY: `t` holds `total` bytes (checked) and `got + len <= total` (the
                    // sender's chunks add up to it); the sender's slot holds the chunk until
                    // our ack.
                    unsafe {
                        std::ptr::copy_nonoverlapping(self.slot_ptr(peer, 2), ptr.add(got), len)
                    };
                    answer(self, None);
                }
            }
            got += len;
            if got >= total {
                return Ok(());
            }
        }
    }
}
