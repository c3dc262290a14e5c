//! The current stream: per thread, per device (device type and index), as in tvm-ffi's
//! `TVMFFIEnvSetStream`/`TVMFFIEnvGetStream`.
//!
//! A caller (a Python binding passing a CUDA torch tensor, a C++ framework) sets the stream its
//! work runs on before calling a kernel; the kernel reads it with `current_stream` and launches
//! there. A stream is an opaque handle (`cudaStream_t`, `hipStream_t`, ...); NULL means the
//! device's default stream. In a plugin image both forward to the host runtime.

use crate::Device;
use core::cell::RefCell;
use core::ffi::c_void;

/// An opaque stream handle (NULL: the default stream).
pub type StreamHandle = *mut c_void;

thread_local! {
    /// (device type, device index, stream). A thread touches a handful of devices, so a short
    /// list beats a hash map.
    static STREAMS: RefCell<Vec<(i32, i32, StreamHandle)>> = const { RefCell::new(Vec::new()) };
}

/// Sets this thread's current stream for `device` and returns the previous one. Setting NULL
/// returns the device to its default stream.
// The handle is opaque: it is stored and handed back, never dereferenced here.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn set_current_stream(device: Device, stream: StreamHandle) -> StreamHandle {
    if let Some(host) = crate::host::host() {
        return host.set_stream(device, stream);
    }
    let key = (device.device_type(), device.index());
    STREAMS
        .try_with(|s| {
            let mut s = s.borrow_mut();
            match s.iter().position(|e| (e.0, e.1) == key) {
                Some(i) if stream.is_null() => s.swap_remove(i).2,
                Some(i) => core::mem::replace(&mut s[i].2, stream),
                None => {
                    if !stream.is_null() {
                        s.push((key.0, key.1, stream));
                    }
                    core::ptr::null_mut()
                }
            }
        })
        // During thread teardown there is no table left: nothing was set.
        .unwrap_or(core::ptr::null_mut())
}

/// This thread's current stream for `device` (NULL if none was set).
pub fn current_stream(device: Device) -> StreamHandle {
    if let Some(host) = crate::host::host() {
        return host.stream(device);
    }
    let key = (device.device_type(), device.index());
    STREAMS
        .try_with(|s| {
            s.borrow()
                .iter()
                .find(|e| (e.0, e.1) == key)
                .map_or(core::ptr::null_mut(), |e| e.2)
        })
        .unwrap_or(core::ptr::null_mut())
}

/// Restores the previous stream of a device when dropped; see [`use_stream`].
#[must_use = "the stream is restored when the guard is dropped"]
pub struct StreamGuard {
    device: Device,
    previous: StreamHandle,
}

/// Makes `stream` current for `device` until the guard is dropped:
/// `let _s = use_stream(dev, s); kernel(...);`
pub fn use_stream(device: Device, stream: StreamHandle) -> StreamGuard {
    let previous = set_current_stream(device, stream);
    StreamGuard { device, previous }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        set_current_stream(self.device, self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(x: usize) -> StreamHandle {
        x as StreamHandle
    }

    #[test]
    fn set_returns_previous_and_null_resets() {
        let d = Device::cuda(3);
        assert!(current_stream(d).is_null());
        assert!(set_current_stream(d, h(0x10)).is_null());
        assert_eq!(set_current_stream(d, h(0x20)), h(0x10));
        assert_eq!(current_stream(d), h(0x20));
        // Another index of the same type is independent.
        assert!(current_stream(Device::cuda(4)).is_null());
        assert_eq!(set_current_stream(d, core::ptr::null_mut()), h(0x20));
        assert!(current_stream(d).is_null());
    }

    #[test]
    fn guard_restores() {
        let d = Device::cuda(5);
        set_current_stream(d, h(1));
        {
            let _g = use_stream(d, h(2));
            assert_eq!(current_stream(d), h(2));
        }
        assert_eq!(current_stream(d), h(1));
        set_current_stream(d, core::ptr::null_mut());
    }
}
