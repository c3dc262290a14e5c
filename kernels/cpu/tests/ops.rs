//! CPU ops against float64 reference computations: every op and dtype, strided and in-place
//! operands, large (threaded) tensors, zero-size and 0-d tensors, and bad input.

mod common;

use common::*;
use half::{bf16, f16};
use rffi_core::abi::DLPACK_FLAG_BITMASK_READ_ONLY;
use rffi_core::{Any, Tensor};
use rffi_kernels::Op;

fn gelu_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
}

fn softmax_ref(x: &[f64], len: usize) -> Vec<f64> {
    x.chunks(len)
        .flat_map(|row| {
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = row.iter().map(|v| (v - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s)
        })
        .collect()
}

fn matmul_ref(
    a: &[f64],
    b: &[f64],
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    b_shared: bool,
) -> Vec<f64> {
    let mut out = vec![0.0; batch * m * n];
    for z in 0..batch {
        let bz = if b_shared { 0 } else { z };
        for i in 0..m {
            for j in 0..n {
                out[z * m * n + i * n + j] = (0..k)
                    .map(|p| a[z * m * k + i * k + p] * b[bz * k * n + p * n + j])
                    .sum();
            }
        }
    }
    out
}

/// A reference binary and unary function.
type Bin = fn(f64, f64) -> f64;
type Un = fn(f64) -> f64;

fn float_suite<T: El>() {
    let shape = [3, 5, 7];
    let (a, av) = rand_tensor::<T>(&shape, 1, -3.0, 3.0);
    let (b, bv) = rand_tensor::<T>(&shape, 2, 0.5, 2.0);
    let binops: [(Op, Bin); 4] = [
        (Op::Add, |x, y| x + y),
        (Op::Sub, |x, y| x - y),
        (Op::Mul, |x, y| x * y),
        (Op::Div, |x, y| x / y),
    ];
    for (op, f) in binops {
        let want: Vec<f64> = av.iter().zip(&bv).map(|(x, y)| f(*x, *y)).collect();
        let r = call_t(op, &[Any::from(&a), Any::from(&b)]);
        assert_eq!(r.shape(), shape);
        assert_close(&read::<T>(&r), &want, op.name());
        // Tensor-scalar, with an int and a float number.
        for s in [Any::from(3i64), Any::from(0.75f64)] {
            let sv = s.try_as::<f64>().unwrap();
            // Half types compute in float32, so the number is rounded to float32 only.
            let want: Vec<f64> = av.iter().map(|x| f(*x, sv)).collect();
            let r = call_t(op, &[Any::from(&a), s.clone()]);
            assert_close(&read::<T>(&r), &want, &format!("{op} scalar"));
            // The number first, as numpy takes it: `sub(3, a)` is 3 - a.
            let want: Vec<f64> = av.iter().map(|x| f(sv, *x)).collect();
            let r = call_t(op, &[s, Any::from(&a)]);
            assert_close(&read::<T>(&r), &want, &format!("{op} scalar first"));
        }
        // Destination-passing, into a transposed output.
        let out_base = Tensor::alloc_cpu(&[7, 5, 3], T::DT).unwrap();
        let out = out_base.as_strided(&shape, &[1, 3, 15], 0).unwrap();
        let want: Vec<f64> = av.iter().zip(&bv).map(|(x, y)| f(*x, *y)).collect();
        assert!(call(op, &[Any::from(&a), Any::from(&b), Any::from(&out)])
            .unwrap()
            .is_none());
        assert_close(&read::<T>(&out), &want, &format!("{op} into strided out"));
    }
    let unops: [(Op, Un); 3] = [
        (Op::Relu, |x| x.max(0.0)),
        (Op::Gelu, gelu_ref),
        (Op::Exp, f64::exp),
    ];
    for (op, f) in unops {
        let want: Vec<f64> = av.iter().map(|x| f(*x)).collect();
        assert_close(&read::<T>(&call_t(op, &[Any::from(&a)])), &want, op.name());
    }
    // sum: all and last axis.
    let s = call_t(Op::Sum, &[Any::from(&a)]);
    assert_eq!(s.shape(), [] as [i64; 0]);
    let total: f64 = av.iter().sum();
    let abs_total: f64 = av.iter().map(|v| v.abs()).sum();
    let got = read::<T>(&s)[0].to_f64();
    assert!(
        (got - total).abs() <= T::TOL * abs_total,
        "sum all [{}]: {got} vs {total}",
        T::DT
    );
    let s = call_t(Op::Sum, &[Any::from(&a), Any::from(-1i64)]);
    assert_eq!(s.shape(), [3, 5]);
    let want: Vec<f64> = av.chunks(7).map(|r| r.iter().sum()).collect();
    let got = read::<T>(&s);
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g.to_f64() - w).abs() <= T::TOL * 7.0 * 3.0,
            "sum last [{}]",
            T::DT
        );
    }
    // softmax over the last axis, with the axis given and not.
    let want = softmax_ref(&av, 7);
    assert_close(
        &read::<T>(&call_t(Op::Softmax, &[Any::from(&a)])),
        &want,
        "softmax",
    );
    assert_close(
        &read::<T>(&call_t(Op::Softmax, &[Any::from(&a), Any::from(2i64)])),
        &want,
        "softmax axis 2",
    );
    // matmul: 2-D, batched, batched with a shared 2-D right operand.
    let (m, k, n) = (4, 6, 5);
    let (x, xv) = rand_tensor::<T>(&[m, k], 3, -1.0, 1.0);
    let (y, yv) = rand_tensor::<T>(&[k, n], 4, -1.0, 1.0);
    let tol_k = |w: &[f64]| w.iter().map(|v| v.abs() + 1.0).collect::<Vec<_>>();
    let check_mm = |got: Vec<T>, want: Vec<f64>, what: &str| {
        let mags = tol_k(&want);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g.to_f64() - w).abs() <= T::TOL * 4.0 * mags[i],
                "{what} [{}] {i}: {} vs {w}",
                T::DT,
                g.to_f64()
            );
        }
    };
    let r = call_t(Op::Matmul, &[Any::from(&x), Any::from(&y)]);
    assert_eq!(r.shape(), [m, n]);
    check_mm(
        read(&r),
        matmul_ref(&xv, &yv, 1, 4, 6, 5, true),
        "matmul 2-D",
    );
    let (xb, xbv) = rand_tensor::<T>(&[2, 3, m, k], 5, -1.0, 1.0);
    let (yb, ybv) = rand_tensor::<T>(&[2, 3, k, n], 6, -1.0, 1.0);
    let r = call_t(Op::Matmul, &[Any::from(&xb), Any::from(&yb)]);
    assert_eq!(r.shape(), [2, 3, m, n]);
    check_mm(
        read(&r),
        matmul_ref(&xbv, &ybv, 6, 4, 6, 5, false),
        "matmul batched",
    );
    let r = call_t(Op::Matmul, &[Any::from(&xb), Any::from(&y)]);
    check_mm(
        read(&r),
        matmul_ref(&xbv, &yv, 6, 4, 6, 5, true),
        "matmul shared b",
    );
    // A transposed right operand (a view, no copy).
    let yt_base = make(&read::<T>(&y), &[k, n]);
    let (ytt, _) = rand_tensor::<T>(&[n, k], 7, -1.0, 1.0);
    let ytv: Vec<f64> = read::<T>(&ytt).iter().map(|v| v.to_f64()).collect();
    let yt = ytt.as_strided(&[k, n], &[1, k], 0).unwrap();
    let yt_as_rows: Vec<f64> = (0..k as usize)
        .flat_map(|p| (0..n as usize).map(move |j| (p, j)))
        .map(|(p, j)| ytv[j * k as usize + p])
        .collect();
    let r = call_t(Op::Matmul, &[Any::from(&x), Any::from(&yt)]);
    check_mm(
        read(&r),
        matmul_ref(&xv, &yt_as_rows, 1, 4, 6, 5, true),
        "matmul transposed b",
    );
    drop(yt_base);
}

