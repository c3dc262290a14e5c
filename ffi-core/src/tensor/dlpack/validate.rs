//! The checks of a `DLTensor` that foreign code wrote (a DLPack import, a borrowed `DLTensor*`
//! argument): every field validated, every byte extent computed checked. `try_build` is the
//! import's fast path: it accepts the common cases while it copies the dimensions, and leaves the
//! rest to `check_dltensor`.

use crate::abi::*;
use crate::tensor::extent::byte_extent;
use crate::tensor::{
    alloc_tensor, checked_numel, finish_tensor, free_unfinished, is_aligned_parts,
    is_contiguous_parts, tail_ptr, Owner, Tensor, TensorFields, TensorParts, FLAG_BORROWED,
};
use crate::{DataType, Device};

/// The element types nearly every tensor has (scalar int, uint, float, bfloat, bool of a usual
/// width): accepted without the full `DataType::from_raw` check, which import pays on every call.
#[inline]
pub(super) fn is_common_dtype(dt: DLDataType) -> bool {
    /// For each type code, bit `bits / 8` is set for the common widths.
    const COMMON: [u32; 7] = {
        let ints = 1 << 1 | 1 << 2 | 1 << 4 | 1 << 8;
        let mut t = [0; 7];
        t[kDLInt as usize] = ints;
        t[kDLUInt as usize] = ints;
        t[kDLFloat as usize] = ints;
        t[kDLBfloat as usize] = 1 << 2;
        t[kDLBool as usize] = 1 << 1;
        t
    };
    dt.lanes == 1
        && dt.bits % 8 == 0
        && (dt.code as usize) < COMMON.len()
        && COMMON[dt.code as usize] >> (dt.bits / 8) & 1 != 0
}

/// The devices nearly every tensor is on (CPU, CUDA, CUDA host memory), with a valid index:
/// accepted without the `Device::from_raw` table lookup.
#[inline]
pub(super) fn is_common_device(dev: DLDevice) -> bool {
    const _: () = assert!(kDLCUDA == kDLCPU + 1 && kDLCUDAHost == kDLCPU + 2);
    (dev.device_type.wrapping_sub(kDLCPU) as u32) < 3 && dev.device_id >= 0
}

/// Dimensions the fast path takes; more go through the full checks (which also bound the
/// memory a tensor that turns out to be invalid is allocated for before being refused).
const FAST_MAX_NDIM: u32 = 64;

