//! Reading one argument of a call: a tensor, the trailing destination, axes, a number or a
//! tensor option, each failure a message naming the argument and its position.

use super::Arg;
use crate::op::{Op, OpKind};
use rffi_core::abi::{kRFFIBool, kRFFIFloat, kRFFIInt, kRFFINone};
use rffi_core::{AnyView, Array, Error, Result, Shape, Tensor};

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

pub(super) fn is_none(v: &AnyView<'_>) -> bool {
    v.type_index() == kRFFINone
}

fn is_tensor(v: &AnyView<'_>) -> bool {
    v.try_as::<Tensor>().is_ok()
}

pub(super) fn tensor_arg(op: Op, args: &[AnyView<'_>], pos: usize, is_out: bool) -> Result<Tensor> {
    args[pos].try_as::<Tensor>().map_err(|_| {
        Error::type_error(format!(
            "kernels.{op}: {} must be a tensor, got {}",
            describe_arg(op, pos, is_out),
            args[pos].type_name()
        ))
    })
}

pub(super) fn arity_error(op: Op, got: usize) -> Error {
    Error::type_error(format!(
        "kernels.{op} expects {} but {got} argument{} given",
        op.signature(),
        if got == 1 { " was" } else { "s were" }
    ))
}

pub(super) fn option_error(op: Op, name: &str, pos: usize, want: &str, v: &AnyView<'_>) -> Error {
    Error::type_error(format!(
        "kernels.{op}: {name} (argument #{pos}) must be {want}, got {}",
        v.type_name()
    ))
}

/// Splits `args` after `x` into option slots and a trailing `out`: a tensor (or None) in the
/// last position past the options, or a tensor in any option's place when it is the last
/// argument, is the destination.
pub(super) fn split_out<'a, 'b>(
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
pub(super) fn norm_axis(op: Op, axis: i64, ndim: usize) -> Result<Option<usize>> {
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
pub(super) fn parse_axes(op: Op, v: Option<&AnyView<'_>>, ndim: usize) -> Result<Vec<usize>> {
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

pub(super) fn float_option(
    op: Op,
    name: &str,
    pos: usize,
    v: Option<&AnyView<'_>>,
) -> Result<Option<f64>> {
    match v {
        None => Ok(None),
        Some(v) if is_none(v) => Ok(None),
        Some(v) if is_number(v) => Ok(Some(v.try_as::<f64>()?)),
        Some(v) => Err(option_error(op, name, pos, "a number or None", v)),
    }
}

pub(super) fn tensor_option(op: Op, args: &[AnyView<'_>], pos: usize) -> Result<Option<Arg>> {
    match args.get(pos) {
        None => Ok(None),
        Some(v) if is_none(v) => Ok(None),
        Some(_) => Ok(Some((tensor_arg(op, args, pos, false)?, pos))),
    }
}
