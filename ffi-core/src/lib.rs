//! rffi core runtime: values, objects, strings, containers, functions, the global function
//! registry, the type registry and errors, laid out to be ABI-compatible with tvm-ffi 0.1.x.
//!
//! The `abi` module holds the C-layout items only; everything else is the safe runtime above it.
//!
//! # Registering and calling functions
//!
//! Any function, from any language, is reached by name through one function registry and called with
//! [`Any`] values; typed closures convert their arguments and results.
//!
//! ```
//! use rffi_core::{get_global_func, register_global_func, Function};
//!
//! let twice = Function::from_typed(|x: i64| 2 * x);
//! register_global_func("doc.twice", twice, false).unwrap();
//! let f = get_global_func("doc.twice").expect("registered");
//! let r = f.call(&[21i64.into()]).unwrap();
//! assert_eq!(r.try_as::<i64>().unwrap(), 42);
//!
//! // A wrong argument is a TypeError naming the function, the position and both types.
//! let e = f.call(&["x".into()]).unwrap_err();
//! assert_eq!(e.kind(), "TypeError");
//! assert!(e.message().contains("argument #0"));
//! ```
//!
//! Functions can also be declared at compile time with [`register_global!`].
//!
//! # Errors
//!
//! A failed call returns an [`Error`]: a kind (`ValueError`, ...), a message, and a traceback that
//! every language it crossed added its frames to.
//!
//! ```
//! use rffi_core::{get_global_func, Error, Function};
//!
//! let f = Function::from_typed(|b: i64| -> rffi_core::Result<i64> {
//!     if b == 0 { Err(Error::value_error("division by zero")) } else { Ok(10 / b) }
//! });
//! let e = f.call(&[0i64.into()]).unwrap_err();
//! assert_eq!((e.kind().as_str(), e.message().as_str()), ("ValueError", "division by zero"));
//! assert!(e.backtrace().contains("File \""));
//! ```
//!
//! # Tensors
//!
//! [`Tensor`] is a DLPack tensor with a reference count, shared with C, C++ and Python without
//! copying.
//!
//! ```
//! use rffi_core::{DataType, Device, Tensor};
//!
//! let t = Tensor::empty(&[2, 3], DataType::float(32), Device::cpu()).unwrap();
//! assert_eq!(t.shape(), &[2, 3]);
//! // SAFETY: a fresh CPU float32 tensor that nothing else uses.
//! let data = unsafe { t.as_mut_slice::<f32>() }.unwrap();
//! data[5] = 1.5;
//! // Exported as DLPack (sharing the data) and imported back.
//! let managed = t.to_dlpack_versioned();
//! // SAFETY: the managed tensor just exported, handed over once.
//! let back = unsafe { Tensor::from_dlpack_versioned(managed, 0, false) }.unwrap();
//! assert_eq!(unsafe { back.as_slice::<f32>() }.unwrap()[5], 1.5);
//! ```
//!
//! # Plugins
//!
//! A plugin is a shared library loaded with [`Module::load`]; its functions join this process's
//! function registry. A Rust plugin is a `cdylib` that declares its functions with [`register_global!`]
//! and exports the loader's entry points with [`export_plugin!`] (`examples/rust-plugin`):
//!
//! ```no_run
//! // The plugin crate (crate-type = ["cdylib"]), built on its own:
//! rffi_core::register_global!("my_plugin.add", |a: i64, b: i64| a + b);
//! rffi_core::export_plugin!();
//! ```
//!
//! A host loads it, and calls its functions by name like any other; here a C plugin
//! (`examples/c-plugin/plugin.c`, compiled by the hidden lines of this example):
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("rffi-doc-plugin-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let path = dir.join("libc_plugin.so");
//! # let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
//! # let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
//! # let ok = std::process::Command::new(cc)
//! #     .args(["-std=c99", "-shared", "-fPIC", "-I"]).arg(root.join("include"))
//! #     .arg(root.join("examples/c-plugin/plugin.c")).arg("-o").arg(&path)
//! #     .status().unwrap().success();
//! # assert!(ok, "compiling the example C plugin");
//! use rffi_core::{get_global_func, Module, ObjectType};
//!
//! let module = Module::load(&path)?;
//! // Registered by the plugin's init: in the function registry, and in the module.
//! let mul = get_global_func("c_plugin.mul").expect("registered at load");
//! assert_eq!(mul.call(&[6i64.into(), 7i64.into()])?.try_as::<i64>()?, 42);
//! assert!(module.function_names()?.iter().any(|n| n == "c_plugin.mul"));
//! // An exported `__rffi_square` symbol, found by name.
//! let square = module.get_function("square")?.expect("exported");
//! assert_eq!(square.call(&[9i64.into()])?.try_as::<i64>()?, 81);
//! // Loading the same file again gives the same module.
//! assert!(Module::load(&path)?.as_object().same_as(module.as_object()));
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), rffi_core::Error>(())
//! ```
//!
//! C and C++ plugins follow the same handshake (`include/rffi/c_api.h`, `include/rffi/rffi.hpp`);
//! docs/PLUGINS.md describes it. Sessions (workers in threads or processes, called by name) are
//! in the `rffi-session` crate.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
// Type-index constants keep their C names (`kRFFIInt`), and are matched on throughout.
#![allow(non_upper_case_globals)]

pub mod abi;
pub mod any;
pub mod array;
mod builtins;
pub mod call_depth;
#[doc(hidden)] // the C ABI's implementation: use the C header or this crate's safe API
pub mod capi;
pub mod checked_call;
pub mod containers;
pub mod device;
pub mod dtype;
pub mod error;
#[doc(hidden)] // validation of values from foreign code: the runtime's own, used by its tests
pub mod foreign;
pub mod function;
pub mod function_metadata;
pub mod function_registry;
mod host;
mod lifetime_map;
pub mod map;
pub mod module;
pub mod object;
mod panics;
#[doc(hidden)] // the plugin side of the handshake, for `export_plugin!`
pub mod plugin;
pub mod reflection;
pub mod schema;
pub mod shape;
pub mod stream;
pub mod string;
pub mod structural;
pub mod tensor;
mod testing;
mod testing_compare_types;
mod testing_dataclass_types;
mod testing_schema_types;
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