/// Builds a Tensor from a foreign `DLTensor` of the usual kind that passes every check: a common
/// dtype and device, a non-NULL shape without negative entries whose element count fits in i64,
/// data wherever there are elements, the requested alignment and (if asked) contiguity.
///
/// On anything unusual or wrong it gives `owner` back untouched, and the caller runs the full
/// checks (`check_dltensor` and the import options), which produce the error or accept the rarer
/// cases. So this path accepts only what those checks accept and builds the same object (a unit
/// test compares the two); it just does so without building a `Checked` or formatting anything,
/// and reads every field once: the new object is allocated as soon as `ndim` is known, the shape
/// and strides are validated while being copied into it, the other fields while being written,
/// and it is freed again if anything turns out to be unusual.
///
/// # Safety
/// As `check_dltensor`; `owner` is what keeps `dl` alive, if anything.
#[inline(always)]
pub(super) unsafe fn try_build(
    dl: &DLTensor,
    flags: u32,
    require_alignment: usize,
    require_contiguous: bool,
    owner: Owner,
) -> core::result::Result<Tensor, Owner> {
    let ndim = dl.ndim;
    let src_shape = dl.shape.cast_const();
    // `ndim as u32` also sends negative ndim to the full checks. The other fields are checked
    // after the copy, where they are read once for the check and the new object together (a
    // tensor refused then costs an allocation that is freed again).
    if ndim as u32 > FAST_MAX_NDIM || (ndim != 0 && src_shape.is_null()) {
        return Err(owner);
    }
    let n = ndim as usize;
    let t = alloc_tensor(n);
    let shape = tail_ptr(t);
    // SAFETY: the tail of `alloc_tensor(n)` holds shape[n] then strides[n].
    let strides = unsafe { shape.add(n) };
    let src_strides = dl.strides.cast_const();
    // SAFETY: `src_shape` is non-NULL (n > 0) with n readable entries per the contract, as is a
    // non-NULL `src_strides`; `shape` and `strides` are the new object's tail, with room for n of
    // each. The usual ranks get a copy unrolled for their n.
    let (any_bits, numel, reach, overflow) = unsafe {
        let copy = |k| copy_dims(k, src_shape, src_strides, shape, strides);
        match n {
            1 => copy(1),
            2 => copy(2),
            3 => copy(3),
            4 => copy(4),
            _ => copy(n),
        }
    };
    let fields = TensorFields {
        data: dl.data,
        device: dl.device,
        dtype: dl.dtype,
        byte_offset: dl.byte_offset,
        flags,
    };
    let mut ok = any_bits >= 0
        && !overflow
        && (numel == 0 || !fields.data.is_null())
        && is_common_dtype(fields.dtype)
        && is_common_device(fields.device)
        && is_aligned_parts(
            fields.data,
            fields.byte_offset,
            fields.device.device_type,
            require_alignment,
        );
    // The extent, conservatively (both directions of the strides summed, so what passes here
    // passes `byte_extent` in the full checks): every byte offset fits in i64. Common dtypes are
    // whole bytes of one lane.
    if ok {
        let item = u64::from(fields.dtype.bits / 8);
        // `reach` may be u64::MAX itself (one dimension's (d - 1) × |stride| can be exactly
        // that without overflowing), so the `+ 1` is checked too.
        let span = if numel == 0 {
            Some(0)
        } else if src_strides.is_null() {
            Some(numel as u64)
        } else {
            reach.max(numel as u64 - 1).checked_add(1)
        };
        ok = span
            .and_then(|span| span.checked_mul(item))
            .and_then(|b| b.checked_add(fields.byte_offset))
            .is_some_and(|end| end <= i64::MAX as u64);
    }
    if ok {
        if src_strides.is_null() {
            // SAFETY: the n entries of each tail array of the new object.
            unsafe {
                crate::tensor::fill_compact_strides(
                    core::slice::from_raw_parts(shape, n),
                    core::slice::from_raw_parts_mut(strides, n),
                )
            };
        } else if require_contiguous {
            // SAFETY: as above, both filled.
            ok = unsafe {
                is_contiguous_parts(
                    core::slice::from_raw_parts(shape, n),
                    core::slice::from_raw_parts(strides, n),
                )
            };
        }
    }
    if !ok {
        // SAFETY: from `alloc_tensor(n)`, not finished and not used again.
        unsafe { free_unfinished(t, n) };
        return Err(owner);
    }
    // SAFETY: the tail is filled and n <= FAST_MAX_NDIM fits in i32.
    Ok(unsafe { finish_tensor(t, n, fields, owner) })
}

/// Copies `n` dimensions (and strides, when `src_strides` is not NULL) into a new tensor's tail.
/// Returns the OR of all dimensions (negative iff one is), their product, the elements the
/// strides reach (the sum of `|stride| · (dim − 1)`), and whether a step of the product or of the
/// reach overflowed (if none did, the product is the element count; a zero dimension after an
/// overflow makes a valid empty tensor, rare enough to leave to the full checks).
///
/// # Safety
/// `src_shape` (and a non-NULL `src_strides`) holds `n` readable entries; `shape` and `strides`
/// have room for `n` each and overlap neither.
#[inline(always)]
unsafe fn copy_dims(
    n: usize,
    src_shape: *const i64,
    src_strides: *const i64,
    shape: *mut i64,
    strides: *mut i64,
) -> (i64, i64, u64, bool) {
    let (mut any_bits, mut numel, mut overflow) = (0i64, 1i64, false);
    let mut reach = 0u64;
    for i in 0..n {
        // SAFETY: `i < n`, per the contract.
        unsafe {
            let d = src_shape.add(i).read();
            shape.add(i).write(d);
            if !src_strides.is_null() {
                let s = src_strides.add(i).read();
                strides.add(i).write(s);
                let (r, o1) = (d as u64).wrapping_sub(1).overflowing_mul(s.unsigned_abs());
                let (sum, o2) = reach.overflowing_add(if d > 0 { r } else { 0 });
                reach = sum;
                overflow |= o1 && d > 0 || o2;
            }
            any_bits |= d;
            let (product, o) = numel.overflowing_mul(d);
            numel = product;
            overflow |= o;
        }
    }
    (any_bits, numel, reach, overflow)
}

