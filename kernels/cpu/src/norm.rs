//! `layer_norm` and `rms_norm` over the last axis, with optional weight (and bias), threaded
//! over rows. Statistics accumulate in float64: the mean first, then the variance from the
//! centred values (two passes over a row in cache), so large offsets do not cancel.

use crate::elem::{Elem, Float};
use crate::layout::{rows_along, Ptr};
use crate::Tuning;
use half::{bf16, f16};
use rffi_core::{Result, Tensor};
use rffi_kernels::{Op, OpCall};

/// A weight or bias vector: its first element and stride, if given.
fn vector<T>(t: Option<&Tensor>) -> Option<(Ptr<T>, isize)> {
    t.map(|t| (Ptr::of(t), t.strides()[0] as isize))
}

fn norm_typed<T: Elem>(call: &OpCall<'_>) -> Result<()>
where
    T::C: Float,
{
    let t = Tuning::read(call, "norm")?;
    let (x, o) = (&call.inputs[0], call.out);
    let (px, po) = (Ptr::<T>::of(x), Ptr::<T>::of(o));
    let (plan, len, sx, sy) = rows_along(x, o, Some(x.ndim() - 1));
    if len == 0 || x.numel() == 0 {
        return Ok(());
    }
    let (w, b) = (vector::<T>(call.weight), vector::<T>(call.bias));
    let layer = call.op == Op::LayerNorm;
    let eps = call.eps;
    let grain = t.grain.div_ceil(len).max(1);
    plan.run(t.min_parallel.div_ceil(len), grain, |off, n, st| {
        let mut buf: Vec<f64> = Vec::with_capacity(len);
        for r in 0..n as isize {
            // SAFETY: rows of x and out, weight and bias elements, from their own layouts;
            // each row is read into `buf` before it is written (in place is allowed).
            unsafe {
                let (a, y) = (px.at(off[0] + r * st[0]), po.at(off[1] + r * st[1]));
                buf.clear();
                buf.extend((0..len as isize).map(|j| (*a.offset(j * sx)).load().to_f64()));
                let mean = if layer {
                    buf.iter().sum::<f64>() / len as f64
                } else {
                    0.0
                };
                let var = buf.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / len as f64;
                let rstd = 1.0 / (var + eps).sqrt();
                for (j, v) in buf.iter().enumerate() {
                    let j = j as isize;
                    let mut z = (v - mean) * rstd;
                    if let Some((pw, ws)) = w {
                        z *= (*pw.at(j * ws)).load().to_f64();
                    }
                    if let Some((pb, bs)) = b {
                        z += (*pb.at(j * bs)).load().to_f64();
                    }
                    *y.offset(j * sy) = T::store(T::C::from_f64(z));
                }
            }
        }
    });
    Ok(())
}

pub fn norm(call: &OpCall<'_>) -> Result<()> {
    let d = call.dtype;
    if d == f32::DTYPE {
        norm_typed::<f32>(call)
    } else if d == f64::DTYPE {
        norm_typed::<f64>(call)
    } else if d == f16::DTYPE {
        norm_typed::<f16>(call)
    } else {
        norm_typed::<bf16>(call)
    }
}
