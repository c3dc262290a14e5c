//! sum, mean, max, min and argmax over any axes (`cu/reduce.cuh`).
//!
//! The kept dims and the reduced dims are collapsed apart (sum, mean, max and min also sort the
//! reduced dims by stride first, since their order does not change the result: a full
//! reduction of a transposed tensor is one contiguous run). Then:
//! - rows walk (the reduced elements of an output are closest in memory): 1, 4 or 32 lanes per
//!   output for short reductions, a block for long ones; when there are too few outputs to fill
//!   the GPU, a long run is split into chunks combined by a second kernel (a full reduction is
//!   one output in SM-count-many chunks);
//! - columns walk (neighbouring outputs are neighbours in memory, e.g. a reduction over the
//!   leading axis): a thread per output, chunks of the reduced axis over blockIdx.y.

use super::{arg, explanation, ptr, sms, stream, CeilDiv, Launch, Tuned};
use crate::driver::{function, launch, with_kept_scratch, Scratch};
use crate::source::{Family, MAX_DIMS, REDUCTIONS};
use cudarc::driver::sys;
use rffi_core::error::kind;
use rffi_core::{Error, Result};
use rffi_kernels::{Explanation, Op, OpCall};
use std::ffi::c_void;

/// `struct RLay` of the kernels.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct RLay {
    nk: i32,
    nr: i32,
    kshape: [i64; MAX_DIMS],
    kx: [i64; MAX_DIMS],
    ko: [i64; MAX_DIMS],
    rshape: [i64; MAX_DIMS],
    rx: [i64; MAX_DIMS],
}

/// Bytes of a partial result (`struct PAcc`: a double and an index).
const PACC: usize = 16;

/// The shape class of a reduction, from its collapsed layout.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Class {
    /// Outputs.
    pub nout: i64,
    /// Elements per output.
    pub count: i64,
    /// Reduced dims after collapsing (the last is the inner run).
    pub nr: usize,
    /// The inner run's stride in x, and the innermost kept dim's (None: one output).
    pub rs: i64,
    pub ks: Option<i64>,
    /// Outputs per 16-byte pack when the columns walk can load packs (the innermost kept dim
    /// contiguous in x and a multiple of the pack long, every other stride a multiple of it, x
    /// aligned); 1 otherwise.
    pub col_pack: i64,
    /// Bytes of an element (argmax's key variant takes 16-bit floats).
    pub itemsize: i64,
}

/// The rows or columns walk, and the kernels it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub main: Launch,
    /// Set when the reduction is split into chunks combined by a second kernel.
    pub combine: Option<Launch>,
    /// Chunks combined by the last block of each output instead (`single_pass`: one kernel; a
    /// zeroed u32 counter an output before the partials).
    pub single_pass: bool,
    /// The counters and partials of a single pass in memory kept for the stream's later calls
    /// (`kept_scratch`, a candidate: no allocation and no memset a call).
    pub kept_scratch: bool,
    pub chunks: i64,
    pub chunk: i64,
    pub columns: bool,
    pub why: String,
}

/// The op's index in `source::REDUCTIONS` (its module).
fn op_index(op: Op) -> u8 {
    match REDUCTIONS.iter().position(|&n| n == op.name()) {
        Some(i) => i as u8,
        None => unreachable!("{op} is not a reduction"),
    }
}

/// The reduction of module `Family::Reduce(index)`.
pub fn op_of_index(index: u8) -> Op {
    Op::parse(REDUCTIONS[index as usize]).expect("the reductions are ops")
}

