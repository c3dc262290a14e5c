//! The CUDA kernels of every shape class against the CPU backend (itself checked against
//! float64 references): reductions on any axes (rows, columns, chunked), broadcasting, softmax of
//! every row-length class, layer_norm / rms_norm, gelu's two forms and exp; odd sizes,
//! misaligned base pointers (one element past an aligned buffer), strided and transposed inputs,
//! zero-size inputs. Skipped, saying why, without a GPU.

#[macro_use]
mod common;

use common::*;
use rffi_core::{Any, Array, DataType, Tensor};
use rffi_kernels::Op;

const F32: DataType = DataType::float(32);
const F16: DataType = DataType::float(16);
const BF16: DataType = DataType::bfloat16();
const FLOATS: [DataType; 3] = [F32, F16, BF16];

/// A host view and the device view with the same layout over a copy of `base`'s elements,
/// `offset` elements from the start.
fn pair(base: &Tensor, shape: &[i64], strides: &[i64], offset: usize) -> (Tensor, DevTensor) {
    let esize = base.dtype().bytes_per_element() as u64;
    let host = base
        .as_strided(shape, strides, offset as u64 * esize)
        .unwrap();
    (host, upload_view(base, shape, strides, offset))
}

fn compact(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1].max(1);
    }
    s
}

/// A compact tensor of `shape` starting `offset` elements into a fresh buffer (misaligned for
/// offset 1), on both sides.
fn fresh(
    shape: &[i64],
    dt: DataType,
    seed: u64,
    lo: f64,
    hi: f64,
    offset: usize,
) -> (Tensor, DevTensor) {
    let n = shape.iter().product::<i64>().max(0) + offset as i64;
    let base = random(&[n], dt, seed, lo, hi);
    pair(&base, shape, &compact(shape), offset)
}

/// Runs `op` on the host views (CPU backend) and the device views (CUDA), and compares.
fn same(op: Op, inputs: &[&(Tensor, DevTensor)], extra: &[Any], what: &str) {
    let mut cpu: Vec<Any> = inputs.iter().map(|p| Any::from(&p.0)).collect();
    cpu.extend(extra.iter().cloned());
    let mut gpu: Vec<Any> = inputs.iter().map(|p| Any::from(&p.1.tensor)).collect();
    gpu.extend(extra.iter().cloned());
    let want = registry()
        .call(op, &cpu.iter().map(Any::view).collect::<Vec<_>>())
        .unwrap_or_else(|e| panic!("{what}: cpu: {}", e.message()))
        .try_as::<Tensor>()
        .unwrap();
    let got = call(op, &gpu)
        .unwrap_or_else(|e| panic!("{what}: gpu: {}", e.message()))
        .try_as::<Tensor>()
        .unwrap();
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_close(&download(&got), &want, what);
}

fn axes(a: &[i64]) -> Any {
    Any::from(Array::new(a.iter().map(|&v| Any::from(v)).collect()))
}

#[test]
fn reductions_on_any_axes() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    for dt in FLOATS {
        for offset in [0, 1] {
            // Positive values for sum and mean (their error is relative to the sum of |x|).
            let pos = fresh(&[37, 129], dt, 1, 0.5, 3.0, offset);
            let mixed = fresh(&[37, 129], dt, 2, -4.0, 4.0, offset);
            let three = fresh(&[3, 5, 7], dt, 3, 0.5, 3.0, offset);
            let cases: Vec<(Vec<Any>, &str)> = vec![
                (vec![], "all"),
                (vec![Any::from(-1i64)], "last"),
                (vec![Any::from(0i64)], "first"),
                (vec![Any::from(1i64), Any::from(true)], "last keepdims"),
                (vec![axes(&[0, 1])], "both"),
            ];
            for (extra, what) in &cases {
                for op in [Op::Sum, Op::Mean] {
                    same(op, &[&pos], extra, &format!("{op} {what} +{offset}"));
                    same(
                        op,
                        &[&three],
                        &[axes(&[0, 2])],
                        &format!("{op} (0, 2) +{offset}"),
                    );
                }
                for op in [Op::Max, Op::Min, Op::Argmax] {
                    if op == Op::Argmax && *what == "both" {
                        continue;
                    }
                    same(op, &[&mixed], extra, &format!("{op} {what} +{offset}"));
                }
            }
        }
        // Transposed input: rows become columns and back.
        let base = random(&[129 * 37], dt, 4, -4.0, 4.0);
        let t = pair(&base, &[37, 129], &[1, 37], 0);
        for op in [Op::Max, Op::Argmax, Op::Min] {
            same(
                op,
                &[&t],
                &[Any::from(0i64)],
                &format!("{op} transposed axis 0"),
            );
            same(
                op,
                &[&t],
                &[Any::from(1i64)],
                &format!("{op} transposed axis 1"),
            );
            same(op, &[&t], &[], &format!("{op} transposed all"));
        }
        let tp = {
            let base = random(&[129 * 37], dt, 5, 0.5, 3.0);
            pair(&base, &[37, 129], &[1, 37], 0)
        };
        same(Op::Sum, &[&tp], &[], "sum transposed all");
        same(Op::Mean, &[&tp], &[Any::from(1i64)], "mean transposed last");
    }
}

