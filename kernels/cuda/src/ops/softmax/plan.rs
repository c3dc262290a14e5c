//! The softmax planner (`plan`): the shape class of a call and the variant it takes. Rows up to
//! 1024 elements are planned here (tiles of rows back to back, lanes and warps a row, groups of
//! lanes); longer rows in `long.rs`.

use super::long::{self, BLOCK, CLUSTER, CLUSTER_PART, PIPE};
use crate::ops::{CeilDiv, Launch, Tuned};
use crate::source::Family;

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
/// Every kernel name the planner can choose for elements of `itemsize` bytes (float64 has no
/// pipelined rows; checked against the source by a test and against the PTX offline).
pub fn kernel_names(itemsize: i64) -> Vec<&'static str> {
    let mut v: Vec<&str> = GROUP.iter().map(|g| g.2).collect();
    v.extend(TILE.iter().flat_map(|t| [t.2, t.3]));
    v.extend(TILEQ.iter().map(|t| t.2));
    v.extend(WARP.iter().map(|w| w.1));
    v.extend(LANES.iter().map(|w| w.2));
    v.extend(BLOCK.iter().map(|b| b.1));
    v.extend(CLUSTER.iter().map(|b| b.1));
    v.push(CLUSTER_PART.1);
    if crate::ops::pipe::serves(itemsize) {
        v.extend(PIPE.iter().map(|b| b.1));
    }
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

impl Plan {
    /// A plan of one launch over whole rows of `len` elements.
    pub(super) fn single(kind: Kind, main: Launch, len: i64, why: String) -> Plan {
        Plan {
            kind,
            main,
            write: None,
            chunks: 1,
            chunk: len,
            tile_rows: 0,
            shared: 0,
            why,
        }
    }
}

/// The module that defines `kernel`: the quad tiles are a module apart.
pub fn family(kernel: &str) -> Family {
    if TILEQ.iter().any(|t| t.2 == kernel) {
        Family::SoftmaxQuads
    } else {
        Family::Softmax
    }
}

fn pow2ceil(v: i64) -> i64 {
    (v.max(1) as u64).next_power_of_two() as i64
}

/// The variant of a softmax of shape class `c` on a device of `sms` SMs under the tuning `tuned`,
/// its launch, and why.
pub fn plan(c: &Class, sms: i64, tuned: &Tuned<'_>) -> Plan {
    let (rows, len, v) = (c.rows.max(1), c.len, c.vec);
    let nv = len / v;
    let whole = c.aligned_rows && len % v == 0;
    let single = |kind: Kind, main: Launch, why: String| Plan::single(kind, main, len, why);
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
    long::plan(c, sms, tuned)
}
