//! CPU reductions on any axes, normalizations, softmax on any axis, gelu's tanh form and
//! broadcasting, against float64 references: every float dtype, keepdims, strided inputs, the
//! threaded paths, zero-size inputs, and `explain`.

mod common;

use common::*;
use half::{bf16, f16};
use rffi_core::{Any, Array};
use rffi_kernels::Op;

/// Reduces `x` (row-major values of `shape`) over `axes` with `f` applied to each output's
/// values in row-major order; returns the values and the kept shape.
fn reduce_ref(x: &[f64], shape: &[i64], axes: &[usize], f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let nd = shape.len();
    let kept: Vec<usize> = (0..nd).filter(|i| !axes.contains(i)).collect();
    let nout: usize = kept.iter().map(|&i| shape[i] as usize).product();
    let mut groups = vec![Vec::new(); nout];
    for (flat, &v) in x.iter().enumerate() {
        let mut rem = flat;
        let mut idx = vec![0usize; nd];
        for d in (0..nd).rev() {
            idx[d] = rem % shape[d] as usize;
            rem /= shape[d] as usize;
        }
        let o = kept
            .iter()
            .fold(0usize, |acc, &k| acc * shape[k] as usize + idx[k]);
        groups[o].push(v);
    }
    groups.iter().map(|g| f(g)).collect()
}

/// A reference reduction of one output's values.
type Fold = fn(&[f64]) -> f64;

fn sum(v: &[f64]) -> f64 {
    v.iter().sum()
}
fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}
fn max(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}
fn min(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::INFINITY, f64::min)
}
fn argmax(v: &[f64]) -> f64 {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best as f64
}

/// Sums and means: the error of a float sum grows with the magnitudes summed, not with the
/// result (which cancels), so the slack is relative to the sum of |x| (`abs`, same reduction).
#[track_caller]
fn assert_sum_close<T: El>(got: &[T], want: &[f64], abs: &[f64], what: &str) {
    for (i, ((g, w), a)) in got.iter().zip(want).zip(abs).enumerate() {
        let g = g.to_f64();
        assert!(
            (g - w).abs() <= T::TOL * (w.abs() + 0.1 * a),
            "{what} [{}]: element {i}: got {g}, want {w}",
            T::DT
        );
    }
}

fn abs_of(f: Fold) -> impl Fn(&[f64]) -> f64 {
    move |v: &[f64]| f(&v.iter().map(|x| x.abs()).collect::<Vec<_>>())
}

fn axes_any(axes: &[i64]) -> Any {
    if axes.len() == 1 {
        Any::from(axes[0])
    } else {
        Any::from(Array::new(axes.iter().map(|&a| Any::from(a)).collect()))
    }
}

