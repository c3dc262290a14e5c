//! layer_norm and rms_norm over the last axis (`cu/norm.cuh`): a warp per row for short
//! contiguous aligned rows, a block per row in registers for rows up to 512 threads' packs (a
//! cluster of blocks per row for longer ones where a config sets `cluster`, sm_90 on), long
//! rows pipelined through registers where a config sets `pipe` (`cu/norm_pipe.cuh`, `pipe.rs`),
//! and a generic block per row (two reads) for everything else.

use super::softmax::{back_to_back, row_alignment, rows_of};
use super::{arg, dt, explanation, ptr, sms, stream, CeilDiv, Launch, Tuned};
use crate::driver::{function, has_clusters, launch, launch_shared, smem_per_block};
use crate::source::Family;
use rffi_core::{Result, Tensor};
use rffi_kernels::{Explanation, Op, OpCall};
use std::ffi::c_void;

/// The shape class of a normalization.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Class {
    pub rows: i64,
    pub len: i64,
    pub vec: i64,
    /// Every row contiguous and 16-byte aligned in x and out.
    pub aligned_rows: bool,
    /// Rows contiguous in x and out, each at the same distance from 16-byte alignment in both
    /// (packs after peeling a few elements).
    pub contiguous: bool,
    /// Weight and bias absent or contiguous and 16-byte aligned (read as packs).
    pub wvec: bool,
    /// Weight and bias absent or contiguous at any alignment (read as shifted packs).
    pub wcontig: bool,
    /// The device runs thread block clusters (`norm_cluster_CN`).
    pub clusters: bool,
    /// Rows back to back in x and out (row stride = len): a row's place is its index times the
    /// stride (`NAME_pipe_CN`).
    pub packed: bool,
    /// Bytes of shared memory a block may take on the device.
    pub smem_block: i64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The warp and block variants: `(x, out, w, b, rows, len, L, eps, sw, sb, wvec)`.
    Packed,
    /// `(x, out, w, b, rows, len, sx, so, L, eps, sw, sb, vec)`.
    Rows,
    /// `norm_tile`: `(x, out, w, b, rows, len, L, eps, wr)`, wr warps a row, and the bytes of
    /// dynamic shared memory (`norm_tile3`: three stages; 0 for the two static ones).
    Tile(i32, u32),
    /// `NAME_pipe_CN`: the `Packed` parameters on a persistent grid (the launch takes as many
    /// clusters of CN blocks as the device holds at once), and the bytes of dynamic shared
    /// memory.
    Pipe(u32, u32),
}

/// The tile variants' kernels: two stages (static shared memory) or three (`tile3`).
fn tile_name(op: Op, stages: i64) -> &'static str {
    match (op, stages) {
        (Op::LayerNorm, 3) => "layer_norm_tile3",
        (Op::RmsNorm, 3) => "rms_norm_tile3",
        (Op::LayerNorm, _) => "layer_norm_tile",
        (Op::RmsNorm, _) => "rms_norm_tile",
        (op, _) => unreachable!("{op} is not a normalization"),
    }
}

/// The tile kernels with weight and bias read from L1 each pass, `blocks` (3 or 4) an SM
/// (`tile_l1`).
fn tile_l1_name(op: Op, blocks: i64) -> &'static str {
    match (op, blocks) {
        (Op::LayerNorm, 3) => "layer_norm_tile_l1_3",
        (Op::RmsNorm, 3) => "rms_norm_tile_l1_3",
        (Op::LayerNorm, _) => "layer_norm_tile_l1_4",
        (Op::RmsNorm, _) => "rms_norm_tile_l1_4",
        (op, _) => unreachable!("{op} is not a normalization"),
    }
}

/// Bytes of a tile stage: 4 packs of 16 bytes for each of 256 threads (`NT_PK` in the source).
const TILE_STAGE: u32 = 4 * 256 * 16;

