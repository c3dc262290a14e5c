//! `softmax` over any one axis: rows along the axis, any strides, threaded over rows.

use crate::elem::{Elem, Float};
use crate::layout::{rows_along, Ptr};
use crate::math::multiversion;
use crate::Tuning;
use half::{bf16, f16};
use rffi_core::Result;
use rffi_kernels::OpCall;

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
    let (px, po) = (Ptr::<T>::of(x), Ptr::<T>::of(o));
    let (plan, len, sx, sy) = rows_along(x, o, call.axes.first().copied());
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
