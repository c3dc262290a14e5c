//! `sum` over all elements or the last axis, and `softmax` over the last axis.
//!
//! Sums accumulate in blocks: eight partial sums in the compute type within a block of 1024
//! elements (which vectorizes), blocks added in float64, so long rows keep float64-like accuracy.

use crate::elem::{Elem, Float};
use crate::layout::{Plan, Ptr};
use crate::math::multiversion;
use crate::Tuning;
use half::{bf16, f16};
use rayon::prelude::*;
use rffi_core::{Result, Tensor};
use rffi_kernels::{Axis, OpCall};

const BLOCK: usize = 1024;
const LANES: usize = 8;

/// The sum of `len` elements at `p` with stride `stride`, in float64.
///
/// # Safety
/// The elements must be readable.
#[inline(always)]
unsafe fn sum_run<T: Elem>(p: *const T, len: usize, stride: isize) -> f64
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

/// The leading dims of `x` (all but the last) with the strides of `x` and `out` over them, and
/// the last axis' length and stride. A 0-d tensor is one row of one element.
fn rows_plan(x: &Tensor, out_strides_lead: &[i64]) -> (Plan<2>, usize, isize) {
    let nd = x.ndim();
    if nd == 0 {
        return (Plan::new(&[], [&[], &[]]), 1, 1);
    }
    let lead = &x.shape()[..nd - 1];
    let plan = Plan::new(lead, [&x.strides()[..nd - 1], out_strides_lead]);
    (
        plan,
        x.shape()[nd - 1] as usize,
        x.strides()[nd - 1] as isize,
    )
}