/// Every reduction over `axes` of a tensor of `shape` (compact, or transposed when `flip`),
/// with and without keepdims.
fn check_reductions<T: El>(shape: &[i64], axes: &[i64], flip: bool) {
    let (base, bv) = rand_tensor::<T>(shape, 7, -4.0, 4.0);
    let (x, xv, xshape) = if flip && shape.len() >= 2 {
        // The same values seen through a transposed view of a compact buffer of the reversed
        // shape: strided reads.
        let rev: Vec<i64> = shape.iter().rev().cloned().collect();
        let (t, tv) = rand_tensor::<T>(&rev, 7, -4.0, 4.0);
        let mut strides = vec![1i64; rev.len()];
        for i in (0..rev.len() - 1).rev() {
            strides[i] = strides[i + 1] * rev[i + 1];
        }
        strides.reverse();
        let view = t.as_strided(shape, &strides, 0).unwrap();
        let vals = read::<T>(&view).iter().map(|v| v.to_f64()).collect();
        drop(tv);
        (view, vals, shape.to_vec())
    } else {
        (base.clone(), bv, shape.to_vec())
    };
    let nd = xshape.len() as i64;
    let norm: Vec<usize> = axes
        .iter()
        .map(|&a| (if a < 0 { a + nd } else { a }) as usize)
        .collect();
    let refs: [(Op, Fold); 5] = [
        (Op::Sum, sum),
        (Op::Mean, mean),
        (Op::Max, max),
        (Op::Min, min),
        (Op::Argmax, argmax),
    ];
    for (op, f) in refs {
        if op == Op::Argmax && axes.len() > 1 {
            continue;
        }
        let want = reduce_ref(&xv, &xshape, &norm, f);
        for keepdims in [false, true] {
            let what = format!("{op} {shape:?} axes {axes:?} keepdims {keepdims} flip {flip}");
            let r = call_t(op, &[Any::from(&x), axes_any(axes), Any::from(keepdims)]);
            let want_shape: Vec<i64> = (0..xshape.len())
                .filter_map(|i| match (norm.contains(&i), keepdims) {
                    (false, _) => Some(xshape[i]),
                    (true, true) => Some(1),
                    _ => None,
                })
                .collect();
            assert_eq!(r.shape(), want_shape, "{what}");
            if op == Op::Argmax {
                let got: Vec<f64> = read::<i64>(&r).iter().map(|&i| i as f64).collect();
                assert_eq!(got, want, "{what}");
            } else if matches!(op, Op::Sum | Op::Mean) {
                let abs = reduce_ref(&xv, &xshape, &norm, abs_of(f));
                assert_sum_close(&read::<T>(&r), &want, &abs, &what);
            } else {
                assert_close(&read::<T>(&r), &want, &what);
            }
        }
    }
}

fn reductions<T: El>() {
    check_reductions::<T>(&[3, 5, 7], &[-1], false);
    check_reductions::<T>(&[3, 5, 7], &[0], false);
    check_reductions::<T>(&[3, 5, 7], &[1], true);
    check_reductions::<T>(&[3, 5, 7], &[0, 2], false);
    check_reductions::<T>(&[3, 5, 7], &[0, 2], true);
    check_reductions::<T>(&[6, 1, 9], &[0, 1], false);
    check_reductions::<T>(&[129, 33], &[0], false);
}

#[test]
fn reductions_on_any_axes_float32() {
    reductions::<f32>();
}

#[test]
fn reductions_on_any_axes_float64() {
    reductions::<f64>();
}

#[test]
fn reductions_on_any_axes_float16() {
    reductions::<f16>();
}

#[test]
fn reductions_on_any_axes_bfloat16() {
    reductions::<bf16>();
}

#[test]
fn full_reductions_threaded_and_axis_none() {
    // Large enough for the threaded one-output path, with a row of leftovers.
    let n = 300_007;
    let (x, xv) = rand_tensor::<f32>(&[n], 3, -1.0, 1.0);
    let r = call_t(Op::Sum, &[Any::from(&x)]);
    assert_eq!(r.shape(), [0i64; 0]);
    assert_close(&read::<f32>(&r), &[sum(&xv)], "sum all");
    let r = call_t(Op::Mean, &[Any::from(&x), Any::none(), Any::from(true)]);
    assert_eq!(r.shape(), [1]);
    assert_close(&read::<f32>(&r), &[mean(&xv)], "mean all keepdims");
    let r = call_t(Op::Argmax, &[Any::from(&x)]);
    assert_eq!(read::<i64>(&r), [argmax(&xv) as i64]);
    // A 2-D tensor flattened, and a full reduction of a transposed view (several runs).
    let (m, mv) = rand_tensor::<f32>(&[700, 501], 4, -1.0, 1.0);
    let mt = m.as_strided(&[501, 700], &[1, 501], 0).unwrap();
    let tv: Vec<f64> = read::<f32>(&mt).iter().map(|&v| v as f64).collect();
    assert_close(
        &read::<f32>(&call_t(Op::Max, &[Any::from(&mt)])),
        &[max(&mv)],
        "max",
    );
    assert_eq!(
        read::<i64>(&call_t(Op::Argmax, &[Any::from(&mt)])),
        [argmax(&tv) as i64]
    );
    // Many outputs, threaded, both walks.
    for axis in [0i64, 1] {
        let want = reduce_ref(&mv, &[700, 501], &[axis as usize], sum);
        let abs = reduce_ref(&mv, &[700, 501], &[axis as usize], abs_of(sum));
        let got = read::<f32>(&call_t(Op::Sum, &[Any::from(&m), Any::from(axis)]));
        assert_sum_close(&got, &want, &abs, &format!("sum axis {axis}"));
    }
}

