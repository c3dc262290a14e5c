//! The ops: names, argument forms, and the checks every backend relies on.
//!
//! A call such as `kernels.add(a, b, out)` is parsed and validated here once, whichever backend
//! runs it, so every implementation sees the same resolved [`OpCall`]: tensors on one device with
//! one dtype, shapes that agree, an output that is writable, of the right shape and not unsafely
//! aliased with an input. Backends only compute.

use rffi_core::abi::{kRFFIBool, kRFFIFloat, kRFFIInt, kRFFINone};
use rffi_core::error::kind;
use rffi_core::{AnyView, DataType, Device, Error, Result, Tensor};

/// Every op of the kernel layer; each is the global function `kernels.<name>`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Relu,
    Gelu,
    Exp,
    Sum,
    Softmax,
    Matmul,
}

/// How an op's arguments look.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// `(a, b | number[, out])`, same shapes.
    Binary,
    /// `(x[, out])`.
    Unary,
    /// `(x[, axis][, out])` with axis `None` (all) or the last one.
    Reduce,
    /// `(x[, axis][, out])` with the last axis.
    Softmax,
    /// `(a, b[, out])`: `[..., M, K] @ [..., K, N]`.
    Matmul,
}

impl Op {
    pub const ALL: [Op; 10] = [
        Op::Add,
        Op::Sub,
        Op::Mul,
        Op::Div,
        Op::Relu,
        Op::Gelu,
        Op::Exp,
        Op::Sum,
        Op::Softmax,
        Op::Matmul,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Relu => "relu",
            Op::Gelu => "gelu",
            Op::Exp => "exp",
            Op::Sum => "sum",
            Op::Softmax => "softmax",
            Op::Matmul => "matmul",
        }
    }

    /// The global function name, `kernels.<op>`.
    pub fn global_name(self) -> String {
        format!("kernels.{}", self.name())
    }

    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    pub const fn kind(self) -> OpKind {
        match self {
            Op::Add | Op::Sub | Op::Mul | Op::Div => OpKind::Binary,
            Op::Relu | Op::Gelu | Op::Exp => OpKind::Unary,
            Op::Sum => OpKind::Reduce,
            Op::Softmax => OpKind::Softmax,
            Op::Matmul => OpKind::Matmul,
        }
    }

    /// The argument form, for error messages.
    pub const fn signature(self) -> &'static str {
        match self.kind() {
            OpKind::Binary => "(a, b[, out]) where b is a tensor or a number",
            OpKind::Unary => "(x[, out])",
            OpKind::Reduce => "(x[, axis][, out]) where axis is None (all elements) or -1",
            OpKind::Softmax => "(x[, axis][, out]) where axis is -1",
            OpKind::Matmul => "(a, b[, out])",
        }
    }

    const fn bit(self) -> u32 {
        1 << self as u32
    }
}

impl core::fmt::Display for Op {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of ops (a bit mask).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OpSet(u32);

impl OpSet {
    pub const EMPTY: OpSet = OpSet(0);

    pub fn contains(self, op: Op) -> bool {
        self.0 & op.bit() != 0
    }

    pub fn insert(&mut self, op: Op) {
        self.0 |= op.bit();
    }

    pub fn union(self, other: OpSet) -> OpSet {
        OpSet(self.0 | other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Op> {
        Op::ALL.into_iter().filter(move |op| self.contains(*op))
    }

    /// Parses a comma-separated list of op names (`"add, matmul"`); blanks are ignored. An unknown
    /// name is an error listing the valid ones, so a typo never silently does nothing.
    pub fn parse_list(list: &str, source: &str) -> Result<OpSet> {
        let mut set = OpSet::EMPTY;
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let op = Op::parse(name).ok_or_else(|| {
                Error::value_error(format!(
                    "{source}: unknown op `{name}`; valid ops: {}",
                    Op::ALL.map(Op::name).join(", ")
                ))
            })?;
            set.insert(op);
        }
        Ok(set)
    }

    pub fn from_ops<'a>(names: impl IntoIterator<Item = &'a str>, source: &str) -> Result<OpSet> {
        let mut set = OpSet::EMPTY;
        for n in names {
            set = set.union(OpSet::parse_list(n, source)?);
        }
        Ok(set)
    }
}

impl core::fmt::Display for OpSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names: Vec<&str> = self.iter().map(Op::name).collect();
        f.write_str(&names.join(","))
    }
}

impl FromIterator<Op> for OpSet {
    fn from_iter<I: IntoIterator<Item = Op>>(iter: I) -> Self {
        let mut s = OpSet::EMPTY;
        for op in iter {
            s.insert(op);
        }
        s
    }
}

/// A number argument (`kernels.add(x, 2.0)`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
}