#[test]
fn float32_ops() {
    float_suite::<f32>();
}

#[test]
fn float64_ops() {
    float_suite::<f64>();
}

#[test]
fn float16_ops() {
    float_suite::<f16>();
}

#[test]
fn bfloat16_ops() {
    float_suite::<bf16>();
}

fn int_suite<T: El>() {
    let shape = [4, 9];
    let (a, av) = rand_tensor::<T>(&shape, 11, -1000.0, 1000.0);
    let (b, bv) = rand_tensor::<T>(&shape, 12, -1000.0, 1000.0);
    for (op, f) in [
        (Op::Add, (|x, y| x + y) as Bin),
        (Op::Sub, |x, y| x - y),
        (Op::Mul, |x, y| x * y),
    ] {
        let want: Vec<f64> = av.iter().zip(&bv).map(|(x, y)| f(*x, *y)).collect();
        assert_close(
            &read::<T>(&call_t(op, &[Any::from(&a), Any::from(&b)])),
            &want,
            op.name(),
        );
        let want: Vec<f64> = av.iter().map(|x| f(*x, -7.0)).collect();
        assert_close(
            &read::<T>(&call_t(op, &[Any::from(&a), Any::from(-7i64)])),
            &want,
            op.name(),
        );
        let want: Vec<f64> = av.iter().map(|x| f(-7.0, *x)).collect();
        assert_close(
            &read::<T>(&call_t(op, &[Any::from(-7i64), Any::from(&a)])),
            &want,
            &format!("{op} number first"),
        );
    }
    let e = call(Op::Div, &[Any::from(&a), Any::from(&b)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message()
            .contains(&format!("no implementation for {} tensors", T::DT)),
        "{}",
        e.message()
    );
    assert!(
        e.message()
            .contains("cpu supports float32, float64, float16, bfloat16"),
        "{}",
        e.message()
    );
    let e = call(Op::Add, &[Any::from(&a), Any::from(1.5f64)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message().contains("is a float but a is"),
        "{}",
        e.message()
    );
}

#[test]
fn int_ops_wrap_and_refuse_floats() {
    int_suite::<i32>();
    int_suite::<i64>();
    let a = make(&[i32::MAX], &[1]);
    let r = call_t(Op::Add, &[Any::from(&a), Any::from(1i64)]);
    assert_eq!(read::<i32>(&r), [i32::MIN]);
    let e = call(Op::Add, &[Any::from(&a), Any::from(1i64 << 40)]).unwrap_err();
    assert!(
        e.message().contains("does not fit in int32"),
        "{}",
        e.message()
    );
    // A number first is argument #0 in the messages; two numbers are refused.
    let e = call(Op::Sub, &[Any::from(1.5f64), Any::from(&a)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message()
            .contains("a (argument #0) is a float but b is int32"),
        "{}",
        e.message()
    );
    let e = call(Op::Sub, &[Any::from(1i64 << 40), Any::from(&a)]).unwrap_err();
    assert!(
        e.message()
            .contains("a (argument #0) = 1099511627776 does not fit in int32"),
        "{}",
        e.message()
    );
    let e = call(Op::Mul, &[Any::from(2i64), Any::from(3i64)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message()
            .contains("both numbers; at least one must be a tensor"),
        "{}",
        e.message()
    );
}

#[test]
fn strided_inputs() {
    // A transposed and a step-sliced view, against the same values made compact.
    let (base, bv) = rand_tensor::<f32>(&[6, 8], 21, -2.0, 2.0);
    let t = base.as_strided(&[8, 6], &[1, 8], 0).unwrap(); // transpose
    let tv: Vec<f64> = (0..8)
        .flat_map(|j| (0..6).map(move |i| (i, j)))
        .map(|(i, j)| bv[i * 8 + j])
        .collect();
    let s = base.slice_step(1, 0, 8, 2).unwrap(); // [6, 4], every other column
    let sv: Vec<f64> = (0..6)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .map(|(i, j)| bv[i * 8 + 2 * j])
        .collect();
    for (x, xv, len) in [(&t, &tv, 6usize), (&s, &sv, 4)] {
        let want: Vec<f64> = xv.iter().map(|v| v.exp()).collect();
        assert_close(
            &read::<f32>(&call_t(Op::Exp, &[Any::from(x)])),
            &want,
            "exp strided",
        );
        let want: Vec<f64> = xv.iter().map(|v| v * 2.0).collect();
        assert_close(
            &read::<f32>(&call_t(Op::Add, &[Any::from(x), Any::from(x)])),
            &want,
            "add strided",
        );
        assert_close(
            &read::<f32>(&call_t(Op::Softmax, &[Any::from(x)])),
            &softmax_ref(xv, len),
            "softmax strided",
        );
        let want: Vec<f64> = xv.chunks(len).map(|r| r.iter().sum()).collect();
        let got = read::<f32>(&call_t(Op::Sum, &[Any::from(x), Any::from(-1i64)]));
        for (g, w) in got.iter().zip(&want) {
            assert!((*g as f64 - w).abs() < 1e-5, "sum strided {g} {w}");
        }
        let total: f64 = xv.iter().sum();
        let got = read::<f32>(&call_t(Op::Sum, &[Any::from(x)]))[0] as f64;
        assert!((got - total).abs() < 1e-4);
    }
    // Mixed: a compact tensor plus a transposed one, and half types through the buffered path.
    let (c, cv) = rand_tensor::<f32>(&[8, 6], 22, -2.0, 2.0);
    let want: Vec<f64> = cv.iter().zip(&tv).map(|(x, y)| x * y).collect();
    assert_close(
        &read::<f32>(&call_t(Op::Mul, &[Any::from(&c), Any::from(&t)])),
        &want,
        "mul mixed",
    );
    let (hb, hv) = rand_tensor::<bf16>(&[6, 8], 23, -2.0, 2.0);
    let ht = hb.as_strided(&[8, 6], &[1, 8], 0).unwrap();
    let htv: Vec<f64> = (0..8)
        .flat_map(|j| (0..6).map(move |i| (i, j)))
        .map(|(i, j)| hv[i * 8 + j])
        .collect();
    assert_close(
        &read::<bf16>(&call_t(Op::Softmax, &[Any::from(&ht)])),
        &softmax_ref(&htv, 6),
        "bf16 softmax strided",
    );
}

#[test]
fn large_tensors_use_threads_and_agree() {
    // Above the parallel threshold, with an odd length so tasks end unevenly.
    let n = 1_000_003usize;
    let (a, av) = rand_tensor::<f32>(&[n as i64], 31, -5.0, 5.0);
    let (b, bv) = rand_tensor::<f32>(&[n as i64], 32, -5.0, 5.0);
    let want: Vec<f64> = av.iter().zip(&bv).map(|(x, y)| x + y).collect();
    assert_close(
        &read::<f32>(&call_t(Op::Add, &[Any::from(&a), Any::from(&b)])),
        &want,
        "large add",
    );
    let total: f64 = av.iter().sum();
    let got = read::<f32>(&call_t(Op::Sum, &[Any::from(&a)]))[0] as f64;
    assert!((got - total).abs() < 1e-2, "large sum {got} {total}");
    let (x, xv) = rand_tensor::<f32>(&[1000, 1001], 33, -10.0, 10.0);
    assert_close(
        &read::<f32>(&call_t(Op::Softmax, &[Any::from(&x)])),
        &softmax_ref(&xv, 1001),
        "large softmax",
    );
    let (m, mv) = rand_tensor::<f32>(&[300, 300], 34, -1.0, 1.0);
    let got = read::<f32>(&call_t(Op::Matmul, &[Any::from(&m), Any::from(&m)]));
    let want = matmul_ref(&mv, &mv, 1, 300, 300, 300, true);
    for (g, w) in got.iter().zip(&want) {
        assert!((*g as f64 - w).abs() < 1e-3, "large matmul");
    }
}

#[test]
fn in_place_is_allowed_for_identical_layouts() {
    let (a, av) = rand_tensor::<f32>(&[4, 5], 41, -1.0, 1.0);
    let (b, bv) = rand_tensor::<f32>(&[4, 5], 42, -1.0, 1.0);
    assert!(
        call(Op::Add, &[Any::from(&a), Any::from(&b), Any::from(&a)])
            .unwrap()
            .is_none()
    );
    let want: Vec<f64> = av.iter().zip(&bv).map(|(x, y)| x + y).collect();
    assert_close(&read::<f32>(&a), &want, "add in place");
    call(
        Op::Softmax,
        &[Any::from(&a), Any::from(-1i64), Any::from(&a)],
    )
    .unwrap();
    assert_close(&read::<f32>(&a), &softmax_ref(&want, 5), "softmax in place");
    call(Op::Relu, &[Any::from(&b), Any::from(&b)]).unwrap();
    assert_close(
        &read::<f32>(&b),
        &bv.iter().map(|v| v.max(0.0)).collect::<Vec<_>>(),
        "relu in place",
    );
}

#[test]
fn zero_size_and_zero_d_tensors() {
    let empty = make::<f32>(&[], &[0, 3]);
    let r = call_t(Op::Add, &[Any::from(&empty), Any::from(&empty)]);
    assert_eq!(r.shape(), [0, 3]);
    assert_eq!(read::<f32>(&call_t(Op::Sum, &[Any::from(&empty)])), [0.0]);
    let r = call_t(Op::Sum, &[Any::from(&empty), Any::from(-1i64)]);
    assert_eq!(r.shape(), [0]);
    let cols0 = make::<f32>(&[], &[2, 0]);
    assert_eq!(
        read::<f32>(&call_t(Op::Sum, &[Any::from(&cols0), Any::from(-1i64)])),
        [0.0, 0.0],
        "empty rows sum to 0"
    );
    assert_eq!(call_t(Op::Softmax, &[Any::from(&cols0)]).shape(), [2, 0]);
    let k0a = make::<f32>(&[], &[2, 0]);
    let k0b = make::<f32>(&[], &[0, 3]);
    assert_eq!(
        read::<f32>(&call_t(Op::Matmul, &[Any::from(&k0a), Any::from(&k0b)])),
        [0.0; 6],
        "K = 0 gives zeros"
    );

    let s = make(&[2.5f32], &[]);
    assert_eq!(
        read::<f32>(&call_t(Op::Mul, &[Any::from(&s), Any::from(&s)])),
        [6.25]
    );
    assert_eq!(call_t(Op::Exp, &[Any::from(&s)]).shape(), [] as [i64; 0]);
    assert_eq!(read::<f32>(&call_t(Op::Sum, &[Any::from(&s)])), [2.5]);
    assert_eq!(
        read::<f32>(&call_t(Op::Sum, &[Any::from(&s), Any::from(-1i64)])),
        [2.5]
    );
    assert_eq!(read::<f32>(&call_t(Op::Softmax, &[Any::from(&s)])), [1.0]);
    let e = call(Op::Matmul, &[Any::from(&s), Any::from(&s)]).unwrap_err();
    assert!(
        e.message().contains("at least 2 dimensions"),
        "{}",
        e.message()
    );
    let e = call(Op::Sum, &[Any::from(&s), Any::from(1i64)]).unwrap_err();
    assert_eq!(e.kind(), "IndexError");
}

#[test]
fn bad_input_is_a_clear_error() {
    let a = make(&[1.0f32; 6], &[2, 3]);
    let b = make(&[1.0f32; 6], &[3, 2]);
    let e = call(Op::Add, &[Any::from(&a), Any::from(&b)]).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_eq!(e.message(), "kernels.add: shapes do not broadcast: a (argument #0) is [2, 3] but b (argument #1) is [3, 2] (trailing dimensions must be equal or 1)");

    let d = make(&[1.0f64; 6], &[2, 3]);
    let e = call(Op::Mul, &[Any::from(&a), Any::from(&d)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message()
            .contains("a (argument #0) is float32 but b (argument #1) is float64"),
        "{}",
        e.message()
    );

    let out = make(&[0.0f32; 4], &[4]);
    let e = call(Op::Add, &[Any::from(&a), Any::from(&a), Any::from(&out)]).unwrap_err();
    assert_eq!(
        e.message(),
        "kernels.add: out (argument #2) has shape [4] but the result has shape [2, 3]"
    );
    let out64 = make(&[0.0f64; 6], &[2, 3]);
    let e = call(Op::Exp, &[Any::from(&a), Any::from(&out64)]).unwrap_err();
    assert!(
        e.message().contains("out (argument #1) is float64"),
        "{}",
        e.message()
    );

    let e = call(Op::Add, &[Any::from(&a)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message().contains("kernels.add expects (a, b[, out])"),
        "{}",
        e.message()
    );
    let e = call(Op::Exp, &[Any::from("x")]).unwrap_err();
    assert!(
        e.message()
            .contains("x (argument #0) must be a tensor, got"),
        "{}",
        e.message()
    );
    let e = call(Op::Softmax, &[Any::from(&a), Any::from(2i64)]).unwrap_err();
    assert_eq!(e.kind(), "IndexError");
    assert_eq!(
        e.message(),
        "kernels.softmax: axis 2 is out of range for a 2-d tensor"
    );
    let e = call(Op::Matmul, &[Any::from(&a), Any::from(&a)]).unwrap_err();
    assert!(
        e.message().contains("inner dimensions differ"),
        "{}",
        e.message()
    );
    let x3 = make(&[0.0f32; 24], &[2, 3, 4]);
    let y3 = make(&[0.0f32; 48], &[4, 4, 3]);
    let e = call(Op::Matmul, &[Any::from(&x3), Any::from(&y3)]).unwrap_err();
    assert!(
        e.message().contains("batch dimensions differ"),
        "{}",
        e.message()
    );

    // Outputs that overlap an input without being it, or themselves.
    let big = make(&[1.0f32; 8], &[8]);
    let lo = big.slice(0, 0, 6).unwrap();
    let hi = big.slice(0, 2, 8).unwrap();
    let e = call(Op::Add, &[Any::from(&lo), Any::from(&lo), Any::from(&hi)]).unwrap_err();
    assert!(
        e.message().contains(
            "out (argument #2) overlaps a (argument #0) in memory without being the same elements"
        ),
        "{}",
        e.message()
    );
    let sq = make(&[1.0f32; 4], &[2, 2]);
    let e = call(
        Op::Matmul,
        &[Any::from(&sq), Any::from(&sq), Any::from(&sq)],
    )
    .unwrap_err();
    assert!(
        e.message().contains("this op cannot write in place"),
        "{}",
        e.message()
    );
    let bcast = big.as_strided(&[2, 3], &[0, 1], 0).unwrap();
    let e = call(Op::Exp, &[Any::from(&a), Any::from(&bcast)]).unwrap_err();
    assert!(
        e.message().contains("has overlapping elements"),
        "{}",
        e.message()
    );

    // A read-only output (imported through DLPack with the read-only flag).
    let src = make(&[0.0f32; 6], &[2, 3]);
    let m = src.to_dlpack_versioned();
    // SAFETY: the managed tensor we were just handed; it is handed back to rffi right away.
    let ro = unsafe {
        (*m.as_ptr()).flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
        Tensor::from_dlpack_versioned(m, 0, false).unwrap()
    };
    assert!(ro.read_only());
    let e = call(Op::Exp, &[Any::from(&a), Any::from(&ro)]).unwrap_err();
    assert_eq!(e.message(), "kernels.exp: out (argument #1) is read-only");
    // Reading from a read-only tensor is fine.
    call_t(Op::Exp, &[Any::from(&ro)]);
}

#[test]
fn special_values_follow_ieee() {
    let x = make(&[f32::NEG_INFINITY, 0.0, f32::NAN, 100.0], &[4]);
    let r = read::<f32>(&call_t(Op::Exp, &[Any::from(&x)]));
    assert_eq!(r[0], 0.0);
    assert_eq!(r[1], 1.0);
    assert!(r[2].is_nan());
    assert_eq!(r[3], f32::INFINITY);
    // A masked softmax row: -inf entries get exactly 0.
    let m = make(
        &[0.0f32, f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY],
        &[1, 4],
    );
    assert_eq!(
        read::<f32>(&call_t(Op::Softmax, &[Any::from(&m)])),
        [0.5, 0.0, 0.5, 0.0]
    );
    let z = make(&[1.0f32, -1.0], &[2]);
    let zero = make(&[0.0f32, 0.0], &[2]);
    let r = read::<f32>(&call_t(Op::Div, &[Any::from(&z), Any::from(&zero)]));
    assert_eq!(r, [f32::INFINITY, f32::NEG_INFINITY]);
}
