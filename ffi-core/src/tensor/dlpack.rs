//! DLPack import and export, and the validation of `DLTensor`s written by foreign code.
//!
//! Ownership on import: the consumer takes the managed tensor as soon as it is handed over, so
//! every path, including a validation failure, ends with the producer's deleter running exactly
//! once (on failure: before the error is returned; on success: when the last Tensor reference
//! dies). The `Owner` is built first so that dropping it on any early return does that.

use super::{checked_numel, is_aligned_parts, is_contiguous_parts, Owner, Tensor, TensorParts};
use crate::abi::*;
use crate::error::{Error, Result};
use crate::object::{dec_ref, inc_ref};
use crate::{DataType, Device};
use core::ptr::NonNull;

/// The element types nearly every tensor has (scalar int, uint, float, bfloat, bool of a usual
/// width): accepted without the full `DataType::from_raw` check, which import pays on every call.
#[inline]
fn is_common_dtype(dt: DLDataType) -> bool {
    dt.lanes == 1
        && match dt.code {
            kDLInt | kDLUInt | kDLFloat => matches!(dt.bits, 8 | 16 | 32 | 64),
            kDLBfloat => dt.bits == 16,
            kDLBool => dt.bits == 8,
            _ => false,
        }
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
pub(crate) unsafe fn borrow_dltensor(dl: &DLTensor) -> core::result::Result<Tensor, String> {
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
/// deleter) on failure.
///
/// # Safety
/// As `check_dltensor`, with `dl` owned by `owner`.
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
pub(crate) unsafe fn import_versioned(
    managed: NonNull<DLManagedTensorVersioned>,
    require_alignment: usize,
    require_contiguous: bool,
    func: &str,
) -> Result<Tensor> {
    // From here on the deleter runs exactly once, whatever happens.
    let owner = Owner::Versioned(managed);
    // SAFETY: a valid managed tensor per the contract. Only `version` (and the deleter, through
    // the owner) is read before the major version is known to describe this layout.
    let m = unsafe { managed.as_ref() };
    if m.version.major != DLPACK_MAJOR_VERSION {
        return Err(Error::value_error(format!(
            "{func}: unsupported DLPack version {}.{} (`version.major` must be \
             {DLPACK_MAJOR_VERSION})",
            m.version.major, m.version.minor
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
pub(crate) unsafe fn import_legacy(
    managed: NonNull<DLManagedTensor>,
    require_alignment: usize,
    require_contiguous: bool,
    func: &str,
) -> Result<Tensor> {
    let owner = Owner::Legacy(managed);
    // SAFETY: a valid managed tensor per the contract, kept alive by `owner`.
    unsafe {
        import(
            &managed.as_ref().dl_tensor,
            owner,
            false,
            require_alignment,
            require_contiguous,
            func,
        )
    }
}

unsafe extern "C" fn versioned_deleter(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: made by `to_dlpack_versioned` (the only user of this deleter), which gave it a
    // reference to the tensor in `manager_ctx` and allocated it as a Box.
    unsafe {
        let m = Box::from_raw(m);
        dec_ref(m.manager_ctx.cast());
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
    pub fn to_dlpack_versioned(&self) -> NonNull<DLManagedTensorVersioned> {
        let obj = self.as_raw();
        // SAFETY: we hold a reference; the new one belongs to the managed tensor.
        unsafe { inc_ref(obj) };
        let flags = if self.read_only() {
            DLPACK_FLAG_BITMASK_READ_ONLY
        } else {
            0
        };
        let m = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion {
                major: DLPACK_MAJOR_VERSION,
                minor: DLPACK_MINOR_VERSION,
            },
            manager_ctx: obj.cast(),
            deleter: Some(versioned_deleter),
            flags,
            dl_tensor: *self.dl_tensor(),
        });
        NonNull::from(Box::leak(m))
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
