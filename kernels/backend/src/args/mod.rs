//! Parsing a call's arguments: tensors and where they came from, numbers, axes, options, and
//! the checks every backend relies on (one device, one dtype, shapes that agree or broadcast).
//!
//! This module holds the parsed call and `parse`; `options` reads one argument (a tensor, the
//! destination, axes, a number) with the messages that name it; `shapes` the shapes results take
//! (broadcasting, reductions, matmul); `out` the checks of a destination (overlap included).

mod options;
mod out;
mod shapes;

use options::{
    arity_error, float_option, is_none, norm_axis, option_error, parse_axes, split_out, tensor_arg,
    tensor_option,
};
pub(crate) use options::{describe_arg, is_number};
pub use out::is_non_overlapping;
pub(crate) use out::{check_out, overlaps_unsafely};
pub use shapes::{broadcast_shape, broadcast_view, matmul_shape, without_axis, MatmulShape};

use crate::op::{Gelu, Op, OpKind, Scalar};
use rffi_core::abi::{kRFFIBool, kRFFIFloat, kRFFIInt};
use rffi_core::{AnyView, DataType, Device, Error, Result, Tensor};

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
    /// The number is the first operand (`sub(1, x)`); never for add and mul, whose operands
    /// are swapped instead.
    pub scalar_first: bool,
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
        scalar_first: false,
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
            if op.kind() == OpKind::Binary && is_number(&args[0]) {
                // A number first (`sub(1, x)`, as numpy takes it): x is the one tensor.
                if is_number(&args[1]) {
                    return Err(Error::type_error(format!(
                        "kernels.{op}: a (argument #0) and b (argument #1) are both numbers; \
                         at least one must be a tensor"
                    )));
                }
                p.scalar = Some(scalar_arg(&args[0])?);
                p.scalar_first = !matches!(op, Op::Add | Op::Mul);
                p.inputs.push((tensor_arg(op, args, 1, false)?, 1));
            } else {
                p.inputs.push((tensor_arg(op, args, 0, false)?, 0));
                if op.kind() == OpKind::Binary && is_number(&args[1]) {
                    p.scalar = Some(scalar_arg(&args[1])?);
                } else {
                    p.inputs.push((tensor_arg(op, args, 1, false)?, 1));
                }
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
        // The number is argument #1 after a tensor a, #0 before a tensor b.
        check_scalar(op, s, p.dtype, usize::from(first_pos == 0))?;
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

/// Checks the number operand at argument position `pos` against the tensor's dtype.
pub(crate) fn check_scalar(op: Op, s: Scalar, dtype: DataType, pos: usize) -> Result<()> {
    let is_int = dtype.code() == rffi_core::abi::kDLInt;
    let (name, tensor) = (
        describe_arg(op, pos, false),
        if pos == 0 { "b" } else { "a" },
    );
    match s {
        Scalar::Float(_) if is_int => Err(Error::type_error(format!(
            "kernels.{op}: {name} is a float but {tensor} is {dtype}; kernels do no type \
             promotion, pass an int"
        ))),
        Scalar::Int(i) if is_int && dtype.bits() == 32 && i32::try_from(i).is_err() => Err(
            Error::value_error(format!("kernels.{op}: {name} = {i} does not fit in int32")),
        ),
        _ => Ok(()),
    }
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

    /// Every tensor input with its position (for alias checks).
    pub(crate) fn all_inputs(&self) -> impl Iterator<Item = &Arg> {
        self.inputs.iter().chain(&self.weight).chain(&self.bias)
    }
}
