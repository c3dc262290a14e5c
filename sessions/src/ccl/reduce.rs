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

/// One reduction, as a type: the combining step is then inlined and branch-free, so the loops
/// below vectorize.
trait Combine {
    fn combine<T: Elem>(a: T::Acc, b: T::Acc) -> T::Acc;
}

macro_rules! combine_op {
    ($name:ident, $op:expr) => {
        struct $name;
        impl Combine for $name {
            #[inline(always)]
            fn combine<T: Elem>(a: T::Acc, b: T::Acc) -> T::Acc {
                T::combine(a, b, $op)
            }
        }
    };
}
combine_op!(SumOp, Op::Sum);
combine_op!(ProdOp, Op::Prod);
combine_op!(MinOp, Op::Min);
combine_op!(MaxOp, Op::Max);

/// Elements reduced at a time: the accumulators stay in L1.
const BLOCK: usize = 1024;

/// Unaligned reads and writes: shared-memory slots and tensors are aligned in practice, but
/// nothing promises it. A block is read whole before it is written, so `dst` may be one of the
/// sources.
///
/// # Safety
/// `dst` must be valid for writes and every source for reads of `n` elements of `T`.
unsafe fn blocks<T: Elem, C: Combine>(dst: *mut u8, srcs: &[*const u8], n: usize, avg: bool)
where
    T::Acc: Default,
{
    let read = |s: *const u8, i: usize| -> T {
        // SAFETY: `i < n` and every source holds `n` elements of `T` (the caller's contract);
        // every bit pattern is a valid T for these plain number types.
        unsafe { s.cast::<T>().add(i).read_unaligned() }
    };
    let mut acc = [T::Acc::default(); BLOCK];
    let mut base = 0;
    while base < n {
        let len = BLOCK.min(n - base);
        for (j, a) in acc[..len].iter_mut().enumerate() {
            *a = read(srcs[0], base + j).load();
        }
        for &s in &srcs[1..] {
            for (j, a) in acc[..len].iter_mut().enumerate() {
                *a = C::combine::<T>(*a, read(s, base + j).load());
            }
        }
        for (j, a) in acc[..len].iter().enumerate() {
            let v = if avg { T::avg(*a, srcs.len()) } else { *a };
            // SAFETY: `base + j < n` elements of `T` fit in `dst`.
            unsafe { dst.cast::<T>().add(base + j).write_unaligned(T::store(v)) };
        }
        base += len;
    }
}

/// # Safety
/// As `blocks`, with `n` the byte count over the size of `T`.
unsafe fn typed<T: Elem>(dst: *mut u8, srcs: &[*const u8], nbytes: usize, op: Op)
where
    T::Acc: Default,
{
    let n = nbytes / std::mem::size_of::<T>();
    // SAFETY: forwarded contract.
    unsafe {
        match op {
            Op::Sum => blocks::<T, SumOp>(dst, srcs, n, false),
            Op::Avg => blocks::<T, SumOp>(dst, srcs, n, true),
            Op::Prod => blocks::<T, ProdOp>(dst, srcs, n, false),
            Op::Min => blocks::<T, MinOp>(dst, srcs, n, false),
            Op::Max => blocks::<T, MaxOp>(dst, srcs, n, false),
        }
    }
}

/// `dst = op(srcs...)`, element-wise; every source has `dst.len()` bytes of `dtype` elements
/// (one of the checked collective dtypes).
pub fn reduce_into(dst: &mut [u8], srcs: &[&[u8]], dtype: DataType, op: Op) {
    assert!(!srcs.is_empty() && srcs.iter().all(|s| s.len() == dst.len()));
    let ptrs: Vec<*const u8> = srcs.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: every buffer holds `dst.len()` bytes (asserted above).
    unsafe { reduce_raw(dst.as_mut_ptr(), &ptrs, dst.len(), dtype, op) }
}

/// `reduce_into` on raw buffers of `nbytes` bytes each; `dst` may be one of the sources (a
/// reduction in place).
///
/// # Safety
/// `dst` must be valid for writes and every source for reads of `nbytes` bytes, and no other
/// thread may write them meanwhile.
pub unsafe fn reduce_raw(dst: *mut u8, srcs: &[*const u8], nbytes: usize, dtype: DataType, op: Op) {
    assert!(!srcs.is_empty());
    // SAFETY: forwarded contract.
    unsafe {
        match (dtype.code(), dtype.bits()) {
            (2, 32) => typed::<f32>(dst, srcs, nbytes, op),
            (2, 16) => typed::<f16>(dst, srcs, nbytes, op),
            (4, 16) => typed::<bf16>(dst, srcs, nbytes, op),
            (0, 32) => typed::<i32>(dst, srcs, nbytes, op),
            (0, 64) => typed::<i64>(dst, srcs, nbytes, op),
            (1, 8) => typed::<u8>(dst, srcs, nbytes, op),
            _ => unreachable!("dtype {dtype} was checked before"),
        }
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
