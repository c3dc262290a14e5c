//! Allocation: the built-in CPU allocator and the environment allocator a host installs.
//!
//! A host (a Python binding routing to torch or numpy, a C++ framework) installs an allocator
//! with `set_env_allocator` (`RFFIEnvSetDLPackManagedTensorAllocator`); kernels then create
//! their outputs with `Tensor::empty`, and the outputs come from the caller's framework. The
//! setting follows tvm-ffi: a thread-local allocator, falling back to a process-wide one that
//! `write_to_global` sets.

use super::dlpack::{check_dltensor, import_versioned};
use super::{checked_numel, is_contiguous_parts, Owner, Tensor, TensorParts};
use crate::abi::RFFIDLPackManagedTensorAllocator;
use crate::abi::*;
use crate::error::{kind, Error, Result};
use crate::{DataType, Device};
use core::cell::Cell;
use core::ffi::{c_char, c_void, CStr};
use core::ptr::NonNull;
use std::alloc::Layout;
use std::sync::Mutex;

/// Alignment of the built-in allocator's buffers: a cache line, enough for any SIMD load.
pub const RFFI_CPU_TENSOR_ALIGNMENT: usize = 64;

thread_local! {
    static LOCAL: Cell<RFFIDLPackManagedTensorAllocator> = const { Cell::new(None) };
}
static GLOBAL: Mutex<RFFIDLPackManagedTensorAllocator> = Mutex::new(None);

fn global() -> RFFIDLPackManagedTensorAllocator {
    *GLOBAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The allocator in effect on this thread: the thread's own, else the process-wide one.
pub fn env_allocator() -> RFFIDLPackManagedTensorAllocator {
    if let Some(host) = crate::host::host() {
        return host.dlpack_allocator();
    }
    // During thread teardown the thread-local is gone; the process-wide one still applies.
    LOCAL.try_with(Cell::get).ok().flatten().or_else(global)
}

/// Installs `alloc` for this thread (`None` removes it, falling back to the process-wide one),
/// and also as the process-wide allocator if `write_to_global`. Returns the allocator that was
/// in effect on this thread before.
pub fn set_env_allocator(
    alloc: RFFIDLPackManagedTensorAllocator,
    write_to_global: bool,
) -> RFFIDLPackManagedTensorAllocator {
    let previous = env_allocator();
    if write_to_global {
        *GLOBAL.lock().unwrap_or_else(|e| e.into_inner()) = alloc;
    }
    let _ = LOCAL.try_with(|c| c.set(alloc));
    previous
}

/// Checks what an allocation asks for; returns the element count.
fn check_request(shape: &[i64], dtype: DataType, func: &str) -> Result<i64> {
    if i32::try_from(shape.len()).is_err() {
        return Err(Error::value_error(format!(
            "{func}: {} dimensions is more than a DLTensor can hold",
            shape.len()
        )));
    }
    if let Some(i) = shape.iter().position(|&d| d < 0) {
        return Err(Error::value_error(format!(
            "{func}: `shape[{i}]` is negative ({})",
            shape[i]
        )));
    }
    DataType::from_raw(dtype.raw())
        .map_err(|e| Error::value_error(format!("{func}: `dtype` is rejected: {e}")))?;
    if dtype == DataType::void() {
        return Err(Error::value_error(format!(
            "{func}: `dtype` is void, which has no elements"
        )));
    }
    checked_numel(shape).ok_or_else(|| {
        Error::value_error(format!(
            "{func}: `shape` {shape:?} has more than 2^63-1 elements"
        ))
    })
}

/// A zeroed, 64-byte aligned CPU tensor from the built-in allocator.
fn builtin(shape: &[i64], dtype: DataType, device: Device, func: &str) -> Result<Tensor> {
    let numel = check_request(shape, dtype, func)?;
    let bits = numel as u128 * dtype.bits() as u128 * dtype.lanes() as u128;
    let bytes = usize::try_from(bits.div_ceil(8))
        .ok()
        .filter(|&b| b <= isize::MAX as usize - RFFI_CPU_TENSOR_ALIGNMENT)
        .ok_or_else(|| {
            Error::new(
                kind::MEMORY_ERROR,
                format!("{func}: {numel} elements of {dtype} do not fit in memory"),
            )
        })?;
    // A tensor without elements still gets a real (one-byte) buffer, so its data pointer is
    // never NULL: some consumers reject NULL data even for empty tensors.
    let layout =
        Layout::from_size_align(bytes.max(1), RFFI_CPU_TENSOR_ALIGNMENT).expect("checked size");
    // Zeroed so that safe code never reads uninitialised memory through `to_vec`; for large
    // buffers the zero pages come from the OS at no extra cost.
    // SAFETY: the layout has a non-zero size.
    let data = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or_else(|| {
        Error::new(
            kind::MEMORY_ERROR,
            format!(
                "{func}: cannot allocate {bytes} bytes for a {dtype} tensor of shape {shape:?}"
            ),
        )
    })?;
    Ok(TensorParts {
        data: data.as_ptr().cast(),
        device,
        dtype,
        shape,
        strides: None,
        byte_offset: 0,
        read_only: false,
        borrowed: false,
        owner: Owner::Builtin {
            data,
            size: layout.size(),
        },
    }
    .build())
}

/// `set_error` handed to environment allocators: stores the error in the `Option<Error>` that
/// `error_ctx` points to.
unsafe extern "C" fn store_error(ctx: *mut c_void, kind: *const c_char, message: *const c_char) {
    if ctx.is_null() {
        return;
    }
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: a non-NULL argument is a NUL-terminated string per the allocator contract.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let kind = Some(text(kind))
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| kind::RUNTIME_ERROR.to_owned());
    let err = Error::new(&kind, text(message));
    // SAFETY: `ctx` is the `Option<Error>` slot `with_hook` passed, alive during the call.
    unsafe { *ctx.cast::<Option<Error>>() = Some(err) };
}

