//! Rows pipelined through registers (`cu/pipe.cuh`: `softmax_pipe_CN`, `NAME_pipe_CN`): how many
//! blocks a row and how large, the same for softmax and the norms. A persistent grid: the plan
//! names every row's blocks, and the launch takes as many as the device holds at once
//! (`driver::resident_clusters`).

use super::{CeilDiv, Launch, Tuned};
use crate::driver::resident_clusters;
use cudarc::driver::sys;
use rffi_core::Result;

/// Where a row's blocks come from: the kernels by CN (1, then clusters), and the packs a thread
/// holds.
pub struct Kernels<'a> {
    pub by_cn: &'a [(i64, &'static str)],
    pub packs: i64,
}

/// The pipelined shape of rows: CN blocks a row, each `threads` threads holding its chunk in
/// `shared` bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    pub cn: i64,
    pub kernel: &'static str,
    pub threads: i64,
    pub shared: i64,
    pub why: String,
}

/// Whether rows of `itemsize`-byte elements can be pipelined (16-bit and float32; float64 has
/// no pipelined kernels).
pub fn serves(itemsize: i64) -> bool {
    itemsize == 2 || itemsize == 4
}

/// (rows, elements a row, elements a pack), (whether the device runs clusters, the shared
/// memory a block may take, its SMs): where a config sets `pipe` and rows of at least
/// `pipe_cols` (default 16384) elements qualify (float32 or 16-bit, fewer than 2^30 rows, each
/// fewer than 2^30 elements: the kernels count in `int`), the fewest blocks a row (1, or a
/// cluster where the device has them) of which each holds its chunk (at most len / vec packs
/// after peeling, over CN) in at most `pipe_threads` (default 1024) threads of `packs` packs and
/// in the block's shared memory; None where the rows would not give every SM a block.
pub fn shape(
    (rows, len, vec): (i64, i64, i64),
    (clusters, smem_block, sms): (bool, i64, i64),
    tuned: &Tuned<'_>,
    k: Kernels<'_>,
) -> Option<Shape> {
    if tuned.get("pipe", 0) == 0
        || !serves(16 / vec)
        || rows >= 1 << 30
        || len >= 1 << 30
        || len < tuned.get("pipe_cols", 16384)
    {
        return None;
    }
    let most = tuned.get("pipe_threads", 1024).clamp(64, 1024) / 32 * 32;
    let chunk = |cn: i64| (len / vec).cdiv(cn);
    let &(cn, kernel) = k.by_cn.iter().find(|&&(cn, _)| {
        (cn == 1 || clusters) && chunk(cn) <= most * k.packs && chunk(cn) * 16 + 1024 <= smem_block
    })?;
    if rows * cn < sms {
        return None;
    }
    let shared = chunk(cn) * 16;
    let why = format!(
        "rows of {len} over {cn} block{} a row{}: {} packs a thread in registers while the next \
         row's chunk arrives in shared memory ({} KiB) by 16-byte asynchronous copies, on a \
         persistent grid (as many as the device holds at once), each element read once",
        if cn == 1 { "" } else { "s" },
        if cn == 1 { "" } else { " (a cluster)" },
        k.packs,
        shared.cdiv(1024),
    );
    Some(Shape {
        cn,
        kernel,
        threads: (chunk(cn).cdiv(k.packs).cdiv(32) * 32).max(64),
        shared,
        why,
    })
}

/// The grid a pipelined launch `l` of kernel `f` (CN blocks a row, `shared` bytes) takes on
/// device `ordinal`: the plan's, every row's blocks, capped at the clusters the device holds at
/// once (a multiple of CN either way).
pub fn grid(
    ordinal: i32,
    f: sys::CUfunction,
    l: &Launch,
    shared: u32,
    cn: u32,
) -> Result<(u32, u32)> {
    let most = resident_clusters(ordinal, f, l.block, shared, cn)?;
    Ok((l.grid.0.min(most * cn), 1))
}