fn names(op: Op) -> [&'static str; 9] {
    macro_rules! n {
        ($p:literal) => {
            [
                concat!($p, "_rows_1"),
                concat!($p, "_rows_4"),
                concat!($p, "_rows_32"),
                concat!($p, "_rows_block"),
                concat!($p, "_cols"),
                concat!($p, "_combine"),
                concat!($p, "_cols_vec"),
                concat!($p, "_cols_tile"),
                concat!($p, "_rows_block8"),
            ]
        };
    }
    match op {
        Op::Sum => n!("sum"),
        Op::Mean => n!("mean"),
        Op::Max => n!("max"),
        Op::Min => n!("min"),
        Op::Argmax => n!("argmax"),
        op => unreachable!("{op} is not a reduction"),
    }
}

/// Every kernel the planner can choose for `op` (the offline check finds each in the module).
pub fn kernel_names(op: Op) -> Vec<&'static str> {
    let mut v = names(op).to_vec();
    if op == Op::Argmax {
        v.extend([ARGMAX_KEY, ARGMAX_RUN]);
    }
    v
}

/// argmax of 16-bit rows by keys (`argmax_rows_key8` in `cu/reduce.cuh`, the argmax module only);
/// it takes the rows kernels' arguments.
pub const ARGMAX_KEY: &str = "argmax_rows_key8";
/// The same rows by a running maximum a lane (`argmax_rows_run8`, `argmax_key` 2), the same
/// arguments.
pub const ARGMAX_RUN: &str = "argmax_rows_run8";

