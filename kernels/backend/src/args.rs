//! Parsing a call's arguments: tensors and where they came from, numbers, axes, options, and
//! the checks every backend relies on (one device, one dtype, shapes that agree or broadcast).

use crate::op::{Gelu, Op, OpKind, Scalar};
use rffi_core::abi::{kRFFIBool, kRFFIFloat, kRFFIInt, kRFFINone};
use rffi_core::{AnyView, Array, DataType, Device, Error, Result, Shape, Tensor};

/// A tensor argument and its position.
pub(crate) type Arg = (Tensor, usize);

/// A parsed call before an implementation is chosen.
pub(crate) struct Parsed {
    pub op: Op,
    /// Inputs with their argument positions: `x`, or `a` and `b`.
    pub inputs: Vec<Arg>,
    /// `weight` and `bias` of the normalizations.
    pub weight: Option<Arg>,
    pub bias: Option<Arg>,
    pub scalar: Option<Scalar>,
    /// Reduced axes (sorted, distinct), or softmax's one axis.
    pub axes: Vec<usize>,
    pub keepdims: bool,
    pub eps: f64,
    pub gelu: Gelu,
    /// The destination and its argument position.
    pub out: Option<Arg>,
    pub device: Device,
    pub dtype: DataType,
}

/// Names of the argument positions, for messages.
fn arg_name(op: Op, pos: usize, is_out: bool) -> &'static str {
    if is_out {
        return "out";
    }
    match (op.kind(), pos) {
        (OpKind::Binary | OpKind::Matmul, 0) => "a",
        (OpKind::Binary | OpKind::Matmul, 1) => "b",
        (OpKind::Norm, 1) => "weight",
        (OpKind::Norm, 2) if op == Op::LayerNorm => "bias",
        _ => "x",
    }
}

pub(crate) fn describe_arg(op: Op, pos: usize, is_out: bool) -> String {
    format!("{} (argument #{pos})", arg_name(op, pos, is_out))
}

pub(crate) fn is_number(v: &AnyView<'_>) -> bool {
    matches!(v.type_index(), kRFFIInt | kRFFIFloat | kRFFIBool)
}

fn is_none(v: &AnyView<'_>) -> bool {
    v.type_index() == kRFFINone
}

fn is_tensor(v: &AnyView<'_>) -> bool {
    v.try_as::<Tensor>().is_ok()
}

fn tensor_arg(op: Op, args: &[AnyView<'_>], pos: usize, is_out: bool) -> Result<Tensor> {
    args[pos].try_as::<Tensor>().map_err(|_| {
        Error::type_error(format!(
            "kernels.{op}: {} must be a tensor, got {}",
            describe_arg(op, pos, is_out),
            args[pos].type_name()
        ))
    })
}

fn arity_error(op: Op, got: usize) -> Error {
    Error::type_error(format!(
        "kernels.{op} expects {} but {got} argument{} given",
        op.signature(),
        if got == 1 { " was" } else { "s were" }
    ))
}

fn option_error(op: Op, name: &str, pos: usize, want: &str, v: &AnyView<'_>) -> Error {
    Error::type_error(format!(
        "kernels.{op}: {name} (argument #{pos}) must be {want}, got {}",
        v.type_name()
    ))
}

/// Splits `args` after `x` into option slots and a trailing `out`: a tensor (or None) in the
/// last position past the options, or a tensor in any option's place when it is the last
/// argument, is the destination.
fn split_out<'a, 'b>(
    op: Op,
    args: &'a [AnyView<'b>],
    options: usize,
) -> Result<(&'a [AnyView<'b>], Option<Arg>)> {
    if args.is_empty() || args.len() > 2 + options {
        return Err(arity_error(op, args.len()));
    }
    let last = args.len() - 1;
    let out_here = last >= 1 && (last == 1 + options || is_tensor(&args[last]));
    if !out_here {
        return Ok((&args[1..], None));
    }
    let out = if is_none(&args[last]) {
        None
    } else {
        Some((tensor_arg(op, args, last, true)?, last))
    };
    Ok((&args[1..last], out))
}

