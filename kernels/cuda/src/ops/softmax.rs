//! Softmax along any axis (`cu/softmax.cuh`): the variant by row length and layout.
//!
//! - rows up to 1024 elements that are not whole aligned packs (or shorter than a pack a lane):
//!   `softmax_group_G_N`, G lanes per row, N elements a lane;
//! - contiguous aligned rows of whole packs, up to 8 packs a lane: `softmax_warp_N`;
//! - long rows back to back (float32 and 16-bit), where a config sets `pipe`: `softmax_pipe_CN`,
//!   a block's chunk of a row in registers while its next row's arrives, on a persistent grid
//!   (`pipe.rs`);
//! - contiguous rows of at least `smem_cols` elements of which two fit an SM's shared memory:
//!   `softmax_smem`, a block per row staged whole in shared memory (read once);
//! - few long rows (fewer than `split_rows`, at least `split_cols` elements): split over blocks,
//!   `softmax_split_stats` + `softmax_split_write`;
//! - contiguous aligned rows that fit a block's registers: `softmax_block_PK`;
//! - other contiguous rows that fit a block's shared memory: `softmax_smem`;
//! - longer contiguous rows, where a config sets `cluster` (sm_90 on): `softmax_cluster_CN`,
//!   staged over the shared memory of a cluster of CN blocks, two an SM;
//! - anything else (long, odd-length or misaligned rows such as 50257 or 128256, strided rows):
//!   `softmax_online`, a block per row, reading the row twice (the second time from L2).

use super::{arg, dt, explanation, ptr, sms, stream, CeilDiv, Launch, Lay, Tuned};
use crate::driver::{function, has_clusters, launch, launch_shared, smem_per_block, Scratch};
use crate::source::Family;
use rffi_core::{Result, Tensor};
use rffi_kernels::{Explanation, OpCall};

