//! The ops: names, argument forms, and the non-tensor arguments a call resolves to.
//!
//! A call such as `kernels.add(a, b, out)` is parsed and validated once (`args`), whichever
//! backend runs it, so every implementation sees the same resolved [`crate::OpCall`].

use rffi_core::{DataType, Error, Result};

/// Every op of the kernel layer; each is the global function `kernels.<name>`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `kernels.add`: `a + b`.
    Add,
    /// `kernels.sub`: `a - b`.
    Sub,
    /// `kernels.mul`: `a * b`.
    Mul,
    /// `kernels.div`: `a / b`.
    Div,
    /// `kernels.relu`: `max(x, 0)`.
    Relu,
    /// `kernels.gelu`: the Gaussian error linear unit (erf or tanh form).
    Gelu,
    /// `kernels.exp`: `e^x`.
    Exp,
    /// `kernels.sum` over axes.
    Sum,
    /// `kernels.mean` over axes.
    Mean,
    /// `kernels.max` over axes.
    Max,
    /// `kernels.min` over axes.
    Min,
    /// `kernels.argmax` over axes (int64 indices).
    Argmax,
    /// `kernels.softmax` along one axis.
    Softmax,
    /// `kernels.layer_norm` over the last axis.
    LayerNorm,
    /// `kernels.rms_norm` over the last axis.
    RmsNorm,
    /// `kernels.matmul`: `a @ b`, batched.
    Matmul,
}

/// How an op's arguments look.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// `(a, b | number[, out])`, shapes broadcast under NumPy rules.
    Binary,
    /// `(x[, out])` (`gelu` also takes the form's name).
    Unary,
    /// `(x[, axis][, keepdims][, out])` with axis None (all), an int or a tuple of ints.
    Reduce,
    /// `(x[, axis][, out])`, any one axis.
    Softmax,
    /// `(x, weight, bias, eps[, out])` over the last axis (rms_norm has no bias).
    Norm,
    /// `(a, b[, out])`: `[..., M, K] @ [..., K, N]`.
    Matmul,
}

impl Op {
    /// Every op, in declaration order.
    pub const ALL: [Op; 16] = [
        Op::Add,
        Op::Sub,
        Op::Mul,
        Op::Div,
        Op::Relu,
        Op::Gelu,
        Op::Exp,
        Op::Sum,
        Op::Mean,
        Op::Max,
        Op::Min,
        Op::Argmax,
        Op::Softmax,
        Op::LayerNorm,
        Op::RmsNorm,
        Op::Matmul,
    ];

    /// The op's name (`"add"`); its global function is `kernels.<name>`.
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
            Op::Mean => "mean",
            Op::Max => "max",
            Op::Min => "min",
            Op::Argmax => "argmax",
            Op::Softmax => "softmax",
            Op::LayerNorm => "layer_norm",
            Op::RmsNorm => "rms_norm",
            Op::Matmul => "matmul",
        }
    }

    /// The global function name, `kernels.<op>`.
    pub fn global_name(self) -> String {
        format!("kernels.{}", self.name())
    }

    /// The op named `name` (`"layer_norm"`), if there is one.
    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// How the op's arguments look.
    pub const fn kind(self) -> OpKind {
        match self {
            Op::Add | Op::Sub | Op::Mul | Op::Div => OpKind::Binary,
            Op::Relu | Op::Gelu | Op::Exp => OpKind::Unary,
            Op::Sum | Op::Mean | Op::Max | Op::Min | Op::Argmax => OpKind::Reduce,
            Op::Softmax => OpKind::Softmax,
            Op::LayerNorm | Op::RmsNorm => OpKind::Norm,
            Op::Matmul => OpKind::Matmul,
        }
    }

    /// The argument form, for error messages.
    pub const fn signature(self) -> &'static str {
        match self {
            Op::Gelu => "(x[, approximate][, out]) where approximate is 'none' (erf) or 'tanh'",
            Op::Argmax => {
                "(x[, axis][, keepdims][, out]) where axis is None (the flattened tensor) or an \
                 int, and out is int64"
            }
            Op::LayerNorm => {
                "(x[, weight][, bias][, eps][, out]) over the last axis; weight and bias are \
                 tensors of the last axis' length or None, eps a number (default 1e-5)"
            }
            Op::RmsNorm => {
                "(x[, weight][, eps][, out]) over the last axis; weight is a tensor of the last \
                 axis' length or None, eps a number or None (the dtype's epsilon)"
            }
            _ => match self.kind() {
                OpKind::Binary => {
                    "(a, b[, out]) where a and b are tensors or numbers, at least one a tensor; \
                     shapes broadcast as in NumPy"
                }
                OpKind::Unary => "(x[, out])",
                OpKind::Reduce => {
                    "(x[, axis][, keepdims][, out]) where axis is None (all axes), an int or a \
                     tuple of ints, and keepdims a bool"
                }
                OpKind::Softmax => "(x[, axis][, out]) where axis is an int (default -1)",
                OpKind::Norm | OpKind::Matmul => "(a, b[, out])",
            },
        }
    }

    /// Whether the op may write its result over an identically laid out input.
    pub const fn in_place_ok(self) -> bool {
        matches!(
            self.kind(),
            OpKind::Binary | OpKind::Unary | OpKind::Softmax | OpKind::Norm
        )
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

/// The form of `gelu`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Gelu {
    /// `x * Phi(x)` through erf (PyTorch's default, `approximate='none'`).
    #[default]
    Erf,
    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (`approximate='tanh'`).
    Tanh,
}

/// A set of ops (a bit mask).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OpSet(u32);

impl OpSet {
    /// No op.
    pub const EMPTY: OpSet = OpSet(0);

    /// Whether `op` is in the set.
    pub fn contains(self, op: Op) -> bool {
        self.0 & op.bit() != 0
    }

    /// Adds `op`.
    pub fn insert(&mut self, op: Op) {
        self.0 |= op.bit();
    }

    /// The ops in either set.
    pub fn union(self, other: OpSet) -> OpSet {
        OpSet(self.0 | other.0)
    }

    /// Whether the set has no op.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The ops in the set, in declaration order.
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

    /// The union of several comma-separated lists (see `parse_list`); errors name `source`.
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
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
}

impl Scalar {
    /// The number as a float.
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
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
}
