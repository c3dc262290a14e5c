//! The data movement of the shared-memory collectives, once the handshake has checked every
//! rank's arguments: chunks of the tensors through the ranks' slots, one or two barriers each.

use super::reduce::{reduce_into, reduce_raw};
use super::shm::ShmComm;
use super::{elem_size, Kind, Plan};
use rffi_core::Result;

impl ShmComm {
    /// Moves the data of a checked collective.
    pub(super) fn transfer(&mut self, p: &Plan<'_>) -> Result<()> {
        let es = elem_size(p.dtype);
        let (n, w, me) = (p.count, self.world, self.rank);
        let split = matches!(p.kind, Kind::ReduceScatter(_) | Kind::Scatter);
        let cap = (self.slot / es / if split { w } else { 1 }).max(1);
        let src = p.src.map(|t| t.element_ptr().cast::<u8>());
        let dst = p.dst.map(|t| t.element_ptr().cast::<u8>());
        let mut off = 0;
        while off < n {
            let len = cap.min(n - off);
            let (b, ob) = (len * es, off * es);
            let half = (self.phase % 2) as usize;
            self.phase += 1;
            let mine = self.slot_ptr(me, half);
            // SAFETY: (every copy below) `plan` checked that src holds `count` elements (times
            // the world size where the collective splits it) and dst likewise, both contiguous
            // and of `dtype`; slots hold `slot` >= `len * es` (times `w` when split) bytes; the
            // chunk offsets stay below those sizes. Slot reads happen after the barrier that
            // follows every rank's write of this half, and before the next write of it.
            unsafe {
                match p.kind {
                    Kind::AllReduce(_) | Kind::AllGather | Kind::Gather => {
                        std::ptr::copy_nonoverlapping(src.unwrap().add(ob), mine, b)
                    }
                    Kind::ReduceScatter(_) => {
                        for r in 0..w {
                            let from = src.unwrap().add((r * n + off) * es);
                            std::ptr::copy_nonoverlapping(from, mine.add(r * b), b);
                        }
                    }
                    Kind::Broadcast if me == 0 => {
                        std::ptr::copy_nonoverlapping(src.unwrap().add(ob), mine, b)
                    }
                    Kind::Scatter if me == 0 => {
                        for r in 0..w {
                            let from = src.unwrap().add((r * n + off) * es);
                            std::ptr::copy_nonoverlapping(from, mine.add(r * b), b);
                        }
                    }
                    _ => {}
                }
            }
            self.barrier(p.kind.name())?;
            if let (Kind::AllReduce(op), true) = (p.kind, w >= 3) {
                self.allreduce_by_parts(half, dst.unwrap().wrapping_add(ob), len, es, p, op)?;
                off += len;
                continue;
            }
            // SAFETY: as above.
            unsafe {
                let slot = |r: usize, at: usize| {
                    std::slice::from_raw_parts(self.slot_ptr(r, half).add(at) as *const u8, b)
                };
                match p.kind {
                    Kind::AllReduce(op) | Kind::ReduceScatter(op) => {
                        let at = if split { me * b } else { 0 };
                        let srcs: Vec<&[u8]> = (0..w).map(|r| slot(r, at)).collect();
                        let out = std::slice::from_raw_parts_mut(dst.unwrap().add(ob), b);
                        reduce_into(out, &srcs, p.dtype, op);
                    }
                    Kind::AllGather => {
                        for r in 0..w {
                            let to = dst.unwrap().add((r * n + off) * es);
                            std::ptr::copy_nonoverlapping(slot(r, 0).as_ptr(), to, b);
                        }
                    }
                    Kind::Gather if me == 0 => {
                        for r in 0..w {
                            let to = dst.unwrap().add((r * n + off) * es);
                            std::ptr::copy_nonoverlapping(slot(r, 0).as_ptr(), to, b);
                        }
                    }
                    Kind::Broadcast => std::ptr::copy(slot(0, 0).as_ptr(), dst.unwrap().add(ob), b),
                    Kind::Scatter => std::ptr::copy_nonoverlapping(
                        slot(0, me * b).as_ptr(),
                        dst.unwrap().add(ob),
                        b,
                    ),
                    _ => {}
                }
            }
            off += len;
        }
        Ok(())
    }

    /// The second half of an allreduce chunk of `len` elements (every rank's share is in its
    /// slot `half`) for 3 or more ranks: rank i reduces part i of the chunk, in place in its own
    /// slot; then, past a barrier, every rank copies every part into `dst`. Each rank so reads
    /// the chunk about three times instead of once per rank, and the reductions are shared out.
    fn allreduce_by_parts(
        &mut self,
        half: usize,
        dst: *mut u8,
        len: usize,
        es: usize,
        p: &Plan<'_>,
        op: super::Op,
    ) -> Result<()> {
        let (w, me) = (self.world, self.rank);
        let part = |k: usize| (k * len / w * es, ((k + 1) * len / w - k * len / w) * es);
        let (at, bytes) = part(me);
        let srcs: Vec<*const u8> = (0..w)
            // SAFETY: part `me` lies inside the chunk, which fits in every slot.
            .map(|r| unsafe { self.slot_ptr(r, half).add(at) } as *const u8)
            .collect();
        // SAFETY: every slot holds the chunk (`len * es` <= `slot` bytes); past the barrier
        // before this, each rank reads and writes only its own part of the slots, in place in
        // its own (see `reduce_raw`), until the barrier below.
        unsafe { reduce_raw(srcs[me] as *mut u8, &srcs, bytes, p.dtype, op) };
        self.barrier(p.kind.name())?;
        for k in 0..w {
            let (at, bytes) = part(k);
            // SAFETY: part k of rank k's slot holds the reduced part, and stays until every
            // rank has passed the barrier of the chunk after next (slot halves alternate); `dst`
            // holds the chunk (checked by the plan).
            unsafe {
                std::ptr::copy_nonoverlapping(self.slot_ptr(k, half).add(at), dst.add(at), bytes)
            };
        }
        Ok(())
    }
}
