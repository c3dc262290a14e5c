//! Element types: how each dtype loads into the type it is computed in, and stores back.
//!
//! float16 and bfloat16 compute in float32 (as PyTorch's CPU kernels do), the others in
//! themselves.

use half::{bf16, f16};
use rffi_core::DataType;
use rffi_kernels::Scalar;

/// A tensor element.
pub trait Elem: Copy + Send + Sync + 'static {
    /// The type arithmetic runs in.
    type C: Copy + Send + Sync + 'static;
    const DTYPE: DataType;
    fn load(self) -> Self::C;
    fn store(c: Self::C) -> Self;
}

macro_rules! same {
    ($($t:ty => $dt:expr),*) => {$(
        impl Elem for $t {
            type C = $t;
            const DTYPE: DataType = $dt;
            #[inline(always)]
            fn load(self) -> $t {
                self
            }
            #[inline(always)]
            fn store(c: $t) -> $t {
                c
            }
        }
    )*};
}
same!(f32 => DataType::float(32), f64 => DataType::float(64), i32 => DataType::int(32),
      i64 => DataType::int(64));

impl Elem for f16 {
    type C = f32;
    const DTYPE: DataType = DataType::float(16);
    #[inline(always)]
    fn load(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn store(c: f32) -> f16 {
        f16::from_f32(c)
    }
}

impl Elem for bf16 {
    type C = f32;
    const DTYPE: DataType = DataType::bfloat16();
    #[inline(always)]
    fn load(self) -> f32 {
        // The upper half of a float32: a shift, which vectorizes (the crate's own conversion is
        // the same arithmetic).
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    #[inline(always)]
    fn store(c: f32) -> bf16 {
        bf16::from_f32(c)
    }
}

/// Compute types a number operand converts to.
pub trait FromScalar: Sized {
    fn from_scalar(s: Scalar) -> Self;
}

impl FromScalar for f32 {
    fn from_scalar(s: Scalar) -> f32 {
        s.as_f64() as f32
    }
}

impl FromScalar for f64 {
    fn from_scalar(s: Scalar) -> f64 {
        s.as_f64()
    }
}

impl FromScalar for i32 {
    fn from_scalar(s: Scalar) -> i32 {
        // The dispatcher checked the range and refused float operands for int tensors.
        match s {
            Scalar::Int(i) => i as i32,
            Scalar::Float(f) => f as i32,
        }
    }
}

impl FromScalar for i64 {
    fn from_scalar(s: Scalar) -> i64 {
        match s {
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
}

/// sqrt(2 / pi), the scale of the tanh form of GELU.
const GELU_TANH_K: f64 = 0.797_884_560_802_865_4;

/// The float compute types (f32, f64): what the float ops need.
pub trait Float:
    Copy
    + Send
    + Sync
    + PartialOrd
    + core::ops::Add<Output = Self>
    + core::ops::Sub<Output = Self>
    + core::ops::Mul<Output = Self>
    + core::ops::Div<Output = Self>
    + 'static
{
    const ZERO: Self;
    const NEG_INF: Self;
    fn exp(self) -> Self;
    fn gelu(self) -> Self;
    fn gelu_tanh(self) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

impl Float for f32 {
    const ZERO: f32 = 0.0;
    const NEG_INF: f32 = f32::NEG_INFINITY;
    #[inline(always)]
    fn exp(self) -> f32 {
        crate::math::exp_f32(self)
    }
    #[inline(always)]
    fn gelu(self) -> f32 {
        // The exact (erf) form, PyTorch's default, written with erfc: 1 + erf(x) cancels for
        // negative x, erfc(-x) does not.
        0.5 * self * libm::erfcf(-self * core::f32::consts::FRAC_1_SQRT_2)
    }
    #[inline(always)]
    fn gelu_tanh(self) -> f32 {
        // 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)): no cancellation for negative x.
        let u = GELU_TANH_K as f32 * (self + 0.044_715 * self * self * self);
        self / (1.0 + crate::math::exp_f32(-2.0 * u))
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
}

impl Float for f64 {
    const ZERO: f64 = 0.0;
    const NEG_INF: f64 = f64::NEG_INFINITY;
    #[inline(always)]
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    #[inline(always)]
    fn gelu(self) -> f64 {
        0.5 * self * libm::erfc(-self * core::f64::consts::FRAC_1_SQRT_2)
    }
    #[inline(always)]
    fn gelu_tanh(self) -> f64 {
        let u = GELU_TANH_K * (self + 0.044_715 * self * self * self);
        self / (1.0 + (-2.0 * u).exp())
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
}
