//! Tensors, DLPack and the environment (streams, allocator).

use super::boundary::{guard, non_null, out_ptr};
use crate::abi::*;
use crate::tensor::alloc::{alloc_from_prototype, alloc_impl};
use crate::tensor::dlpack::{drop_legacy, drop_versioned, import_legacy, import_versioned};
use crate::tensor::{self, RFFIDLPackManagedTensorAllocator};
use crate::{stream, DataType, Device, Error, ObjectRef, ObjectType, Result, Tensor};
use core::ffi::c_void;
use core::ptr::NonNull;

/// Borrows a handle as a Tensor, checking its type.
///
/// # Safety
/// A non-null `h` must be a live object.
unsafe fn borrow_tensor(h: RFFIObjectHandle, func: &str, arg: &str) -> Result<Tensor> {
    let p = non_null(h.cast::<RFFIObject>(), func, arg)?;
    // SAFETY: a live object per the contract; we take our own reference.
    let obj = unsafe { ObjectRef::from_borrowed(NonNull::new_unchecked(p.cast_mut())) };
    Tensor::from_object(obj).map_err(|o| {
        Error::type_error(format!(
            "{func}: `{arg}` must be a tensor (ffi.Tensor) but is {}",
            crate::type_registry::type_name(o.type_index())
        ))
    })
}

#[cold]
#[inline(never)]
fn negative_alignment(func: &str, require_alignment: i32) -> Error {
    Error::value_error(format!(
        "{func}: `require_alignment` is negative ({require_alignment})"
    ))
}

#[cold]
#[inline(never)]
fn null_from(func: &str) -> Error {
    Error::value_error(format!("{func}: `from` is NULL"))
}

/// The error for an import whose `out` is NULL or whose `require_alignment` is negative,
/// checked in that order.
#[cold]
#[inline(never)]
fn import_args_error(func: &str, out: *mut RFFIObjectHandle, require_alignment: i32) -> Error {
    match out_ptr(out, func, "out") {
        Err(e) => e,
        Ok(_) => negative_alignment(func, require_alignment),
    }
}

#[inline]
fn write_tensor(out: *mut RFFIObjectHandle, t: Tensor) {
    // SAFETY: callers pass a checked writable out-pointer; the reference moves to the caller.
    unsafe { out.write(t.into_object().into_raw().as_ptr().cast()) };
}

/// See `RFFITensorFromDLPack` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITensorFromDLPack(
    from: *mut DLManagedTensor,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFITensorFromDLPack";
        let Some(from) = NonNull::new(from) else {
            return Err(null_from(F));
        };
        // The managed tensor is ours from here on: a bad argument still releases it.
        if out.is_null() || require_alignment < 0 {
            // SAFETY: the caller handed the managed tensor over.
            unsafe { drop_legacy(from) };
            return Err(import_args_error(F, out, require_alignment));
        }
        // SAFETY: the caller hands over a valid managed tensor; the alignment is non-negative.
        let t =
            unsafe { import_legacy(from, require_alignment as usize, require_contiguous != 0, F) }?;
        write_tensor(out, t);
        Ok(())
    })
}

/// See `RFFITensorFromDLPackVersioned` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITensorFromDLPackVersioned(
    from: *mut DLManagedTensorVersioned,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFITensorFromDLPackVersioned";
        let Some(from) = NonNull::new(from) else {
            return Err(null_from(F));
        };
        // The managed tensor is ours from here on: a bad argument still releases it.
        if out.is_null() || require_alignment < 0 {
            // SAFETY: the caller handed the managed tensor over.
            unsafe { drop_versioned(from) };
            return Err(import_args_error(F, out, require_alignment));
        }
        // SAFETY: the caller hands over a valid managed tensor; the alignment is non-negative.
        let t = unsafe {
            import_versioned(from, require_alignment as usize, require_contiguous != 0, F)
        }?;
        write_tensor(out, t);
        Ok(())
    })
}

/// See `RFFITensorToDLPack` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITensorToDLPack(
    from: RFFIObjectHandle,
    out: *mut *mut DLManagedTensor,
) -> i32 {
    guard(|| {
        const F: &str = "RFFITensorToDLPack";
        let out = out_ptr(out, F, "out")?;
        // SAFETY: a live object per the contract.
        let t = unsafe { borrow_tensor(from, F, "from") }?;
        let m = t
            .to_dlpack()
            .map_err(|e| Error::value_error(format!("{F}: {}", e.message())))?;
        // SAFETY: checked writable out-pointer; the managed tensor moves to the caller.
        unsafe { out.write(m.as_ptr()) };
        Ok(())
    })
}

/// See `RFFITensorToDLPackVersioned` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITensorToDLPackVersioned(
    from: RFFIObjectHandle,
    out: *mut *mut DLManagedTensorVersioned,
) -> i32 {
    guard(|| {
        const F: &str = "RFFITensorToDLPackVersioned";
        if let (false, Some(from)) = (out.is_null(), NonNull::new(from.cast())) {
            // SAFETY: a live object per the contract; the borrowed Tensor lives only during the
            // call, inside the caller's reference.
            if let Some(t) = unsafe { Tensor::borrow_object(from) } {
                // SAFETY: checked writable out-pointer; the managed tensor moves to the caller.
                unsafe { out.write(t.to_dlpack_versioned().as_ptr()) };
                return Ok(());
            }
        }
        // SAFETY: forwarded contract.
        unsafe { to_dlpack_versioned_checked(from, out, F) }
    })
}

