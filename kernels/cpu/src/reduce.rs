//! Reductions over any axes: `sum`, `mean`, `max`, `min` and `argmax`.
//!
//! The kept and the reduced axes are collapsed separately (dims merged where the tensor steps
//! over them contiguously). Two walks:
//! - rows: per output, the reduced elements in runs along the innermost reduced dim (one
//!   contiguous run for a last-axis reduction), threaded over outputs, or over the reduced
//!   elements when there is a single output (a full reduction);
//! - columns: when the innermost kept dim is contiguous in `x` and the reduced ones are not (a
//!   reduction over leading axes), a block of neighbouring outputs is accumulated per reduced
//!   element, so the inner loop reads contiguous memory.
//!
//! Sums accumulate in blocks: eight partial sums in the compute type within a block of 1024
//! elements (which vectorizes), blocks added in float64. Maximum and minimum propagate NaN;
//! argmax takes NaN as the largest value and the first index among equals, as PyTorch does.

use crate::elem::{Elem, Float};
use crate::layout::{Plan, Ptr};
use crate::Tuning;
use half::{bf16, f16};
use rayon::prelude::*;
use rffi_core::Result;
use rffi_kernels::{Explanation, Op, OpCall};

const BLOCK: usize = 1024;
const LANES: usize = 8;
/// Outputs accumulated together in the column walk.
const COLS: usize = 256;

/// The sum of `len` elements at `p` with stride `stride`, in float64.
///
/// # Safety
/// The elements must be readable.
#[inline(always)]
pub(crate) unsafe fn sum_run<T: Elem>(p: *const T, len: usize, stride: isize) -> f64
where
    T::C: Float,
{
    let mut total = 0f64;
    let mut start = 0;
    while start < len {
        let n = (len - start).min(BLOCK);
        let mut acc = [T::C::ZERO; LANES];
        let mut j = 0;
        // SAFETY: forwarded contract; indices stay below `len`.
        unsafe {
            if stride == 1 {
                let q = p.add(start);
                while j + LANES <= n {
                    for (l, a) in acc.iter_mut().enumerate() {
                        *a = *a + (*q.add(j + l)).load();
                    }
                    j += LANES;
                }
            }
            let mut rest = T::C::ZERO;
            while j < n {
                rest = rest + (*p.offset((start + j) as isize * stride)).load();
                j += 1;
            }
            acc[0] = acc[0] + rest;
        }
        total += acc.iter().map(|a| a.to_f64()).sum::<f64>();
        start += n;
    }
    total
}

/// A running reduction: the value so far and, for argmax, its index among the reduced elements.
#[derive(Copy, Clone, Debug)]
struct Acc {
    v: f64,
    i: i64,
}

/// Whether `v` replaces `cur` as the maximum (NaN wins and stays; ties keep the earlier one).
#[inline(always)]
fn beats_max(v: f64, cur: f64) -> bool {
    !cur.is_nan() && (v > cur || v.is_nan())
}

#[inline(always)]
fn beats_min(v: f64, cur: f64) -> bool {
    !cur.is_nan() && (v < cur || v.is_nan())
}

impl Acc {
    /// The identity of `op` for elements counted from `base`.
    fn init(op: Op, base: i64) -> Acc {
        let v = match op {
            Op::Max | Op::Argmax => f64::NEG_INFINITY,
            Op::Min => f64::INFINITY,
            _ => 0.0,
        };
        Acc { v, i: base }
    }

    #[inline(always)]
    fn add(&mut self, op: Op, v: f64, i: i64) {
        match op {
            Op::Max if beats_max(v, self.v) => self.v = v,
            Op::Min if beats_min(v, self.v) => self.v = v,
            Op::Argmax if beats_max(v, self.v) => *self = Acc { v, i },
            Op::Sum | Op::Mean => self.v += v,
            _ => {}
        }
    }

    /// `self` then `later` (elements after `self`'s).
    fn merge(self, op: Op, later: Acc) -> Acc {
        let mut a = self;
        if matches!(op, Op::Sum | Op::Mean) {
            a.v += later.v;
        } else {
            a.add(op, later.v, later.i);
        }
        a
    }
}