/// The group variants: (lanes per row, elements a lane, kernel).
const GROUP: [(i64, i64, &str); 11] = [
    (1, 1, "softmax_group_1_1"),
    (1, 2, "softmax_group_1_2"),
    (1, 4, "softmax_group_1_4"),
    (2, 4, "softmax_group_2_4"),
    (4, 4, "softmax_group_4_4"),
    (8, 4, "softmax_group_8_4"),
    (16, 4, "softmax_group_16_4"),
    (32, 4, "softmax_group_32_4"),
    (32, 8, "softmax_group_32_8"),
    (32, 16, "softmax_group_32_16"),
    (32, 32, "softmax_group_32_32"),
];
/// The tile variants: (lanes per row, elements a lane, kernel with 32 KiB tiles, kernel with
/// 16 KiB tiles).
const TILE: [(i64, i64, &str, &str); 10] = [
    (1, 2, "softmax_tile_1_2", "softmax_tileh_1_2"),
    (1, 4, "softmax_tile_1_4", "softmax_tileh_1_4"),
    (1, 8, "softmax_tile_1_8", "softmax_tileh_1_8"),
    (2, 8, "softmax_tile_2_8", "softmax_tileh_2_8"),
    (4, 8, "softmax_tile_4_8", "softmax_tileh_4_8"),
    (8, 8, "softmax_tile_8_8", "softmax_tileh_8_8"),
    (16, 8, "softmax_tile_16_8", "softmax_tileh_16_8"),
    (32, 8, "softmax_tile_32_8", "softmax_tileh_32_8"),
    (32, 16, "softmax_tile_32_16", "softmax_tileh_32_16"),
    (32, 32, "softmax_tile_32_32", "softmax_tileh_32_32"),
];
/// The quad tiles (16 KiB, 128 threads), chosen only where a config sets `tile_quads`
/// (sm_90.json, for 16-bit rows): (lanes per row, quads of 4 elements a lane, kernel).
const TILEQ: [(i64, i64, &str); 18] = [
    (1, 2, "softmax_tileq_1_2"),
    (1, 4, "softmax_tileq_1_4"),
    (1, 8, "softmax_tileq_1_8"),
    (2, 2, "softmax_tileq_2_2"),
    (2, 4, "softmax_tileq_2_4"),
    (2, 8, "softmax_tileq_2_8"),
    (4, 2, "softmax_tileq_4_2"),
    (4, 4, "softmax_tileq_4_4"),
    (4, 8, "softmax_tileq_4_8"),
    (8, 2, "softmax_tileq_8_2"),
    (8, 4, "softmax_tileq_8_4"),
    (8, 8, "softmax_tileq_8_8"),
    (16, 2, "softmax_tileq_16_2"),
    (16, 4, "softmax_tileq_16_4"),
    (16, 8, "softmax_tileq_16_8"),
    (32, 2, "softmax_tileq_32_2"),
    (32, 4, "softmax_tileq_32_4"),
    (32, 8, "softmax_tileq_32_8"),
];
/// Bytes of a tile (`TB` of the kernels; `tile_bytes` 16384 picks the half-size tiles).
const TILE_BYTES: i64 = 32768;
const WARP: [(i64, &str); 4] = [
    (1, "softmax_warp_1"),
    (2, "softmax_warp_2"),
    (4, "softmax_warp_4"),
    (8, "softmax_warp_8"),
];
/// Several rows a warp (`lane_packs`): (lanes a row, packs a lane, kernel).
const LANES: [(i64, i64, &str); 6] = [
    (4, 2, "softmax_lanes_4_2"),
    (4, 4, "softmax_lanes_4_4"),
    (8, 2, "softmax_lanes_8_2"),
    (8, 4, "softmax_lanes_8_4"),
    (16, 2, "softmax_lanes_16_2"),
    (16, 4, "softmax_lanes_16_4"),
];
/// Rows staged over a cluster of CN blocks: (CN, kernel).
const CLUSTER: [(i64, &str); 3] = [
    (2, "softmax_cluster_2"),
    (4, "softmax_cluster_4"),
    (8, "softmax_cluster_8"),
];
/// Rows staged in part over a cluster of 8 blocks (`cluster_part`).
const CLUSTER_PART: (i64, &str) = (8, "softmax_cluster_part_8");
/// Rows pipelined through registers over a persistent grid of CN blocks a row (`pipe`; CN > 1
/// a cluster, sm_90 on): (CN, kernel).
const PIPE: [(i64, &str); 4] = [
    (1, "softmax_pipe_1"),
    (2, "softmax_pipe_2"),
    (4, "softmax_pipe_4"),
    (8, "softmax_pipe_8"),
];
const BLOCK: [(i64, &str); 4] = [
    (1, "softmax_block_1"),
    (2, "softmax_block_2"),
    (4, "softmax_block_4"),
    (8, "softmax_block_8"),
];

/// Every kernel name the planner can choose (checked against the source by a test).
pub fn kernel_names() -> Vec<&'static str> {
    let mut v: Vec<&str> = GROUP.iter().map(|g| g.2).collect();
    v.extend(TILE.iter().flat_map(|t| [t.2, t.3]));
    v.extend(TILEQ.iter().map(|t| t.2));
    v.extend(WARP.iter().map(|w| w.1));
    v.extend(LANES.iter().map(|w| w.2));
    v.extend(BLOCK.iter().map(|b| b.1));
    v.extend(CLUSTER.iter().map(|b| b.1));
    v.push(CLUSTER_PART.1);
    v.extend(PIPE.iter().map(|b| b.1));
    v.extend([
        "softmax_smem",
        "softmax_online",
        "softmax_split_stats",
        "softmax_split_write",
    ]);
    v
}

/// The shape class of a softmax.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Class {
    pub rows: i64,
    pub len: i64,
    /// Elements per 16-byte pack.
    pub vec: i64,
    /// Every row contiguous and 16-byte aligned in x and out.
    pub aligned_rows: bool,
    /// Rows contiguous in x and out, with the same alignment phase (packs after peeling).
    pub contiguous: bool,
    /// Rows stored back to back in x and in out (row stride = len): a run of rows is one
    /// contiguous range.
    pub packed: bool,
    /// x and out start on a boundary of 4 elements (with rows of a multiple of 4 elements, every
    /// row does: the quad tiles).
    pub quad_aligned: bool,
    /// Bytes of shared memory a block may take on the device (`softmax_smem`).
    pub smem_block: i64,
    /// The device runs thread block clusters (`softmax_cluster_CN`).
    pub clusters: bool,
}

