//! The runtime this library serves: it is loaded as a plugin (`rffi.load_module`), and the
//! loader's `RFFIHostApi` table is how it reaches the one runtime of the process. It links no
//! runtime of its own: `rffi-core` is used for its ABI declarations only.

use rffi_core::abi::{RFFIHostApi, RFFIVersion};
use std::sync::atomic::{AtomicPtr, Ordering};

static HOST: AtomicPtr<RFFIHostApi> = AtomicPtr::new(std::ptr::null_mut());

/// The runtime's entry points, once the loader initialized this library.
#[inline]
pub(crate) fn host() -> Option<&'static RFFIHostApi> {
    let p = HOST.load(Ordering::Acquire);
    // SAFETY: only ever set to a host table, which lives for the rest of the process.
    unsafe { p.as_ref() }
}

/// The rffi ABI this library was built for (read by the loader).
#[allow(non_upper_case_globals)]
#[no_mangle]
pub static rffi_plugin_version: RFFIVersion = rffi_core::version();

/// Called once by the loader: keeps the host table. Returns 0, or -1 with an error raised in the
/// host when its ABI major version differs, its table lacks entries this library calls, or the
/// library is already bound to another runtime.
///
/// # Safety
/// `host` must be NULL or the loader's table, alive for the rest of the process.
#[no_mangle]
pub unsafe extern "C" fn rffi_plugin_init(host: *const RFFIHostApi) -> i32 {
    // SAFETY: forwarded contract.
    let Some(table) = (unsafe { host.as_ref() }) else {
        return -1;
    };
    let refuse = |message: &std::ffi::CStr| {
        // SAFETY: present in every version of the table; static NUL-terminated strings.
        unsafe { (table.error_set_raised_from_cstr)(c"RuntimeError".as_ptr(), message.as_ptr()) };
        -1
    };
    // Only the first two fields are known to exist before this check.
    if table.version.major != rffi_plugin_version.major {
        return refuse(c"rffi: the Python native library was built for another ABI major version");
    }
    if (table.size as usize) < core::mem::size_of::<RFFIHostApi>() {
        return refuse(c"rffi: the runtime is older than the Python native library");
    }
    match HOST.compare_exchange(
        std::ptr::null_mut(),
        host.cast_mut(),
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => 0,
        Err(p) if core::ptr::eq(p, host) => 0,
        Err(_) => refuse(c"rffi: the Python native library is bound to another runtime"),
    }
}
