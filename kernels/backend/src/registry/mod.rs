//! The registry of backends and the dispatcher.
//!
//! A call goes: parse and check the arguments (`op`), find the devices' backends (selection),
//! pick the implementation (device type, then arch and dtype, then priority), check or allocate
//! the output, apply the backend's device guard, run the kernel. Probes and implementation
//! installs run once per backend, at the first call that needs them (or `describe()`).
//!
//! This module holds the `Registry` (its backends, and the call path); `entry` what is learnt
//! about each backend (probe, implementations, tuning); `controls` what users set (the backend
//! choice, disabled and enabled ops, scopes); `resolve` the choice of backend and implementation
//! for a call, and its cache.

mod controls;
mod entry;
mod resolve;

pub use controls::ScopeBuilder;
pub(crate) use entry::Entry;
pub(crate) use resolve::device_type_label;

use crate::args::{self, Parsed};
use crate::backend::{Backend, OpCall};
use crate::op::{Op, OpKind};
use crate::settings::{ApiSettings, EnvSettings};
use crate::tune::TuneView;
use resolve::Resolved;
use rffi_core::{Any, AnyView, DataType, Device, Error, Result, Tensor};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

type EnvFn = dyn Fn(&str) -> Option<String> + Send + Sync;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Backends, their implementations and the settings: the kernel layer's state. The process has
/// one ([`crate::global`]); tests make their own with [`Registry::with_env`].
pub struct Registry {
    id: u64,
    env_fn: Box<EnvFn>,
    env: OnceLock<EnvSettings>,
    api: RwLock<ApiSettings>,
    backends: RwLock<Vec<Arc<Entry>>>,
    /// Bumped by every change of backends or process-wide settings: resolutions made before
    /// are stale.
    generation: AtomicU64,
    /// Resolutions of (op, device, dtype) made without a scope, tagged with their generation.
    resolved: RwLock<HashMap<(Op, Device, DataType), Resolved>>,
}

impl Registry {
    /// A registry reading the process environment (at first use, not now).
    pub fn new() -> Registry {
        Registry::with_env(|k| std::env::var(k).ok())
    }

    /// A registry reading its settings from `env` instead of the process environment.
    pub fn with_env(env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Registry {
        Registry {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            env_fn: Box::new(env),
            env: OnceLock::new(),
            api: RwLock::new(ApiSettings::default()),
            backends: RwLock::new(Vec::new()),
            generation: AtomicU64::new(0),
            resolved: RwLock::new(HashMap::new()),
        }
    }

    /// Marks every cached resolution stale (call after changing what `resolve` reads).
    fn settings_changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn env(&self) -> &EnvSettings {
        self.env.get_or_init(|| EnvSettings::read(&*self.env_fn))
    }

    pub(crate) fn api(&self) -> ApiSettings {
        self.api.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Adds a backend. Nothing about it runs now: probing waits for the first call that needs it.
    /// A second backend of the same name is an error.
    pub fn register_backend(&self, backend: Backend) -> Result<()> {
        let mut list = self.backends.write().unwrap_or_else(|e| e.into_inner());
        if list.iter().any(|e| e.backend.name == backend.name) {
            return Err(Error::key_error(format!(
                "kernels: a backend named `{}` is already registered",
                backend.name
            )));
        }
        let order = list.len();
        list.push(Arc::new(Entry::new(backend, order)));
        // Priority order, highest first; fallbacks after everything; registration order breaks ties.
        list.sort_by_key(|e| (e.backend.fallback, -e.backend.priority, e.order));
        drop(list);
        self.settings_changed();
        Ok(())
    }

    /// The names of the registered backends, in priority order.
    pub fn backend_names(&self) -> Vec<String> {
        self.entries()
            .iter()
            .map(|e| e.backend.name.clone())
            .collect()
    }

    pub(crate) fn entries(&self) -> Vec<Arc<Entry>> {
        self.backends
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn check_backend_name(&self, name: &str, source: &str) -> Result<()> {
        let names = self.backend_names();
        if names.iter().any(|n| n == name) {
            Ok(())
        } else {
            Err(Error::value_error(format!(
                "{source}: unknown kernels backend `{name}`; valid backends: {}",
                names.join(", ")
            )))
        }
    }

    /// Calls `op` with packed arguments (what `kernels.<op>` does). Returns the new output in the
    /// allocating form and None in the destination-passing form.
    pub fn call(&self, op: Op, args: &[AnyView<'_>]) -> Result<Any> {
        if let Some(r) = self.call_same_shape(op, args) {
            return r;
        }
        let parsed = args::parse(op, args)?;
        let (entry, imp) = self.resolve_cached(op, parsed.device, parsed.dtype)?;
        let shape = parsed.output_shape()?;
        if let Some((out, pos)) = &parsed.out {
            args::check_out(&parsed, out, *pos, &shape)?;
        }
        let (out, allocated, ()) = self.run(&parsed, &entry, &shape, |call| (imp.kernel)(call))?;
        Ok(if allocated {
            Any::from(out)
        } else {
            Any::none()
        })
    }

    /// Builds the call a kernel sees (allocating the output unless one is given) under the
    /// backend's device guard, and hands it to `f`. Returns the output, whether it was
    /// allocated, and what `f` returned.
    pub(crate) fn run<T>(
        &self,
        p: &Parsed,
        entry: &Entry,
        shape: &[i64],
        f: impl FnOnce(&OpCall<'_>) -> Result<T>,
    ) -> Result<(Tensor, bool, T)> {
        let device = p.device;
        let stream = rffi_core::stream::current_stream(device);
        // The guard covers allocation too: an allocator may use the current device.
        let _guard = entry.enter(device)?;
        let (out, allocated) = match &p.out {
            Some((t, _)) => (t.clone(), false),
            None => (
                self.allocate(entry, shape, p.out_dtype(), device, stream)?,
                true,
            ),
        };
        let tune = entry.tune(self.env())?;
        // Operands that broadcast are read through stride-0 views of their own memory.
        let inputs: Vec<Tensor> = if p.op.kind() == OpKind::Binary {
            p.inputs
                .iter()
                .map(|(t, _)| args::broadcast_view(t, shape))
                .collect::<Result<_>>()?
        } else {
            p.inputs.iter().map(|(t, _)| t.clone()).collect()
        };
        let arch = entry.arch_of(device);
        let parts = crate::same_shape::CallParts {
            op: p.op,
            device,
            dtype: p.dtype,
            inputs: &inputs,
            scalar: p.scalar,
            scalar_first: p.scalar_first,
            axes: &p.axes,
            keepdims: p.keepdims,
            eps: p.eps,
            weight: p.weight.as_ref().map(|(t, _)| t),
            bias: p.bias.as_ref().map(|(t, _)| t),
            gelu: p.gelu,
        };
        let r = f(&parts.into_call(arch, &out, stream, TuneView::new(tune, arch)))?;
        Ok((out, allocated, r))
    }

    fn allocate(
        &self,
        entry: &Entry,
        shape: &[i64],
        dtype: DataType,
        device: Device,
        stream: rffi_core::stream::StreamHandle,
    ) -> Result<Tensor> {
        // The environment allocator (the caller's framework) comes first; the backend's own is
        // for hosts that installed none.
        match &entry.backend.alloc {
            Some(alloc) if rffi_core::tensor::env_allocator().is_none() => {
                alloc(shape, dtype, device, stream)
            }
            _ => Tensor::empty(shape, dtype, device),
        }
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}
