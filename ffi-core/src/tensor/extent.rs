//! The bytes a strided layout addresses, computed checked: what import and every view or slice
//! go through before a tensor exists, so that every byte offset later computed from its shape,
//! strides and `byte_offset` (in i64, by the runtime, a kernel or a consumer) fits.
//!
//! Each quantity is kept under 2^63 bytes: `numel · itemsize`, every dimension's reach
//! `stride · (dim − 1) · itemsize`, their sum (the negative and positive reaches apart), and the
//! sum plus `byte_offset`. Sizes are counted in bits, so sub-byte elements need no special case.
//!
//! Also the rest of the shape and stride arithmetic: element counts, compact strides, contiguity
//! and alignment.

use crate::abi::{kDLCUDAHost, kDLCUDAManaged, kDLROCM, kDLROCMHost};
use core::ffi::c_void;

/// The most bytes any of the quantities may span, in bits.
const LIMIT_BITS: i128 = i64::MAX as i128 * 8;

/// The bytes `[lo, hi)` relative to `data` (so `byte_offset` included) that a tensor addresses,
/// or `None` if it has no elements; an error naming the field (after `prefix`, e.g.
/// `dl_tensor.`) and dimension that is too large. `shape` must have no negative dimension;
/// `strides` is `None` for compact row-major strides; `elem_bits` is bits × lanes.
pub(crate) fn byte_extent(
    shape: &[i64],
    strides: Option<&[i64]>,
    elem_bits: u64,
    byte_offset: u64,
    prefix: &str,
) -> Result<Option<(i64, i64)>, String> {
    if byte_offset > i64::MAX as u64 {
        return Err(format!(
            "`{prefix}byte_offset` ({byte_offset}) is more than 2^63-1"
        ));
    }
    let bits = i128::from(elem_bits);
    let numel = checked_numel(shape)
        .ok_or_else(|| format!("`{prefix}shape` {shape:?} has more than 2^63-1 elements"))?;
    if i128::from(numel) * bits > LIMIT_BITS {
        return Err(format!(
            "`{prefix}shape` {shape:?} holds {numel} elements of {elem_bits} bits: more than \
             2^63-1 bytes"
        ));
    }
    if numel == 0 {
        return Ok(None);
    }
    let (mut lo, mut hi) = (0i128, 0i128);
    match strides {
        None => hi = i128::from(numel) * bits,
        Some(strides) => {
            for (i, (&d, &s)) in shape.iter().zip(strides).enumerate() {
                // At most 2^63 · 2^63: exact in i128.
                let reach = i128::from(d - 1) * i128::from(s);
                if reach.abs() > LIMIT_BITS / bits {
                    return Err(format!(
                        "`{prefix}strides[{i}]` ({s}) over `{prefix}shape[{i}]` ({d}) reaches \
                         more than 2^63-1 bytes"
                    ));
                }
                // Both sides are summed as positive amounts; `lo` is negated at the end.
                let (side, reach) = if reach < 0 {
                    (&mut lo, -reach * bits)
                } else {
                    (&mut hi, reach * bits)
                };
                *side += reach;
                if *side > LIMIT_BITS {
                    return Err(format!(
                        "`{prefix}strides` {strides:?} over `{prefix}shape` {shape:?} reach more \
                         than 2^63-1 bytes together (at dimension {i})"
                    ));
                }
            }
            hi += bits;
            lo = -lo;
        }
    }
    let base = i128::from(byte_offset) * 8;
    if base + hi > LIMIT_BITS {
        return Err(format!(
            "`{prefix}byte_offset` ({byte_offset}) plus the {} bytes the layout spans is more \
             than 2^63-1",
            (hi + 7) / 8
        ));
    }
    // In range: |lo| and base + hi are at most LIMIT_BITS, so both fit in i64 as bytes.
    Ok(Some((
        (base + lo).div_euclid(8) as i64,
        (base + hi + 7).div_euclid(8) as i64,
    )))
}

/// Compact row-major strides (in elements). Dimensions of size 0 count as 1, as PyTorch does, and
/// the product saturates: both only matter for tensors without elements, where any stride is valid.
pub(crate) fn fill_compact_strides(shape: &[i64], strides: &mut [i64]) {
    let mut acc: i64 = 1;
    for (st, &dim) in strides.iter_mut().zip(shape).rev() {
        *st = acc;
        acc = acc.saturating_mul(dim.max(1));
    }
}

