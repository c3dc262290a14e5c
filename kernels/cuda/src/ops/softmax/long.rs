//! The softmax planner for rows longer than 1024 elements: pipelined through registers, staged
//! in a block's or a cluster's shared memory, split over blocks, in a block's registers, or
//! online (read twice).

use super::plan::{Class, Kind, Plan};
use crate::ops::{CeilDiv, Launch, Tuned};

/// Rows staged over a cluster of CN blocks: (CN, kernel).
pub(super) const CLUSTER: [(i64, &str); 3] = [
    (2, "softmax_cluster_2"),
    (4, "softmax_cluster_4"),
    (8, "softmax_cluster_8"),
];
/// Rows staged in part over a cluster of 8 blocks (`cluster_part`).
pub(super) const CLUSTER_PART: (i64, &str) = (8, "softmax_cluster_part_8");
/// Rows pipelined through registers over a persistent grid of CN blocks a row (`pipe`; CN > 1
/// a cluster, sm_90 on): (CN, kernel).
pub(super) const PIPE: [(i64, &str); 4] = [
    (1, "softmax_pipe_1"),
    (2, "softmax_pipe_2"),
    (4, "softmax_pipe_4"),
    (8, "softmax_pipe_8"),
];
/// Rows in a block's registers: (packs a thread, kernel).
pub(super) const BLOCK: [(i64, &str); 4] = [
    (1, "softmax_block_1"),
    (2, "softmax_block_2"),
    (4, "softmax_block_4"),
    (8, "softmax_block_8"),
];

/// Elements a row must have for `softmax_smem` (`smem_cols`): shorter rows fit a block's
/// registers (`softmax_block_PK`, many blocks an SM).
const SMEM_COLS: i64 = 16384;