/// Normalizes `axis` against a rank (a 0-d tensor takes axis 0 / -1, as in PyTorch).
fn norm_axis(op: Op, axis: i64, ndim: usize) -> Result<Option<usize>> {
    let rank = ndim.max(1) as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&a) {
        return Err(Error::index_error(format!(
            "kernels.{op}: axis {axis} is out of range for a {ndim}-d tensor"
        )));
    }
    Ok((ndim > 0).then_some(a as usize))
}

/// The reduced axes: None is every axis; an int, a tuple / list of ints or a Shape names them.
fn parse_axes(op: Op, v: Option<&AnyView<'_>>, ndim: usize) -> Result<Vec<usize>> {
    let Some(v) = v.filter(|v| !is_none(v)) else {
        return Ok((0..ndim).collect());
    };
    let want = if op == Op::Argmax {
        "an int or None"
    } else {
        "an int, a tuple of ints or None"
    };
    let given: Vec<i64> = if v.type_index() == kRFFIInt {
        vec![v.try_as::<i64>()?]
    } else if let Ok(s) = v.try_as::<Shape>() {
        s.as_slice().to_vec()
    } else if let Ok(a) = v.try_as::<Array>() {
        a.iter()
            .map(|item| {
                (item.type_index() == kRFFIInt)
                    .then(|| item.try_as::<i64>())
                    .transpose()?
                    .ok_or_else(|| option_error(op, "axis", 1, want, v))
            })
            .collect::<Result<_>>()?
    } else {
        return Err(option_error(op, "axis", 1, want, v));
    };
    if given.is_empty() {
        return Err(Error::value_error(format!(
            "kernels.{op}: axis (argument #1) is an empty tuple; pass None to reduce every axis"
        )));
    }
    if op == Op::Argmax && given.len() > 1 {
        return Err(Error::value_error(format!(
            "kernels.argmax: axis (argument #1) must be one axis or None (the flattened \
             tensor), got {given:?}"
        )));
    }
    let mut axes = Vec::with_capacity(given.len());
    for &g in &given {
        if let Some(a) = norm_axis(op, g, ndim)? {
            if axes.contains(&a) {
                return Err(Error::value_error(format!(
                    "kernels.{op}: axis {g} is repeated in {given:?}"
                )));
            }
            axes.push(a);
        }
    }
    axes.sort_unstable();
    Ok(axes)
}

fn float_option(op: Op, name: &str, pos: usize, v: Option<&AnyView<'_>>) -> Result<Option<f64>> {
    match v {
        None => Ok(None),
        Some(v) if is_none(v) => Ok(None),
        Some(v) if is_number(v) => Ok(Some(v.try_as::<f64>()?)),
        Some(v) => Err(option_error(op, name, pos, "a number or None", v)),
    }
}