/// "the environment allocator `symbol` (address)", the symbol as the dynamic loader knows it.
fn describe_allocator(hook: *const c_void) -> String {
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data it fills.
    let symbol = unsafe {
        let mut info: libc::Dl_info = core::mem::zeroed();
        // dladdr names the nearest exported symbol below the address: only an exact match is
        // the allocator's own name.
        (libc::dladdr(hook, &mut info) != 0
            && !info.dli_sname.is_null()
            && core::ptr::eq(info.dli_saddr.cast_const(), hook))
        .then(|| {
            CStr::from_ptr(info.dli_sname)
                .to_string_lossy()
                .into_owned()
        })
    };
    match symbol {
        Some(s) => format!("the environment allocator `{s}` ({hook:p})"),
        None => format!("the environment allocator at {hook:p}"),
    }
}

/// Allocates through an environment allocator and imports the result.
fn with_hook(
    hook: unsafe extern "C" fn(
        *mut DLTensor,
        *mut *mut DLManagedTensorVersioned,
        *mut c_void,
        crate::abi::RFFIDLPackSetError,
    ) -> i32,
    shape: &[i64],
    strides: Option<&[i64]>,
    dtype: DataType,
    device: Device,
    func: &str,
) -> Result<Tensor> {
    check_request(shape, dtype, func)?;
    // The prototype's arrays are mutable in the C signature; give the allocator copies.
    let mut shape_buf = shape.to_vec();
    let mut strides_buf = strides.map(<[i64]>::to_vec);
    let mut prototype = DLTensor {
        data: core::ptr::null_mut(),
        device: device.raw(),
        ndim: shape.len() as i32,
        dtype: dtype.raw(),
        shape: shape_buf.as_mut_ptr(),
        strides: strides_buf
            .as_mut()
            .map_or(core::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    };
    let mut out: *mut DLManagedTensorVersioned = core::ptr::null_mut();
    let mut error: Option<Error> = None;
    // SAFETY: the installer promised an allocator with this signature; every pointer passed
    // lives until it returns.
    let rc = unsafe {
        hook(
            &mut prototype,
            &mut out,
            (&raw mut error).cast(),
            Some(store_error),
        )
    };
    if rc != 0 {
        let name = || describe_allocator(hook as *const c_void);
        return Err(match error {
            Some(e) if !e.message().is_empty() => e,
            Some(e) => Error::new(
                &e.kind(),
                format!(
                    "{func}: {} failed (returned {rc}) and reported a {} with an empty message",
                    name(),
                    e.kind()
                ),
            ),
            None => Error::runtime_error(format!(
                "{func}: {} failed (returned {rc}) without reporting an error",
                name()
            )),
        });
    }
    let Some(managed) = NonNull::new(out) else {
        return Err(Error::runtime_error(format!(
            "{func}: the environment allocator returned 0 but no tensor"
        )));
    };
    // SAFETY: the allocator hands over a managed tensor it made.
    let t = unsafe { import_versioned(managed, 0, false, func) }?;
    if t.shape() != shape || t.dtype() != dtype || t.device() != device {
        return Err(Error::runtime_error(format!(
            "{func}: the environment allocator returned a {} tensor of shape {:?} on {} for a \
             request of {dtype} {shape:?} on {device}",
            t.dtype(),
            t.shape(),
            t.device()
        )));
    }
    Ok(t)
}

pub(crate) fn alloc_impl(
    shape: &[i64],
    strides: Option<&[i64]>,
    dtype: DataType,
    device: Device,
    func: &str,
) -> Result<Tensor> {
    if let Some(hook) = env_allocator() {
        return with_hook(hook, shape, strides, dtype, device, func);
    }
    if device.device_type() != kDLCPU {
        return Err(Error::runtime_error(format!(
            "{func}: no allocator for {device}: the built-in allocator only makes CPU tensors; a \
             host installs one with RFFIEnvSetDLPackManagedTensorAllocator"
        )));
    }
    if let Some(strides) = strides {
        if strides.len() != shape.len() || !is_contiguous_parts(shape, strides) {
            return Err(Error::value_error(format!(
                "{func}: the built-in allocator makes compact tensors only, but strides \
                 {strides:?} were requested for shape {shape:?}"
            )));
        }
    }
    builtin(shape, dtype, device, func)
}

/// Allocates like a prototype `DLTensor` (`RFFIEnvTensorAlloc`): its `shape`, `ndim`, `dtype`,
/// `device` and optional `strides` are used; `data` and `byte_offset` are ignored.
///
/// # Safety
/// A non-NULL `shape` (and `strides`) must hold `ndim` readable entries.
pub(crate) unsafe fn alloc_from_prototype(prototype: &DLTensor, func: &str) -> Result<Tensor> {
    // The prototype has no data yet; validate it as if it had, so NULL data passes.
    let probe = DLTensor {
        data: core::ptr::NonNull::<u8>::dangling().as_ptr().cast(),
        ..*prototype
    };
    // SAFETY: forwarded contract.
    let c = unsafe { check_dltensor(&probe, "prototype.") }
        .map_err(|e| Error::value_error(format!("{func}: {e}")))?;
    alloc_impl(c.shape, c.strides, c.dtype, c.device, func)
}

impl Tensor {
    /// A new tensor of `shape`, `dtype` on `device`, with compact strides. With an environment
    /// allocator installed (see the module docs) the memory comes from it, for every device;
    /// otherwise CPU tensors come from the built-in allocator (64-byte aligned, zeroed) and other
    /// devices are a RuntimeError.
    pub fn empty(shape: &[i64], dtype: DataType, device: Device) -> Result<Tensor> {
        alloc_impl(shape, None, dtype, device, "Tensor::empty")
    }

    /// A new CPU tensor from the built-in allocator (64-byte aligned, zeroed), ignoring any
    /// environment allocator: for host-side buffers that must not come from a framework.
    pub fn alloc_cpu(shape: &[i64], dtype: DataType) -> Result<Tensor> {
        builtin(shape, dtype, Device::cpu(), "Tensor::alloc_cpu")
    }
}
