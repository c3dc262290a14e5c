//! The built-in shard functions, destination-passing like every shard step (`func(input, *extra,
//! output)`), on contiguous CPU tensors of any dtype (they move bytes):
//!
//! - `rffi.shard.split(input, num_shards[, axis], output)`: `output[s]` is slice `s` of `num_shards`
//!   equal slices of `input` along `axis` (default 0); `output` has shape
//!   `[num_shards, *input.shape]` with `input.shape[axis] / num_shards` at `axis`.
//! - `rffi.shard.qkv(input, num_shards, q_heads, kv_heads, output)`: `input`'s leading dimension
//!   holds `q_heads + 2 * kv_heads` heads (query, key, value blocks); `output[s]` is shard `s`'s
//!   query heads, then its key heads, then its value heads (TVM's `shard_qkv_0`). `output` has
//!   `num_shards` as its leading dimension and as many elements as `input`.

use super::plan::Step;
use rffi_core::{register_global_packed, Any, AnyView, DataType, Error, Result, Tensor};

fn check_tensor(t: &Tensor, func: &str, what: &str) -> Result<()> {
    if t.device().type_name() != "cpu" || !t.is_contiguous() {
        return Err(Error::value_error(format!(
            "{func}: the {what} must be a contiguous CPU tensor"
        )));
    }
    Ok(())
}

fn bytes(t: &Tensor) -> &[u8] {
    // SAFETY: a contiguous tensor's `nbytes` bytes start at `element_ptr` and live as long as `t`.
    unsafe { std::slice::from_raw_parts(t.element_ptr().cast::<u8>(), t.nbytes()) }
}

fn bytes_mut(t: &mut Tensor) -> Result<&mut [u8]> {
    t.data_ptr_mut()?;
    // SAFETY: as in `bytes`; the tensor is writable (checked above) and is not the input
    // (`same_dtype` checks), so no slice this module makes overlaps it.
    Ok(unsafe { std::slice::from_raw_parts_mut(t.element_ptr().cast::<u8>(), t.nbytes()) })
}

fn int_arg(a: &AnyView<'_>, func: &str, i: usize, name: &str) -> Result<i64> {
    a.try_as::<i64>().map_err(|_| {
        Error::type_error(format!(
            "{func} argument #{i} ({name}): expected an int but got {}",
            a.type_name()
        ))
    })
}

fn tensor_arg(a: &AnyView<'_>, func: &str, i: usize) -> Result<Tensor> {
    a.try_as::<Tensor>().map_err(|_| {
        Error::type_error(format!(
            "{func} argument #{i}: expected a Tensor but got {}",
            a.type_name()
        ))
    })
}

fn positive(n: i64, func: &str, name: &str) -> Result<usize> {
    usize::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| Error::value_error(format!("{func}: {name} must be positive, got {n}")))
}

fn same_dtype(input: &Tensor, out: &Tensor, func: &str) -> Result<()> {
    if input.same_as(out) {
        return Err(Error::value_error(format!(
            "{func}: the output must be another tensor than the input"
        )));
    }
    if input.dtype() != out.dtype() {
        return Err(Error::value_error(format!(
            "{func}: output dtype {} differs from the input's {}",
            out.dtype(),
            input.dtype()
        )));
    }
    Ok(())
}

/// Which source bytes make up each shard of a built-in step's output (shards are contiguous).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cut {
    /// Shard `s` is, for each of `outer` rows of `row` bytes, the `chunk` bytes at `s * chunk`.
    Split {
        outer: usize,
        row: usize,
        chunk: usize,
    },
    /// Shard `s` is its query heads, then key heads, then value heads (`head` bytes each).
    Qkv {
        head: usize,
        q: usize,
        kv: usize,
        n: usize,
    },
}

impl Cut {
    /// Copies shard `s` of `src` into `dst` (exactly one shard's bytes).
    pub(crate) fn copy_shard(&self, s: usize, src: &[u8], dst: &mut [u8]) {
        match *self {
            Cut::Split { outer, row, chunk } => {
                for o in 0..outer {
                    let from = o * row + s * chunk;
                    dst[o * chunk..(o + 1) * chunk].copy_from_slice(&src[from..from + chunk]);
                }
            }
            Cut::Qkv { head, q, kv, n } => {
                let (qs, kvs) = (q / n, kv / n);
                let mut to = 0;
                for (first, count) in [(s * qs, qs), (q + s * kvs, kvs), (q + kv + s * kvs, kvs)] {
                    let from = first * head;
                    dst[to..to + count * head].copy_from_slice(&src[from..from + count * head]);
                    to += count * head;
                }
            }
        }
    }
}

