//! The C ABI of the runtime as `extern "C"` functions with C names: pointer checks, panic
//! catching, and `0 / -1 + raised error` results over the safe API.
//!
//! `librffi.so` (crate `rffi-c`) exports these under their names; plugins reach the same functions
//! through the `RFFIHostApi` table the loader hands them, so a plugin works alike under a C, Python
//! or Rust host. Nothing here is exported by `rffi-core` itself.
#![allow(non_snake_case)]

pub mod boundary;
pub mod error;
pub mod function;
pub mod host;
pub mod module;
pub mod object;
pub mod reflection;
pub mod structural;
pub mod tensor;
pub mod value;