/// The parameter lists of the variants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `(x, out, rows, len, sx, so, L)`.
    Group,
    /// `(x, out, rows, len, L)`: the warp and block variants.
    Packed,
    /// `(x, out, rows, len, sx, so, L, vec)`.
    Online,
    /// `(x, out, rows, len, R)`: R rows a tile.
    Tile,
    /// The two split kernels.
    Split,
    /// `(x, out, rows, len, L)` as `Packed`, on a persistent grid (`softmax_pipe_CN`): the
    /// launch takes as many clusters of the plan's blocks as the device holds at once.
    Pipe(u32),
}

/// Elements a row must have for `softmax_smem` (`smem_cols`): shorter rows fit a block's
/// registers (`softmax_block_PK`, many blocks an SM).
const SMEM_COLS: i64 = 16384;

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub kind: Kind,
    pub main: Launch,
    /// `softmax_split_write`, after `main` = `softmax_split_stats`.
    pub write: Option<Launch>,
    pub chunks: i64,
    pub chunk: i64,
    /// Rows a tile (the tile variants).
    pub tile_rows: i64,
    /// Bytes of dynamic shared memory (`softmax_smem`), else 0.
    pub shared: u32,
    pub why: String,
}

fn pow2ceil(v: i64) -> i64 {
    (v.max(1) as u64).next_power_of_two() as i64
}