fn tensor_option(op: Op, args: &[AnyView<'_>], pos: usize) -> Result<Option<Arg>> {
    match args.get(pos) {
        None => Ok(None),
        Some(v) if is_none(v) => Ok(None),
        Some(_) => Ok(Some((tensor_arg(op, args, pos, false)?, pos))),
    }
}

/// The epsilon of a float dtype (`torch.finfo(dtype).eps`), rms_norm's default.
pub fn dtype_epsilon(dtype: DataType) -> f64 {
    if dtype == DataType::float(16) {
        2f64.powi(-10)
    } else if dtype == DataType::bfloat16() {
        2f64.powi(-7)
    } else if dtype == DataType::float(64) {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    }
}

/// Parses the arguments of `op`: types and count, device and dtype agreement.
pub(crate) fn parse(op: Op, args: &[AnyView<'_>]) -> Result<Parsed> {
    let mut p = Parsed {
        op,
        inputs: Vec::with_capacity(2),
        weight: None,
        bias: None,
        scalar: None,
        axes: Vec::new(),
        keepdims: false,
        eps: 0.0,
        gelu: Gelu::Erf,
        out: None,
        device: Device::cpu(),
        dtype: DataType::float(32),
    };
    match op.kind() {
        OpKind::Binary | OpKind::Matmul => {
            if !(2..=3).contains(&args.len()) {
                return Err(arity_error(op, args.len()));
            }
            p.inputs.push((tensor_arg(op, args, 0, false)?, 0));
            if op.kind() == OpKind::Binary && is_number(&args[1]) {
                p.scalar = Some(scalar_arg(&args[1])?);
            } else {
                p.inputs.push((tensor_arg(op, args, 1, false)?, 1));
            }
            if args.len() == 3 && !is_none(&args[2]) {
                p.out = Some((tensor_arg(op, args, 2, true)?, 2));
            }
        }
        OpKind::Unary => {
            let (opts, out) = split_out(op, args, usize::from(op == Op::Gelu))?;
            p.inputs.push((tensor_arg(op, args, 0, false)?, 0));
            p.out = out;
            if let Some(v) = opts.first().filter(|v| !is_none(v)) {
                let form = v
                    .try_as::<String>()
                    .map_err(|_| option_error(op, "approximate", 1, "'none' or 'tanh'", v))?;
                p.gelu = match form.as_str() {
                    "none" => Gelu::Erf,
                    "tanh" => Gelu::Tanh,
                    other => {
                        return Err(Error::value_error(format!(
                            "kernels.gelu: approximate (argument #1) must be 'none' or 'tanh', \
                             got '{other}'"
                        )))
                    }
                };
            }
        }
        OpKind::Reduce => {
            let (opts, out) = split_out(op, args, 2)?;
            let x = tensor_arg(op, args, 0, false)?;
            if let Some(v) = opts.first().filter(|v| v.type_index() == kRFFIBool) {
                return Err(option_error(
                    op,
                    "axis",
                    1,
                    "an int, a tuple of ints or None",
                    v,
                ));
            }
            p.axes = parse_axes(op, opts.first(), x.ndim())?;
            if let Some(v) = opts.get(1).filter(|v| !is_none(v)) {
                p.keepdims = v
                    .try_as::<bool>()
                    .map_err(|_| option_error(op, "keepdims", 2, "a bool", v))?;
            }
            p.inputs.push((x, 0));
            p.out = out;
        }
        OpKind::Softmax => {
            let (opts, out) = split_out(op, args, 1)?;
            let x = tensor_arg(op, args, 0, false)?;
            let axis = match opts.first().filter(|v| !is_none(v)) {
                None => -1,
                Some(v) if v.type_index() == kRFFIInt => v.try_as::<i64>()?,
                Some(v) => return Err(option_error(op, "axis", 1, "an int or None", v)),
            };
            p.axes = norm_axis(op, axis, x.ndim())?.into_iter().collect();
            p.inputs.push((x, 0));
            p.out = out;
        }
        OpKind::Norm => {
            let has_bias = op == Op::LayerNorm;
            let options = 2 + usize::from(has_bias);
            if args.is_empty() || args.len() > 2 + options {
                return Err(arity_error(op, args.len()));
            }
            p.inputs.push((tensor_arg(op, args, 0, false)?, 0));
            p.weight = tensor_option(op, args, 1)?;
            let eps_pos = if has_bias {
                p.bias = tensor_option(op, args, 2)?;
                3
            } else {
                2
            };
            let default = if has_bias { 1e-5 } else { f64::NAN };
            p.eps = float_option(op, "eps", eps_pos, args.get(eps_pos))?.unwrap_or(default);
            if args.len() > eps_pos + 1 && !is_none(&args[eps_pos + 1]) {
                p.out = Some((tensor_arg(op, args, eps_pos + 1, true)?, eps_pos + 1));
            }
        }
    }
    let (first, first_pos) = (&p.inputs[0].0, p.inputs[0].1);
    p.device = first.device();
    p.dtype = first.dtype();
    if p.eps.is_nan() {
        p.eps = dtype_epsilon(p.dtype);
    }
    let out_dtype = p.out_dtype();
    let others = p.inputs[1..]
        .iter()
        .chain(&p.weight)
        .chain(&p.bias)
        .map(|(t, pos)| (t, *pos, false))
        .chain(p.out.iter().map(|(t, pos)| (t, *pos, true)));
    for (t, pos, is_out) in others {
        if t.device() != p.device {
            return Err(Error::value_error(format!(
                "kernels.{op}: tensors are on different devices: {} is on {} but {} is on {}",
                describe_arg(op, first_pos, false),
                p.device,
                describe_arg(op, pos, is_out),
                t.device()
            )));
        }
        let want = if is_out { out_dtype } else { p.dtype };
        if t.dtype() != want {
            let what = if want == p.dtype {
                format!("{} is {}", describe_arg(op, first_pos, false), p.dtype)
            } else {
                format!("the result is {want}")
            };
            return Err(Error::type_error(format!(
                "kernels.{op}: dtypes differ: {what} but {} is {} (kernels do no type \
                 promotion)",
                describe_arg(op, pos, is_out),
                t.dtype()
            )));
        }
    }
    if let Some(s) = p.scalar {
        check_scalar(op, s, p.dtype)?;
    }
    Ok(p)
}

/// A number operand (an int, a float or a bool) as a Scalar.
pub(crate) fn scalar_arg(v: &AnyView<'_>) -> Result<Scalar> {
    Ok(if v.type_index() == kRFFIFloat {
        Scalar::Float(v.try_as::<f64>()?)
    } else {
        Scalar::Int(v.try_as::<i64>()?)
    })
}

pub(crate) fn check_scalar(op: Op, s: Scalar, dtype: DataType) -> Result<()> {
    let is_int = dtype.code() == rffi_core::abi::kDLInt;
    match s {
        Scalar::Float(_) if is_int => Err(Error::type_error(format!(
            "kernels.{op}: b (argument #1) is a float but a is {dtype}; kernels do no type \
             promotion, pass an int"
        ))),
        Scalar::Int(i) if is_int && dtype.bits() == 32 && i32::try_from(i).is_err() => {
            Err(Error::value_error(format!(
                "kernels.{op}: b (argument #1) = {i} does not fit in int32"
            )))
        }
        _ => Ok(()),
    }
}

/// The shape two shapes broadcast to under NumPy's rules, or `None`.
pub fn broadcast_shape(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    let dim = |s: &[i64], i: usize| {
        if i + s.len() < n {
            1
        } else {
            s[i + s.len() - n]
        }
    };
    (0..n)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// `t` viewed with `shape` (which it broadcasts to): stride 0 along the broadcast axes. The view
/// shares `t`'s memory: kernels read the broadcast operand in place.
pub fn broadcast_view(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    if t.shape() == shape {
        return Ok(t.clone());
    }
    let lead = shape.len() - t.ndim();
    let strides: Vec<i64> = (0..shape.len())
        .map(|i| {
            if i < lead || t.shape()[i - lead] == 1 && shape[i] != 1 {
                0
            } else {
                t.strides()[i - lead]
            }
        })
        .collect();
    t.as_strided(shape, &strides, t.byte_offset())
}

/// `v` (a shape or strides) without the entry of `axis`: the other dims of rows along it.
pub fn without_axis(v: &[i64], axis: usize) -> Vec<i64> {
    v.iter()
        .enumerate()
        .filter(|&(i, _)| i != axis)
        .map(|(_, &d)| d)
        .collect()
}

impl Parsed {
    /// The dtype of the result: int64 indices for argmax, the inputs' dtype otherwise.
    pub(crate) fn out_dtype(&self) -> DataType {
        if self.op == Op::Argmax {
            DataType::int(64)
        } else {
            self.dtype
        }
    }

    /// The output shape the inputs imply, after checking that their shapes agree.
    pub(crate) fn output_shape(&self) -> Result<Vec<i64>> {
        let op = self.op;
        let a = &self.inputs[0].0;
        match op.kind() {
            OpKind::Binary => match self.inputs.get(1) {
                None => Ok(a.shape().to_vec()),
                Some((b, pos)) => broadcast_shape(a.shape(), b.shape()).ok_or_else(|| {
                    Error::value_error(format!(
                        "kernels.{op}: shapes do not broadcast: a (argument #0) is {:?} but {} \
                         is {:?} (trailing dimensions must be equal or 1)",
                        a.shape(),
                        describe_arg(op, *pos, false),
                        b.shape()
                    ))
                }),
            },
            OpKind::Unary | OpKind::Softmax => Ok(a.shape().to_vec()),
            OpKind::Norm => {
                let Some(&c) = a.shape().last() else {
                    return Err(Error::value_error(format!(
                        "kernels.{op}: x (argument #0) is 0-d; it needs an axis to normalize"
                    )));
                };
                for (t, pos) in self.weight.iter().chain(&self.bias) {
                    if t.shape() != [c] {
                        return Err(Error::value_error(format!(
                            "kernels.{op}: {} has shape {:?} but x's last axis has {c} elements \
                             (it must have shape [{c}])",
                            describe_arg(op, *pos, false),
                            t.shape()
                        )));
                    }
                }
                Ok(a.shape().to_vec())
            }
            OpKind::Reduce => {
                let reduced: i64 = self.axes.iter().map(|&i| a.shape()[i]).product();
                if reduced == 0 && matches!(op, Op::Max | Op::Min | Op::Argmax) {
                    return Err(Error::value_error(format!(
                        "kernels.{op}: cannot reduce over zero elements (x has shape {:?}, axes \
                         {:?}); {op} of nothing is undefined",
                        a.shape(),
                        self.axes
                    )));
                }
                Ok(a.shape()
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &d)| match (self.axes.contains(&i), self.keepdims) {
                        (false, _) => Some(d),
                        (true, true) => Some(1),
                        (true, false) => None,
                    })
                    .collect())
            }
            OpKind::Matmul => matmul_shape(a, &self.inputs[1].0).map(|s| s.out),
        }
    }

    /// Every tensor input with its position (for alias checks).
    pub(crate) fn all_inputs(&self) -> impl Iterator<Item = &Arg> {
        self.inputs.iter().chain(&self.weight).chain(&self.bias)
    }
}

/// The shapes of a matmul: batch dims, M, K, N.
pub struct MatmulShape {
    /// The batch dimensions of the result (broadcast from both sides).
    pub batch: Vec<i64>,
    /// Rows of `a` and of the result.
    pub m: i64,
    /// Columns of `a`, rows of `b`: the reduced dimension.
    pub k: i64,
    /// Columns of `b` and of the result.
    pub n: i64,
    /// The result's shape: `batch` then `[M, N]`.
    pub out: Vec<i64>,
}

/// `a [..., M, K] @ b [..., K, N]`: both at least 2-D; batch dims equal, or one side 2-D (shared
/// across the other's batch).
pub fn matmul_shape(a: &Tensor, b: &Tensor) -> Result<MatmulShape> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() < 2 || sb.len() < 2 {
        return Err(Error::value_error(format!(
            "kernels.matmul: both operands must have at least 2 dimensions, got a {:?} and b {:?}",
            sa, sb
        )));
    }
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let (kb, n) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    if k != kb {
        return Err(Error::value_error(format!(
            "kernels.matmul: inner dimensions differ: a (argument #0) is {sa:?} (K = {k}) but b \
             (argument #1) is {sb:?} (K = {kb})"
        )));
    }
    let (ba, bb) = (&sa[..sa.len() - 2], &sb[..sb.len() - 2]);
    let batch = if bb.is_empty() {
        ba.to_vec()
    } else if ba.is_empty() || ba == bb {
        bb.to_vec()
    } else {
        return Err(Error::value_error(format!(
            "kernels.matmul: batch dimensions differ: a (argument #0) has {ba:?} but b (argument \
             #1) has {bb:?} (they must be equal, or one operand 2-D)"
        )));
    };
    let mut out = batch.clone();
    out.extend([m, n]);
    Ok(MatmulShape {
        batch,
        m,
        k,
        n,
        out,
    })
}