/// The reduction axis of `sum`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Every element (the result is 0-d).
    All,
    /// The last axis (the result drops it; a 0-d input counts as one element).
    Last,
}

/// A parsed call before an implementation is chosen: the tensors and where they came from.
pub(crate) struct Parsed {
    pub op: Op,
    /// Inputs with their argument positions.
    pub inputs: Vec<(Tensor, usize)>,
    pub scalar: Option<Scalar>,
    pub axis: Axis,
    /// The destination and its argument position.
    pub out: Option<(Tensor, usize)>,
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
        _ => "x",
    }
}

pub(crate) fn describe_arg(op: Op, pos: usize, is_out: bool) -> String {
    format!("{} (argument #{pos})", arg_name(op, pos, is_out))
}

fn is_number(v: &AnyView<'_>) -> bool {
    matches!(v.type_index(), kRFFIInt | kRFFIFloat | kRFFIBool)
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

fn optional_out(op: Op, args: &[AnyView<'_>], pos: usize) -> Result<OutArg> {
    match args.get(pos) {
        None => Ok(None),
        Some(v) if v.type_index() == kRFFINone => Ok(None),
        Some(_) => Ok(Some((tensor_arg(op, args, pos, true)?, pos))),
    }
}

fn arity_error(op: Op, got: usize) -> Error {
    Error::type_error(format!(
        "kernels.{op} expects {} but {got} argument{} given",
        op.signature(),
        if got == 1 { " was" } else { "s were" }
    ))
}

/// An output argument and its position.
type OutArg = Option<(Tensor, usize)>;

/// Parses `(x[, axis][, out])`: the axis is an int or None, a tensor in second place is `out`.
fn parse_axis_form(op: Op, args: &[AnyView<'_>]) -> Result<(Tensor, Option<i64>, OutArg)> {
    if args.is_empty() || args.len() > 3 {
        return Err(arity_error(op, args.len()));
    }
    let x = tensor_arg(op, args, 0, false)?;
    let mut axis_given = None;
    let mut out = None;
    match args.get(1) {
        None => {}
        Some(v) if v.type_index() == kRFFINone => {}
        Some(v) if v.type_index() == kRFFIInt => axis_given = Some(v.try_as::<i64>()?),
        Some(_) if args.len() == 2 => out = optional_out(op, args, 1)?,
        Some(v) => {
            return Err(Error::type_error(format!(
                "kernels.{op}: axis (argument #1) must be an int or None, got {}",
                v.type_name()
            )))
        }
    }
    if args.len() == 3 {
        out = optional_out(op, args, 2)?;
    }
    Ok((x, axis_given, out))
}

/// Resolves an axis against a tensor's rank; only the last axis is implemented.
fn resolve_last_axis(op: Op, axis: i64, ndim: usize) -> Result<()> {
    // A 0-d tensor behaves as one element along axis -1 / 0, as in PyTorch.
    let rank = ndim.max(1) as i64;
    let normalized = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&normalized) {
        return Err(Error::index_error(format!(
            "kernels.{op}: axis {axis} is out of range for a {ndim}-d tensor"
        )));
    }
    if normalized != rank - 1 {
        return Err(Error::new(
            kind::NOT_IMPLEMENTED_ERROR,
            format!(
                "kernels.{op}: only the last axis (-1) is implemented, got axis {axis} of a \
                 {ndim}-d tensor"
            ),
        ));
    }
    Ok(())
}

/// Parses the arguments of `op`: types and count, device and dtype agreement.
pub(crate) fn parse(op: Op, args: &[AnyView<'_>]) -> Result<Parsed> {
    let mut inputs = Vec::with_capacity(2);
    let mut scalar = None;
    let mut axis = Axis::Last;
    let out;
    match op.kind() {
        OpKind::Binary => {
            if !(2..=3).contains(&args.len()) {
                return Err(arity_error(op, args.len()));
            }
            inputs.push((tensor_arg(op, args, 0, false)?, 0));
            if is_number(&args[1]) {
                scalar = Some(if args[1].type_index() == kRFFIFloat {
                    Scalar::Float(args[1].try_as::<f64>()?)
                } else {
                    Scalar::Int(args[1].try_as::<i64>()?)
                });
            } else {
                inputs.push((tensor_arg(op, args, 1, false)?, 1));
            }
            out = optional_out(op, args, 2)?;
        }
        OpKind::Matmul => {
            if !(2..=3).contains(&args.len()) {
                return Err(arity_error(op, args.len()));
            }
            inputs.push((tensor_arg(op, args, 0, false)?, 0));
            inputs.push((tensor_arg(op, args, 1, false)?, 1));
            out = optional_out(op, args, 2)?;
        }
        OpKind::Unary => {
            if !(1..=2).contains(&args.len()) {
                return Err(arity_error(op, args.len()));
            }
            inputs.push((tensor_arg(op, args, 0, false)?, 0));
            out = optional_out(op, args, 1)?;
        }
        OpKind::Reduce | OpKind::Softmax => {
            let (x, given, o) = parse_axis_form(op, args)?;
            match (op.kind(), given) {
                (OpKind::Reduce, None) => axis = Axis::All,
                (_, None) => axis = Axis::Last,
                (_, Some(a)) => {
                    resolve_last_axis(op, a, x.ndim())?;
                    axis = Axis::Last;
                }
            }
            inputs.push((x, 0));
            out = o;
        }
    }
    let (first, first_pos) = (&inputs[0].0, inputs[0].1);
    let device = first.device();
    let dtype = first.dtype();
    for (t, pos, is_out) in inputs
        .iter()
        .skip(1)
        .map(|(t, p)| (t, *p, false))
        .chain(out.iter().map(|(t, p)| (t, *p, true)))
    {
        if t.device() != device {
            return Err(Error::value_error(format!(
                "kernels.{op}: tensors are on different devices: {} is on {device} but {} is on {}",
                describe_arg(op, first_pos, false),
                describe_arg(op, pos, is_out),
                t.device()
            )));
        }
        if t.dtype() != dtype {
            return Err(Error::type_error(format!(
                "kernels.{op}: dtypes differ: {} is {dtype} but {} is {} (kernels do no type \
                 promotion)",
                describe_arg(op, first_pos, false),
                describe_arg(op, pos, is_out),
                t.dtype()
            )));
        }
    }
    if let Some(s) = scalar {
        check_scalar(op, s, dtype)?;
    }
    Ok(Parsed {
        op,
        inputs,
        scalar,
        axis,
        out,
        device,
        dtype,
    })
}

fn check_scalar(op: Op, s: Scalar, dtype: DataType) -> Result<()> {
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

impl Parsed {
    /// The output shape the inputs imply, after checking that their shapes agree.
    pub(crate) fn output_shape(&self) -> Result<Vec<i64>> {
        let op = self.op;
        let a = &self.inputs[0].0;
        match op.kind() {
            OpKind::Binary => {
                if let Some((b, pos)) = self.inputs.get(1) {
                    if b.shape() != a.shape() {
                        return Err(Error::value_error(format!(
                            "kernels.{op}: shapes differ: a (argument #0) is {:?} but {} is {:?} \
                             (broadcasting is not supported; pass tensors of one shape or a \
                             number)",
                            a.shape(),
                            describe_arg(op, *pos, false),
                            b.shape()
                        )));
                    }
                }
                Ok(a.shape().to_vec())
            }
            OpKind::Unary | OpKind::Softmax => Ok(a.shape().to_vec()),
            OpKind::Reduce => Ok(match self.axis {
                Axis::All => Vec::new(),
                Axis::Last => a.shape()[..a.ndim().saturating_sub(1)].to_vec(),
            }),
            OpKind::Matmul => matmul_shape(a, &self.inputs[1].0).map(|s| s.out),
        }
    }
}

/// The shapes of a matmul: batch dims, M, K, N.
pub struct MatmulShape {
    pub batch: Vec<i64>,
    pub m: i64,
    pub k: i64,
    pub n: i64,
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
    let in_place_ok = matches!(op.kind(), OpKind::Binary | OpKind::Unary | OpKind::Softmax);
    let Some((olo, ohi)) = byte_span(out) else {
        return Ok(());
    };
    for (t, ipos) in &parsed.inputs {
        let Some((lo, hi)) = byte_span(t) else {
            continue;
        };
        if lo < ohi && olo < hi {
            if in_place_ok && same_layout(t, out) {
                continue;
            }
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

/// The float dtypes every backend implements for every op.
pub const FLOATS: [DataType; 4] = [
    DataType::float(32),
    DataType::float(64),
    DataType::float(16),
    DataType::bfloat16(),
];

/// The integer dtypes of add, sub and mul.
pub const INTS: [DataType; 2] = [DataType::int(32), DataType::int(64)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::parse(op.name()), Some(op));
        }
        assert_eq!(Op::parse("nope"), None);
    }

    #[test]
    fn op_lists_parse_and_reject_unknown_names() {
        let s = OpSet::parse_list(" add, matmul ,,", "X").unwrap();
        assert!(s.contains(Op::Add) && s.contains(Op::Matmul) && !s.contains(Op::Sub));
        assert_eq!(s.to_string(), "add,matmul");
        let e = OpSet::parse_list("add,mattmul", "RFFI_KERNELS_DISABLE").unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(
            e.message().contains("unknown op `mattmul`"),
            "{}",
            e.message()
        );
        assert!(
            e.message().contains("valid ops: add, sub"),
            "{}",
            e.message()
        );
    }

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
}
