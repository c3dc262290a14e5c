//! Checks of a destination (`out`): writable, the result's shape, distinct elements, and no
//! overlap with an input except the identical layout of an op that may write in place.

use super::{describe_arg, Parsed};
use rffi_core::{Error, Result, Tensor};

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
    use rffi_core::{DataType, Device};

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
