//! Exports of the `module` part of the C API (implemented in `rffi_core::capi::module`).
use rffi_core::abi::*;
use rffi_core::capi;

/// Loads a plugin library into the runtime and gives a new reference to its Module object (the
/// same Module again if that file is already loaded). The library must have been built for a
/// compatible ABI (`rffi_plugin_version`); its `rffi_plugin_init(const RFFIHostApi*)`, if any, runs once
/// and may register functions, which are all undone if it fails. Libraries stay loaded for the
/// life of the process. Errors: a missing file or a file that is not a shared library
/// (ValueError), an ABI mismatch naming both versions (RuntimeError), or the plugin's own error.
///
/// # Safety
/// `path` must point to a valid byte array; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIModuleLoadFromFile(
    path: *const RFFIByteArray,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::module::RFFIModuleLoadFromFile(path, out) }
}

/// Gets a function of a module: a name the plugin registered (or its last dotted part when that
/// is unambiguous), else the exported safe-call symbol `__rffi_<name>`. `*out` receives a new
/// reference, or NULL when the module has no such function (not an error).
///
/// # Safety
/// `module` must be NULL or a live object; `name` must point to a valid byte array; `out` must be
/// writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIModuleGetFunction(
    module: RFFIObjectHandle,
    name: *const RFFIByteArray,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::module::RFFIModuleGetFunction(module, name, out) }
}

/// Lists the functions of a module: `*out` receives a new Array of strings (the names registered
/// by its init, then the `__rffi_<name>` symbols looked up so far).
///
/// # Safety
/// `module` must be NULL or a live object; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn RFFIModuleListFunctions(
    module: RFFIObjectHandle,
    out: *mut RFFIObjectHandle,
) -> i32 {
    // SAFETY: the same contract, forwarded.
    unsafe { capi::module::RFFIModuleListFunctions(module, out) }
}
