//! `librffi.so`: the rffi C ABI. Each export forwards to its implementation in `rffi_core::capi`,
//! which checks pointers, catches panics, and reports failure as `-1` with an Error in the
//! thread-local slot (taken with `RFFIErrorMoveFromRaised`). The same implementations reach plugins
//! through the loader's `RFFIHostApi` table. The header `include/rffi/c_api.h` is generated from
//! these items by cbindgen (see `tests/header.rs`).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![allow(non_snake_case)]

/// Pointer checks and the panic/error boundary, shared with the core's C API.
mod boundary {
    #[allow(unused_imports)]
    pub(crate) use rffi_core::capi::boundary::*;
}
pub mod call_frame;
pub mod error;
pub mod function;
pub mod module;
pub mod object;
pub mod reflection;
pub mod structural;
pub mod tensor;
pub mod value;

pub use rffi_core;
/// Sessions (`rffi::session`): a controller driving workers that call global functions by name;
/// reached from C and Python through the `session.*` global functions.
pub use rffi_session as session;

// Keeps the `session.*` registrations in librffi.so (a linker drops library code nothing uses).
#[used]
static LINK_SESSIONS: fn() -> i32 = rffi_session::ffi::link;