fn sum_typed<T: Elem>(call: &OpCall<'_>) -> Result<()>
where
    T::C: Float,
{
    let t = Tuning::read(call, "reduce")?;
    let (x, o) = (&call.inputs[0], call.out);
    let (px, po) = (Ptr::<T>::of(x), Ptr::<T>::of(o));
    match call.axis {
        Axis::Last => {
            let (plan, len, stride) = rows_plan(x, o.strides());
            if len == 0 {
                // An empty axis sums to 0 (the output is not empty unless a leading dim is 0).
                plan.run(usize::MAX, 1, |off, n, st| {
                    for j in 0..n as isize {
                        // SAFETY: an element of the output.
                        unsafe { *po.at(off[1] + j * st[1]) = T::store(T::C::ZERO) };
                    }
                });
                return Ok(());
            }
            let grain = t.grain.div_ceil(len).max(1);
            plan.run(t.min_parallel.div_ceil(len), grain, |off, n, st| {
                for j in 0..n as isize {
                    // SAFETY: rows of x and elements of out, from their own layouts.
                    unsafe {
                        let s = sum_run(px.at(off[0] + j * st[0]), len, stride);
                        *po.at(off[1] + j * st[1]) = T::store(T::C::from_f64(s));
                    }
                }
            });
        }
        Axis::All => {
            let plan = Plan::new(x.shape(), [x.strides()]);
            let total = if x.numel() == 0 {
                0.0
            } else {
                let inner = plan.inner();
                let st = plan.inner_strides()[0];
                let rows = plan.rows();
                let row_sum = |r: std::ops::Range<usize>| {
                    let mut s = 0f64;
                    plan.for_rows(r, |off| {
                        // SAFETY: a run of x from its own layout.
                        s += unsafe { sum_run(px.at(off[0]), inner, st) };
                    });
                    s
                };
                if plan.shape.len() == 1 && inner >= t.min_parallel {
                    let chunks = inner.div_ceil(t.grain.max(BLOCK));
                    let chunk = inner.div_ceil(chunks);
                    (0..chunks)
                        .into_par_iter()
                        .map(|c| {
                            let start = c * chunk;
                            let n = chunk.min(inner - start);
                            // SAFETY: a sub-run of the single run of x.
                            unsafe { sum_run(px.at(start as isize * st), n, st) }
                        })
                        .sum()
                } else if rows * inner >= t.min_parallel {
                    let per = t.grain.div_ceil(inner).max(1);
                    (0..rows.div_ceil(per))
                        .into_par_iter()
                        .map(|c| row_sum(c * per..((c + 1) * per).min(rows)))
                        .sum()
                } else {
                    row_sum(0..rows)
                }
            };
            // SAFETY: out is 0-d: one element.
            unsafe { *po.at(0) = T::store(T::C::from_f64(total)) };
        }
    }
    Ok(())
}

pub fn sum(call: &OpCall<'_>) -> Result<()> {
    let d = call.dtype;
    if d == f32::DTYPE {
        sum_typed::<f32>(call)
    } else if d == f64::DTYPE {
        sum_typed::<f64>(call)
    } else if d == f16::DTYPE {
        sum_typed::<f16>(call)
    } else {
        sum_typed::<bf16>(call)
    }
}

multiversion! {
    fn softmax_row_f32(x: Ptr<f32>, y: Ptr<f32>, n: usize) {
        // SAFETY: the caller passes contiguous rows of `n` elements; `y` may be `x` (in place),
        // which is why this works through pointers and reads each element before writing it.
        unsafe {
            let mut m = [f32::NEG_INFINITY; 16];
            let mut j = 0;
            while j + 16 <= n {
                for (l, ml) in m.iter_mut().enumerate() {
                    let v = *x.0.add(j + l);
                    *ml = if v > *ml { v } else { *ml };
                }
                j += 16;
            }
            let mut max = m.iter().fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
            while j < n {
                let v = *x.0.add(j);
                max = if v > max { v } else { max };
                j += 1;
            }
            let mut s = [0f32; 16];
            let mut j = 0;
            while j + 16 <= n {
                for (l, sl) in s.iter_mut().enumerate() {
                    let e = crate::math::exp_f32(*x.0.add(j + l) - max);
                    *y.0.add(j + l) = e;
                    *sl += e;
                }
                j += 16;
            }
            let mut sum: f32 = s.iter().sum();
            while j < n {
                let e = crate::math::exp_f32(*x.0.add(j) - max);
                *y.0.add(j) = e;
                sum += e;
                j += 1;
            }
            let inv = 1.0 / sum;
            for j in 0..n {
                *y.0.add(j) *= inv;
            }
        }
    }
}

/// Softmax of one row in the compute type, through a buffer (any dtype, any strides).
///
/// # Safety
/// The rows must be readable/writable at the given strides.
unsafe fn softmax_row_buffered<T: Elem>(
    x: *const T,
    sx: isize,
    y: *mut T,
    sy: isize,
    n: usize,
    buf: &mut Vec<T::C>,
) where
    T::C: Float,
{
    buf.clear();
    // SAFETY: forwarded contract.
    unsafe {
        buf.extend((0..n as isize).map(|j| (*x.offset(j * sx)).load()));
    }
    let max = buf
        .iter()
        .fold(T::C::NEG_INF, |a, &b| if b > a { b } else { a });
    let mut sum = 0f64;
    for v in buf.iter_mut() {
        *v = (*v - max).exp();
        sum += v.to_f64();
    }
    let inv = T::C::from_f64(1.0 / sum);
    for (j, v) in buf.iter().enumerate() {
        // SAFETY: forwarded contract.
        unsafe { *y.offset(j as isize * sy) = T::store(*v * inv) };
    }
}

fn softmax_typed<T: Elem>(call: &OpCall<'_>) -> Result<()>
where
    T::C: Float,
{
    let t = Tuning::read(call, "softmax")?;
    let (x, o) = (&call.inputs[0], call.out);
    let nd = x.ndim();
    let (px, po) = (Ptr::<T>::of(x), Ptr::<T>::of(o));
    let (plan, len, sx) = if nd == 0 {
        (Plan::new(&[], [&[], &[]]), 1, 1)
    } else {
        let lead = &x.shape()[..nd - 1];
        (
            Plan::new(lead, [&x.strides()[..nd - 1], &o.strides()[..nd - 1]]),
            x.shape()[nd - 1] as usize,
            x.strides()[nd - 1] as isize,
        )
    };
    let sy = if nd == 0 {
        1
    } else {
        o.strides()[nd - 1] as isize
    };
    if len == 0 || x.numel() == 0 {
        return Ok(());
    }
    let fast = T::DTYPE == f32::DTYPE && sx == 1 && sy == 1;
    let grain = t.grain.div_ceil(len).max(1);
    plan.run(t.min_parallel.div_ceil(len), grain, |off, n, st| {
        let mut buf = Vec::new();
        for j in 0..n as isize {
            // SAFETY: rows of x and out from their own layouts.
            unsafe {
                let (a, b) = (px.at(off[0] + j * st[0]), po.at(off[1] + j * st[1]));
                if fast {
                    softmax_row_f32(Ptr(a.cast()), Ptr(b.cast()), len);
                } else {
                    softmax_row_buffered::<T>(a, sx, b, sy, len, &mut buf);
                }
            }
        }
    });
    Ok(())
}

pub fn softmax(call: &OpCall<'_>) -> Result<()> {
    let d = call.dtype;
    if d == f32::DTYPE {
        softmax_typed::<f32>(call)
    } else if d == f64::DTYPE {
        softmax_typed::<f64>(call)
    } else if d == f16::DTYPE {
        softmax_typed::<f16>(call)
    } else {
        softmax_typed::<bf16>(call)
    }
}
