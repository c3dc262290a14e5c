//! The host runtime, seen from a plugin: the one place where this image forwards a call to the
//! runtime that loaded it.
//!
//! A `cdylib` that links rffi-core statically has its own copy of every static of the runtime.
//! Once it is initialized as a plugin (`plugin::init_from_host`), everything stateful must reach
//! the host's copy instead: the function registry, the type registry, the raised-error slot,
//! module loading, the current streams and the DLPack allocator. Each of those places asks
//! [`host`] first and, when this image is a plugin, calls the matching safe method of [`Host`].
//! The host's table holds C function pointers; this module is the only one that calls them, so
//! the unsafety of forwarding lives here.

use crate::abi::{RFFIByteArray, RFFIDLPackManagedTensorAllocator, RFFIHostApi, RFFIObjectHandle};
use crate::abi::{RFFIFieldInfo, RFFIMethodInfo, RFFITypeInfo, RFFITypeMetadata};
use crate::error::{Error, Result};
use crate::function::Function;
use crate::module::Module;
use crate::object::{ObjectRef, ObjectType};
use crate::stream::StreamHandle;
use crate::{Array, Device};
use core::ptr::{null_mut, NonNull};
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The host's table once this image was initialized as a plugin; NULL in the image that owns the
/// runtime.
static TABLE: AtomicPtr<RFFIHostApi> = AtomicPtr::new(null_mut());

