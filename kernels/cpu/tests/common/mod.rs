//! Helpers of the CPU kernel tests: tensors from values and back, float64 references,
//! tolerances per dtype.
#![allow(dead_code)]

use half::{bf16, f16};
use rffi_core::{Any, AnyView, DataType, Tensor};
use rffi_kernels::{Op, Registry};
use std::sync::OnceLock;

pub fn reg() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| {
        let r = Registry::with_env(|_| None);
        r.register_backend(rffi_kernels_cpu::backend()).unwrap();
        r
    })
}

/// Element types the tests write and read, with their float64 values.
pub trait El: Copy + 'static {
    const DT: DataType;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// Relative tolerance of results against a float64 reference on rounded inputs.
    const TOL: f64;
}

macro_rules! el {
    ($t:ty, $dt:expr, $tol:expr, $from:expr, $to:expr) => {
        impl El for $t {
            const DT: DataType = $dt;
            const TOL: f64 = $tol;
            fn from_f64(v: f64) -> Self {
                $from(v)
            }
            fn to_f64(self) -> f64 {
                $to(self)
            }
        }
    };
}
el!(f32, DataType::float(32), 2e-6, |v| v as f32, |x: f32| x
    as f64);
el!(f64, DataType::float(64), 1e-12, |v| v, |x: f64| x);
el!(f16, DataType::float(16), 2e-3, f16::from_f64, f16::to_f64);
el!(
    bf16,
    DataType::bfloat16(),
    1.6e-2,
    bf16::from_f64,
    bf16::to_f64
);
el!(i32, DataType::int(32), 0.0, |v: f64| v as i32, |x: i32| x
    as f64);
el!(i64, DataType::int(64), 0.0, |v: f64| v as i64, |x: i64| x
    as f64);

/// A compact CPU tensor holding `vals`.
pub fn make<T: El>(vals: &[T], shape: &[i64]) -> Tensor {
    let t = Tensor::alloc_cpu(shape, T::DT).unwrap();
    assert_eq!(t.numel() as usize, vals.len());
    // SAFETY: a fresh compact tensor of exactly this many elements of T's size.
    unsafe { std::ptr::copy_nonoverlapping(vals.as_ptr(), t.element_ptr().cast(), vals.len()) };
    t
}

/// The elements of `t` in row-major order, any strides.
pub fn read<T: El>(t: &Tensor) -> Vec<T> {
    assert_eq!(t.dtype(), T::DT);
    let (shape, strides) = (t.shape().to_vec(), t.strides().to_vec());
    let n = t.numel() as usize;
    let mut out = Vec::with_capacity(n);
    let base = t.element_ptr().cast::<T>();
    for flat in 0..n {
        let mut rem = flat;
        let mut off = 0isize;
        for d in (0..shape.len()).rev() {
            let i = rem % shape[d] as usize;
            rem /= shape[d] as usize;
            off += i as isize * strides[d] as isize;
        }
        // SAFETY: an element of the tensor.
        out.push(unsafe { *base.offset(off) });
    }
    out
}

/// Deterministic pseudo-random values in [lo, hi).
pub fn rand_vals(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

pub fn rand_tensor<T: El>(shape: &[i64], seed: u64, lo: f64, hi: f64) -> (Tensor, Vec<f64>) {
    let n = shape.iter().product::<i64>() as usize;
    let vals: Vec<T> = rand_vals(n, seed, lo, hi)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let t = make(&vals, shape);
    (t, vals.iter().map(|v| v.to_f64()).collect())
}

pub fn call(op: Op, args: &[Any]) -> rffi_core::Result<Any> {
    let v: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
    reg().call(op, &v)
}

pub fn call_t(op: Op, args: &[Any]) -> Tensor {
    call(op, args).unwrap().try_as::<Tensor>().unwrap()
}

#[track_caller]
pub fn assert_close<T: El>(got: &[T], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    // Absolute slack for values near zero, scaled by the largest magnitude.
    let scale = want.iter().fold(1e-30f64, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == *w
        } else {
            (g - w).abs() <= T::TOL * (w.abs() + 1e-3 * scale) + 1e-300
        };
        assert!(ok, "{what} [{}]: element {i}: got {g}, want {w}", T::DT);
    }
}