#[test]
fn reductions_follow_torch_on_nan_ties_and_empty_axes() {
    let x = make(&[1.0f32, f32::NAN, 3.0, 3.0, 2.0, 3.0], &[2, 3]);
    assert!(read::<f32>(&call_t(Op::Max, &[Any::from(&x), Any::from(1i64)]))[0].is_nan());
    assert_eq!(
        read::<f32>(&call_t(Op::Max, &[Any::from(&x), Any::from(1i64)]))[1],
        3.0
    );
    assert!(read::<f32>(&call_t(Op::Min, &[Any::from(&x)]))[0].is_nan());
    // NaN counts as the largest; among equals the first index.
    assert_eq!(
        read::<i64>(&call_t(Op::Argmax, &[Any::from(&x), Any::from(1i64)])),
        [1, 0]
    );
    assert_eq!(
        read::<i64>(&call_t(Op::Argmax, &[Any::from(&x), Any::from(0i64)])),
        [1, 0, 0]
    );
    let e = make::<f32>(&[], &[3, 0]);
    assert_eq!(
        read::<f32>(&call_t(Op::Sum, &[Any::from(&e), Any::from(1i64)])),
        [0.0; 3]
    );
    assert!(
        read::<f32>(&call_t(Op::Mean, &[Any::from(&e), Any::from(1i64)]))
            .iter()
            .all(|v| v.is_nan())
    );
    assert_eq!(
        call_t(Op::Sum, &[Any::from(&e), Any::from(0i64)]).shape(),
        [0]
    );
    for op in [Op::Max, Op::Min, Op::Argmax] {
        let err = call(op, &[Any::from(&e), Any::from(1i64)]).unwrap_err();
        assert_eq!(err.kind(), "ValueError");
        assert!(
            err.message().contains("cannot reduce over zero elements"),
            "{}",
            err.message()
        );
    }
    // 0-d: axis 0 / -1 reduce the one element.
    let s = make(&[2.5f32], &[]);
    assert_eq!(
        read::<f32>(&call_t(Op::Sum, &[Any::from(&s), Any::from(-1i64)])),
        [2.5]
    );
    assert_eq!(read::<i64>(&call_t(Op::Argmax, &[Any::from(&s)])), [0]);
}

#[test]
fn reduction_arguments_are_checked() {
    let x = make(&[1.0f32; 6], &[2, 3]);
    let cases: [(Vec<Any>, &str, &str); 6] = [
        (
            vec![Any::from(2i64)],
            "IndexError",
            "axis 2 is out of range for a 2-d tensor",
        ),
        (
            vec![axes_any(&[0, -2])],
            "ValueError",
            "axis -2 is repeated in [0, -2]",
        ),
        (
            vec![Any::from(Array::new(vec![]))],
            "ValueError",
            "axis (argument #1) is an empty tuple",
        ),
        (
            vec![Any::from(true)],
            "TypeError",
            "axis (argument #1) must be an int, a tuple of ints or None, got bool",
        ),
        (
            vec![Any::from(0i64), Any::from("yes")],
            "TypeError",
            "keepdims (argument #2) must be a bool",
        ),
        (
            vec![Any::from(0i64), Any::from(false), Any::from(1i64)],
            "TypeError",
            "out (argument #3) must be a tensor",
        ),
    ];
    for (extra, kind, text) in cases {
        let mut args = vec![Any::from(&x)];
        args.extend(extra);
        let e = call(Op::Sum, &args).unwrap_err();
        assert_eq!(e.kind(), kind, "{}", e.message());
        assert!(e.message().contains(text), "{}", e.message());
    }
    let e = call(Op::Argmax, &[Any::from(&x), axes_any(&[0, 1])]).unwrap_err();
    assert!(
        e.message().contains("must be one axis or None"),
        "{}",
        e.message()
    );
    // argmax writes int64; a float32 out is refused.
    let bad = make(&[0.0f32; 2], &[2]);
    let e = call(
        Op::Argmax,
        &[Any::from(&x), Any::from(1i64), Any::from(&bad)],
    )
    .unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(
        e.message()
            .contains("the result is int64 but out (argument #2) is float32"),
        "{}",
        e.message()
    );
    let good = make(&[0i64; 2], &[2]);
    call(
        Op::Argmax,
        &[Any::from(&x), Any::from(1i64), Any::from(&good)],
    )
    .unwrap();
    // keepdims with an out of the kept shape; out strided.
    let (y, yv) = rand_tensor::<f32>(&[4, 6], 9, -1.0, 1.0);
    let buf = make(&[0.0f32; 8], &[8]);
    let out = buf.as_strided(&[4, 1], &[2, 1], 0).unwrap();
    assert!(call(
        Op::Sum,
        &[
            Any::from(&y),
            Any::from(1i64),
            Any::from(true),
            Any::from(&out)
        ]
    )
    .unwrap()
    .is_none());
    assert_close(
        &read::<f32>(&out),
        &reduce_ref(&yv, &[4, 6], &[1], sum),
        "keepdims out",
    );
}

