//! DLPack export: a managed tensor that shares the data and holds a reference to the tensor,
//! released by its deleter (DLPack 1.x managed tensors come from a per-thread block cache).

use crate::abi::*;
use crate::error::{Error, Result};
use crate::object::{dec_ref, inc_ref};
use crate::tensor::{cache, Tensor};
use core::ptr::NonNull;

/// Managed tensors made by `to_dlpack_versioned` are blocks of this cache.
pub(in crate::tensor) type ExportBlocks = cache::FreeBlocks<
    { size_of::<DLManagedTensorVersioned>() },
    { align_of::<DLManagedTensorVersioned>() },
>;

/// This thread's cache of freed managed tensors, for the next export.
const EXPORTS: cache::Pick<ExportBlocks> = |b| &b.exports;

unsafe extern "C" fn versioned_deleter(m: *mut DLManagedTensorVersioned) {
    let Some(m) = NonNull::new(m) else {
        return;
    };
    // SAFETY: made by `to_dlpack_versioned` (the only user of this deleter), which gave it a
    // reference to the tensor in `manager_ctx` and took its memory from `EXPORTS`; the consumer
    // calls the deleter once, so both are released exactly once here.
    unsafe {
        let obj = (*m.as_ptr()).manager_ctx.cast();
        cache::free(EXPORTS, m.cast());
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
        let m = cache::alloc(EXPORTS).cast::<DLManagedTensorVersioned>();
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
