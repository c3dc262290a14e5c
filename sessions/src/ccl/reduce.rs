//! Element-wise reductions over the ranks' buffers, for the shared-memory backend.
//!
//! Integers wrap (as NCCL's do) and `avg` divides the sum by the number of ranks (truncating for
//! integers); float16 and bfloat16 accumulate in float32 and round once at the end.

use super::Op;
use half::{bf16, f16};
use rffi_core::DataType;

trait Elem: Copy {
    type Acc: Copy;
    fn load(self) -> Self::Acc;
    fn store(a: Self::Acc) -> Self;
    fn combine(a: Self::Acc, b: Self::Acc, op: Op) -> Self::Acc;
    fn avg(a: Self::Acc, n: usize) -> Self::Acc;
}

macro_rules! int_elem {
    ($t:ty) => {
        impl Elem for $t {
            type Acc = $t;
            fn load(self) -> $t {
                self
            }
            fn store(a: $t) -> $t {
                a
            }
            fn combine(a: $t, b: $t, op: Op) -> $t {
                match op {
                    Op::Sum | Op::Avg => a.wrapping_add(b),
                    Op::Prod => a.wrapping_mul(b),
                    Op::Min => a.min(b),
                    Op::Max => a.max(b),
                }
            }
            fn avg(a: $t, n: usize) -> $t {
                a / (n as $t)
            }
        }
    };
}
int_elem!(i32);
int_elem!(i64);
int_elem!(u8);

fn fcombine(a: f32, b: f32, op: Op) -> f32 {
    match op {
        Op::Sum | Op::Avg => a + b,
        Op::Prod => a * b,
        Op::Min => a.min(b),
        Op::Max => a.max(b),
    }
}

macro_rules! float_elem {
    ($t:ty, $load:expr, $store:expr) => {
        impl Elem for $t {
            type Acc = f32;
            fn load(self) -> f32 {
                $load(self)
            }
            fn store(a: f32) -> $t {
                $store(a)
            }
            fn combine(a: f32, b: f32, op: Op) -> f32 {
                fcombine(a, b, op)
            }
            fn avg(a: f32, n: usize) -> f32 {
                a / n as f32
            }
        }
    };
}
float_elem!(f32, |x| x, |a| a);
float_elem!(f16, f16::to_f32, f16::from_f32);
float_elem!(bf16, bf16::to_f32, bf16::from_f32);

/// Unaligned reads and writes: shared-memory slots and tensors are aligned in practice, but the
/// byte slices carry no such promise.
fn typed<T: Elem>(dst: &mut [u8], srcs: &[&[u8]], op: Op) {
    let size = std::mem::size_of::<T>();
    let n = dst.len() / size;
    let read = |s: &[u8], i: usize| -> T {
        // SAFETY: `i < n` and every source holds `n` elements of `T` (checked by the caller);
        // every bit pattern is a valid T for these plain number types.
        unsafe { s.as_ptr().cast::<T>().add(i).read_unaligned() }
    };
    for i in 0..n {
        let mut acc = read(srcs[0], i).load();
        for s in &srcs[1..] {
            acc = T::combine(acc, read(s, i).load(), op);
        }
        if op == Op::Avg {
            acc = T::avg(acc, srcs.len());
        }
        // SAFETY: `i < n` elements of `T` fit in `dst`.
        unsafe {
            dst.as_mut_ptr()
                .cast::<T>()
                .add(i)
                .write_unaligned(T::store(acc))
        };
    }
}

/// `dst = op(srcs...)`, element-wise; every source has `dst.len()` bytes of `dtype` elements
/// (one of the checked collective dtypes).
pub fn reduce_into(dst: &mut [u8], srcs: &[&[u8]], dtype: DataType, op: Op) {
    assert!(!srcs.is_empty() && srcs.iter().all(|s| s.len() == dst.len()));
    match (dtype.code(), dtype.bits()) {
        (2, 32) => typed::<f32>(dst, srcs, op),
        (2, 16) => typed::<f16>(dst, srcs, op),
        (4, 16) => typed::<bf16>(dst, srcs, op),
        (0, 32) => typed::<i32>(dst, srcs, op),
        (0, 64) => typed::<i64>(dst, srcs, op),
        (1, 8) => typed::<u8>(dst, srcs, op),
        _ => unreachable!("dtype {dtype} was checked before"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: Copy>(v: &[T]) -> Vec<u8> {
        // SAFETY: viewing plain numbers as bytes.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
            .to_vec()
    }

    #[test]
    fn every_op_on_ints_and_halves() {
        let a = bytes(&[1i32, -5, 7]);
        let b = bytes(&[3i32, 2, 7]);
        let mut out = vec![0u8; a.len()];
        for (op, want) in [
            (Op::Sum, [4, -3, 14]),
            (Op::Prod, [3, -10, 49]),
            (Op::Min, [1, -5, 7]),
            (Op::Max, [3, 2, 7]),
            (Op::Avg, [2, -1, 7]),
        ] {
            reduce_into(&mut out, &[&a, &b], DataType::int(32), op);
            assert_eq!(out, bytes(&want), "{op:?}");
        }
        let h = |x: f32| bf16::from_f32(x);
        let a = bytes(&[h(1.5), h(-2.0)]);
        let b = bytes(&[h(0.5), h(4.0)]);
        let mut out = vec![0u8; a.len()];
        reduce_into(&mut out, &[&a, &b], DataType::bfloat16(), Op::Avg);
        assert_eq!(out, bytes(&[h(1.0), h(1.0)]));
        let u = bytes(&[250u8]);
        let mut out = vec![0u8; 1];
        reduce_into(&mut out, &[&u, &u], DataType::uint(8), Op::Sum);
        assert_eq!(out, [244], "integers wrap");
    }
}