fn names(op: Op) -> [&'static str; 14] {
    macro_rules! n {
        ($p:literal) => {
            [
                concat!($p, "_warp_1"),
                concat!($p, "_warp_2"),
                concat!($p, "_warp_4"),
                concat!($p, "_block_1"),
                concat!($p, "_block_2"),
                concat!($p, "_block_4"),
                concat!($p, "_block_8"),
                concat!($p, "_rows"),
                concat!($p, "_block_any_1"),
                concat!($p, "_block_any_2"),
                concat!($p, "_block_any_4"),
                concat!($p, "_block_shift_1"),
                concat!($p, "_block_shift_2"),
                concat!($p, "_block_shift_4"),
            ]
        };
    }
    match op {
        Op::LayerNorm => n!("layer_norm"),
        Op::RmsNorm => n!("rms_norm"),
        op => unreachable!("{op} is not a normalization"),
    }
}

/// The cluster variants' kernels: (CN, kernel), 4 packs a thread.
fn cluster_names(op: Op) -> [(i64, &'static str); 3] {
    match op {
        Op::LayerNorm => [
            (2, "layer_norm_cluster_2"),
            (4, "layer_norm_cluster_4"),
            (8, "layer_norm_cluster_8"),
        ],
        Op::RmsNorm => [
            (2, "rms_norm_cluster_2"),
            (4, "rms_norm_cluster_4"),
            (8, "rms_norm_cluster_8"),
        ],
        op => unreachable!("{op} is not a normalization"),
    }
}

/// The pipelined variants' kernels: (CN, kernel), 8 packs a thread.
fn pipe_names(op: Op) -> [(i64, &'static str); 4] {
    match op {
        Op::LayerNorm => [
            (1, "layer_norm_pipe_1"),
            (2, "layer_norm_pipe_2"),
            (4, "layer_norm_pipe_4"),
            (8, "layer_norm_pipe_8"),
        ],
        Op::RmsNorm => [
            (1, "rms_norm_pipe_1"),
            (2, "rms_norm_pipe_2"),
            (4, "rms_norm_pipe_4"),
            (8, "rms_norm_pipe_8"),
        ],
        op => unreachable!("{op} is not a normalization"),
    }
}

/// Rows pipelined through registers (`pipe`): aligned rows of whole packs back to back, weight
/// and bias packs (or absent), 8 packs a thread.
fn pipe(op: Op, c: &Class, sms: i64, tuned: &Tuned<'_>) -> Option<(Kind, Launch, String)> {
    if !(c.aligned_rows && c.len % c.vec == 0 && c.wvec && c.packed) {
        return None;
    }
    let rows = c.rows.max(1);
    let by_cn = pipe_names(op);
    let k = super::pipe::Kernels {
        by_cn: &by_cn,
        packs: 8,
    };
    let device = (c.clusters, c.smem_block, sms);
    let p = super::pipe::shape((rows, c.len, c.vec), device, tuned, k)?;
    let l = Launch::new(p.kernel, (rows * p.cn) as u64, p.threads as u64);
    Some((Kind::Pipe(p.cn as u32, p.shared as u32), l, p.why))
}

/// Every kernel name the planner can choose (checked against the source by a test).
pub fn kernel_names() -> Vec<&'static str> {
    let mut v = names(Op::LayerNorm).to_vec();
    v.extend(names(Op::RmsNorm));
    for n in [2, 3] {
        v.extend([tile_name(Op::LayerNorm, n), tile_name(Op::RmsNorm, n)]);
    }
    for n in [3, 4] {
        v.extend([tile_l1_name(Op::LayerNorm, n), tile_l1_name(Op::RmsNorm, n)]);
    }
    for op in [Op::LayerNorm, Op::RmsNorm] {
        v.extend(cluster_names(op).map(|c| c.1));
        v.extend(pipe_names(op).map(|c| c.1));
    }
    v
}

pub fn plan(op: Op, c: &Class, sms: i64, tuned: &Tuned<'_>) -> (Kind, Launch, String) {
    if let Some(p) = pipe(op, c, sms, tuned) {
        return p;
    }
    let k = names(op);
    let (rows, len, v) = (c.rows.max(1) as u64, c.len, c.vec);
    let nv = len / v;
    // Where a config sets `tile` (sm_90.json, for 16-bit rows): aligned rows of whole packs with weight and bias as packs, 64 to 1024 packs
    // (bfloat16: 512 to 8192 elements), a warp per 128 packs.
    if tuned.get("tile", 0) != 0
        && c.aligned_rows
        && len % v == 0
        && c.wvec
        && (64..=1024).contains(&nv)
    {
        let wr = (nv.cdiv(128) as u64).next_power_of_two() as i64;
        let per = 8 / wr;
        let passes = (rows as i64).cdiv(per) as u64;
        // `tile_l1` B (a candidate, 3 or 4): weight and bias read from L1 each pass, not held in
        // registers, so that B blocks fit an SM (the grid's blocks an SM then).
        let l1 = tuned.get("tile_l1", 0).clamp(0, 4);
        let l1 = if l1 > 0 { l1.max(3) } else { 0 };
        let per_sm = tuned.get("tile_blocks_per_sm", if l1 > 0 { l1 } else { 2 });
        let grid = passes.min((sms * per_sm.max(1)) as u64);
        // `tile_stages` 3 (a candidate): the next two passes in flight, in dynamic shared memory.
        let stages = if l1 > 0 {
            2
        } else if tuned.get("tile_stages", 2) >= 3 {
            3
        } else {
            2
        };
        let why = format!(
            "rows of {len} = {nv} aligned packs: {wr} warp{} a row, {per} row{} a pass, the next \
             {} prefetched into shared memory (tile, {stages} stages{})",
            if wr == 1 { "" } else { "s" },
            if per == 1 { "" } else { "s" },
            if stages == 3 { "two passes" } else { "pass" },
            if l1 > 0 {
                format!(", weight and bias read from L1 each pass, {l1} blocks an SM")
            } else {
                String::new()
            }
        );
        let shared = if stages == 3 { 3 * TILE_STAGE } else { 0 };
        return (
            Kind::Tile(wr as i32, shared),
            Launch::new(
                if l1 > 0 {
                    tile_l1_name(op, l1)
                } else {
                    tile_name(op, stages)
                },
                grid,
                256,
            ),
            why,
        );
    }
    // A warp a row for rows of at most `warp_packs` (default and most 128) aligned packs.
    if c.aligned_rows && len % v == 0 && nv <= tuned.get("warp_packs", 128).min(32 * 4) {
        let n = (nv.cdiv(32).max(1) as u64).next_power_of_two() as i64;
        let name = k[[1, 2, 4].iter().position(|&x| x == n).expect("n <= 4")];
        let why = format!("rows of {len} = {nv} aligned packs: a warp per row, {n} packs a lane");
        return (Kind::Packed, Launch::new(name, rows.cdiv(8), 256), why);
    }
    // Rows that fit a block's registers (at most 8 packs a thread, 64 registers): read once.
    // Up to `block_threads` threads where the tuned packs allow, else up to 1024 (long rows such
    // as 65536 16-bit elements: 1024 threads of 8 packs) rather than a second read. Aligned rows
    // of whole packs with weight and bias as packs take `block_PK`; other contiguous rows (odd
    // lengths, a strided weight) `block_any_PK`, at most 4 packs a thread (its registers).
    let plain = c.aligned_rows && len % v == 0 && c.wvec;
    let cap = tuned.get("block_threads", 512).clamp(32, 1024);
    if c.contiguous {
        // The packs between the peeled head and tail: at most len / v.
        let most = (32 / v).clamp(1, if plain { 8 } else { 4 });
        // Rows shorter than 32 threads of the tuned packs take fewer a thread: a full warp.
        let full = ((nv / 32).max(1) as u64).next_power_of_two() as i64;
        let wanted = tuned.get("packs", 2).clamp(1, most).min(full);
        // Where a config sets `cluster` (sm_90 on; sm_90.json, for float32 rows): aligned rows that
        // one block holds only with more than `block_threads` threads (bfloat16 rows of more
        // than 16384 elements) over a cluster of the fewest CN blocks of at most that many
        // threads of 4 packs, two an SM where one block a row leaves one an SM.
        if plain && c.clusters && tuned.get("cluster", 0) != 0 && nv.cdiv(most) > cap {
            let per_block = |cn: i64| nv.cdiv(cn).cdiv(4);
            let fit = cluster_names(op)
                .into_iter()
                .find(|&(cn, _)| per_block(cn) <= cap);
            if let Some((cn, name)) = fit {
                let threads = (per_block(cn).cdiv(32) * 32).max(32) as u64;
                let why = format!(
                    "rows of {len} = {nv} aligned packs over a cluster of {cn} blocks: 4 packs a \
                     thread, {threads} threads a block, the blocks' sums exchanged through \
                     distributed shared memory, each element read once"
                );
                let grid = super::cluster_grid(rows, cn);
                return (Kind::Packed, Launch::new(name, grid, threads), why);
            }
        }
        let all = [1i64, 2, 4, 8];
        let fit = all
            .into_iter()
            .enumerate()
            .find(|&(_, p)| p >= wanted && p <= most && nv.cdiv(p) <= cap)
            .or_else(|| {
                all.into_iter()
                    .enumerate()
                    .find(|&(_, p)| p <= most && nv.cdiv(p) <= cap)
            })
            .or_else(|| {
                all.into_iter()
                    .enumerate()
                    .find(|&(_, p)| (plain || p <= 4) && nv.cdiv(p) <= 1024)
            });
        if let Some((i, pk)) = fit {
            let threads = (nv.cdiv(pk).cdiv(32) * 32).clamp(32, 1024) as u64;
            // A candidate, chosen only where a config sets `weight_shift`: the same rows
            // with weight and bias contiguous at another alignment than x's (odd lengths such
            // as 4097, where rows start at every phase) read as packs shifted to x's phase.
            let shift = !plain && c.wcontig && tuned.get("weight_shift", 0) != 0;
            let why = format!(
                "rows of {len}{} fit a block's registers: {pk} packs a thread, {threads} \
                 threads, each element read once",
                if plain {
                    ""
                } else if shift {
                    " (packs after peeling to alignment; weight and bias as packs shifted to x's)"
                } else {
                    " (packs after peeling to alignment; weight and bias element by element)"
                }
            );
            let name = if plain {
                k[3 + i]
            } else if shift {
                k[11 + i]
            } else {
                k[8 + i]
            };
            return (Kind::Packed, Launch::new(name, rows, threads), why);
        }
    }
    let threads = tuned.get("threads", 512).clamp(32, 1024) as u64;
    let why = format!(
        "rows of {len}{}: a block of {threads} per row, statistics then a second read",
        if c.contiguous {
            " (longer than a block's registers)"
        } else {
            " (strided, or x and out at different alignments)"
        }
    );
    (Kind::Rows, Launch::new(k[7], rows, threads), why)
}

/// Weight or bias: pointer (0 if absent), stride, and whether it can be read as packs.
fn vector(t: Option<&Tensor>) -> (u64, i64, bool) {
    match t {
        None => (0, 0, true),
        Some(t) => (
            ptr(t),
            t.strides()[0],
            t.strides()[0] == 1 && ptr(t) % 16 == 0,
        ),
    }
}

fn plan_call(call: &OpCall<'_>) -> Result<(Class, Kind, Launch, String, Option<String>)> {
    let (x, o) = (&call.inputs[0], call.out);
    let axis = x.ndim() - 1;
    let (lay, rows, len, sx, so) = rows_of(x, o, Some(axis))?;
    let v = dt(call)?.vec as i64;
    let c = Class {
        rows,
        len,
        vec: v,
        aligned_rows: sx == 1 && so == 1 && row_alignment(x, o, axis, v, false),
        contiguous: sx == 1 && so == 1 && row_alignment(x, o, axis, v, true),
        wvec: vector(call.weight).2 && vector(call.bias).2,
        wcontig: [call.weight, call.bias]
            .iter()
            .all(|t| t.is_none_or(|t| t.strides()[0] == 1)),
        clusters: has_clusters(call.device.index())?,
        packed: back_to_back(&lay, rows, len, sx, so),
        smem_block: smem_per_block(call.device.index())? as i64,
    };
    let vars = [
        ("cols", len),
        ("rows", rows),
        ("itemsize", dt(call)?.size as i64),
        ("sms", sms(call)?),
    ];
    let tuned = Tuned::select(&call.tune, "norm", &vars)?;
    let (kind, l, why) = plan(call.op, &c, sms(call)?, &tuned);
    Ok((c, kind, l, why, tuned.origin()))
}

pub fn norm(call: &OpCall<'_>) -> Result<()> {
    let (x, o) = (&call.inputs[0], call.out);
    if x.numel() == 0 {
        return Ok(());
    }
    let (_, kind, l, _, _) = plan_call(call)?;
    let (mut lay, mut rows, mut len, mut sx, mut so) = rows_of(x, o, Some(x.ndim() - 1))?;
    let (mut pw, mut sw, wv) = vector(call.weight);
    let (mut pb, mut sb, bv) = vector(call.bias);
    let mut wvec = (wv && bv) as i32;
    let (mut px, mut po) = (ptr(x), ptr(o));
    let mut eps = call.eps;
    let axis = x.ndim() - 1;
    let v = dt(call)?.vec as i64;
    let mut vec = (sx == 1 && so == 1 && row_alignment(x, o, axis, v, true)) as i32;
    let f = function(call.device, call.dtype, Family::Norm, l.kernel)?;
    if let Kind::Tile(wr, shared) = kind {
        let mut wr = wr;
        let mut args = [
            arg(&mut px),
            arg(&mut po),
            arg(&mut pw),
            arg(&mut pb),
            arg(&mut rows),
            arg(&mut len),
            arg(&mut lay),
            arg(&mut eps),
            arg(&mut wr),
        ];
        // SAFETY: the arguments match `norm_tile` (`cu/norm.cuh`); the plan checked that the
        // rows are aligned whole packs of at most 1024 and weight and bias packs (or absent);
        // `shared` is the three stages `norm_tile3` takes (0 for the static two).
        return unsafe { launch_shared(f, l.grid, l.block, shared, stream(call), &mut args) };
    }
    let mut args: Vec<*mut c_void> = vec![
        arg(&mut px),
        arg(&mut po),
        arg(&mut pw),
        arg(&mut pb),
        arg(&mut rows),
        arg(&mut len),
    ];
    if kind == Kind::Rows {
        args.extend([arg(&mut sx), arg(&mut so)]);
    }
    args.extend([arg(&mut lay), arg(&mut eps), arg(&mut sw), arg(&mut sb)]);
    match kind {
        Kind::Packed | Kind::Pipe(..) => args.push(arg(&mut wvec)),
        _ => args.push(arg(&mut vec)),
    }
    if let Kind::Pipe(cn, shared) = kind {
        let grid = super::pipe::grid(call.device.index(), f, &l, shared, cn)?;
        // SAFETY: as below; the plan checked that the rows are aligned whole packs back to back,
        // weight and bias packs or absent, and that a block's chunk fits `shared` bytes and its
        // threads' 8 packs; the grid is a multiple of the cluster size. The kernel takes the
        // parameters up to eps (the rest are the block variants').
        return unsafe { launch_shared(f, grid, l.block, shared, stream(call), &mut args) };
    }
    // SAFETY: the arguments match the kernel (`cu/norm.cuh`); x, out, weight and bias are the
    // tensors' elements (weight and bias of x's last-axis length, checked by the dispatcher),
    // ordered on the stream; packed variants only for whole aligned packs.
    unsafe { launch(f, l.grid, l.block, stream(call), &mut args) }
}

pub fn explain(call: &OpCall<'_>) -> Result<Explanation> {
    let (_, _, l, why, config) = plan_call(call)?;
    Ok(explanation(&[&l], why, config))
}