/// The byte range `[lo, hi)` a tensor's elements occupy, relative to address 0 of its device.
fn byte_span(t: &Tensor) -> Option<(i128, i128)> {
    if t.shape().contains(&0) {
        return None;
    }
    let elem = t.dtype().bytes_per_element() as i128;
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&d, &s) in t.shape().iter().zip(t.strides()) {
        let reach = (d as i128 - 1) * s as i128;
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    let base = t.element_ptr() as usize as i128;
    Some((base + lo * elem, base + (hi + 1) * elem))
}

fn same_layout(a: &Tensor, b: &Tensor) -> bool {
    a.element_ptr() == b.element_ptr() && a.shape() == b.shape() && a.strides() == b.strides()
}

/// Whether distinct indices of `t` address distinct elements (no stride-0 or interleaved
/// dimensions), which writing through it requires.
pub fn is_non_overlapping(t: &Tensor) -> bool {
    if t.shape().contains(&0) {
        return true;
    }
    let mut dims: Vec<(i64, i64)> = t
        .shape()
        .iter()
        .zip(t.strides())
        .filter(|(&d, _)| d > 1)
        .map(|(&d, &s)| (s.unsigned_abs() as i64, d))
        .collect();
    dims.sort_unstable();
    let mut extent: i64 = 1; // elements spanned by the dims seen so far
    for (stride, size) in dims {
        if stride < extent {
            return false;
        }
        extent = stride.saturating_mul(size);
    }
    true
}

