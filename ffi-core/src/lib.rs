//! rffi core runtime: values, objects, strings, containers, functions, the global function
//! registry, the type registry and errors, laid out to be ABI-compatible with tvm-ffi 0.1.x.
//!
//! The `abi` module holds the C-layout items only; everything else is the safe runtime above it.
#![deny(unsafe_op_in_unsafe_fn)]
// Type-index constants keep their C names (`kRFFIInt`), and are matched on throughout.
#![allow(non_upper_case_globals)]

pub mod abi;
pub mod any;
pub mod array;
mod builtins;
pub mod call_depth;
pub mod capi;
pub mod containers;
pub mod device;
pub mod dtype;
pub mod error;
pub mod foreign;
pub mod function;
pub mod function_metadata;
pub mod function_registry;
mod host;
mod lifetime_map;
pub mod map;
pub mod module;
pub mod object;
pub mod plugin;
pub mod reflection;
pub mod schema;
pub mod shape;
pub mod stream;
pub mod string;
pub mod tensor;
mod testing;
mod testing_types;
pub mod type_registry;

pub use any::{Any, AnyView, FromAny, OpaquePtr, TypeMismatch};
pub use array::Array;
pub use containers::{Dict, List};
pub use device::Device;
pub use dtype::DataType;
pub use error::{Error, Result};
pub use function::{CallError, Function, TypedFn};
pub use function_metadata::{get_global_func_metadata, set_global_func_metadata};
pub use function_registry::{
    get_global_func, list_global_func_names, register_global_func, remove_global_func,
};
pub use map::Map;
pub use module::Module;
pub use object::{ObjectRef, ObjectType};
pub use schema::TypeSchema;
pub use shape::Shape;
pub use string::{Bytes, RString};
pub use tensor::{Tensor, TensorMut};

#[doc(hidden)]
pub use inventory;

/// The version of the C ABI this build implements.
pub const fn version() -> abi::RFFIVersion {
    abi::RFFIVersion {
        major: abi::RFFI_VERSION_MAJOR,
        minor: abi::RFFI_VERSION_MINOR,
        patch: abi::RFFI_VERSION_PATCH,
    }
}
