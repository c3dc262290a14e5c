//! Wrapping memory a backend allocated into a Tensor: a DLPack managed tensor whose deleter runs
//! the backend's release, imported into rffi (which calls the deleter once, when the last
//! reference dies).

use rffi_core::abi::{
    DLManagedTensorVersioned, DLPackVersion, DLTensor, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION,
};
use rffi_core::{DataType, Device, Result, Tensor};
use std::ffi::c_void;
use std::ptr::NonNull;

struct Owned {
    managed: DLManagedTensorVersioned,
    shape: Vec<i64>,
    release: Option<Box<dyn FnOnce() + Send>>,
}

unsafe extern "C" fn delete_owned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: `manager_ctx` is the Box<Owned> leaked by `wrap_allocation`; DLPack calls the
    // deleter once.
    let mut owned = unsafe { Box::from_raw((*m).manager_ctx.cast::<Owned>()) };
    if let Some(release) = owned.release.take() {
        release();
    }
}

/// A compact tensor over `data`, which `release` frees when the tensor dies.
///
/// # Safety
/// `data` must hold a compact `shape` tensor of `dtype` on `device`, valid until `release` runs.
pub unsafe fn wrap_allocation(
    data: *mut c_void,
    shape: &[i64],
    dtype: DataType,
    device: Device,
    release: Box<dyn FnOnce() + Send>,
) -> Result<Tensor> {
    let mut owned = Box::new(Owned {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion {
                major: DLPACK_MAJOR_VERSION,
                minor: DLPACK_MINOR_VERSION,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_owned),
            flags: 0,
            dl_tensor: DLTensor {
                data,
                device: device.raw(),
                ndim: shape.len() as i32,
                dtype: dtype.raw(),
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        shape: shape.to_vec(),
        release: Some(release),
    });
    owned.managed.dl_tensor.shape = owned.shape.as_mut_ptr();
    let raw = Box::into_raw(owned);
    // SAFETY: `raw` is a live box; the managed tensor points into it.
    unsafe {
        (*raw).managed.manager_ctx = raw.cast();
        let m = NonNull::new_unchecked(&raw mut (*raw).managed);
        // Ownership passes to rffi in every case (on failure the deleter has run).
        Tensor::from_dlpack_versioned(m, 0, false)
    }
}
