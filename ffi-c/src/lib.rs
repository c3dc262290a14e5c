//! `librffi.so`: the rffi C ABI. Every export is a thin shim over `rffi-core` that checks its
//! pointers, catches panics, and reports failure as `-1` with an Error in the thread-local slot
//! (taken with `RFFIErrorMoveFromRaised`). The header `include/rffi/c_api.h` is generated from
//! these items by cbindgen (see `tests/header.rs`).
#![deny(unsafe_op_in_unsafe_fn)]
#![allow(non_snake_case)]

mod boundary;
pub mod error;
pub mod function;
pub mod object;
pub mod value;

pub use rffi_core;
