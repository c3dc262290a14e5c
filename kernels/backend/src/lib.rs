//! The rffi kernel layer: one op name, several backends.
//!
//! Backends (`rffi-kernels-cpu`, `rffi-kernels-cuda`, ...) describe themselves with a
//! [`Backend`]: the DLPack device types they serve, a priority, a probe, and the
//! [`Implementation`]s they install once the probe succeeds. A [`Registry`] holds them and
//! dispatches each call of an op by the device of its tensors, then arch and dtype, then
//! priority. Every op is one global function, `kernels.<op>`, registered by [`install`].
//!
//! Nothing runs when backends are registered: the environment (`RFFI_KERNELS_BACKEND`,
//! `RFFI_KERNELS_DISABLE`, `RFFI_KERNELS_ONLY`, `RFFI_KERNELS_TUNE_DIR`) is read and the probes
//! run at the first call that needs them, once.
//!
//! Hosts: a Rust host calls
//! `rffi_kernels::install([rffi_kernels_cpu::backend(), rffi_kernels_cuda::backend()])`; C and
//! Python hosts load the plugin `librffi_kernels_plugin.so` (crate `rffi-kernels-plugin`), whose
//! init does the same.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
// DLPack and type-index constants keep their C names (`kDLCPU`, `kRFFIInt`).
#![allow(non_upper_case_globals)]

pub mod alloc;
mod args;
mod backend;
pub mod expr;
mod introspect;
mod op;
mod registry;
mod same_shape;
mod settings;
pub mod tune;

pub use args::{
    broadcast_shape, broadcast_view, dtype_epsilon, is_non_overlapping, matmul_shape, without_axis,
    MatmulShape,
};
pub use backend::{
    Availability, Backend, DeviceInfo, ExplainFn, Explanation, GuardToken, Implementation,
    KernelFn, OpCall,
};
pub use op::{Gelu, Op, OpKind, OpSet, Scalar, FLOATS, INTS};
pub use registry::{Registry, ScopeBuilder};
pub use settings::{ScopeGuard, ENV_BACKEND, ENV_DISABLE, ENV_ONLY, ENV_TUNE_DIR};
pub use tune::{Config, TuneTable, TuneView};

use rffi_core::{register_global_func, Any, AnyView, Error, Function, Result};
use std::sync::{Mutex, OnceLock};

/// The process's registry (reads the process environment at first use).
pub fn global() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::new)
}

/// Registers `backends` in the process registry and, the first time, the global functions
/// `kernels.<op>` and the `kernels.*` control functions. Calling it again adds backends only.
pub fn install(backends: impl IntoIterator<Item = Backend>) -> Result<()> {
    for b in backends {
        global().register_backend(b)?;
    }
    static FUNCTIONS: Mutex<bool> = Mutex::new(false);
    let mut done = FUNCTIONS.lock().unwrap_or_else(|e| e.into_inner());
    if !*done {
        register_global_functions(global())?;
        *done = true;
    }
    Ok(())
}

fn opt_str(args: &[AnyView<'_>], i: usize) -> Result<Option<String>> {
    match args.get(i) {
        None => Ok(None),
        Some(v) => v.try_as::<Option<String>>(),
    }
}

fn split_list(s: &str) -> Vec<&str> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Registers `kernels.<op>` for every op, plus:
/// `kernels.describe()`, `kernels.list_ops()` and `kernels.explain(op, *args)` (JSON text),
/// `kernels.set_backend(name | None)`, `kernels.set_disabled("add,mul" | None)`,
/// `kernels.set_only("add" | None)`, `kernels.push_scope(disable, only, backend) -> token` and
/// `kernels.pop_scope(token)` (a scope on the calling thread, for a binding's context manager).
pub fn register_global_functions(reg: &'static Registry) -> Result<()> {
    for op in Op::ALL {
        let f = Function::from_packed(move |args: &[AnyView<'_>]| reg.call(op, args));
        register_global_func(&op.global_name(), f, false)?;
    }
    let text = |v: serde_json::Value| {
        serde_json::to_string_pretty(&v).expect("JSON values always serialize")
    };
    let controls: Vec<(&str, Function)> = vec![
        (
            "kernels.describe",
            Function::from_typed(move || text(reg.describe())),
        ),
        (
            "kernels.explain",
            Function::from_packed(move |args: &[AnyView<'_>]| -> Result<Any> {
                let name = args
                    .first()
                    .map(|v| v.try_as::<String>())
                    .transpose()
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        Error::type_error(
                            "kernels.explain expects (op, *args): the op's name, then the \
                             arguments of the call to explain",
                        )
                    })?;
                let op = Op::parse(&name).ok_or_else(|| {
                    Error::value_error(format!(
                        "kernels.explain: unknown op `{name}`; valid ops: {}",
                        Op::ALL.map(Op::name).join(", ")
                    ))
                })?;
                Ok(Any::from(text(reg.explain(op, &args[1..])?)))
            }),
        ),
        (
            "kernels.list_ops",
            Function::from_typed(move || text(reg.list_ops())),
        ),
        (
            "kernels.set_backend",
            Function::from_typed(move |name: Option<String>| reg.set_backend(name.as_deref())),
        ),
        (
            "kernels.set_disabled",
            Function::from_typed(move |ops: Option<String>| {
                reg.set_disabled(ops.as_deref().map(split_list).as_deref())
            }),
        ),
        (
            "kernels.set_only",
            Function::from_typed(move |ops: Option<String>| {
                reg.set_only(ops.as_deref().map(split_list).as_deref())
            }),
        ),
        (
            "kernels.push_scope",
            Function::from_packed(move |args: &[AnyView<'_>]| -> Result<Any> {
                if args.len() > 3 {
                    return Err(Error::type_error(format!(
                        "kernels.push_scope expects (disable, only, backend), each a string or \
                         None, but {} arguments were given",
                        args.len()
                    )));
                }
                let token = reg.push_scope(
                    opt_str(args, 0)?.as_deref(),
                    opt_str(args, 1)?.as_deref(),
                    opt_str(args, 2)?.as_deref(),
                )?;
                Ok(Any::from(token as i64))
            }),
        ),
        (
            "kernels.pop_scope",
            Function::from_typed(move |token: usize| reg.pop_scope(token)),
        ),
    ];
    for (name, f) in controls {
        register_global_func(name, f, false)?;
    }
    Ok(())
}