#[test]
fn long_reductions_split_into_chunks() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    for dt in FLOATS {
        // One output (the full-vector path), a few long rows, a few long columns.
        let v = fresh(&[1_000_003], dt, 6, 0.5, 1.5, 1);
        same(Op::Sum, &[&v], &[], "sum 1M +1");
        same(Op::Mean, &[&v], &[], "mean 1M +1");
        let m = fresh(&[1_000_003], dt, 7, -3.0, 3.0, 0);
        for op in [Op::Max, Op::Min, Op::Argmax] {
            same(op, &[&m], &[], &format!("{op} 1M"));
        }
        let rows = fresh(&[3, 300_007], dt, 8, 0.5, 1.5, 1);
        same(Op::Sum, &[&rows], &[Any::from(-1i64)], "sum 3 x 300007");
        let rows_m = fresh(&[3, 300_007], dt, 9, -3.0, 3.0, 0);
        same(
            Op::Argmax,
            &[&rows_m],
            &[Any::from(1i64)],
            "argmax 3 x 300007",
        );
        let cols = fresh(&[100_003, 7], dt, 10, 0.5, 1.5, 0);
        same(
            Op::Mean,
            &[&cols],
            &[Any::from(0i64)],
            "mean 100003 x 7 axis 0",
        );
        // Columns in 16-byte packs, at least 32 packs of them (blocks of 32 packs x 8 slices of
        // the rows, merged in shared memory), the last block partly full, chunked rows.
        let wide = fresh(&[5003, 360], dt, 12, 0.5, 1.5, 0);
        let wide_m = fresh(&[5003, 360], dt, 13, -3.0, 3.0, 0);
        for op in [Op::Sum, Op::Mean] {
            same(
                op,
                &[&wide],
                &[Any::from(0i64)],
                &format!("{op} 5003 x 360 axis 0"),
            );
        }
        for op in [Op::Max, Op::Argmax] {
            same(
                op,
                &[&wide_m],
                &[Any::from(0i64)],
                &format!("{op} 5003 x 360 axis 0"),
            );
        }
        let cols_m = fresh(&[100_003, 7], dt, 11, -3.0, 3.0, 1);
        for op in [Op::Max, Op::Argmax] {
            same(
                op,
                &[&cols_m],
                &[Any::from(0i64)],
                &format!("{op} 100003 x 7 axis 0"),
            );
        }
    }
    // Ties (bfloat16 has few values) and NaN: argmax takes the first, NaN first of all.
    let base = Tensor::from_slice(
        &[
            1.0f32,
            3.0,
            3.0,
            f32::NAN,
            2.0,
            3.0,
            f32::NAN,
            0.0,
            5.0,
            5.0,
            5.0,
            5.0,
        ],
        &[12],
    )
    .unwrap();
    let x = pair(&base, &[3, 4], &[4, 1], 0);
    for op in [Op::Argmax, Op::Max, Op::Min] {
        same(op, &[&x], &[Any::from(1i64)], &format!("{op} ties and NaN"));
        same(
            op,
            &[&x],
            &[Any::from(0i64)],
            &format!("{op} ties and NaN axis 0"),
        );
    }
}