/// Folds a run of `len` elements at `p` (stride `stride`), the first of index `base`.
///
/// # Safety
/// The elements must be readable.
#[inline(always)]
unsafe fn run<T: Elem>(op: Op, acc: &mut Acc, p: *const T, len: usize, stride: isize, base: i64)
where
    T::C: Float,
{
    // SAFETY: forwarded contract.
    unsafe {
        if matches!(op, Op::Sum | Op::Mean) {
            acc.v += sum_run(p, len, stride);
            return;
        }
        for j in 0..len {
            acc.add(
                op,
                (*p.offset(j as isize * stride)).load().to_f64(),
                base + j as i64,
            );
        }
    }
}

/// The reduction of one output: every reduced element (offsets from `red`) from `x`.
///
/// # Safety
/// `x` plus every offset of `red` must be readable.
unsafe fn reduce_one<T: Elem>(
    op: Op,
    x: *const T,
    red: &Plan<1>,
    rows: std::ops::Range<usize>,
) -> Acc
where
    T::C: Float,
{
    let inner = red.inner();
    let st = red.inner_strides()[0];
    let mut acc = Acc::init(op, (rows.start * inner) as i64);
    let mut r = rows.start;
    red.for_rows(rows, |off| {
        // SAFETY: forwarded contract.
        unsafe {
            run(
                op,
                &mut acc,
                x.offset(off[0]),
                inner,
                st,
                (r * inner) as i64,
            )
        };
        r += 1;
    });
    acc
}

/// Layout of a reduction: kept dims (x and out strides) and reduced dims (x strides), each
/// collapsed.
struct Split {
    kept: Plan<2>,
    red: Plan<1>,
    count: usize,
}

fn split(call: &OpCall<'_>) -> Split {
    let x = &call.inputs[0];
    let kept_axes = call.kept_axes();
    let kshape: Vec<i64> = kept_axes.iter().map(|&i| x.shape()[i]).collect();
    let kx: Vec<i64> = kept_axes.iter().map(|&i| x.strides()[i]).collect();
    let ko = call.out_strides_of_kept();
    let rshape: Vec<i64> = call.axes.iter().map(|&i| x.shape()[i]).collect();
    let rx: Vec<i64> = call.axes.iter().map(|&i| x.strides()[i]).collect();
    Split {
        kept: Plan::new(&kshape, [&kx, &ko]),
        red: Plan::new(&rshape, [&rx]),
        count: rshape.iter().product::<i64>() as usize,
    }
}

/// Whether the column walk applies: outputs contiguous along the innermost kept dim of `x`
/// while the innermost reduced dim is not.
fn columns(op: Op, s: &Split) -> bool {
    op != Op::Argmax
        && s.count > 1
        && s.kept.numel() > 1
        && s.kept.inner_strides()[0] == 1
        && s.red.inner_strides()[0] != 1
}

fn store<T: Elem>(op: Op, po: Ptr<T>, off: isize, acc: Acc, count: usize)
where
    T::C: Float,
{
    // SAFETY: an element of the output, from its own layout.
    unsafe {
        match op {
            Op::Argmax => *po.0.cast::<i64>().offset(off) = acc.i,
            Op::Mean => *po.at(off) = T::store(T::C::from_f64(acc.v / count as f64)),
            _ => *po.at(off) = T::store(T::C::from_f64(acc.v)),
        }
    }
}