/// Chooses the walk, the lanes per output and the chunks.
pub fn plan(op: Op, c: &Class, sms: i64, tuned: &Tuned<'_>) -> Plan {
    let k = names(op);
    let nout = c.nout.max(1);
    let count = c.count.max(0);
    let split_min = tuned.get("split_min", 16384).max(64);
    let columns = matches!(c.ks, Some(ks) if c.rs != 1 && ks < c.rs);
    // A warp per output merges its chunks.
    let combine = |chunks: i64| (chunks > 1).then(|| Launch::new(k[5], (nout as u64).cdiv(8), 256));
    if columns {
        let pack = c.col_pack.max(1);
        // At least 32 packs of outputs: blocks of 32 packs x 8 slices of the reduced elements.
        let tile = pack > 1 && nout / pack >= 32 && tuned.get("cols_tile", 1) != 0;
        let (threads, per_block, slices) = if tile {
            (256, 32, 8)
        } else {
            let t = tuned.get("cols_threads", 256).clamp(32, 1024);
            (t, t, 1)
        };
        let gx = ((nout / pack) as u64)
            .cdiv(per_block as u64)
            .clamp(1, i32::MAX as u64);
        let target = sms * tuned.get("blocks_per_sm", 8).max(1);
        let mut chunks = 1;
        if c.nr == 1 && (gx as i64) < target {
            let min = tuned.get("cols_split_min", 256).max(1) * slices;
            let most = (count / min).max(1);
            chunks = (target / gx as i64).clamp(1, most.min(65535));
        }
        let chunk = count.cdiv(chunks.max(1)).max(1);
        let chunks = count.cdiv(chunk).max(1);
        let kernel = match (pack > 1, tile) {
            (true, true) => k[7],
            (true, false) => k[6],
            _ => k[4],
        };
        let mut main = Launch::new(kernel, gx, threads as u64);
        main.grid.1 = chunks as u32;
        return Plan {
            main,
            combine: combine(chunks),
            single_pass: false,
            kept_scratch: false,
            chunks,
            chunk,
            columns: true,
            why: format!(
                "{nout} outputs contiguous in x (stride {}) against reduced stride {}: a thread \
                 per {}{}",
                c.ks.unwrap_or(0),
                c.rs,
                if tile {
                    format!(
                        "{pack} outputs (16-byte loads), 8 threads a pack over interleaved \
                         rows, merged in shared memory"
                    )
                } else if pack > 1 {
                    format!("{pack} outputs (16-byte loads)")
                } else {
                    "output".to_owned()
                },
                if chunks > 1 {
                    format!(", the {count} reduced elements in {chunks} chunks over grid.y")
                } else {
                    String::new()
                }
            ),
        };
    }
    // Where a config sets `argmax_key` (sm_90.json: 2): argmax of contiguous 16-bit rows of up
    // to 65536 elements, enough rows for a warp each on every SM: one unsigned maximum an
    // element (1), or a running maximum a lane on words (2).
    let argmax_key = tuned.get("argmax_key", 0);
    if op == Op::Argmax
        && argmax_key != 0
        && c.itemsize == 2
        && c.nr == 1
        && c.rs == 1
        && (1..=65536).contains(&count)
        && nout >= 8 * sms
    {
        let (kernel, how) = if argmax_key == 2 {
            (
                ARGMAX_RUN,
                "a running maximum a lane on 16-bit words, its elements searched only where a \
                 step's maximum beats it, the lanes' (maximum, first index) as keys",
            )
        } else {
            (
                ARGMAX_KEY,
                "each element one unsigned key (order, index) and the row's argmax their maximum",
            )
        };
        return Plan {
            main: Launch::new(kernel, (nout as u64).cdiv(8), 256),
            combine: None,
            single_pass: false,
            kept_scratch: false,
            chunks: 1,
            chunk: count,
            columns: false,
            why: format!(
                "{nout} contiguous 16-bit rows of {count} (at most 65536): a warp per row, {how}"
            ),
        };
    }
    let group_max = tuned.get("group_max", 2048);
    // A candidate (`rows_packs` 8): the next step's 4 packs in flight while a step's 4 are
    // merged (80 registers for float32: at most 512 threads a block launch).
    let eight = tuned.get("rows_packs", 4) == 8;
    let threads = tuned
        .get("threads", 512)
        .clamp(32, if eight { 512 } else { 1024 }) as u64;
    let (kernel, lanes) = if count <= 4 {
        (k[0], 1)
    } else if count <= 64 {
        (k[1], 4)
    } else if count <= group_max {
        (k[2], 32)
    } else if eight {
        (k[8], 0)
    } else {
        (k[3], 0)
    };
    let mut chunks = 1;
    if lanes == 0 && c.nr == 1 {
        let target = sms * tuned.get("blocks_per_sm", 4).max(1);
        if nout < target {
            let most = (count / split_min).max(1);
            chunks = target.cdiv(nout).clamp(1, most);
        }
    }
    // Chunks of whole 64-element steps keep every chunk's start as aligned as the row's.
    let chunk = count.cdiv(chunks).cdiv(64).max(1) * 64;
    let chunks = if chunks > 1 { count.cdiv(chunk) } else { 1 };
    let items = (nout * chunks) as u64;
    // Groups of `lanes` share blocks of 256 threads; a block-per-output kernel takes `threads`.
    let main = match 256u64.checked_div(lanes) {
        Some(per_block) => Launch::new(kernel, items.cdiv(per_block), 256),
        None => Launch::new(kernel, items, threads),
    };
    let who = match lanes {
        0 => format!("a block of {threads} threads"),
        1 => "one thread".to_owned(),
        l => format!("{l} lanes"),
    };
    // Where a config sets `single_pass` (sm_90.json): the last block to finish a chunk of an output
    // combines the output's chunks, one launch where the combine kernel is a second.
    let single_pass = chunks > 1 && tuned.get("single_pass", 0) != 0;
    Plan {
        main,
        combine: if single_pass { None } else { combine(chunks) },
        single_pass,
        kept_scratch: single_pass && tuned.get("kept_scratch", 0) != 0,
        chunks,
        chunk,
        columns: false,
        why: format!(
            "{nout} outputs of {count} elements (inner stride {}): {who} per output{}",
            c.rs,
            if chunks > 1 {
                format!(
                    "; too few outputs for {sms} SMs, so the run is split into {chunks} chunks \
                     of {chunk} and combined{}",
                    if single_pass {
                        " by the last block of each output to finish its chunk"
                    } else {
                        ""
                    }
                )
            } else {
                String::new()
            }
        ),
    }
}