/// The runtime this image forwards to (a plugin's host).
#[derive(Clone, Copy)]
pub(crate) struct Host(&'static RFFIHostApi);

/// The host runtime when this image is a plugin; `None` in the image that owns the runtime.
#[inline]
pub(crate) fn host() -> Option<Host> {
    let p = TABLE.load(Ordering::Acquire);
    // SAFETY: only ever set (by `bind`) to a host table, which lives as long as the process.
    unsafe { p.as_ref() }.map(Host)
}

/// Starts forwarding to `table`. Fails if this image already forwards to another table.
pub(crate) fn bind(table: &'static RFFIHostApi) -> core::result::Result<(), ()> {
    let wanted = (table as *const RFFIHostApi).cast_mut();
    match TABLE.compare_exchange(null_mut(), wanted, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(()),
        Err(p) if core::ptr::eq(p, wanted) => Ok(()),
        Err(_) => Err(()),
    }
}

pub(crate) fn byte_array(s: &[u8]) -> RFFIByteArray {
    RFFIByteArray {
        data: s.as_ptr().cast(),
        size: s.len(),
    }
}

/// A new reference the host moved to us through an out-pointer, as an object of type `T`.
///
/// # Safety
/// A non-NULL `out` must be a new reference to an object of type `T`.
unsafe fn adopt<T: ObjectType>(out: RFFIObjectHandle) -> Option<T> {
    let obj = NonNull::new(out.cast())?;
    // SAFETY: forwarded contract: the reference and its type.
    Some(unsafe { T::from_object_unchecked(ObjectRef::from_raw(obj)) })
}

impl Host {
    /// The host's table, for plugins this image loads in turn (they bind to the same runtime).
    pub(crate) fn table(self) -> &'static RFFIHostApi {
        self.0
    }

    /// Turns a host entry point's status into a Result (the error waits in the host's slot).
    fn check(self, rc: i32) -> Result<()> {
        if rc == 0 {
            return Ok(());
        }
        Err(self.take_raised().unwrap_or_else(|| {
            Error::runtime_error("the host runtime reported a failure without raising an error")
        }))
    }

    // ---- The function registry ----

    pub(crate) fn register_global_func(
        self,
        name: &str,
        f: &Function,
        allow_override: bool,
    ) -> Result<()> {
        let name = byte_array(name.as_bytes());
        // SAFETY: a valid byte array and a live function; the host takes its own reference.
        self.check(unsafe {
            (self.0.function_set_global)(&name, f.as_raw().cast(), i32::from(allow_override))
        })
    }

    pub(crate) fn get_global_func(self, name: &[u8]) -> Option<Function> {
        let name = byte_array(name);
        let mut out: RFFIObjectHandle = null_mut();
        // SAFETY: a valid byte array and out-pointer.
        self.check(unsafe { (self.0.function_get_global)(&name, &mut out) })
            .ok()?;
        // SAFETY: on success `out` is NULL or a new reference to a function.
        unsafe { adopt(out) }
    }

    pub(crate) fn remove_global_func(self, name: &[u8]) -> bool {
        let name = byte_array(name);
        // SAFETY: a valid byte array.
        self.check(unsafe { (self.0.function_remove_global)(&name) })
            .is_ok()
    }

    pub(crate) fn list_global_func_names(self) -> Vec<String> {
        let mut out: RFFIObjectHandle = null_mut();
        // SAFETY: a valid out-pointer.
        let rc = unsafe { (self.0.function_list_global_names)(&mut out) };
        if self.check(rc).is_err() {
            return Vec::new();
        }
        // SAFETY: on success `out` is a new reference to an Array of strings.
        let Some(names) = (unsafe { adopt::<Array>(out) }) else {
            return Vec::new();
        };
        names
            .iter()
            .filter_map(|v| v.try_as::<String>().ok())
            .collect()
    }

    // ---- The type registry ----

    pub(crate) fn type_key_to_index(self, key: &str) -> Option<i32> {
        let mut out = -1;
        // SAFETY: a valid byte array and out-pointer.
        self.check(unsafe { (self.0.type_key_to_index)(&byte_array(key.as_bytes()), &mut out) })
            .ok()
            .map(|()| out)
    }

    pub(crate) fn type_info(self, index: i32) -> Option<&'static RFFITypeInfo> {
        // SAFETY: the host's type infos live as long as the process.
        unsafe { (self.0.get_type_info)(index).as_ref() }
    }

    pub(crate) fn register_type(self, key: &str, parent: i32) -> Result<i32> {
        let key = byte_array(key.as_bytes());
        // SAFETY: a valid byte array.
        let index = unsafe { (self.0.type_get_or_alloc_index)(&key, -1, -1, 0, 1, parent) };
        self.check(if index >= 0 { 0 } else { -1 })?;
        Ok(index)
    }

    /// # Safety
    /// `info` must be valid for the call (see `reflection::register_field`).
    pub(crate) unsafe fn register_field(self, index: i32, info: &RFFIFieldInfo) -> Result<()> {
        // SAFETY: forwarded contract; the host copies what it keeps.
        self.check(unsafe { (self.0.type_register_field)(index, info) })
    }

    /// # Safety
    /// `info` must be valid for the call (see `reflection::register_method`).
    pub(crate) unsafe fn register_method(self, index: i32, info: &RFFIMethodInfo) -> Result<()> {
        // SAFETY: forwarded contract; the host copies what it keeps.
        self.check(unsafe { (self.0.type_register_method)(index, info) })
    }

    /// # Safety
    /// `meta` must be valid for the call (see `reflection::register_metadata`).
    pub(crate) unsafe fn register_metadata(
        self,
        index: i32,
        meta: &RFFITypeMetadata,
    ) -> Result<()> {
        // SAFETY: forwarded contract; the host copies what it keeps.
        self.check(unsafe { (self.0.type_register_metadata)(index, meta) })
    }

    pub(crate) fn get_or_alloc_type_index(self, key: &str) -> Result<i32> {
        let mut out = -1;
        // SAFETY: a valid byte array and out-pointer.
        self.check(unsafe { (self.0.type_register_key)(&byte_array(key.as_bytes()), &mut out) })?;
        Ok(out)
    }

    // ---- The raised-error slot ----

    pub(crate) fn set_raised(self, err: &Error) {
        // SAFETY: a live Error; the host takes its own reference.
        unsafe { (self.0.error_set_raised)(err.as_raw().cast()) };
    }

    pub(crate) fn take_raised(self) -> Option<Error> {
        let mut out: RFFIObjectHandle = null_mut();
        // SAFETY: a valid out-pointer; the host moves its reference out.
        unsafe { (self.0.error_move_from_raised)(&mut out) };
        // SAFETY: `out` is NULL or a new reference to an Error.
        unsafe { adopt(out) }
    }

    /// Whether an error waits in the host's slot (left there). The table has no "peek": the
    /// error is taken and put back.
    pub(crate) fn has_raised(self) -> bool {
        self.take_raised().map(|e| self.set_raised(&e)).is_some()
    }

    // ---- Modules ----

    pub(crate) fn load_module(self, path: &Path) -> Result<Module> {
        let text = path.to_string_lossy();
        let mut out: RFFIObjectHandle = null_mut();
        // SAFETY: a valid byte array and out-pointer.
        self.check(unsafe {
            (self.0.module_load_from_file)(&byte_array(text.as_bytes()), &mut out)
        })?;
        // SAFETY: on success `out` is a new reference to a module.
        unsafe { adopt(out) }.ok_or_else(|| {
            Error::runtime_error(format!(
                "the host runtime loaded `{text}` but returned no module"
            ))
        })
    }

    // ---- The environment: streams and the DLPack allocator ----

    pub(crate) fn set_stream(self, device: Device, stream: StreamHandle) -> StreamHandle {
        let mut previous = null_mut();
        // SAFETY: a valid out-pointer; the stream is an opaque handle the host only stores.
        unsafe {
            (self.0.env_set_stream)(device.device_type(), device.index(), stream, &mut previous)
        };
        previous
    }

    pub(crate) fn stream(self, device: Device) -> StreamHandle {
        // SAFETY: plain values; the host validates the device itself.
        unsafe { (self.0.env_get_stream)(device.device_type(), device.index()) }
    }

    pub(crate) fn dlpack_allocator(self) -> RFFIDLPackManagedTensorAllocator {
        // SAFETY: no arguments.
        unsafe { (self.0.env_get_dlpack_managed_tensor_allocator)() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Any;

    /// A `Host` over this image's own C table: every forwarded call goes out through the C ABI
    /// and comes back into this runtime, as a plugin's would reach its host.
    fn loopback() -> Host {
        Host(crate::capi::host::api())
    }

    #[test]
    fn the_function_registry_through_the_table() {
        let host = loopback();
        let f = Function::from_typed(|x: i64| x + 1);
        host.register_global_func("host_test.inc", &f, false)
            .unwrap();
        let e = host
            .register_global_func("host_test.inc", &f, false)
            .unwrap_err();
        assert_eq!(e.kind(), "KeyError", "{}", e.message());
        let e = host.register_global_func("", &f, false).unwrap_err();
        assert_eq!(e.kind(), "ValueError", "{}", e.message());
        let got = host.get_global_func(b"host_test.inc").unwrap();
        assert_eq!(
            got.call(&[Any::from(41i64)])
                .unwrap()
                .try_as::<i64>()
                .unwrap(),
            42
        );
        assert!(host
            .list_global_func_names()
            .iter()
            .any(|n| n == "host_test.inc"));
        assert!(host.remove_global_func(b"host_test.inc"));
        assert!(!host.remove_global_func(b"host_test.inc"));
        assert!(host.get_global_func(b"host_test.inc").is_none());
        // The failed removal left nothing raised.
        assert!(!host.has_raised());
    }

    #[test]
    fn the_type_registry_through_the_table() {
        let host = loopback();
        let index = host.get_or_alloc_type_index("host_test.Point").unwrap();
        assert!(index >= crate::abi::kRFFIDynObjectBegin);
        assert_eq!(
            host.get_or_alloc_type_index("host_test.Point").unwrap(),
            index
        );
        assert_eq!(host.type_key_to_index("host_test.Point"), Some(index));
        let info = host.type_info(index).unwrap();
        assert_eq!(info.type_index, index);
        assert_eq!(info.type_depth, 1);
        assert_eq!(host.type_key_to_index("host_test.NoSuchType"), None);
        assert!(host.type_info(index + 100_000).is_none());
        let child = host.register_type("host_test.Point3", index).unwrap();
        assert_eq!(host.type_info(child).unwrap().type_depth, 2);
        let e = host.register_type("host_test.Point3", 99_999).unwrap_err();
        assert_eq!(e.kind(), "ValueError", "{}", e.message());
        let e = host.get_or_alloc_type_index("a\0b").unwrap_err();
        assert_eq!(e.kind(), "ValueError", "{}", e.message());
    }

    #[test]
    fn the_raised_error_slot_through_the_table() {
        let host = loopback();
        assert!(host.take_raised().is_none());
        host.set_raised(&Error::new("ValueError", "from the plugin"));
        assert!(host.has_raised());
        assert!(host.has_raised(), "peeking leaves the error in place");
        let e = host.take_raised().unwrap();
        assert_eq!(
            (e.kind(), e.message()),
            ("ValueError".into(), "from the plugin".into())
        );
        assert!(!host.has_raised());
    }

    #[test]
    fn module_loading_through_the_table_reports_the_path() {
        let e = loopback()
            .load_module(Path::new("/no/such/dir/libplugin.so"))
            .unwrap_err();
        assert!(
            e.message().contains("/no/such/dir/libplugin.so"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn streams_and_the_allocator_through_the_table() {
        let host = loopback();
        let dev = Device::cuda(3);
        let stream = 0x5eed_usize as StreamHandle;
        assert!(host.set_stream(dev, stream).is_null());
        assert_eq!(host.stream(dev), stream);
        assert_eq!(crate::stream::current_stream(dev), stream);
        assert_eq!(host.set_stream(dev, null_mut()), stream);
        assert!(host.stream(dev).is_null());
        assert_eq!(
            host.dlpack_allocator().map(|f| f as usize),
            crate::tensor::env_allocator().map(|f| f as usize)
        );
    }
}
