//! DLPack import and export, and the validation of `DLTensor`s written by foreign code.
//!
//! Ownership on import: the consumer takes the managed tensor as soon as it is handed over, so
//! every path, including a validation failure, ends with the producer's deleter running exactly
//! once (on failure: before the error is returned; on success: when the last Tensor reference
//! dies). The `Owner` is built first so that dropping it on any early return does that.

use super::extent::byte_extent;
use super::{
    alloc_tensor, checked_numel, finish_tensor, free_unfinished, is_aligned_parts,
    is_contiguous_parts, tail_ptr, Owner, Tensor, TensorFields, TensorParts, FLAG_BORROWED,
    FLAG_READ_ONLY,
};
use crate::abi::*;
use crate::error::{Error, Result};
use crate::object::{dec_ref, inc_ref};
use crate::{DataType, Device};
use core::ptr::NonNull;

/// The element types nearly every tensor has (scalar int, uint, float, bfloat, bool of a usual
/// width): accepted without the full `DataType::from_raw` check, which import pays on every call.
#[inline]
fn is_common_dtype(dt: DLDataType) -> bool {
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
fn is_common_device(dev: DLDevice) -> bool {
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
unsafe fn try_build(
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
        let span = if numel == 0 {
            0
        } else if src_strides.is_null() {
            numel as u64
        } else {
            reach.max(numel as u64 - 1) + 1
        };
        ok = span
            .checked_mul(item)
            .and_then(|b| b.checked_add(fields.byte_offset))
            .is_some_and(|end| end <= i64::MAX as u64);
    }
    if ok {
        if src_strides.is_null() {
            // SAFETY: the n entries of each tail array of the new object.
            unsafe {
                super::fill_compact_strides(
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

/// Checks the import options and builds the tensor; `owner` is dropped (running the producer's
/// deleter) on failure. The full path, for what `try_build` does not take.
///
/// # Safety
/// As `check_dltensor`, with `dl` owned by `owner`.
#[cold]
#[inline(never)]
unsafe fn import(
    dl: &DLTensor,
    owner: Owner,
    read_only: bool,
    require_alignment: usize,
    require_contiguous: bool,
    func: &str,
) -> Result<Tensor> {
    // SAFETY: forwarded contract.
    let c = unsafe { check_dltensor(dl, "dl_tensor.") }
        .map_err(|e| Error::value_error(format!("{func}: {e}")))?;
    if !is_aligned_parts(
        dl.data,
        dl.byte_offset,
        dl.device.device_type,
        require_alignment,
    ) {
        return Err(Error::value_error(format!(
            "{func}: data + byte_offset ({:p} + {}) is not aligned to {require_alignment} bytes",
            dl.data, dl.byte_offset
        )));
    }
    if require_contiguous {
        if let Some(strides) = c.strides {
            if !is_contiguous_parts(c.shape, strides) {
                return Err(Error::value_error(format!(
                    "{func}: tensor is not contiguous (shape {:?}, strides {strides:?}) but \
                     require_contiguous is set",
                    c.shape
                )));
            }
        }
    }
    Ok(TensorParts {
        data: dl.data,
        device: c.device,
        dtype: c.dtype,
        shape: c.shape,
        strides: c.strides,
        byte_offset: dl.byte_offset,
        read_only,
        borrowed: false,
        owner,
    }
    .build())
}

/// Imports a DLPack 1.x managed tensor (see `Tensor::from_dlpack_versioned`).
///
/// # Safety
/// `managed` must be a valid managed tensor that the caller hands over.
#[inline]
pub(crate) unsafe fn import_versioned(
    managed: NonNull<DLManagedTensorVersioned>,
    require_alignment: usize,
    require_contiguous: bool,
    func: &str,
) -> Result<Tensor> {
    // From here on the deleter runs exactly once, whatever happens.
    let mut owner = Owner::Versioned(managed);
    // SAFETY: a valid managed tensor per the contract. Only `version` and `flags` are read
    // before the major version is known to describe this layout.
    let m = unsafe { managed.as_ref() };
    if m.version.major == DLPACK_MAJOR_VERSION
        && m.flags & !(DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED) == 0
    {
        let flags = if m.flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0 {
            FLAG_READ_ONLY
        } else {
            0
        };
        // SAFETY: the managed tensor owns its DLTensor, and `owner` keeps it alive.
        match unsafe {
            try_build(
                &m.dl_tensor,
                flags,
                require_alignment,
                require_contiguous,
                owner,
            )
        } {
            Ok(t) => return Ok(t),
            Err(o) => owner = o,
        }
    }
    // The full path makes the same owner again, right away (so the owner stays a value in
    // registers here rather than one passed through memory).
    core::mem::forget(owner);
    // SAFETY: the managed tensor is handed over as it was to this function.
    unsafe { import_versioned_checked(managed, require_alignment, require_contiguous, func) }
}

/// `import_versioned` with every check spelled out, for what `try_build` leaves to it.
///
/// # Safety
/// As `import_versioned`.
#[cold]
#[inline(never)]
unsafe fn import_versioned_checked(
    managed: NonNull<DLManagedTensorVersioned>,
    require_alignment: usize,
    require_contiguous: bool,
    func: &str,
) -> Result<Tensor> {
    // From here on the deleter runs exactly once, whatever happens.
    let owner = Owner::Versioned(managed);
    // SAFETY: a valid managed tensor per the contract, kept alive by `owner`.
    let m = unsafe { managed.as_ref() };
    if m.version.major != DLPACK_MAJOR_VERSION {
        return Err(Error::value_error(format!(
            "{func}: unsupported DLPack version {}.{} (`version.major` must be \
             {DLPACK_MAJOR_VERSION})",
            m.version.major, m.version.minor
        )));
    }
    let unknown = m.flags
        & !(DLPACK_FLAG_BITMASK_READ_ONLY
            | DLPACK_FLAG_BITMASK_IS_COPIED
            | DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
    if unknown != 0 {
        return Err(Error::value_error(format!(
            "{func}: `flags` ({:#x}) has bits DLPack does not define ({unknown:#x}); a producer \
             newer than DLPack {DLPACK_MAJOR_VERSION}.x may mean something rffi cannot honour",
            m.flags
        )));
    }
    if m.flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 0 {
        return Err(Error::value_error(format!(
            "{func}: `flags` has DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, which rffi does not \
             support (sub-byte elements must be packed)"
        )));
    }
    let read_only = m.flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0;
    // SAFETY: the managed tensor owns its DLTensor, and `owner` keeps it alive.
    unsafe {
        import(
            &m.dl_tensor,
            owner,
            read_only,
            require_alignment,
            require_contiguous,
            func,
        )
    }
}

/// Imports a legacy managed tensor (see `Tensor::from_dlpack`).
///
/// # Safety
/// As `import_versioned`.
#[inline]
pub(crate) unsafe fn import_legacy(
    managed: NonNull<DLManagedTensor>,
    require_alignment: usize,
    require_contiguous: bool,
    func: &str,
) -> Result<Tensor> {
    let owner = Owner::Legacy(managed);
    // SAFETY: a valid managed tensor per the contract, kept alive by `owner`.
    let dl = unsafe { &managed.as_ref().dl_tensor };
    // SAFETY: as above.
    match unsafe { try_build(dl, 0, require_alignment, require_contiguous, owner) } {
        Ok(t) => Ok(t),
        // SAFETY: as above.
        Err(owner) => unsafe {
            import(
                dl,
                owner,
                false,
                require_alignment,
                require_contiguous,
                func,
            )
        },
    }
}

/// Managed tensors made by `to_dlpack_versioned` are blocks of this cache.
type ExportBlocks = super::cache::FreeBlocks<
    { size_of::<DLManagedTensorVersioned>() },
    { align_of::<DLManagedTensorVersioned>() },
>;

thread_local! {
    /// This thread's freed managed tensors, for the next export.
    static EXPORTS: core::cell::UnsafeCell<ExportBlocks> =
        const { core::cell::UnsafeCell::new(ExportBlocks::new()) };
}

unsafe extern "C" fn versioned_deleter(m: *mut DLManagedTensorVersioned) {
    let Some(m) = NonNull::new(m) else {
        return;
    };
    // SAFETY: made by `to_dlpack_versioned` (the only user of this deleter), which gave it a
    // reference to the tensor in `manager_ctx` and took its memory from `EXPORTS`; the consumer
    // calls the deleter once, so both are released exactly once here.
    unsafe {
        let obj = (*m.as_ptr()).manager_ctx.cast();
        super::cache::free(&EXPORTS, m.cast());
        dec_ref(obj);
    }
}

unsafe extern "C" fn legacy_deleter(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: as `versioned_deleter`, for `to_dlpack`.
    unsafe {
        let m = Box::from_raw(m);
        dec_ref(m.manager_ctx.cast());
    }
}

impl Tensor {
    /// Imports a DLPack 1.x managed tensor without copying. Ownership passes to rffi in every
    /// case: on success the producer's deleter runs once when the last reference dies; on failure
    /// it has already run when the error is returned.
    ///
    /// `require_alignment` (bytes, 0 for none) and `require_contiguous` reject tensors a kernel
    /// cannot use, as tvm-ffi's `TensorFromDLPack` arguments do. The read-only flag is kept.
    /// Errors are ValueErrors naming the bad field.
    ///
    /// # Safety
    /// `managed` must be a valid managed tensor, not used by the caller afterwards.
    pub unsafe fn from_dlpack_versioned(
        managed: NonNull<DLManagedTensorVersioned>,
        require_alignment: usize,
        require_contiguous: bool,
    ) -> Result<Tensor> {
        // SAFETY: forwarded contract.
        unsafe {
            import_versioned(
                managed,
                require_alignment,
                require_contiguous,
                "Tensor::from_dlpack_versioned",
            )
        }
    }

    /// Imports a legacy (pre-1.0) managed tensor without copying; as `from_dlpack_versioned`.
    ///
    /// # Safety
    /// As `from_dlpack_versioned`.
    pub unsafe fn from_dlpack(
        managed: NonNull<DLManagedTensor>,
        require_alignment: usize,
        require_contiguous: bool,
    ) -> Result<Tensor> {
        // SAFETY: forwarded contract.
        unsafe {
            import_legacy(
                managed,
                require_alignment,
                require_contiguous,
                "Tensor::from_dlpack",
            )
        }
    }

    /// Exports as a DLPack 1.x managed tensor sharing the data. The caller owns the result and
    /// must call its deleter once, which releases the reference it holds on this tensor. The
    /// version is this runtime's (`DLPACK_MAJOR_VERSION.DLPACK_MINOR_VERSION`) and the read-only
    /// flag is carried over.
    #[inline]
    pub fn to_dlpack_versioned(&self) -> NonNull<DLManagedTensorVersioned> {
        let obj = self.as_raw();
        let flags = if self.read_only() {
            DLPACK_FLAG_BITMASK_READ_ONLY
        } else {
            0
        };
        let m = super::cache::alloc(&EXPORTS).cast::<DLManagedTensorVersioned>();
        // SAFETY: a fresh block of the managed tensor's layout, written whole; the reference
        // added belongs to it and is released by `versioned_deleter`, as is the block.
        unsafe {
            inc_ref(obj);
            m.write(DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: DLPACK_MAJOR_VERSION,
                    minor: DLPACK_MINOR_VERSION,
                },
                manager_ctx: obj.cast(),
                deleter: Some(versioned_deleter),
                flags,
                dl_tensor: *self.dl_tensor(),
            });
        }
        m
    }

    /// Exports as a legacy managed tensor sharing the data; as `to_dlpack_versioned`. A read-only
    /// tensor is refused (ValueError): the legacy struct has no flag to tell the consumer.
    pub fn to_dlpack(&self) -> Result<NonNull<DLManagedTensor>> {
        if self.read_only() {
            return Err(Error::value_error(
                "Tensor::to_dlpack: the tensor is read-only and a legacy DLManagedTensor cannot \
                 say so; export it with to_dlpack_versioned",
            ));
        }
        let obj = self.as_raw();
        // SAFETY: as in `to_dlpack_versioned`.
        unsafe { inc_ref(obj) };
        let m = Box::new(DLManagedTensor {
            dl_tensor: *self.dl_tensor(),
            manager_ctx: obj.cast(),
            deleter: Some(legacy_deleter),
        });
        Ok(NonNull::from(Box::leak(m)))
    }
}

/// Releases a managed tensor handed over to a call that fails before importing it.
///
/// # Safety
/// `managed` must be a valid managed tensor the caller owns; it is not used afterwards.
pub(crate) unsafe fn drop_versioned(managed: NonNull<DLManagedTensorVersioned>) {
    drop(Owner::Versioned(managed));
}

/// As `drop_versioned`, for a legacy managed tensor.
///
/// # Safety
/// As `drop_versioned`.
pub(crate) unsafe fn drop_legacy(managed: NonNull<DLManagedTensor>) {
    drop(Owner::Legacy(managed));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcuts decide exactly the common cases, and only values the full checks accept.
    #[test]
    fn common_dtypes_and_devices_are_valid() {
        for code in 0..=255u8 {
            for bits in 0..=255u8 {
                for lanes in 0..=2u16 {
                    let dt = DLDataType { code, bits, lanes };
                    let expected = lanes == 1
                        && match code {
                            kDLInt | kDLUInt | kDLFloat => matches!(bits, 8 | 16 | 32 | 64),
                            kDLBfloat => bits == 16,
                            kDLBool => bits == 8,
                            _ => false,
                        };
                    assert_eq!(is_common_dtype(dt), expected, "{code} {bits} {lanes}");
                    if expected {
                        assert!(DataType::from_raw(dt).is_ok_and(|d| d != DataType::void()));
                    }
                }
            }
        }
        for device_type in -2..40 {
            for device_id in [-1, 0, 3] {
                let dev = DLDevice {
                    device_type,
                    device_id,
                };
                if is_common_device(dev) {
                    assert!(Device::from_raw(dev).is_ok(), "{device_type} {device_id}");
                }
            }
        }
    }

    fn same(a: &Tensor, b: &Tensor) {
        assert_eq!(a.shape(), b.shape());
        assert_eq!(a.strides(), b.strides());
        assert_eq!(a.dtype(), b.dtype());
        assert_eq!(a.device(), b.device());
        assert_eq!(a.data_ptr(), b.data_ptr());
        assert_eq!(a.byte_offset(), b.byte_offset());
        assert_eq!(a.read_only(), b.read_only());
        assert_eq!(a.is_borrowed(), b.is_borrowed());
    }

    /// `try_build` takes only what the full checks accept, and builds the same tensor.
    #[test]
    fn fast_path_agrees_with_the_full_checks() {
        #[repr(align(64))]
        struct Buf([u8; 256]);
        let mut buf = Buf([0; 256]);
        let data = buf.0.as_mut_ptr().cast::<core::ffi::c_void>();
        let shapes: Vec<Vec<i64>> = vec![
            vec![],
            vec![0],
            vec![3],
            vec![2, 3],
            vec![0, 3],
            vec![3, 1, 2, 1],
            vec![i64::MAX, 2],
            vec![i64::MAX, 2, 0],
            vec![-1, 2],
            vec![2, -3],
            vec![1; 5],
            vec![1; 70],
        ];
        let dtypes = [
            DataType::float(32).raw(),
            DataType::int(8).raw(),
            DataType::bool_().raw(),
            DLDataType {
                code: kDLBfloat,
                bits: 16,
                lanes: 1,
            },
            DLDataType {
                code: kDLComplex,
                bits: 64,
                lanes: 1,
            },
            DLDataType {
                code: kDLFloat,
                bits: 32,
                lanes: 2,
            },
            DLDataType {
                code: kDLFloat,
                bits: 32,
                lanes: 0,
            },
            DLDataType {
                code: 99,
                bits: 32,
                lanes: 1,
            },
            DataType::void().raw(),
        ];
        let devices = [
            (kDLCPU, 0),
            (kDLCUDA, 1),
            (kDLCUDAHost, 0),
            (kDLOpenCL, 0),
            (99, 0),
            (kDLCPU, -1),
        ];
        let (mut checked, mut fast_built) = (0, 0);
        for shape in &shapes {
            let n = shape.len();
            let compact = {
                let mut s = vec![0; n];
                super::super::fill_compact_strides(shape, &mut s);
                s
            };
            let reversed: Vec<i64> = compact.iter().rev().copied().collect();
            let mut shape = shape.clone();
            // Extremes whose byte extents overflow: the fast path must leave them to the checks.
            let huge = vec![(1i64 << 62) - 1; n];
            let min = vec![i64::MIN; n];
            for mut strides in [None, Some(compact), Some(reversed), Some(huge), Some(min)] {
                for (data, byte_offset) in [
                    (data, 0),
                    (core::ptr::null_mut(), 0),
                    (data, 4),
                    (data, i64::MAX as u64 - 2),
                    (data, u64::MAX),
                ] {
                    for &dtype in &dtypes {
                        for (device_type, device_id) in devices {
                            let dl = DLTensor {
                                data,
                                device: DLDevice {
                                    device_type,
                                    device_id,
                                },
                                ndim: n as i32,
                                dtype,
                                shape: shape.as_mut_ptr(),
                                strides: strides
                                    .as_mut()
                                    .map_or(core::ptr::null_mut(), |s| s.as_mut_ptr()),
                                byte_offset,
                            };
                            for align in [0, 1, 16, 3] {
                                for contiguous in [false, true] {
                                    // SAFETY: shape and strides hold n entries; nothing to release.
                                    let (fast, full) = unsafe {
                                        (
                                            try_build(&dl, 0, align, contiguous, Owner::Borrowed),
                                            import(
                                                &dl,
                                                Owner::Borrowed,
                                                false,
                                                align,
                                                contiguous,
                                                "f",
                                            ),
                                        )
                                    };
                                    match (fast, full) {
                                        (Ok(a), Ok(b)) => {
                                            same(&a, &b);
                                            fast_built += 1;
                                        }
                                        (Ok(_), Err(e)) => {
                                            panic!("fast path took {dl:?}: {}", e.message())
                                        }
                                        (Err(_), _) => {}
                                    }
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(
            checked > 10_000 && fast_built > 1_000,
            "{checked} {fast_built}"
        );
    }

    /// Small tensors reuse cached memory; more than the cache holds, made on one thread and freed
    /// on another, all come back in one piece.
    #[test]
    fn cached_memory_moves_between_threads() {
        let mut shape = [4i64, 2];
        let mut data = [0f32; 8];
        let dl = DLTensor {
            data: data.as_mut_ptr().cast(),
            device: Device::cpu().raw(),
            ndim: 2,
            dtype: DataType::float(32).raw(),
            shape: shape.as_mut_ptr(),
            strides: core::ptr::null_mut(),
            byte_offset: 0,
        };
        for _ in 0..3 {
            // SAFETY: a valid DLTensor that outlives the tensors.
            let made: Vec<Tensor> = (0..100)
                .map(|_| unsafe { borrow_dltensor(&dl) }.unwrap())
                .collect();
            let exports: Vec<_> = made.iter().map(Tensor::to_dlpack_versioned).collect();
            let handles: Vec<_> = exports.iter().map(|m| m.as_ptr() as usize).collect();
            std::thread::spawn(move || {
                for m in handles {
                    let m = m as *mut DLManagedTensorVersioned;
                    // SAFETY: our own exports, each released once.
                    unsafe { (*m).deleter.unwrap()(m) };
                }
                drop(made);
            })
            .join()
            .unwrap();
            // SAFETY: as above.
            let t = unsafe { borrow_dltensor(&dl) }.unwrap();
            assert_eq!(t.shape(), &[4, 2]);
            assert_eq!(t.strides(), &[2, 1]);
            assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0; 8]);
        }
    }
}