pub fn plan(c: &Class, sms: i64, tuned: &Tuned<'_>) -> Plan {
    let (rows, len, v) = (c.rows.max(1), c.len, c.vec);
    let nv = len / v;
    let whole = c.aligned_rows && len % v == 0;
    let single = |kind: Kind, main: Launch, why: String| Plan {
        kind,
        main,
        write: None,
        chunks: 1,
        chunk: len,
        tile_rows: 0,
        shared: 0,
        why,
    };
    // Short rows back to back: tiles of whole rows staged in shared memory, 32 KiB with 256
    // threads or (`tile_bytes` 16384) 16 KiB with 128.
    let half = tuned.get("tile_bytes", TILE_BYTES) <= TILE_BYTES / 2;
    let (bytes, threads) = if half {
        (TILE_BYTES / 2, 128)
    } else {
        (TILE_BYTES, 256)
    };
    let tile_max = tuned.get("tile_max", 1024).min(bytes / (16 / v) / 2);
    // The quad tiles: rows of whole quads (16- and 32-bit types), about `tile_quad_elems`
    // elements a lane, 16 KiB with 128 threads.
    let quads = tuned.get("tile_quads", 0) != 0
        && c.quad_aligned
        && len % 4 == 0
        && v >= 4
        && (4..=tuned.get("tile_max", 1024).min(1024)).contains(&len);
    if c.packed && (quads || (2..=tile_max).contains(&len)) {
        let (g, n, k, bytes, threads, unit) = if quads {
            let per_lane = tuned.get("tile_quad_elems", 8).clamp(8, 32) / 4;
            let nq = len / 4;
            let g = pow2ceil(nq.cdiv(per_lane)).min(32);
            let n = pow2ceil(nq.cdiv(g)).max(2);
            let e = TILEQ
                .iter()
                .find(|e| e.0 == g && e.1 == n)
                .expect("every (G, N) for rows up to 1024");
            (g, n, e.2, TILE_BYTES / 2, 128, "quads of 4 elements")
        } else {
            let g = pow2ceil(len.cdiv(8)).min(32);
            let n = pow2ceil(len.cdiv(g)).max(2);
            let e = TILE
                .iter()
                .find(|e| e.0 == g && e.1 == n)
                .expect("every (G, N) for rows up to 1024");
            (
                g,
                n,
                if half { e.3 } else { e.2 },
                bytes,
                threads,
                "elements",
            )
        };
        let mut per = bytes / (16 / v) / len;
        // The block takes threads / g rows at a time: a tile of a whole number of those rounds
        // saves a last, mostly idle round (rows of 100 in float32: 80 rows in 5 rounds instead
        // of 81 in 6), where that leaves at most 1/16 of the tile unused.
        let round = threads as i64 / g;
        let whole = per / round * round;
        if tuned.get("tile_round", 1) != 0 && whole >= round && per - whole <= per / 16 {
            per = whole;
        }
        let tiles = rows.cdiv(per);
        return Plan {
            tile_rows: per,
            ..single(
                Kind::Tile,
                Launch::new(k, tiles as u64, threads),
                format!(
                    "rows of {len} stored back to back (up to tile_max = {tile_max}): tiles of \
                     {per} rows ({} KiB) staged in shared memory with 16-byte accesses, {g} \
                     lane{} a row, {n} {unit} a lane",
                    bytes / 1024,
                    if g == 1 { "" } else { "s" }
                ),
            )
        };
    }
    // Short rows: lanes of a warp per row, a block of 256 threads per `per` rows. A candidate
    // (`group_blocks_per_sm`, 0 none): at most that many blocks an SM, each thread walking
    // rows grid-stride, instead of a block per `per` rows that exits after one row a lane
    // (float32 rows of 32: 65536 blocks of one 16-byte load a thread).
    let group_cap = tuned.get("group_blocks_per_sm", 0).max(0) as u64;
    let lanes_grid = |per: i64, why: String| {
        let grid = (rows as u64).cdiv(per as u64);
        match group_cap {
            0 => (grid, why),
            b => {
                let cap = sms.max(1) as u64 * b;
                (
                    grid.min(cap),
                    format!("{why}; grid at most {cap} blocks ({sms} SMs x {b})"),
                )
            }
        }
    };
    // A candidate (`lane_packs` P, 0 none): aligned rows of 8 to 128 packs with fewer than P
    // packs a lane in a warp take G lanes a row (G < 32, about P packs a lane) and 32 / G rows a
    // warp, so that a lane has P packs in flight, not one.
    let lane_packs = tuned.get("lane_packs", 0).clamp(0, 4);
    if whole && lane_packs > 1 && (8..=128).contains(&nv) && nv.cdiv(32) < lane_packs {
        let g = pow2ceil(nv.cdiv(lane_packs)).clamp(4, 16);
        let n = pow2ceil(nv.cdiv(g));
        if let Some(e) = LANES.iter().find(|e| e.0 == g && e.1 == n) {
            let (grid, why) = lanes_grid(
                256 / g,
                format!(
                    "rows of {len} = {nv} aligned 16-byte packs: {g} lanes a row, {} rows a \
                     warp, {n} packs a lane (lane_packs = {lane_packs})",
                    32 / g
                ),
            );
            return single(Kind::Packed, Launch::new(e.2, grid, 256), why);
        }
    }
    if whole && (32..=32 * 8).contains(&nv) {
        let n = pow2ceil(nv.cdiv(32));
        let k = WARP.iter().find(|w| w.0 == n).expect("n <= 8").1;
        let (grid, why) = lanes_grid(
            8,
            format!("rows of {len} = {nv} aligned 16-byte packs: a warp per row, {n} packs a lane"),
        );
        return single(Kind::Packed, Launch::new(k, grid, 256), why);
    }
    if len <= 1024 {
        let g = pow2ceil(len.cdiv(4)).min(32);
        let n = pow2ceil(len.cdiv(g));
        let k = GROUP
            .iter()
            .find(|e| e.0 == g && e.1 == n)
            .expect("every (G, N) for rows up to 1024")
            .2;
        let (grid, why) = lanes_grid(
            256 / g,
            format!(
                "rows of {len} elements: {g} lane{} per row, {n} elements a lane in registers",
                if g == 1 { "" } else { "s" }
            ),
        );
        return single(Kind::Group, Launch::new(k, grid, 256), why);
    }
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
        let grid = super::cluster_grid(rows as u64, cn);
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
    let k = super::pipe::Kernels {
        by_cn: &PIPE,
        packs: 32 / c.vec,
    };
    let device = (c.clusters, c.smem_block, sms);
    let p = super::pipe::shape((rows, c.len, c.vec), device, tuned, k)?;
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

/// The rows of x and out along the axis: layout of the other dims, row count, length, strides.
pub fn rows_of(x: &Tensor, o: &Tensor, axis: Option<usize>) -> Result<(Lay, i64, i64, i64, i64)> {
    let Some(a) = axis else {
        return Ok((Lay::new(&[], &[&[], &[]])?, 1, 1, 1, 1));
    };
    let others = |v: &[i64]| rffi_kernels::without_axis(v, a);
    let lead = others(x.shape());
    let lay = Lay::new(&lead, &[&others(x.strides()), &others(o.strides())])?;
    let rows = lead.iter().product::<i64>();
    Ok((lay, rows, x.shape()[a], x.strides()[a], o.strides()[a]))
}

/// Whether the rows (`rows_of`) lie back to back in x and out: contiguous, the row stride their
/// length (a run of rows is one contiguous range; a row's place is its index times the stride).
pub fn back_to_back(lay: &Lay, rows: i64, len: i64, sx: i64, so: i64) -> bool {
    sx == 1 && so == 1 && (rows <= 1 || lay.nd == 1 && lay.s[0][0] == len && lay.s[1][0] == len)
}

/// Whether every row starts 16-byte aligned in x and out (`phase_only`: whether every row of x
/// sits at the same distance from alignment as the same row of out, so that after peeling to
/// alignment both are read and written in packs), from the base pointers and the strides of the
/// other dims.
pub fn row_alignment(x: &Tensor, o: &Tensor, axis: usize, v: i64, phase_only: bool) -> bool {
    let (px, po) = (ptr(x), ptr(o));
    let lead = (0..x.ndim()).filter(|&i| i != axis && x.shape()[i] != 1);
    if phase_only {
        px % 16 == po % 16
            && lead.into_iter().all(|i| {
                let (a, b) = (x.strides()[i], o.strides()[i]);
                a == b || (a % v == 0 && b % v == 0)
            })
    } else {
        px % 16 == 0
            && po % 16 == 0
            && lead
                .into_iter()
                .all(|i| x.strides()[i] % v == 0 && o.strides()[i] % v == 0)
    }
}

struct Call {
    lay: Lay,
    rows: i64,
    len: i64,
    sx: i64,
    so: i64,
    plan: Plan,
    config: Option<String>,
    contiguous: bool,
}

fn plan_call(call: &OpCall<'_>) -> Result<Call> {
    let (x, o) = (&call.inputs[0], call.out);
    let axis = call.axes.first().copied();
    let (lay, rows, len, sx, so) = rows_of(x, o, axis)?;
    let v = dt(call)?.vec as i64;
    // Bytes of 4 elements (the quad tiles' unit).
    let quad = 4 * dt(call)?.size as u64;
    let unit = sx == 1 && so == 1 || len == 1;
    let a = axis.unwrap_or(0);
    let has_axis = axis.is_some();
    let c = Class {
        rows,
        len,
        vec: v,
        aligned_rows: has_axis && unit && row_alignment(x, o, a, v, false),
        contiguous: has_axis && unit && row_alignment(x, o, a, v, true),
        packed: has_axis && back_to_back(&lay, rows, len, sx, so),
        quad_aligned: ptr(x) % quad == 0 && ptr(o) % quad == 0,
        smem_block: smem_per_block(call.device.index())? as i64,
        clusters: has_clusters(call.device.index())?,
    };
    let sms = sms(call)?;
    let vars = [
        ("cols", len),
        ("rows", rows),
        ("itemsize", dt(call)?.size as i64),
        ("sms", sms),
    ];
    let tuned = Tuned::select(&call.tune, "softmax", &vars)?;
    Ok(Call {
        lay,
        rows,
        len,
        sx,
        so,
        plan: plan(&c, sms, &tuned),
        config: tuned.origin(),
        contiguous: c.contiguous,
    })
}

/// Rows of one element (or a 0-d x): every output is 1 or NaN, elementwise.
fn rows_of_one(call: &OpCall<'_>) -> bool {
    call.axes
        .first()
        .is_none_or(|&a| call.inputs[0].shape()[a] == 1)
}

pub fn softmax(call: &OpCall<'_>) -> Result<()> {
    if call.inputs[0].numel() == 0 {
        return Ok(());
    }
    if rows_of_one(call) {
        return super::elementwise::softmax_of_one(call);
    }
    let Call {
        mut lay,
        mut rows,
        mut len,
        mut sx,
        mut so,
        plan: p,
        contiguous,
        ..
    } = plan_call(call)?;
    let st = stream(call);
    let (mut px, mut po) = (ptr(&call.inputs[0]), ptr(call.out));
    let mut vec = contiguous as i32;
    let (mut chunks, mut chunk) = (p.chunks, p.chunk);
    let family = if TILEQ.iter().any(|t| t.2 == p.main.kernel) {
        Family::SoftmaxQuads
    } else {
        Family::Softmax
    };
    let f = function(call.device, call.dtype, family, p.main.kernel)?;
    if p.kind == Kind::Tile {
        let mut per = p.tile_rows;
        let mut args = [
            arg(&mut px),
            arg(&mut po),
            arg(&mut rows),
            arg(&mut len),
            arg(&mut per),
        ];
        // SAFETY: the arguments match the kernel (`cu/softmax.cuh`); the rows are back to back
        // in x and out (the plan checked), so each tile is one contiguous range of both.
        return unsafe { launch(f, p.main.grid, p.main.block, st, &mut args) };
    }
    if p.kind != Kind::Split {
        let mut args = vec![arg(&mut px), arg(&mut po), arg(&mut rows), arg(&mut len)];
        let mut grid = p.main.grid;
        match p.kind {
            Kind::Group => args.extend([arg(&mut sx), arg(&mut so), arg(&mut lay)]),
            Kind::Packed => args.push(arg(&mut lay)),
            Kind::Pipe(cn) => {
                args.push(arg(&mut lay));
                grid = super::pipe::grid(call.device.index(), f, &p.main, p.shared, cn)?;
            }
            _ => args.extend([arg(&mut sx), arg(&mut so), arg(&mut lay), arg(&mut vec)]),
        }
        // SAFETY: the arguments match the kernel (`cu/softmax.cuh`, `cu/softmax_pipe.cuh`); x
        // and out are the tensors' elements, ordered on the stream; the plan's variant fits the
        // rows (whole aligned packs for the warp and block variants, a row and a pack in
        // `shared` bytes for the staged rows, a block's chunk of rows back to back in `shared`
        // bytes and its threads' registers for the pipelined ones, within the device's limit);
        // a pipelined grid is a multiple of its cluster size.
        return unsafe { launch_shared(f, grid, p.main.block, p.shared, st, &mut args) };
    }
    let bytes = (rows * chunks) as usize * 2 * dt(call)?.compute_size();
    let scratch = Scratch::new(bytes, st)?;
    let mut pp = scratch.ptr;
    let mut a1 = [
        arg(&mut px),
        arg(&mut pp),
        arg(&mut rows),
        arg(&mut len),
        arg(&mut sx),
        arg(&mut lay),
        arg(&mut chunks),
        arg(&mut chunk),
        arg(&mut vec),
    ];
    // SAFETY: as above; the scratch holds a (max, sum) pair per (row, chunk).
    unsafe { launch(f, p.main.grid, p.main.block, st, &mut a1) }?;
    let w = p.write.as_ref().expect("split plans write");
    let f2 = function(call.device, call.dtype, Family::Softmax, w.kernel)?;
    let mut a2 = [
        arg(&mut px),
        arg(&mut po),
        arg(&mut pp),
        arg(&mut rows),
        arg(&mut len),
        arg(&mut sx),
        arg(&mut so),
        arg(&mut lay),
        arg(&mut chunks),
        arg(&mut chunk),
        arg(&mut vec),
    ];
    // SAFETY: as above; the scratch is freed after this launch in stream order.
    unsafe { launch(f2, w.grid, w.block, st, &mut a2) }
}

pub fn explain(call: &OpCall<'_>) -> Result<Explanation> {
    if rows_of_one(call) {
        return super::elementwise::explain_softmax_of_one(call);
    }
    let c = plan_call(call)?;
    let mut launches = vec![&c.plan.main];
    launches.extend(c.plan.write.as_ref());
    let mut e = explanation(&launches, c.plan.why.clone(), c.config);
    e.params.push(("chunks".into(), c.plan.chunks));
    Ok(e)
}