#[test]
fn zero_size_reductions_and_ops() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    let e = fresh(&[0, 5], F32, 12, 0.0, 1.0, 0);
    same(Op::Sum, &[&e], &[Any::from(0i64)], "sum over an empty axis");
    same(
        Op::Mean,
        &[&e],
        &[Any::from(0i64)],
        "mean over an empty axis",
    );
    same(Op::Sum, &[&e], &[Any::from(1i64)], "sum to an empty output");
    same(Op::Softmax, &[&e], &[], "softmax of nothing");
    same(Op::LayerNorm, &[&e], &[], "layer_norm of nothing");
    same(Op::Gelu, &[&e], &[Any::from("tanh")], "gelu of nothing");
    let err = call(Op::Max, &[Any::from(&e.1.tensor), Any::from(0i64)]).unwrap_err();
    assert!(
        err.message().contains("cannot reduce over zero elements"),
        "{}",
        err.message()
    );
}

#[test]
fn broadcasting_binary_ops() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    for dt in [F32, BF16, DataType::int(32)] {
        let a = fresh(&[4, 3, 5], dt, 20, -2.0, 2.0, 0);
        let b = fresh(&[3, 1], dt, 21, 0.5, 2.0, 1);
        let c = fresh(&[5], dt, 22, 0.5, 2.0, 0);
        let s = fresh(&[], dt, 23, 1.0, 2.0, 0);
        for op in [Op::Add, Op::Sub, Op::Mul] {
            same(op, &[&a, &b], &[], &format!("{op} [4,3,5] [3,1]"));
            same(op, &[&b, &c], &[], &format!("{op} [3,1] [5]"));
            same(op, &[&s, &a], &[], &format!("{op} 0-d [4,3,5]"));
        }
        // A transposed operand with a row vector; a large broadcast (vector and 32-bit paths).
        let base = random(&[5 * 3], dt, 24, -2.0, 2.0);
        let t = pair(&base, &[3, 5], &[1, 3], 0);
        same(Op::Add, &[&t, &c], &[], "transposed + row");
        // Transposed operands over partial 32 x 32 tiles (the tiled form): both
        // transposed, one element off alignment, and a transposed one against a compact one.
        let tb = random(&[67 * 45], dt, 31, -2.0, 2.0);
        let ta = pair(&tb, &[45, 67], &[1, 45], 0);
        let tb1 = pair(&tb, &[45, 66], &[1, 45], 1);
        let full = fresh(&[45, 67], dt, 32, -2.0, 2.0, 0);
        same(Op::Add, &[&ta, &ta], &[], "a.T + a.T [45,67]");
        same(Op::Sub, &[&full, &ta], &[], "compact - a.T [45,67]");
        same(Op::Mul, &[&tb1, &tb1], &[], "a.T * a.T [45,66] +1");
        let big = fresh(&[1001, 1027], dt, 25, -2.0, 2.0, 0);
        let row = fresh(&[1027], dt, 26, -2.0, 2.0, 0);
        let col = fresh(&[1001, 1], dt, 27, -2.0, 2.0, 1);
        same(Op::Mul, &[&big, &row], &[], "[1001,1027] * [1027]");
        same(Op::Sub, &[&col, &big], &[], "[1001,1] - [1001,1027]");
        // Rows of whole packs: the vectorized broadcast kernel (a row, a column, one value),
        // also with the broadcast operand one element off alignment.
        for off in [0, 1] {
            let m = fresh(&[129, 1024], dt, 27, -2.0, 2.0, 0);
            let r = fresh(&[1024], dt, 28, -2.0, 2.0, off);
            let c = fresh(&[129, 1], dt, 29, -2.0, 2.0, off);
            let one = fresh(&[], dt, 30, -2.0, 2.0, off);
            same(Op::Add, &[&m, &r], &[], &format!("[129,1024] + row +{off}"));
            same(Op::Mul, &[&c, &m], &[], &format!("col * [129,1024] +{off}"));
            same(
                Op::Sub,
                &[&m, &one],
                &[],
                &format!("[129,1024] - 0-d +{off}"),
            );
            same(Op::Add, &[&c, &r], &[], &format!("col + row +{off}"));
        }
    }
    let a = fresh(&[4, 3, 5], F32, 28, -2.0, 2.0, 0);
    let b = fresh(&[3, 1], F32, 29, 0.5, 2.0, 0);
    same(Op::Div, &[&a, &b], &[], "div broadcast");
}

