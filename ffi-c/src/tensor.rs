//! Exports of the tensor, DLPack and environment (stream, allocator) part of the C API
//! (implemented in `rffi_core::capi::tensor`).
use rffi_core::abi::*;
use rffi_core::capi;
use rffi_core::tensor::RFFIDLPackManagedTensorAllocator;
use std::ffi::c_void;

/// Imports a legacy DLPack managed tensor as a Tensor without copying the data.
///
/// Ownership of a non-NULL `from` passes to rffi in every case: on success the producer's deleter
/// runs once, when the last reference to `*out` is dropped; on failure (bad argument, invalid
/// tensor) it has already run when -1 is returned. Invalid tensors are ValueErrors naming the
/// field: NULL data with elements, negative ndim or shape entry, NULL shape with ndim > 0, an
/// unknown or malformed dtype (lanes 0, a bit width no type has, ...), an unknown device type, and
/// a layout any of whose byte extents does not fit in 2^63-1 bytes (`numel · itemsize`, a
/// dimension's `stride · (dim − 1) · itemsize`, their sum, the sum plus `byte_offset`; the error
/// names the dimension).
///
/// `require_alignment` (bytes; 0 for none) rejects data whose `data + byte_offset` is not
/// aligned; a non-zero `require_contiguous` rejects non-contiguous strides. Both are ValueErrors.
///
/// # Safety
/// `from` must be NULL or a valid managed tensor not used by the caller afterwards; `out` must be
/// writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITensorFromDLPack(
    from: *mut DLManagedTensor,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFITensorFromDLPack(from, require_alignment, require_contiguous, out) }
}

/// Imports a DLPack 1.x managed tensor as a Tensor without copying the data; as
/// `RFFITensorFromDLPack`, and also: a major version other than `DLPACK_MAJOR_VERSION` is a
/// ValueError (the deleter still runs), `DLPACK_FLAG_BITMASK_READ_ONLY` is kept (functions that
/// write refuse the tensor, and exports carry the flag), and
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED` and flag bits DLPack does not define are refused.
///
/// # Safety
/// As `RFFITensorFromDLPack`.
#[no_mangle]
pub unsafe extern "C" fn RFFITensorFromDLPackVersioned(
    from: *mut DLManagedTensorVersioned,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe {
        capi::tensor::RFFITensorFromDLPackVersioned(
            from,
            require_alignment,
            require_contiguous,
            out,
        )
    }
}

/// Exports a Tensor as a legacy DLPack managed tensor sharing its data. The caller owns `*out` and
/// must call its deleter once; the deleter releases the reference it holds on the tensor. A
/// read-only tensor is refused (ValueError): the legacy struct cannot carry the flag.
///
/// # Safety
/// `from` must be NULL or a live object; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITensorToDLPack(
    from: RFFIObjectHandle,
    out: *mut *mut DLManagedTensor,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFITensorToDLPack(from, out) }
}

/// Exports a Tensor as a DLPack 1.x managed tensor sharing its data, stamped with this header's
/// `DLPACK_MAJOR_VERSION.DLPACK_MINOR_VERSION` and the read-only flag. The caller owns `*out` and
/// must call its deleter once.
///
/// # Safety
/// `from` must be NULL or a live object; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITensorToDLPackVersioned(
    from: RFFIObjectHandle,
    out: *mut *mut DLManagedTensorVersioned,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFITensorToDLPackVersioned(from, out) }
}

/// The `DLTensor` of a Tensor object (at offset 24 of the object, as `RFFITensorObject` shows),
/// valid as long as the caller's reference. Its `strides` is always filled. Returns NULL with an
/// error raised if `obj` is NULL (ValueError) or not a Tensor (TypeError).
///
/// # Safety
/// `obj` must be NULL or a live object.
#[no_mangle]
pub unsafe extern "C" fn RFFITensorGetDLTensorPtr(obj: RFFIObjectHandle) -> *mut DLTensor {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFITensorGetDLTensorPtr(obj) }
}

/// Allocates a Tensor of `shape` (`ndim` entries), `dtype` on `device`, with compact strides. The
/// environment allocator (`RFFIEnvSetDLPackManagedTensorAllocator`) makes it when one is set;
/// otherwise CPU tensors come from the built-in allocator (64-byte aligned, zeroed) and other
/// devices are a RuntimeError.
///
/// # Safety
/// `shape` must hold `ndim` entries (it may be NULL when `ndim` is 0); `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFITensorAlloc(
    shape: *const i64,
    ndim: i32,
    dtype: DLDataType,
    device: DLDevice,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFITensorAlloc(shape, ndim, dtype, device, out) }
}

/// Allocates a Tensor like `prototype` (its `shape`, `ndim`, `dtype`, `device`, and `strides` if
/// not NULL; `data` and `byte_offset` are ignored), as `RFFITensorAlloc` does; tvm-ffi's
/// `TVMFFIEnvTensorAlloc`. The built-in CPU allocator accepts compact strides only.
///
/// # Safety
/// `prototype` must be NULL or a valid DLTensor whose arrays hold `ndim` entries; `out` must be
/// writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIEnvTensorAlloc(
    prototype: *mut DLTensor,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFIEnvTensorAlloc(prototype, out) }
}

/// Sets this thread's current stream for a device (NULL: the default stream) and, if
/// `opt_out_prev` is not NULL, stores the previous one there. An unknown device type or a
/// negative index is a ValueError.
///
/// # Safety
/// `opt_out_prev` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIEnvSetStream(
    device_type: i32,
    device_id: i32,
    stream: *mut c_void,
    opt_out_prev: *mut *mut c_void,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFIEnvSetStream(device_type, device_id, stream, opt_out_prev) }
}

/// This thread's current stream for a device: NULL if none was set (or the device is invalid).
///
/// # Safety
/// None beyond the C ABI.
#[no_mangle]
pub unsafe extern "C" fn RFFIEnvGetStream(device_type: i32, device_id: i32) -> *mut c_void {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFIEnvGetStream(device_type, device_id) }
}

/// Installs the environment tensor allocator for this thread (NULL removes it), and also for the
/// whole process when `write_to_global_context` is non-zero (threads without their own use it).
/// If `opt_out_original_allocator` is not NULL it receives the allocator that was in effect on
/// this thread. Allocations (`RFFITensorAlloc`, `RFFIEnvTensorAlloc`, kernels' outputs) then come
/// from it, so a host can hand out tensors of its own framework.
///
/// # Safety
/// `allocator` must follow `RFFIDLPackManagedTensorAllocator` and be callable from any thread
/// when installed globally; `opt_out_original_allocator` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIEnvSetDLPackManagedTensorAllocator(
    allocator: RFFIDLPackManagedTensorAllocator,
    write_to_global_context: i32,
    opt_out_original_allocator: *mut RFFIDLPackManagedTensorAllocator,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe {
        capi::tensor::RFFIEnvSetDLPackManagedTensorAllocator(
            allocator,
            write_to_global_context,
            opt_out_original_allocator,
        )
    }
}

/// The environment tensor allocator in effect on this thread (its own, else the process-wide
/// one), or NULL.
///
/// # Safety
/// None beyond the C ABI.
#[no_mangle]
pub unsafe extern "C" fn RFFIEnvGetDLPackManagedTensorAllocator() -> RFFIDLPackManagedTensorAllocator
{
    // SAFETY: the same contract, forwarded.
    unsafe { capi::tensor::RFFIEnvGetDLPackManagedTensorAllocator() }
}
