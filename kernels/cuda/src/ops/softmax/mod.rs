//! Softmax along any axis (`cu/softmax*.cuh`): the variant by row length and layout.
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
//!
//! `plan.rs` plans rows up to 1024 elements, `long.rs` longer ones; this module binds a call's
//! arguments and launches the plan.

mod long;
mod plan;
#[cfg(test)]
mod plan_tests;

pub use plan::{family, kernel_names, plan, Class, Kind, Plan};

use super::{arg, dt, explanation, ptr, sms, stream, Lay, Tuned};
use crate::driver::{function, has_clusters, launch, launch_shared, smem_per_block, Scratch};
use crate::source::Family;
use rffi_core::{Result, Tensor};
use rffi_kernels::{Explanation, OpCall};

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
    let f = function(
        call.device,
        call.dtype,
        family(p.main.kernel),
        p.main.kernel,
    )?;
    if p.kind == Kind::Tile {
        let mut per = p.tile_rows;
        let mut args = [
            arg(&mut px),
            arg(&mut po),
            arg(&mut rows),
            arg(&mut len),
            arg(&mut per),
        ];
        // SAFETY: the arguments match the kernel (`cu/softmax_tile.cuh`); the rows are back to back
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
        // SAFETY: the arguments match the kernel (`cu/softmax*.cuh`); x
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