#[test]
fn softmax_every_row_length_class() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    for dt in FLOATS {
        // (rows, len): group, warp, block, online and split variants; 140 rows of 50257 are
        // more than the SMs (online), 3 rows split.
        let shapes: &[(i64, i64)] = &[
            (513, 1),
            (513, 7),
            (257, 32),
            (257, 100),
            (257, 256),
            (65, 1000),
            (65, 1024),
            (33, 4096),
            (5, 32000),
            (3, 50257),
            (140, 50257),
            (2, 128256),
            (2, 262144),
        ];
        for &(rows, len) in shapes {
            for offset in [0, 1] {
                let x = fresh(&[rows, len], dt, 30 + len as u64, -8.0, 8.0, offset);
                same(
                    Op::Softmax,
                    &[&x],
                    &[],
                    &format!("softmax {rows} x {len} +{offset}"),
                );
            }
        }
        // Along the first axis (strided rows) and a transposed input.
        let x = fresh(&[300, 7], dt, 31, -8.0, 8.0, 0);
        same(Op::Softmax, &[&x], &[Any::from(0i64)], "softmax axis 0");
        let base = random(&[64 * 33], dt, 32, -8.0, 8.0);
        let t = pair(&base, &[33, 64], &[1, 33], 0);
        same(Op::Softmax, &[&t], &[], "softmax transposed");
    }
    // Masked entries and a fully masked row (NaN, as in torch).
    let mut v = vec![0.5f32; 4 * 300];
    for (i, x) in v.iter_mut().enumerate() {
        if i % 3 == 0 || i / 300 == 2 {
            *x = f32::NEG_INFINITY;
        }
    }
    let base = Tensor::from_slice(&v, &[1200]).unwrap();
    let x = pair(&base, &[4, 300], &[300, 1], 0);
    same(Op::Softmax, &[&x], &[], "masked softmax");
}

#[test]
fn norms_every_row_length_class() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    for dt in FLOATS {
        for &(rows, len) in &[
            (33, 7),
            (65, 256),
            (65, 1024),
            (17, 4096),
            (9, 4097),
            (5, 16384),
            (3, 65536),
        ] {
            for offset in [0, 1] {
                let x = fresh(&[rows, len], dt, 40, -3.0, 5.0, offset);
                let w = fresh(&[len], dt, 41, 0.5, 1.5, offset);
                let b = fresh(&[len], dt, 42, -1.0, 1.0, 0);
                let what = format!("{rows} x {len} +{offset}");
                same(
                    Op::LayerNorm,
                    &[&x, &w, &b],
                    &[],
                    &format!("layer_norm {what}"),
                );
                same(
                    Op::LayerNorm,
                    &[&x],
                    &[Any::none(), Any::none(), Any::from(1e-3)],
                    &format!("layer_norm plain {what}"),
                );
                same(Op::RmsNorm, &[&x, &w], &[], &format!("rms_norm {what}"));
                same(
                    Op::RmsNorm,
                    &[&x],
                    &[Any::none(), Any::from(1e-6)],
                    &format!("rms_norm plain {what}"),
                );
            }
        }
        // A strided weight and a transposed input.
        let x = fresh(&[16, 64], dt, 43, -3.0, 5.0, 0);
        let wb = random(&[128], dt, 44, 0.5, 1.5);
        let w = pair(&wb, &[64], &[2], 0);
        same(Op::RmsNorm, &[&x, &w], &[], "rms_norm strided weight");
        let base = random(&[64 * 16], dt, 45, -3.0, 5.0);
        let t = pair(&base, &[16, 64], &[1, 16], 0);
        same(Op::LayerNorm, &[&t], &[], "layer_norm transposed");
    }
}

#[test]
fn gelu_forms_and_exp() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    for dt in [F32, F16, BF16, DataType::float(64)] {
        for offset in [0, 1] {
            let x = fresh(&[1_000_003], dt, 50, -10.0, 10.0, offset);
            same(Op::Gelu, &[&x], &[], &format!("gelu +{offset}"));
            same(
                Op::Gelu,
                &[&x],
                &[Any::from("tanh")],
                &format!("gelu tanh +{offset}"),
            );
            let e = fresh(&[1_000_003], dt, 51, -20.0, 10.0, offset);
            same(Op::Exp, &[&e], &[], &format!("exp +{offset}"));
        }
        let base = random(&[77 * 55], dt, 52, -6.0, 6.0);
        let t = pair(&base, &[55, 77], &[1, 55], 0);
        same(
            Op::Gelu,
            &[&t],
            &[Any::from("tanh")],
            "gelu tanh transposed",
        );
    }
}