fn layer_norm_ref(
    x: &[f64],
    len: usize,
    w: Option<&[f64]>,
    b: Option<&[f64]>,
    eps: f64,
    rms: bool,
) -> Vec<f64> {
    x.chunks(len)
        .flat_map(|row| {
            let m = if rms { 0.0 } else { mean(row) };
            let var = row.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / len as f64;
            let r = 1.0 / (var + eps).sqrt();
            row.iter()
                .enumerate()
                .map(|(j, v)| (v - m) * r * w.map_or(1.0, |w| w[j]) + b.map_or(0.0, |b| b[j]))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn norms<T: El>() {
    for (rows, len) in [(5, 7), (3, 64), (2, 1000)] {
        let (x, xv) = rand_tensor::<T>(&[rows, len], 11, -3.0, 5.0);
        let (w, wv) = rand_tensor::<T>(&[len], 12, 0.5, 1.5);
        let (b, bv) = rand_tensor::<T>(&[len], 13, -1.0, 1.0);
        let l = len as usize;
        let what = format!("{rows}x{len}");
        let got = call_t(
            Op::LayerNorm,
            &[Any::from(&x), Any::from(&w), Any::from(&b)],
        );
        let want = layer_norm_ref(&xv, l, Some(&wv), Some(&bv), 1e-5, false);
        assert_close(&read::<T>(&got), &want, &format!("layer_norm {what}"));
        let got = call_t(
            Op::LayerNorm,
            &[Any::from(&x), Any::none(), Any::none(), Any::from(1e-3)],
        );
        let want = layer_norm_ref(&xv, l, None, None, 1e-3, false);
        assert_close(&read::<T>(&got), &want, &format!("layer_norm plain {what}"));
        let got = call_t(Op::RmsNorm, &[Any::from(&x), Any::from(&w)]);
        let eps = rffi_kernels::dtype_epsilon(T::DT);
        let want = layer_norm_ref(&xv, l, Some(&wv), None, eps, true);
        assert_close(&read::<T>(&got), &want, &format!("rms_norm {what}"));
        // In place, and into a strided destination.
        let y = make::<T>(&read::<T>(&x), &[rows, len]);
        let want = layer_norm_ref(&xv, l, None, None, 1e-6, true);
        assert!(call(
            Op::RmsNorm,
            &[Any::from(&y), Any::none(), Any::from(1e-6), Any::from(&y)]
        )
        .unwrap()
        .is_none());
        assert_close(&read::<T>(&y), &want, &format!("rms_norm in place {what}"));
    }
}

#[test]
fn norms_all_float_dtypes() {
    norms::<f32>();
    norms::<f64>();
    norms::<f16>();
    norms::<bf16>();
}

#[test]
fn norm_arguments_are_checked() {
    let x = make(&[1.0f32; 6], &[2, 3]);
    let w = make(&[1.0f32; 2], &[2]);
    let e = call(Op::LayerNorm, &[Any::from(&x), Any::from(&w)]).unwrap_err();
    assert_eq!(
        e.message(),
        "kernels.layer_norm: weight (argument #1) has shape [2] but x's last axis has 3 \
         elements (it must have shape [3])"
    );
    let e = call(Op::RmsNorm, &[Any::from(&x), Any::none(), Any::from("big")]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(e
        .message()
        .contains("eps (argument #2) must be a number or None"));
    let s = make(&[1.0f32], &[]);
    let e = call(Op::LayerNorm, &[Any::from(&s)]).unwrap_err();
    assert!(e.message().contains("is 0-d"), "{}", e.message());
}

#[test]
fn softmax_on_any_axis() {
    let (x, xv) = rand_tensor::<f32>(&[4, 6, 5], 21, -5.0, 5.0);
    for axis in [0i64, 1, -1] {
        let a = (axis + 3) as usize % 3;
        // The reference: move the axis last, softmax rows, move back.
        let shape = [4usize, 6, 5];
        let mut want = vec![0.0; xv.len()];
        let strides = [30usize, 5, 1];
        let others: Vec<usize> = (0..3).filter(|&d| d != a).collect();
        for i in 0..shape[others[0]] {
            for j in 0..shape[others[1]] {
                let base = i * strides[others[0]] + j * strides[others[1]];
                let idx: Vec<usize> = (0..shape[a]).map(|k| base + k * strides[a]).collect();
                let m = idx.iter().map(|&p| xv[p]).fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = idx.iter().map(|&p| (xv[p] - m).exp()).sum();
                for &p in &idx {
                    want[p] = (xv[p] - m).exp() / s;
                }
            }
        }
        let got = call_t(Op::Softmax, &[Any::from(&x), Any::from(axis)]);
        assert_close(&read::<f32>(&got), &want, &format!("softmax axis {axis}"));
    }
}

#[test]
fn gelu_tanh_form() {
    let (x, xv) = rand_tensor::<f32>(&[1001], 31, -8.0, 8.0);
    let k = (2.0 / std::f64::consts::PI).sqrt();
    let want: Vec<f64> = xv
        .iter()
        .map(|&v| 0.5 * v * (1.0 + (k * (v + 0.044715 * v * v * v)).tanh()))
        .collect();
    let got = call_t(Op::Gelu, &[Any::from(&x), Any::from("tanh")]);
    assert_close(&read::<f32>(&got), &want, "gelu tanh");
    let (xb, xbv) = rand_tensor::<bf16>(&[257], 32, -6.0, 6.0);
    let want: Vec<f64> = xbv
        .iter()
        .map(|&v| 0.5 * v * (1.0 + (k * (v + 0.044715 * v * v * v)).tanh()))
        .collect();
    let got = call_t(Op::Gelu, &[Any::from(&xb), Any::from("tanh")]);
    assert_close(&read::<bf16>(&got), &want, "gelu tanh bf16");
    let e = call(Op::Gelu, &[Any::from(&x), Any::from("fast")]).unwrap_err();
    assert_eq!(
        e.message(),
        "kernels.gelu: approximate (argument #1) must be 'none' or 'tanh', got 'fast'"
    );
    // 'none' is the erf form; out after the form.
    let out = make(&[0.0f32; 1001], &[1001]);
    call(
        Op::Gelu,
        &[Any::from(&x), Any::from("none"), Any::from(&out)],
    )
    .unwrap();
    let plain = call_t(Op::Gelu, &[Any::from(&x)]);
    assert_eq!(read::<f32>(&out), read::<f32>(&plain));
}

#[test]
fn binary_ops_broadcast() {
    let (a, av) = rand_tensor::<f32>(&[4, 3, 5], 41, -2.0, 2.0);
    let (b, bv) = rand_tensor::<f32>(&[3, 1], 42, 0.5, 2.0);
    let r = call_t(Op::Sub, &[Any::from(&a), Any::from(&b)]);
    assert_eq!(r.shape(), [4, 3, 5]);
    let want: Vec<f64> = (0..60).map(|i| av[i] - bv[(i / 5) % 3]).collect();
    assert_close(&read::<f32>(&r), &want, "[4,3,5] - [3,1]");
    // Both sides broadcast; a 0-d tensor; a transposed operand.
    let (c, cv) = rand_tensor::<f32>(&[5], 43, -1.0, 1.0);
    let r = call_t(Op::Mul, &[Any::from(&b), Any::from(&c)]);
    assert_eq!(r.shape(), [3, 5]);
    let want: Vec<f64> = (0..15).map(|i| bv[i / 5] * cv[i % 5]).collect();
    assert_close(&read::<f32>(&r), &want, "[3,1] * [5]");
    let s = make(&[4.0f32], &[]);
    let r = call_t(Op::Div, &[Any::from(&s), Any::from(&c)]);
    let want: Vec<f64> = cv.iter().map(|v| 4.0 / v).collect();
    assert_close(&read::<f32>(&r), &want, "0-d / [5]");
    let (m, mv) = rand_tensor::<f32>(&[5, 3], 44, -1.0, 1.0);
    let mt = m.as_strided(&[3, 5], &[1, 3], 0).unwrap();
    let r = call_t(Op::Add, &[Any::from(&mt), Any::from(&c)]);
    let want: Vec<f64> = (0..15)
        .map(|i| mv[(i % 5) * 3 + i / 5] + cv[i % 5])
        .collect();
    assert_close(&read::<f32>(&r), &want, "[5,3].T + [5]");
    // In place into the larger operand.
    let y = make(&read::<f32>(&a), &[4, 3, 5]);
    call(Op::Add, &[Any::from(&y), Any::from(&b), Any::from(&y)]).unwrap();
    let want: Vec<f64> = (0..60).map(|i| av[i] + bv[(i / 5) % 3]).collect();
    assert_close(&read::<f32>(&y), &want, "in place broadcast");
    // Zero-size broadcasting and a mismatch.
    let e0 = make::<f32>(&[], &[0, 1]);
    assert_eq!(
        call_t(Op::Add, &[Any::from(&e0), Any::from(&c)]).shape(),
        [0, 5]
    );
    let e = call(
        Op::Add,
        &[Any::from(&a), Any::from(&c.slice(0, 0, 4).unwrap())],
    )
    .unwrap_err();
    assert!(
        e.message().contains("shapes do not broadcast"),
        "{}",
        e.message()
    );
    // The broadcast operand cannot be the destination.
    let e = call(Op::Add, &[Any::from(&b), Any::from(&a), Any::from(&b)]).unwrap_err();
    assert!(e
        .message()
        .contains("has shape [3, 1] but the result has shape [4, 3, 5]"));
}

#[test]
fn explain_names_the_walk() {
    let (x, _) = rand_tensor::<f32>(&[300, 400], 51, -1.0, 1.0);
    let reg = reg();
    fn v(args: &[Any]) -> Vec<rffi_core::AnyView<'_>> {
        args.iter().map(Any::view).collect()
    }
    let e = reg
        .explain(Op::Sum, &v(&[Any::from(&x), Any::from(0i64)]))
        .unwrap();
    assert_eq!(e["backend"], "cpu");
    assert_eq!(e["variant"]["kernel"], "reduce: columns");
    assert_eq!(e["out_shape"][0], 400);
    let e = reg
        .explain(Op::Sum, &v(&[Any::from(&x), Any::from(1i64)]))
        .unwrap();
    assert_eq!(e["variant"]["kernel"], "reduce: rows");
    assert!(e["variant"]["config"]
        .as_str()
        .unwrap()
        .starts_with("default.json reduce[0]"));
    let e = reg.explain(Op::Exp, &v(&[Any::from(&x)])).unwrap();
    assert_eq!(e["variant"]["kernel"], "cpu exp");
    // Explaining checks the call like running it.
    let err = reg
        .explain(Op::Sum, &v(&[Any::from(&x), Any::from(5i64)]))
        .unwrap_err();
    assert_eq!(err.kind(), "IndexError");
}
