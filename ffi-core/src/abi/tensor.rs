//! C-layout items of the tensor API: the Tensor object as C sees it and the environment
//! allocator's function-pointer types.

use super::{DLManagedTensorVersioned, DLTensor, RFFIObject};
use core::ffi::{c_char, c_void};

/// A Tensor object (type index `kRFFITensor`) as foreign code reads it: the object header, then
/// the `DLTensor` at offset 24 (`TVMFFITensorGetDLTensorPtr` is `obj + 24`).
///
/// In every Tensor made by rffi, `strides` is filled (compact strides are computed when a producer
/// gave NULL) and `shape`/`strides` point into the object itself. rffi keeps private fields after
/// this prefix; C code must not assume the object is exactly this size.
#[repr(C)]
pub struct RFFITensorObject {
    /// The object header (`type_index` is `kRFFITensor`).
    pub header: RFFIObject,
    /// The tensor's description, at offset 24.
    pub dl_tensor: DLTensor,
}

/// How an environment allocator reports an error: `set_error(error_ctx, kind, message)` with a
/// kind such as `"MemoryError"` and a NUL-terminated message, then the allocator returns -1.
pub type RFFIDLPackSetError = Option<
    unsafe extern "C" fn(error_ctx: *mut c_void, kind: *const c_char, message: *const c_char),
>;

/// An environment tensor allocator, with the signature of DLPack's
/// `DLPackManagedTensorAllocator` (and tvm-ffi's allocator hook): given a `prototype` whose
/// `shape`, `ndim`, `dtype` and `device` (and, if non-NULL, `strides`) describe the wanted tensor,
/// it stores a new managed tensor in `*out` and returns 0, or calls `set_error` and returns -1.
/// rffi takes ownership of `*out` and calls its deleter once when the Tensor dies.
///
/// Named with the `RFFI` prefix so this header does not clash with a dlpack.h that declares
/// `DLPackManagedTensorAllocator` itself (DLPack >= 1.2).
pub type RFFIDLPackManagedTensorAllocator = Option<
    unsafe extern "C" fn(
        prototype: *mut DLTensor,
        out: *mut *mut DLManagedTensorVersioned,
        error_ctx: *mut c_void,
        set_error: RFFIDLPackSetError,
    ) -> i32,
>;

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<RFFITensorObject>() == 72);
    assert!(offset_of!(RFFITensorObject, dl_tensor) == 24);
};
