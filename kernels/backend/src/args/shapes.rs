//! The shapes results take: NumPy broadcasting (and stride-0 views of broadcast operands), the
//! output shape of each kind of op after checking its inputs agree, and matmul's shapes.

use super::{describe_arg, Parsed};
use crate::op::{Op, OpKind};
use rffi_core::{Error, Result, Tensor};

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

#[cfg(test)]
mod tests {
    use super::*;
    use rffi_core::{DataType, Device};

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
