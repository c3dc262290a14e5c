//! DLPack import and export, and the validation of `DLTensor`s written by foreign code.
//!
//! Ownership on import: the consumer takes the managed tensor as soon as it is handed over, so
//! every path, including a validation failure, ends with the producer's deleter running exactly
//! once (on failure: before the error is returned; on success: when the last Tensor reference
//! dies). The `Owner` is built first so that dropping it on any early return does that.
//!
//! `validate` checks a `DLTensor` written by foreign code (with the fast path that checks the
//! common cases while it copies them); this module imports; `export` hands tensors out.

mod export;
#[cfg(test)]
mod tests;
mod validate;

pub(super) use export::ExportBlocks;
use validate::try_build;
pub(crate) use validate::{borrow_dltensor, check_dltensor};
#[cfg(test)]
use validate::{is_common_device, is_common_dtype};

use super::{is_aligned_parts, is_contiguous_parts, Owner, Tensor, TensorParts, FLAG_READ_ONLY};
use crate::abi::*;
use crate::error::{Error, Result};
use core::ptr::NonNull;

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