/// Whether `out` shares memory with input `t` other than as the same elements in the same
/// layout where the op may write in place (`in_place_ok`).
pub(crate) fn overlaps_unsafely(t: &Tensor, out: &Tensor, in_place_ok: bool) -> bool {
    match (byte_span(t), byte_span(out)) {
        (Some((lo, hi)), Some((olo, ohi))) => {
            lo < ohi && olo < hi && !(in_place_ok && same_layout(t, out))
        }
        _ => false,
    }
}

/// Checks a destination: writable, the right shape, its elements distinct, and not overlapping an
/// input unless the op allows writing in place over an identically laid out input.
pub(crate) fn check_out(parsed: &Parsed, out: &Tensor, pos: usize, shape: &[i64]) -> Result<()> {
    let op = parsed.op;
    if out.read_only() {
        return Err(Error::value_error(format!(
            "kernels.{op}: out (argument #{pos}) is read-only"
        )));
    }
    if out.shape() != shape {
        return Err(Error::value_error(format!(
            "kernels.{op}: out (argument #{pos}) has shape {:?} but the result has shape {shape:?}",
            out.shape()
        )));
    }
    if !is_non_overlapping(out) {
        return Err(Error::value_error(format!(
            "kernels.{op}: out (argument #{pos}) has overlapping elements (strides {:?} for shape \
             {:?}), so the result cannot be written",
            out.strides(),
            out.shape()
        )));
    }
    let in_place_ok = op.in_place_ok();
    for (t, ipos) in parsed.all_inputs() {
        if overlaps_unsafely(t, out, in_place_ok) {
            return Err(Error::value_error(format!(
                "kernels.{op}: out (argument #{pos}) overlaps {} in memory{}; pass a separate \
                 output",
                describe_arg(op, *ipos, false),
                if in_place_ok {
                    " without being the same elements (only an identical layout can be written \
                     in place)"
                } else {
                    " (this op cannot write in place)"
                }
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_detection() {
        let t = Tensor::empty(&[4, 4], DataType::float(32), Device::cpu()).unwrap();
        assert!(is_non_overlapping(&t));
        let bcast = t.as_strided(&[4, 4], &[0, 1], 0).unwrap();
        assert!(!is_non_overlapping(&bcast));
        let transposed = t.as_strided(&[4, 4], &[1, 4], 0).unwrap();
        assert!(is_non_overlapping(&transposed));
        let every_other = t.as_strided(&[2, 2], &[8, 2], 0).unwrap();
        assert!(is_non_overlapping(&every_other));
        let overlapping = t.as_strided(&[3, 4], &[2, 1], 0).unwrap();
        assert!(!is_non_overlapping(&overlapping));
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shape(&[2, 3], &[3]), Some(vec![2, 3]));
        assert_eq!(broadcast_shape(&[4, 1, 5], &[3, 1]), Some(vec![4, 3, 5]));
        assert_eq!(broadcast_shape(&[], &[2, 2]), Some(vec![2, 2]));
        assert_eq!(broadcast_shape(&[0, 1], &[1, 7]), Some(vec![0, 7]));
        assert_eq!(broadcast_shape(&[2, 3], &[3, 2]), None);
        assert_eq!(broadcast_shape(&[2], &[0]), None);
        let t = Tensor::empty(&[3, 1], DataType::float(32), Device::cpu()).unwrap();
        let v = broadcast_view(&t, &[2, 3, 4]).unwrap();
        assert_eq!((v.shape(), v.strides()), (&[2, 3, 4][..], &[0, 1, 0][..]));
        assert_eq!(v.element_ptr(), t.element_ptr());
    }
}
