//! The CUDA driver through cudarc, guarded: every entry checks that the library is present and
//! catches panics (cudarc panics when a library or a symbol is missing), turning both into
//! errors. Contexts are the devices' primary contexts (the ones PyTorch and the runtime API
//! use), so pointers from other frameworks are valid in them.
//!
//! This module holds the devices and their contexts; `kernels` compiles the modules and finds
//! their functions, `launch` launches them, `memory` holds device memory for temporaries and
//! outputs.

mod kernels;
mod launch;
mod memory;

pub use kernels::{function, kernel};
pub use launch::{launch, launch_shared, resident_clusters};
pub use memory::{alloc_output, with_kept_scratch, zero_async, Scratch};

use cudarc::driver::{result, sys};
use rffi_core::error::catch_panic;
use rffi_core::{Device, Error, Result};
use std::sync::{Mutex, OnceLock};

/// Runs `f`, turning a panic (a missing library or symbol in cudarc) into an error, quietly, the
/// way every rffi boundary does (`catch_panic`).
pub fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_panic(f).unwrap_or_else(|e| Err(e.context(&format!("kernels (cuda): {what}"))))
}

/// A driver error as an rffi error naming what failed.
pub fn err(what: &str, e: result::DriverError) -> Error {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Error::runtime_error(format!("kernels (cuda): {what} failed: {name} ({text})"))
}

/// Whether libcuda can be loaded (no driver call is made).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    catch_panic(|| unsafe { sys::is_culib_present() }).unwrap_or(false)
}

pub fn nvrtc_present() -> bool {
    // SAFETY: as above.
    catch_panic(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

pub fn cublas_present() -> bool {
    // SAFETY: as above.
    catch_panic(|| unsafe { cudarc::cublas::sys::is_culib_present() }).unwrap_or(false)
}

/// What the probe learns about one device.
#[derive(Clone, Debug)]
pub struct DevInfo {
    pub name: String,
    pub major: i32,
    pub minor: i32,
    pub sms: i32,
    /// Bytes of shared memory one block may use when it asks for more than the default 48 KiB.
    pub smem_block: i32,
}

impl DevInfo {
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }
}

pub fn device_info(ordinal: i32) -> Result<DevInfo> {
    let dev = result::device::get(ordinal).map_err(|e| err("cuDeviceGet", e))?;
    let attr = |a| {
        // SAFETY: a valid device handle and attribute.
        unsafe { result::device::get_attribute(dev, a) }.map_err(|e| err("cuDeviceGetAttribute", e))
    };
    use sys::CUdevice_attribute::*;
    Ok(DevInfo {
        name: result::device::get_name(dev).map_err(|e| err("cuDeviceGetName", e))?,
        major: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        minor: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        sms: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        smem_block: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
    })
}

/// Raw handles that may cross threads: contexts, modules and functions are process-wide.
#[derive(Copy, Clone)]
struct Handle<T>(T);
// SAFETY: CUDA driver handles are valid from any thread of the process, and the driver API is
// thread-safe for the calls made with them.
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above; the handles are only read after being stored.
unsafe impl<T> Sync for Handle<T> {}

/// Per device: the retained primary context and what was learnt about the device.
struct DeviceState {
    ctx: Handle<sys::CUcontext>,
    info: DevInfo,
}

/// Devices by ordinal: read without a lock once set (every call reads its device's state).
const MAX_DEVICES: usize = 64;
static DEVICES: [OnceLock<DeviceState>; MAX_DEVICES] = [const { OnceLock::new() }; MAX_DEVICES];

fn device_state(ordinal: i32) -> Result<&'static DeviceState> {
    let slot = usize::try_from(ordinal)
        .ok()
        .and_then(|i| DEVICES.get(i))
        .ok_or_else(|| {
            Error::value_error(format!(
                "kernels (cuda): device ordinal {ordinal} is outside 0..{MAX_DEVICES}"
            ))
        })?;
    if let Some(s) = slot.get() {
        return Ok(s);
    }
    // One thread retains the context; the others wait and read what it stored.
    static INIT: Mutex<()> = Mutex::new(());
    let _init = INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = slot.get() {
        return Ok(s);
    }
    let dev = result::device::get(ordinal).map_err(|e| err("cuDeviceGet", e))?;
    // SAFETY: a valid device; the retained context is kept for the process's lifetime.
    let ctx = unsafe { result::primary_ctx::retain(dev) }
        .map_err(|e| err("cuDevicePrimaryCtxRetain", e))?;
    let info = device_info(ordinal)?;
    Ok(slot.get_or_init(|| DeviceState {
        ctx: Handle(ctx),
        info,
    }))
}

pub fn sm_count(ordinal: i32) -> Result<i32> {
    Ok(device_state(ordinal)?.info.sms)
}

/// Whether the device runs thread block clusters (compute capability 9.0 on).
pub fn has_clusters(ordinal: i32) -> Result<bool> {
    Ok(device_state(ordinal)?.info.major >= 9)
}

/// Bytes of dynamic shared memory one block may take on the device (`launch_shared`).
pub fn smem_per_block(ordinal: i32) -> Result<i32> {
    Ok(device_state(ordinal)?.info.smem_block)
}

/// Makes the device's primary context current on this thread until dropped, then restores the
/// previous one (the dispatcher's device guard).
pub struct ContextGuard {
    /// The context to make current again (possibly none), when entering switched.
    restore: Option<Handle<sys::CUcontext>>,
}

impl ContextGuard {
    /// Whether leaving restores anything (a guard that does not can be dropped at once).
    pub fn switched(&self) -> bool {
        self.restore.is_some()
    }
}

impl ContextGuard {
    pub fn enter(device: Device) -> Result<ContextGuard> {
        guarded("binding the device's context", || {
            let state = device_state(device.index())?;
            let current = result::ctx::get_current().map_err(|e| err("cuCtxGetCurrent", e))?;
            // The common case (a framework already made this device current on the thread)
            // costs one query: nothing to switch, nothing to restore.
            if current == Some(state.ctx.0) {
                return Ok(ContextGuard { restore: None });
            }
            // SAFETY: a retained primary context.
            unsafe { result::ctx::set_current(state.ctx.0) }
                .map_err(|e| err("cuCtxSetCurrent", e))?;
            Ok(ContextGuard {
                restore: Some(Handle(current.unwrap_or(std::ptr::null_mut()))),
            })
        })
    }
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        if let Some(prev) = self.restore {
            let _ = catch_panic(|| {
                // SAFETY: the context that was current before (or none).
                unsafe { result::ctx::set_current(prev.0) }
            });
        }
    }
}