/// Bits per element (bits × lanes) of a data type.
#[inline]
fn elem_bits(dt: DLDataType) -> u64 {
    u64::from(dt.bits) * u64::from(dt.lanes)
}

/// A foreign `DLTensor` that passed validation, borrowing its shape and strides.
pub(crate) struct Checked<'a> {
    pub dtype: DataType,
    pub device: Device,
    pub shape: &'a [i64],
    pub strides: Option<&'a [i64]>,
}

/// Validates a `DLTensor` written by foreign code; the error names the field (`prefix` is
/// prepended to field names, e.g. `dl_tensor.`).
///
/// # Safety
/// A non-NULL `shape` (and `strides`) must hold `ndim` readable entries for `'a`.
// Inlined: returning the result through memory costs a store-forwarding stall per import.
#[inline(always)]
pub(crate) unsafe fn check_dltensor<'a>(
    dl: &'a DLTensor,
    prefix: &str,
) -> core::result::Result<Checked<'a>, String> {
    if dl.ndim < 0 {
        return Err(format!("`{prefix}ndim` is negative ({})", dl.ndim));
    }
    let n = dl.ndim as usize;
    let shape: &[i64] = if n == 0 {
        &[]
    } else if dl.shape.is_null() {
        return Err(format!("`{prefix}shape` is NULL with ndim {n}"));
    } else {
        // SAFETY: non-NULL shape with ndim entries per the contract.
        unsafe { core::slice::from_raw_parts(dl.shape, n) }
    };
    if let Some(i) = shape.iter().position(|&d| d < 0) {
        return Err(format!("`{prefix}shape[{i}]` is negative ({})", shape[i]));
    }
    let strides = if n == 0 || dl.strides.is_null() {
        None
    } else {
        // SAFETY: as for shape.
        Some(unsafe { core::slice::from_raw_parts(dl.strides.cast_const(), n) })
    };
    let dtype = if is_common_dtype(dl.dtype) {
        DataType(dl.dtype)
    } else {
        let dtype = DataType::from_raw(dl.dtype).map_err(|e| {
            format!(
                "`{prefix}dtype` (code {}, bits {}, lanes {}) is rejected: {e}",
                dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
            )
        })?;
        if dtype == DataType::void() {
            return Err(format!("`{prefix}dtype` is void, which has no elements"));
        }
        dtype
    };
    let device = if dl.device.device_type == kDLCPU && dl.device.device_id >= 0 {
        Device(dl.device)
    } else {
        Device::from_raw(dl.device).map_err(|e| format!("`{prefix}device` is rejected: {e}"))?
    };
    let numel = checked_numel(shape)
        .ok_or_else(|| format!("`{prefix}shape` {shape:?} has more than 2^63-1 elements"))?;
    if dl.data.is_null() && numel > 0 {
        return Err(format!(
            "`{prefix}data` is NULL but the tensor has {numel} element{}",
            if numel == 1 { "" } else { "s" }
        ));
    }
    byte_extent(shape, strides, elem_bits(dtype.0), dl.byte_offset, prefix)?;
    Ok(Checked {
        dtype,
        device,
        shape,
        strides,
    })
}

/// The borrowed Tensor a `kRFFIDLTensorPtr` argument becomes; the error names the bad field.
///
/// # Safety
/// As `check_dltensor`; the data must outlive every use of the result.
#[inline]
pub(crate) unsafe fn borrow_dltensor(dl: &DLTensor) -> core::result::Result<Tensor, String> {
    // SAFETY: forwarded contract.
    match unsafe { try_build(dl, FLAG_BORROWED, 0, false, Owner::Borrowed) } {
        Ok(t) => Ok(t),
        // SAFETY: forwarded contract.
        Err(_) => unsafe { borrow_dltensor_checked(dl) },
    }
}

/// `borrow_dltensor` for what `try_build` leaves to the full checks.
///
/// # Safety
/// As `borrow_dltensor`.
#[cold]
#[inline(never)]
unsafe fn borrow_dltensor_checked(dl: &DLTensor) -> core::result::Result<Tensor, String> {
    // SAFETY: forwarded contract.
    let c = unsafe { check_dltensor(dl, "") }?;
    Ok(TensorParts {
        data: dl.data,
        device: c.device,
        dtype: c.dtype,
        shape: c.shape,
        strides: c.strides,
        byte_offset: dl.byte_offset,
        read_only: false,
        borrowed: true,
        owner: Owner::Borrowed,
    }
    .build())
}