/// The plan of rows longer than 1024 elements (`plan::plan` has taken the shorter ones).
pub(super) fn plan(c: &Class, sms: i64, tuned: &Tuned<'_>) -> Plan {
    let (rows, len, v) = (c.rows.max(1), c.len, c.vec);
    let nv = len / v;
    let whole = c.aligned_rows && len % v == 0;
    let single = |kind: Kind, main: Launch, why: String| Plan::single(kind, main, len, why);
    if let Some(p) = pipe(c, sms, tuned) {
        return p;
    }
    // Long contiguous rows that fit a block's shared memory (with a pack of slack for the row's
    // alignment): read once, whatever the row count. Where two rows fit an SM they come before
    // the register variant (one block an SM at these lengths, which cannot overlap one row's
    // reads with another's arithmetic: bfloat16 rows of 32000 0.70 of copy in registers, 0.86
    // staged); a row that takes an SM's shared memory alone stays after it (float32 rows of
    // 32000: 0.76 in registers, 0.69 staged) and replaces only the split and online variants.
    let itemsize = 16 / v;
    let shared = (len + v) * itemsize;
    let smem_cols = tuned.get("smem_cols", SMEM_COLS);
    let staged = c.contiguous && len >= smem_cols && shared <= c.smem_block;
    let smem_threads = tuned.get("smem_threads", 512).clamp(32, 1024) as u64;
    let smem = |first: bool| {
        let why = format!(
            "rows of {len} (at least smem_cols = {smem_cols}) fit a block's shared memory ({} \
             KiB of {}{}): a block of {smem_threads} per row stages it with 16-byte asynchronous \
             copies, each element read once",
            shared.cdiv(1024),
            c.smem_block / 1024,
            if first { ", two an SM" } else { "" }
        );
        Plan {
            shared: shared as u32,
            ..single(
                Kind::Packed,
                Launch::new("softmax_smem", rows as u64, smem_threads),
                why,
            )
        }
    };
    if staged && 2 * shared <= c.smem_block {
        return smem(true);
    }
    // Rows too long for a block's shared memory, over a cluster's (`cluster`, sm_90 on): the
    // fewest blocks of which two fit an SM. Measured on an H200 (2026-12-05 10:10): bfloat16
    // rows of 128256 / 262144 0.73 / 0.68 of copy against 0.58 / 0.53 read twice, float32 rows
    // of 128256 0.62 against 0.53; where a cluster holds one block an SM (float32 262144: 0.48
    // against 0.56) or a block stages the row alone (float32 50257: 0.74 against 0.78) it lost.
    let cluster = || {
        if !(c.clusters
            && c.contiguous
            && tuned.get("cluster", 0) != 0
            && len >= smem_cols
            && !staged)
        {
            return None;
        }
        let bytes = |cn: i64| (len.cdiv(cn) + 2 * v) * itemsize;
        let (cn, k, shared) = match CLUSTER
            .iter()
            .find(|&&(cn, _)| 2 * bytes(cn) <= c.smem_block)
        {
            Some(&(cn, k)) => (cn, k, bytes(cn)),
            // `cluster_part` (sm_90.json, with `cluster`): chunks of 8 blocks longer than two blocks an SM
            // stage (float32 rows of 262144: 128 KiB) have their first packs staged, as many as
            // two blocks an SM hold (an SM's shared memory is about a block's; each block also
            // keeps its static arrays and 1 KiB the system reserves), the rest read from memory
            // in each pass, from L2 after the first. At most half a chunk, so that the rest
            // stays small against L2.
            None if tuned.get("cluster_part", 0) != 0 => {
                let (cn, k) = CLUSTER_PART;
                let half = (c.smem_block / 2 - 2048) / 16 * 16;
                if bytes(cn) > 2 * half {
                    return None;
                }
                (cn, k, half)
            }
            None => return None,
        };
        let grid = crate::ops::cluster_grid(rows as u64, cn);
        let why = if shared < bytes(cn) {
            format!(
                "rows of {len} over a cluster of {cn} blocks, two an SM: each stages the first \
                 {} KiB of its {} KiB chunk with 16-byte asynchronous copies and reads the rest \
                 from memory in each pass (from L2 after the first), maxima and sums exchanged \
                 through distributed shared memory",
                shared / 1024,
                bytes(cn).cdiv(1024),
            )
        } else {
            format!(
                "rows of {len} over the shared memory of a cluster of {cn} blocks ({} KiB each, \
                 of {}, two an SM): each stages a chunk with 16-byte asynchronous copies, maxima \
                 and sums exchanged through distributed shared memory, each element read once",
                bytes(cn).cdiv(1024),
                c.smem_block / 1024,
            )
        };
        Some(Plan {
            shared: shared as u32,
            ..single(Kind::Packed, Launch::new(k, grid, smem_threads), why)
        })
    };
    // Few long rows: split each over blocks.
    let split_rows = tuned.get("split_rows", sms);
    if !staged && rows < split_rows && len >= tuned.get("split_cols", 16384) {
        let threads = tuned.get("split_threads", 512).clamp(32, 1024) as u64;
        let most = len.cdiv(tuned.get("split_chunk_min", 4096).max(64));
        let chunks = (2 * sms).cdiv(rows).clamp(2, most.max(2));
        let chunk = len.cdiv(chunks).cdiv(64) * 64;
        let chunks = len.cdiv(chunk);
        let items = (rows * chunks) as u64;
        return Plan {
            kind: Kind::Split,
            main: Launch::new("softmax_split_stats", items, threads),
            write: Some(Launch::new("softmax_split_write", items, threads)),
            chunks,
            chunk,
            tile_rows: 0,
            shared: 0,
            why: format!(
                "{rows} rows of {len} (fewer than split_rows = {split_rows}): each row split into \
                 {chunks} chunks of {chunk} over blocks, (max, sum) per chunk, merged per row"
            ),
        };
    }
    // Rows that fit a block's registers: read once.
    let most_packs = (32 / v).clamp(1, 8);
    if whole && nv <= 1024 * most_packs {
        let wanted = tuned.get("packs", 4).clamp(1, most_packs);
        let &(pk, k) = BLOCK
            .iter()
            .find(|&&(p, _)| p >= wanted && p <= most_packs && nv.cdiv(p) <= 1024)
            .or_else(|| {
                BLOCK
                    .iter()
                    .find(|&&(p, _)| p <= most_packs && nv.cdiv(p) <= 1024)
            })
            .expect("nv <= 1024 * most_packs");
        let threads = (nv.cdiv(pk).cdiv(32) * 32).clamp(32, 1024) as u64;
        let why = format!(
            "rows of {len} = {nv} aligned packs fit a block's registers: {pk} packs a thread, \
             {threads} threads, each element read once"
        );
        return single(Kind::Packed, Launch::new(k, rows as u64, threads), why);
    }
    if staged {
        return smem(false);
    }
    if let Some(p) = cluster() {
        return p;
    }
    let threads = tuned.get("threads", 512).clamp(32, 1024) as u64;
    let why = format!(
        "rows of {len}{}: a block of {threads} per row, online (max, sum) then a second read \
         (from L2){}",
        if whole {
            ""
        } else {
            " (not whole aligned packs)"
        },
        if c.contiguous {
            ", 16-byte packs after peeling to alignment"
        } else {
            ", element by element (strided rows)"
        }
    );
    single(
        Kind::Online,
        Launch::new("softmax_online", rows as u64, threads),
        why,
    )
}

/// Long contiguous rows pipelined through registers (`pipe`): rows back to back (the kernel
/// finds a row as its index times the stride), 32 values of the compute type a thread.
fn pipe(c: &Class, sms: i64, tuned: &Tuned<'_>) -> Option<Plan> {
    if !(c.contiguous && c.packed) {
        return None;
    }
    let rows = c.rows.max(1);
    let k = crate::ops::pipe::Kernels {
        by_cn: &PIPE,
        packs: 32 / c.vec,
    };
    let device = (c.clusters, c.smem_block, sms);
    let p = crate::ops::pipe::shape((rows, c.len, c.vec), device, tuned, k)?;
    Some(Plan {
        kind: Kind::Pipe(p.cn as u32),
        main: Launch::new(p.kernel, (rows * p.cn) as u64, p.threads as u64),
        write: None,
        chunks: p.cn,
        chunk: c.len.cdiv(p.cn),
        tile_rows: 0,
        shared: p.shared as u32,
        why: p.why,
    })
}
