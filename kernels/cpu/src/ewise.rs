//! Elementwise ops: add, sub, mul, div (tensor-tensor and tensor-number), relu, gelu, exp.

use crate::elem::{Elem, Float, FromScalar};
use crate::layout::{Plan, Ptr};
use crate::math::multiversion;
use crate::Tuning;
use rffi_core::Result;
use rffi_kernels::{Gelu, Op, OpCall};

/// `out = f(a, b)` for tensors of one shape, any strides (in place when `out` is `a` or `b`);
/// a number operand makes it `f(x, s)` or, first, `f(s, x)`.
pub fn binary<T: Elem>(call: &OpCall<'_>, f: impl Fn(T::C, T::C) -> T::C + Sync) -> Result<()>
where
    T::C: FromScalar,
{
    if let Some(s) = call.scalar {
        let s = T::C::from_scalar(s);
        return if call.scalar_first {
            unary::<T>(call, |x| f(s, x))
        } else {
            unary::<T>(call, |x| f(x, s))
        };
    }
    let t = Tuning::read(call, "elementwise")?;
    let a = &call.inputs[0];
    let o = call.out;
    let (pa, po) = (Ptr::<T>::of(a), Ptr::<T>::of(o));
    let b = &call.inputs[1];
    let pb = Ptr::<T>::of(b);
    let plan = Plan::new(a.shape(), [a.strides(), b.strides(), o.strides()]);
    plan.run(t.min_parallel, t.grain, |off, len, st| {
        // SAFETY: offsets come from the tensors' own shapes and strides; outputs are written at
        // distinct elements (checked by the dispatcher), per task disjoint.
        unsafe {
            let (x, y, z) = (pa.at(off[0]), pb.at(off[1]), po.at(off[2]));
            if st == [1, 1, 1] {
                for j in 0..len {
                    *z.add(j) = T::store(f((*x.add(j)).load(), (*y.add(j)).load()));
                }
            } else {
                for j in 0..len as isize {
                    *z.offset(j * st[2]) = T::store(f(
                        (*x.offset(j * st[0])).load(),
                        (*y.offset(j * st[1])).load(),
                    ));
                }
            }
        }
    });
    Ok(())
}

/// `out = f(x)`, any strides (in place when `out` is `x`).
pub fn unary<T: Elem>(call: &OpCall<'_>, f: impl Fn(T::C) -> T::C + Sync) -> Result<()> {
    let t = Tuning::read(call, "elementwise")?;
    let x = &call.inputs[0];
    let o = call.out;
    let (px, po) = (Ptr::<T>::of(x), Ptr::<T>::of(o));
    let plan = Plan::new(x.shape(), [x.strides(), o.strides()]);
    plan.run(t.min_parallel, t.grain, |off, len, st| {
        // SAFETY: as in `binary`.
        unsafe {
            let (a, b) = (px.at(off[0]), po.at(off[1]));
            if st == [1, 1] {
                for j in 0..len {
                    *b.add(j) = T::store(f((*a.add(j)).load()));
                }
            } else {
                for j in 0..len as isize {
                    *b.offset(j * st[1]) = T::store(f((*a.offset(j * st[0])).load()));
                }
            }
        }
    });
    Ok(())
}

multiversion! {
    fn exp_run_f32(x: Ptr<f32>, y: Ptr<f32>, len: usize) {
        // SAFETY: the caller passes runs of `len` elements inside both tensors.
        unsafe {
            for j in 0..len {
                *y.0.add(j) = crate::math::exp_f32(*x.0.add(j));
            }
        }
    }
}

/// `exp` for float32: contiguous runs go through the SIMD-compiled loop.
fn exp_f32(call: &OpCall<'_>) -> Result<()> {
    let t = Tuning::read(call, "elementwise")?;
    let (x, o) = (&call.inputs[0], call.out);
    let (px, po) = (Ptr::<f32>::of(x), Ptr::<f32>::of(o));
    let plan = Plan::new(x.shape(), [x.strides(), o.strides()]);
    plan.run(t.min_parallel, t.grain, |off, len, st| {
        // SAFETY: offsets from the tensors' own layouts (as in `binary`).
        let (a, b) = unsafe { (Ptr(px.at(off[0])), Ptr(po.at(off[1]))) };
        if st == [1, 1] {
            exp_run_f32(a, b, len);
        } else {
            for j in 0..len as isize {
                // SAFETY: as above.
                unsafe {
                    *b.0.offset(j * st[1]) = crate::math::exp_f32(*a.0.offset(j * st[0]));
                }
            }
        }
    });
    Ok(())
}

fn float_unary<T: Elem>(call: &OpCall<'_>) -> Result<()>
where
    T::C: Float,
{
    match call.op {
        Op::Relu => unary::<T>(call, |x| if x < T::C::ZERO { T::C::ZERO } else { x }),
        Op::Gelu if call.gelu == Gelu::Tanh => unary::<T>(call, |x| x.gelu_tanh()),
        Op::Gelu => unary::<T>(call, |x| x.gelu()),
        Op::Exp => unary::<T>(call, |x| x.exp()),
        op => unreachable!("{op} is not a unary op"),
    }
}

/// The unary float ops for every float dtype.
pub fn unary_float(call: &OpCall<'_>) -> Result<()> {
    use half::{bf16, f16};
    let d = call.dtype;
    if d == f32::DTYPE && call.op == Op::Exp {
        exp_f32(call)
    } else if d == f32::DTYPE {
        float_unary::<f32>(call)
    } else if d == f64::DTYPE {
        float_unary::<f64>(call)
    } else if d == f16::DTYPE {
        float_unary::<f16>(call)
    } else {
        debug_assert_eq!(d, bf16::DTYPE);
        float_unary::<bf16>(call)
    }
}

fn float_binary<T: Elem>(call: &OpCall<'_>) -> Result<()>
where
    T::C: Float + FromScalar,
{
    match call.op {
        Op::Add => binary::<T>(call, |a, b| a + b),
        Op::Sub => binary::<T>(call, |a, b| a - b),
        Op::Mul => binary::<T>(call, |a, b| a * b),
        Op::Div => binary::<T>(call, |a, b| a / b),
        op => unreachable!("{op} is not a binary op"),
    }
}

macro_rules! int_binary {
    ($call:expr, $t:ty) => {
        match $call.op {
            Op::Add => binary::<$t>($call, |a, b| a.wrapping_add(b)),
            Op::Sub => binary::<$t>($call, |a, b| a.wrapping_sub(b)),
            Op::Mul => binary::<$t>($call, |a, b| a.wrapping_mul(b)),
            op => unreachable!("{op} has no integer implementation"),
        }
    };
}

/// The binary ops for every dtype they support (integers wrap, as in PyTorch and numpy).
pub fn binary_any(call: &OpCall<'_>) -> Result<()> {
    use half::{bf16, f16};
    let d = call.dtype;
    if d == f32::DTYPE {
        float_binary::<f32>(call)
    } else if d == f64::DTYPE {
        float_binary::<f64>(call)
    } else if d == f16::DTYPE {
        float_binary::<f16>(call)
    } else if d == bf16::DTYPE {
        float_binary::<bf16>(call)
    } else if d == i32::DTYPE {
        int_binary!(call, i32)
    } else {
        debug_assert_eq!(d, i64::DTYPE);
        int_binary!(call, i64)
    }
}