/// Number of elements, or `None` if it does not fit in i64. Dimensions must be non-negative.
pub(crate) fn checked_numel(shape: &[i64]) -> Option<i64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d))
}

/// Contiguity as tvm-ffi and PyTorch define it: compact row-major strides, ignoring dimensions of
/// size 1 (their stride is arbitrary); a tensor without elements is contiguous.
pub(crate) fn is_contiguous_parts(shape: &[i64], strides: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected: i64 = 1;
    for (&dim, &st) in shape.iter().zip(strides).rev() {
        if dim == 1 {
            continue;
        }
        if st != expected {
            return false;
        }
        expected = expected.saturating_mul(dim);
    }
    true
}

/// Whether data pointers on `device` are addresses (CPU, CUDA, ROCm and their host and managed
/// memory), so that pointer arithmetic on them means something; on the others (OpenCL, Vulkan,
/// ...) they are opaque handles and only `byte_offset` may move.
pub(crate) fn addresses_directly(device: i32) -> bool {
    device <= kDLCUDAHost || device == kDLCUDAManaged || device == kDLROCM || device == kDLROCMHost
}

/// Whether `data + byte_offset` of a tensor on `device` is aligned: by address on devices whose
/// pointers are addresses, by `byte_offset` alone on the others (OpenCL, Vulkan, ... hand out
/// opaque handles), as tvm-ffi checks it.
pub(crate) fn is_aligned_parts(
    data: *mut c_void,
    byte_offset: u64,
    device: i32,
    alignment: usize,
) -> bool {
    if alignment <= 1 {
        return true;
    }
    if addresses_directly(device) {
        (data as usize as u64).wrapping_add(byte_offset) % alignment as u64 == 0
    } else {
        byte_offset % alignment as u64 == 0
    }
}

#[cfg(test)]
mod tests {
    use super::byte_extent;

    #[test]
    fn extents_of_ordinary_layouts() {
        assert_eq!(byte_extent(&[2, 3], None, 32, 0, ""), Ok(Some((0, 24))));
        assert_eq!(
            byte_extent(&[2, 3], Some(&[1, 2]), 32, 8, ""),
            Ok(Some((8, 8 + 24)))
        );
        assert_eq!(byte_extent(&[4], Some(&[-1]), 8, 3, ""), Ok(Some((0, 4))));
        assert_eq!(
            byte_extent(&[0, 5], Some(&[i64::MAX, 1]), 64, 0, ""),
            Ok(None)
        );
        assert_eq!(byte_extent(&[3], None, 4, 0, ""), Ok(Some((0, 2))));
        assert_eq!(byte_extent(&[], None, 64, 16, ""), Ok(Some((16, 24))));
    }

    #[test]
    fn every_overflow_is_refused_naming_what() {
        let big = (1i64 << 62) - 1;
        for (shape, strides, bits, offset, needle) in [
            (
                vec![2i64],
                Some(vec![big]),
                32,
                0,
                "`t.strides[0]` (4611686018427387903) over `t.shape[0]` (2)",
            ),
            (
                vec![3, 2],
                Some(vec![1, i64::MIN]),
                8,
                0,
                "`t.strides[1]` (-9223372036854775808)",
            ),
            (
                vec![1 << 62],
                None,
                64,
                0,
                "holds 4611686018427387904 elements of 64 bits",
            ),
            (
                vec![2, 2],
                Some(vec![1 << 62, 1 << 62]),
                8,
                0,
                "reach more than 2^63-1 bytes together (at dimension 1)",
            ),
            (
                vec![2],
                Some(vec![1 << 60]),
                8,
                u64::MAX,
                "`t.byte_offset` (18446744073709551615) is more",
            ),
            (vec![2], Some(vec![1 << 61]), 16, (1 << 62) + 1, "plus the"),
        ] {
            let e = byte_extent(&shape, strides.as_deref(), bits, offset, "t.").unwrap_err();
            assert!(e.contains(needle), "{e}");
        }
    }
}