/// Merges `dims` (outer to inner) where the outer steps over the inner contiguously; drops
/// size-1 dims.
fn merge(dims: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for &(d, s) in dims.iter().filter(|(d, _)| *d != 1) {
        match out.last_mut() {
            Some(last) if last.1 == s * d => *last = (last.0 * d, s),
            _ => out.push((d, s)),
        }
    }
    out
}

/// The collapsed layout and shape class of `call`.
pub fn layout(call: &OpCall<'_>) -> Result<(RLay, Class)> {
    let x = &call.inputs[0];
    let kept = call.kept_axes();
    let ko = call.out_strides_of_kept();
    // Kept dims merge where both x and out step contiguously.
    let mut kd: Vec<(i64, i64, i64)> = Vec::new();
    for (j, &i) in kept.iter().enumerate() {
        let (d, sx, so) = (x.shape()[i], x.strides()[i], ko[j]);
        if d == 1 {
            continue;
        }
        match kd.last_mut() {
            Some(l) if l.1 == sx * d && l.2 == so * d => *l = (l.0 * d, sx, so),
            _ => kd.push((d, sx, so)),
        }
    }
    let mut rd: Vec<(i64, i64)> = call
        .axes
        .iter()
        .map(|&i| (x.shape()[i], x.strides()[i]))
        .collect();
    if call.op != Op::Argmax {
        // Order does not matter: innermost (smallest stride) last, so runs are contiguous.
        rd.sort_by_key(|&(_, s)| std::cmp::Reverse(s.abs()));
    }
    let mut rd = merge(&rd);
    if rd.is_empty() {
        rd.push((1, 1));
    }
    if kd.len() > MAX_DIMS || rd.len() > MAX_DIMS {
        return Err(Error::new(
            kind::NOT_IMPLEMENTED_ERROR,
            format!(
                "kernels.{} (cuda): this layout needs {} kept and {} reduced dimensions after \
                 merging contiguous ones; at most {MAX_DIMS} each (shape {:?}, strides {:?})",
                call.op,
                kd.len(),
                rd.len(),
                x.shape(),
                x.strides()
            ),
        ));
    }
    let mut l = RLay {
        nk: kd.len() as i32,
        nr: rd.len() as i32,
        ..RLay::default()
    };
    for (i, &(d, sx, so)) in kd.iter().enumerate() {
        (l.kshape[i], l.kx[i], l.ko[i]) = (d, sx, so);
    }
    for (i, &(d, s)) in rd.iter().enumerate() {
        (l.rshape[i], l.rx[i]) = (d, s);
    }
    let v = (16 / x.dtype().bytes_per_element()) as i64;
    let packs = kd.last().is_some_and(|&(d, sx, _)| sx == 1 && d % v == 0)
        && super::ptr(x) % 16 == 0
        && kd[..kd.len() - 1].iter().all(|d| d.1 % v == 0)
        && rd.iter().all(|d| d.1 % v == 0);
    let class = Class {
        nout: kd.iter().map(|d| d.0).product(),
        count: rd.iter().map(|d| d.0).product(),
        nr: rd.len(),
        rs: rd.last().map_or(1, |d| d.1.abs()),
        ks: kd.last().map(|d| d.1.abs()),
        col_pack: if packs { v } else { 1 },
        itemsize: x.dtype().bytes_per_element() as i64,
    };
    Ok((l, class))
}

fn plan_call(call: &OpCall<'_>) -> Result<(RLay, Class, Plan, Option<String>)> {
    let (l, c) = layout(call)?;
    let sms = sms(call)?;
    let vars = [("rows", c.nout), ("cols", c.count), ("sms", sms)];
    let tuned = Tuned::select(&call.tune, "reduce", &vars)?;
    let p = plan(call.op, &c, sms, &tuned);
    Ok((l, c, p, tuned.origin()))
}