/// `RFFITensorToDLPackVersioned` for the cases its shortcut leaves: bad arguments, foreign
/// tensors that need wrapping.
///
/// # Safety
/// As `RFFITensorToDLPackVersioned`.
#[cold]
#[inline(never)]
unsafe fn to_dlpack_versioned_checked(
    from: RFFIObjectHandle,
    out: *mut *mut DLManagedTensorVersioned,
    func: &str,
) -> Result<()> {
    let out = out_ptr(out, func, "out")?;
    // SAFETY: a live object per the contract.
    let t = unsafe { borrow_tensor(from, func, "from") }?;
    // SAFETY: checked writable out-pointer; the managed tensor moves to the caller.
    unsafe { out.write(t.to_dlpack_versioned().as_ptr()) };
    Ok(())
}

/// See `RFFITensorGetDLTensorPtr` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITensorGetDLTensorPtr(obj: RFFIObjectHandle) -> *mut DLTensor {
    let mut ptr = core::ptr::null_mut();
    let rc = guard(|| {
        const F: &str = "RFFITensorGetDLTensorPtr";
        let p = non_null(obj.cast::<RFFIObject>(), F, "obj")?;
        // SAFETY: a live object per the contract; only the header is read.
        let index = unsafe { (*p).type_index };
        if index != kRFFITensor {
            return Err(Error::type_error(format!(
                "{F}: `obj` must be a tensor (ffi.Tensor) but is {}",
                crate::type_registry::type_name(index)
            )));
        }
        // The DLTensor of every Tensor object sits right after the header; no reference is
        // taken, so the pointer lives as long as the caller's.
        ptr = obj
            .cast::<u8>()
            .wrapping_add(size_of::<RFFIObject>())
            .cast();
        Ok(())
    });
    if rc == 0 {
        ptr
    } else {
        core::ptr::null_mut()
    }
}

/// See `RFFITensorAlloc` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFITensorAlloc(
    shape: *const i64,
    ndim: i32,
    dtype: DLDataType,
    device: DLDevice,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFITensorAlloc";
        let out = out_ptr(out, F, "out")?;
        let n = usize::try_from(ndim)
            .map_err(|_| Error::value_error(format!("{F}: `ndim` is negative ({ndim})")))?;
        let shape = if n == 0 {
            &[][..]
        } else {
            let p = non_null(shape, F, "shape")?;
            // SAFETY: `shape` holds `ndim` entries per the contract.
            unsafe { core::slice::from_raw_parts(p, n) }
        };
        let device = Device::from_raw(device)
            .map_err(|e| Error::value_error(format!("{F}: `device` is rejected: {e}")))?;
        write_tensor(out, alloc_impl(shape, None, DataType(dtype), device, F)?);
        Ok(())
    })
}

/// See `RFFIEnvTensorAlloc` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIEnvTensorAlloc(
    prototype: *mut DLTensor,
    out: *mut RFFIObjectHandle,
) -> i32 {
    guard(|| {
        const F: &str = "RFFIEnvTensorAlloc";
        let out = out_ptr(out, F, "out")?;
        let p = non_null(prototype, F, "prototype")?;
        // SAFETY: a valid prototype per the contract.
        write_tensor(out, unsafe { alloc_from_prototype(&*p, F) }?);
        Ok(())
    })
}

fn device_of(func: &str, device_type: i32, device_id: i32) -> Result<Device> {
    Device::new(device_type, device_id).map_err(|e| {
        Error::value_error(format!(
            "{func}: device ({device_type}, {device_id}) is rejected: {e}"
        ))
    })
}

/// See `RFFIEnvSetStream` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIEnvSetStream(
    device_type: i32,
    device_id: i32,
    stream: *mut c_void,
    opt_out_prev: *mut *mut c_void,
) -> i32 {
    guard(|| {
        let device = device_of("RFFIEnvSetStream", device_type, device_id)?;
        let prev = stream::set_current_stream(device, stream);
        if !opt_out_prev.is_null() {
            // SAFETY: a non-NULL out-pointer is writable per the contract.
            unsafe { opt_out_prev.write(prev) };
        }
        Ok(())
    })
}

/// See `RFFIEnvGetStream` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// None beyond the C ABI; declared unsafe like every entry point.
#[inline]
pub unsafe extern "C" fn RFFIEnvGetStream(device_type: i32, device_id: i32) -> *mut c_void {
    // An invalid device has no stream; there is no error channel in this signature.
    Device::new(device_type, device_id).map_or(core::ptr::null_mut(), stream::current_stream)
}

/// See `RFFIEnvSetDLPackManagedTensorAllocator` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// As documented there.
#[inline]
pub unsafe extern "C" fn RFFIEnvSetDLPackManagedTensorAllocator(
    allocator: RFFIDLPackManagedTensorAllocator,
    write_to_global_context: i32,
    opt_out_original_allocator: *mut RFFIDLPackManagedTensorAllocator,
) -> i32 {
    guard(|| {
        let prev = tensor::set_env_allocator(allocator, write_to_global_context != 0);
        if !opt_out_original_allocator.is_null() {
            // SAFETY: a non-NULL out-pointer is writable per the contract.
            unsafe { opt_out_original_allocator.write(prev) };
        }
        Ok(())
    })
}

/// See `RFFIEnvGetDLPackManagedTensorAllocator` in the C header (`include/rffi/c_api.h`).
///
/// # Safety
/// None beyond the C ABI; declared unsafe like every entry point.
#[inline]
pub unsafe extern "C" fn RFFIEnvGetDLPackManagedTensorAllocator() -> RFFIDLPackManagedTensorAllocator
{
    tensor::env_allocator()
}