fn reduce_typed<T: Elem>(call: &OpCall<'_>) -> Result<()>
where
    T::C: Float,
{
    let t = Tuning::read(call, "reduce")?;
    let op = call.op;
    let (x, o) = (&call.inputs[0], call.out);
    let (px, po) = (Ptr::<T>::of(x), Ptr::<T>::of(o));
    let s = split(call);
    if o.numel() == 0 {
        return Ok(());
    }
    let count = s.count;
    if x.numel() == 0 {
        // An empty reduction: sum 0, mean NaN (max, min and argmax were refused).
        s.kept.run(usize::MAX, 1, |off, n, st| {
            for j in 0..n as isize {
                store(op, po, off[1] + j * st[1], Acc::init(op, 0), 0);
            }
        });
        return Ok(());
    }
    if s.kept.numel() == 1 && count >= t.min_parallel {
        // One output: split the reduced elements over threads, then merge in order.
        let red = &s.red;
        let rows = red.rows();
        let parts: Vec<Acc> = if rows == 1 {
            let inner = red.inner();
            let st = red.inner_strides()[0];
            let chunk = t.grain.max(BLOCK);
            (0..inner.div_ceil(chunk))
                .into_par_iter()
                .map(|c| {
                    let start = c * chunk;
                    let n = chunk.min(inner - start);
                    let mut acc = Acc::init(op, start as i64);
                    // SAFETY: a sub-run of the single run of x.
                    unsafe {
                        run(
                            op,
                            &mut acc,
                            px.at(start as isize * st),
                            n,
                            st,
                            start as i64,
                        )
                    };
                    acc
                })
                .collect()
        } else {
            let per = t.grain.div_ceil(red.inner()).max(1);
            (0..rows.div_ceil(per))
                .into_par_iter()
                .map(|c| {
                    // SAFETY: rows of the reduced elements of x.
                    unsafe { reduce_one(op, px.at(0), red, c * per..((c + 1) * per).min(rows)) }
                })
                .collect()
        };
        let total = parts
            .into_iter()
            .reduce(|a, b| a.merge(op, b))
            .expect("at least one part");
        store(op, po, 0, total, count);
        return Ok(());
    }
    let grain = t.grain.div_ceil(count).max(1);
    let min_parallel = t.min_parallel.div_ceil(count);
    if columns(op, &s) {
        let red = &s.red;
        s.kept.run(min_parallel, grain.max(COLS), |off, n, st| {
            let mut acc = [Acc::init(op, 0); COLS];
            for c0 in (0..n).step_by(COLS) {
                let w = COLS.min(n - c0);
                acc[..w].fill(Acc::init(op, 0));
                // SAFETY: offsets from x's own layout; the block's outputs are contiguous in x.
                let base = unsafe { px.at(off[0] + c0 as isize) };
                let (inner, rst) = (red.inner(), red.inner_strides()[0]);
                red.for_rows(0..red.rows(), |roff| {
                    for k in 0..inner as isize {
                        // SAFETY: as above.
                        let row = unsafe { base.offset(roff[0] + k * rst) };
                        for (j, a) in acc[..w].iter_mut().enumerate() {
                            // SAFETY: as above.
                            a.add(op, unsafe { (*row.add(j)).load() }.to_f64(), 0);
                        }
                    }
                });
                for (j, a) in acc[..w].iter().enumerate() {
                    store(op, po, off[1] + (c0 + j) as isize * st[1], *a, count);
                }
            }
        });
        return Ok(());
    }
    let red = &s.red;
    s.kept.run(min_parallel, grain, |off, n, st| {
        for j in 0..n as isize {
            // SAFETY: the reduced elements of one output, from x's own layout.
            let acc = unsafe { reduce_one(op, px.at(off[0] + j * st[0]), red, 0..red.rows()) };
            store(op, po, off[1] + j * st[1], acc, count);
        }
    });
    Ok(())
}

pub fn reduce(call: &OpCall<'_>) -> Result<()> {
    let d = call.dtype;
    if d == f32::DTYPE {
        reduce_typed::<f32>(call)
    } else if d == f64::DTYPE {
        reduce_typed::<f64>(call)
    } else if d == f16::DTYPE {
        reduce_typed::<f16>(call)
    } else {
        reduce_typed::<bf16>(call)
    }
}

/// Which walk a reduction takes (`kernels.explain`).
pub fn explain(call: &OpCall<'_>) -> Result<Explanation> {
    let s = split(call);
    let t = Tuning::read(call, "reduce")?;
    let (kernel, why) = if s.kept.numel() == 1 && s.count >= t.min_parallel {
        (
            "reduce: one output, threaded over the reduced elements",
            format!(
                "{} elements to one output, at least min_parallel = {}",
                s.count, t.min_parallel
            ),
        )
    } else if columns(call.op, &s) {
        (
            "reduce: columns",
            "the innermost kept axis is contiguous in x and the reduced ones are not: blocks of \
             neighbouring outputs accumulate together"
                .to_owned(),
        )
    } else {
        (
            "reduce: rows",
            format!(
                "{} outputs of {} elements, each in runs along the innermost reduced axis",
                s.kept.numel(),
                s.count
            ),
        )
    };
    Ok(Explanation {
        kernel: kernel.into(),
        why,
        params: vec![
            ("min_parallel".into(), t.min_parallel as i64),
            ("grain".into(), t.grain as i64),
        ],
        config: t.origin,
    })
}