pub fn reduce(call: &OpCall<'_>) -> Result<()> {
    if call.out.numel() == 0 {
        return Ok(());
    }
    let (l, c, p, _) = plan_call(call)?;
    let st = stream(call);
    // Chunked runs leave partials; in one pass, a u32 counter an output before them, zeroed.
    let partials = c.nout as usize * p.chunks as usize * PACC;
    let counters = if p.single_pass {
        (c.nout as usize * 4).next_multiple_of(16)
    } else {
        0
    };
    if p.kept_scratch {
        // The module loaded (compiled on first use) before the scratch's lock is taken.
        function(
            call.device,
            call.dtype,
            Family::Reduce(op_index(call.op)),
            p.main.kernel,
        )?;
        return with_kept_scratch(call.device.index(), st, counters, partials, |pp| {
            launch_reduce(call, l, &c, &p, pp, st)
        });
    }
    let scratch = if p.chunks > 1 {
        Some(Scratch::new(counters + partials, st)?)
    } else {
        None
    };
    if let Some(s) = scratch.as_ref().filter(|_| p.single_pass) {
        s.zero(0, counters)?;
    }
    let pp = scratch.as_ref().map_or(0, |s| s.ptr + counters as u64);
    // The scratch is freed after the launches, in stream order.
    launch_reduce(call, l, &c, &p, pp, st)
}

/// The main kernel (and the combine kernel, if any) of plan `p` with partials at `pp`.
fn launch_reduce(
    call: &OpCall<'_>,
    mut l: RLay,
    c: &Class,
    p: &Plan,
    mut pp: u64,
    st: sys::CUstream,
) -> Result<()> {
    let (mut px, mut po) = (ptr(&call.inputs[0]), ptr(call.out));
    let (mut chunks, mut chunk, mut count) = (p.chunks, p.chunk, c.count);
    let family = Family::Reduce(op_index(call.op));
    let f = function(call.device, call.dtype, family, p.main.kernel)?;
    let mut nout = c.nout;
    let mut items = c.nout * p.chunks;
    // The rows kernels' flags: 1, packs where the run allows; 2, the last block combines.
    let mut flags: i32 = if p.single_pass { 3 } else { 1 };
    let mut args: Vec<*mut c_void> = vec![arg(&mut px), arg(&mut po), arg(&mut pp), arg(&mut l)];
    if p.columns {
        args.push(arg(&mut nout));
    } else {
        args.push(arg(&mut items));
    }
    args.extend([arg(&mut chunks), arg(&mut chunk), arg(&mut count)]);
    if !p.columns {
        args.push(arg(&mut flags));
    }
    // SAFETY: the arguments match the kernel (`cu/reduce.cuh`); x and out are the tensors'
    // elements, the partials buffer holds nout * chunks entries, all ordered on the stream.
    unsafe { launch(f, p.main.grid, p.main.block, st, &mut args) }?;
    if let Some(cl) = &p.combine {
        let f = function(call.device, call.dtype, family, cl.kernel)?;
        // Partials of the rows walk are [output][chunk], of the columns walk [chunk][output].
        let (mut so, mut sc) = if p.columns {
            (1i64, c.nout)
        } else {
            (p.chunks, 1i64)
        };
        let mut args = [
            arg(&mut pp),
            arg(&mut po),
            arg(&mut l),
            arg(&mut nout),
            arg(&mut chunks),
            arg(&mut so),
            arg(&mut sc),
            arg(&mut count),
        ];
        // SAFETY: as above; the scratch outlives this launch in stream order.
        unsafe { launch(f, cl.grid, cl.block, st, &mut args) }?;
    }
    Ok(())
}

pub fn explain(call: &OpCall<'_>) -> Result<Explanation> {
    let (_, _, p, config) = plan_call(call)?;
    let mut launches = vec![&p.main];
    launches.extend(p.combine.as_ref());
    let mut e = explanation(&launches, p.why.clone(), config);
    e.params.push(("chunks".into(), p.chunks));
    Ok(e)
}