fn check_dtypes(input: DataType, out: DataType, func: &str) -> Result<usize> {
    if input.bits() % 8 != 0 || input.lanes() != 1 {
        return Err(Error::value_error(format!(
            "{func}: the input's dtype {input} is not a whole number of bytes"
        )));
    }
    if input != out {
        return Err(Error::value_error(format!(
            "{func}: output dtype {out} differs from the input's {input}"
        )));
    }
    Ok(input.bytes_per_element())
}

fn numel(shape: &[i64]) -> usize {
    shape.iter().product::<i64>() as usize
}

/// The cut of `rffi.shard.split` for an input of `shape` and a declared output.
pub(crate) fn split_cut(
    shape: &[i64],
    dtype: DataType,
    n: i64,
    axis: i64,
    out_shape: &[i64],
    out_dtype: DataType,
) -> Result<Cut> {
    const F: &str = "rffi.shard.split";
    let es = check_dtypes(dtype, out_dtype, F)?;
    let n = positive(n, F, "num_shards")?;
    let nd = shape.len() as i64;
    let ax = if axis < 0 { axis + nd } else { axis };
    if ax < 0 || ax >= nd {
        return Err(Error::value_error(format!(
            "{F}: axis {axis} is out of range for an input of shape {shape:?}"
        )));
    }
    let ax = ax as usize;
    let len = shape[ax] as usize;
    if len % n != 0 {
        return Err(Error::value_error(format!(
            "{F}: input dimension {ax} ({len}) does not divide into {n} shards"
        )));
    }
    let mut want = vec![n as i64];
    want.extend_from_slice(shape);
    want[ax + 1] = (len / n) as i64;
    if out_shape != want.as_slice() {
        return Err(Error::value_error(format!(
            "{F}: output shape {out_shape:?} should be {want:?} for input {shape:?}, {n} shards, axis {ax}"
        )));
    }
    let inner = numel(&shape[ax + 1..]) * es;
    Ok(Cut::Split {
        outer: numel(&shape[..ax]),
        row: len * inner,
        chunk: len / n * inner,
    })
}

/// The cut of `rffi.shard.qkv` for an input of `shape` and a declared output.
pub(crate) fn qkv_cut(
    shape: &[i64],
    dtype: DataType,
    n: i64,
    q_heads: i64,
    kv_heads: i64,
    out_shape: &[i64],
    out_dtype: DataType,
) -> Result<Cut> {
    const F: &str = "rffi.shard.qkv";
    let es = check_dtypes(dtype, out_dtype, F)?;
    let n = positive(n, F, "num_shards")?;
    let q = positive(q_heads, F, "q_heads")?;
    let kv = positive(kv_heads, F, "kv_heads")?;
    if q % n != 0 || kv % n != 0 {
        return Err(Error::value_error(format!(
            "{F}: q_heads ({q}) and kv_heads ({kv}) must both divide into {n} shards"
        )));
    }
    let rows = *shape.first().unwrap_or(&0) as usize;
    let heads = q + 2 * kv;
    if shape.is_empty() || rows % heads != 0 {
        return Err(Error::value_error(format!(
            "{F}: input shape {shape:?}: the leading dimension must hold {heads} heads (q_heads + 2 * kv_heads)"
        )));
    }
    if out_shape.first() != Some(&(n as i64)) || numel(out_shape) != numel(shape) {
        return Err(Error::value_error(format!(
            "{F}: output shape {out_shape:?} should lead with {n} and hold {} elements (input {shape:?})",
            numel(shape)
        )));
    }
    Ok(Cut::Qkv {
        head: numel(shape) * es / heads,
        q,
        kv,
        n,
    })
}

/// Runs `cut` for every shard, from `input` into `out`.
fn run(cut: Cut, n: i64, input: &Tensor, out: &Tensor, func: &str) -> Result<()> {
    check_tensor(input, func, "input")?;
    check_tensor(out, func, "output")?;
    same_dtype(input, out, func)?;
    let src = bytes(input);
    let mut out = out.clone();
    let dst = bytes_mut(&mut out)?;
    let per = dst.len() / n as usize;
    for (s, d) in dst.chunks_mut(per.max(1)).enumerate() {
        cut.copy_shard(s, src, d);
    }
    Ok(())
}

/// Splits `input` along `axis` into `n` slices, slice `s` to `out[s]`.
pub fn split(input: &Tensor, n: i64, axis: i64, out: &Tensor) -> Result<()> {
    let cut = split_cut(
        input.shape(),
        input.dtype(),
        n,
        axis,
        out.shape(),
        out.dtype(),
    )?;
    run(cut, n, input, out, "rffi.shard.split")
}

/// Splits a fused QKV weight by heads: shard `s` gets its query, key and value heads, in order.
pub fn qkv(input: &Tensor, n: i64, q_heads: i64, kv_heads: i64, out: &Tensor) -> Result<()> {
    let (shape, dt) = (input.shape(), input.dtype());
    let cut = qkv_cut(shape, dt, n, q_heads, kv_heads, out.shape(), out.dtype())?;
    run(cut, n, input, out, "rffi.shard.qkv")
}

/// The cut of a built-in step applied to an input of `shape` and `dtype`, so the loader can copy
/// one shard straight from the weights (`None`: not a built-in step, or extras of another form).
pub(crate) fn direct_cut(step: &Step, shape: &[i64], dtype: DataType) -> Option<Result<Cut>> {
    let ints: Option<Vec<i64>> = step.extra.iter().map(|v| v.as_i64()).collect();
    let (os, od) = (&step.out_shape[..], step.out_dtype);
    match (step.func.as_str(), ints?.as_slice()) {
        ("rffi.shard.split", [n]) => Some(split_cut(shape, dtype, *n, 0, os, od)),
        ("rffi.shard.split", [n, ax]) => Some(split_cut(shape, dtype, *n, *ax, os, od)),
        ("rffi.shard.qkv", [n, q, kv]) => Some(qkv_cut(shape, dtype, *n, *q, *kv, os, od)),
        _ => None,
    }
}

fn nargs<'a>(
    a: &'a [AnyView<'a>],
    func: &str,
    ok: &[usize],
    usage: &str,
) -> Result<&'a [AnyView<'a>]> {
    if !ok.contains(&a.len()) {
        return Err(Error::type_error(format!(
            "`{func}` expects {usage} but {} arguments were given",
            a.len()
        )));
    }
    Ok(a)
}

register_global_packed!("rffi.shard.split", |a: &[AnyView<'_>]| -> Result<Any> {
    const F: &str = "rffi.shard.split";
    let a = nargs(a, F, &[3, 4], "(input, num_shards[, axis], output)")?;
    let input = tensor_arg(&a[0], F, 0)?;
    let n = int_arg(&a[1], F, 1, "num_shards")?;
    let axis = if a.len() == 4 {
        int_arg(&a[2], F, 2, "axis")?
    } else {
        0
    };
    let out = tensor_arg(&a[a.len() - 1], F, a.len() - 1)?;
    split(&input, n, axis, &out)?;
    Ok(Any::from(()))
});

register_global_packed!("rffi.shard.qkv", |a: &[AnyView<'_>]| -> Result<Any> {
    const F: &str = "rffi.shard.qkv";
    let a = nargs(a, F, &[5], "(input, num_shards, q_heads, kv_heads, output)")?;
    let input = tensor_arg(&a[0], F, 0)?;
    let n = int_arg(&a[1], F, 1, "num_shards")?;
    let q = int_arg(&a[2], F, 2, "q_heads")?;
    let kv = int_arg(&a[3], F, 3, "kv_heads")?;
    let out = tensor_arg(&a[4], F, 4)?;
    qkv(&input, n, q, kv, &out)?;
    Ok(Any::from(()))
});

/// Referenced by `shard::link` so that the registrations above are linked.
#[inline(never)]
pub(crate) fn link() -> usize {
    std::hint::black_box(1)
}
