//! The registry of backends and the dispatcher.
//!
//! A call goes: parse and check the arguments (`op`), find the devices' backends (selection),
//! pick the implementation (device type, then arch and dtype, then priority), check or allocate
//! the output, apply the backend's device guard, run the kernel. Probes and implementation
//! installs run once per backend, at the first call that needs them (or `describe()`).

use crate::args::{self, Parsed};
use crate::backend::{Availability, Backend, GuardToken, Implementation, OpCall};
use crate::op::{self, Op, OpKind};
use crate::settings::{self, ApiSettings, EnvSettings, ScopeGuard, ScopeSettings};
use crate::tune::{TuneTable, TuneView};
use rffi_core::device::device_type_name;
use rffi_core::error::catch_panic;
use rffi_core::{Any, AnyView, DataType, Device, Error, Result, Tensor};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

type EnvFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// A registered backend with what was learnt about it.
pub(crate) struct Entry {
    pub backend: Backend,
    order: usize,
    probe: OnceLock<std::result::Result<Availability, String>>,
    impls: OnceLock<std::result::Result<Vec<Implementation>, String>>,
    tune: OnceLock<std::result::Result<TuneTable, String>>,
}

impl Entry {
    /// The probe's result, running it once. A panicking probe (a library that cannot be loaded)
    /// counts as unavailable with the panic's message (caught quietly, as every rffi boundary
    /// catches panics: `catch_panic`).
    pub fn availability(&self) -> &std::result::Result<Availability, String> {
        self.probe.get_or_init(|| {
            catch_panic(|| (self.backend.probe)())
                .unwrap_or_else(|e| Err(format!("the probe failed: {}", e.message())))
        })
    }

    /// The implementations, installed once after a successful probe.
    pub fn implementations(&self) -> &std::result::Result<Vec<Implementation>, String> {
        self.impls.get_or_init(|| {
            let avail = self
                .availability()
                .as_ref()
                .map_err(|e| format!("unavailable: {e}"))?;
            catch_panic(|| (self.backend.install)(avail))
                .and_then(|r| r)
                .map_err(|e| format!("installing its implementations failed: {}", e.message()))
        })
    }

    pub(crate) fn tune(&self, env: &EnvSettings) -> Result<&TuneTable> {
        self.tune
            .get_or_init(|| match &env.tune_dir {
                Some(dir) => TuneTable::from_dir(dir, &self.backend.name),
                None => {
                    let files: Vec<(String, String)> = self
                        .backend
                        .tune_files
                        .iter()
                        .map(|(n, t)| (n.clone(), (*t).to_owned()))
                        .collect();
                    TuneTable::from_files(&files, format!("built-in tune/{}", self.backend.name))
                }
            })
            .as_ref()
            .map_err(|e| {
                Error::value_error(format!(
                    "tuning files of backend `{}`: {e}",
                    self.backend.name
                ))
            })
    }

    fn serves(&self, device_type: i32) -> bool {
        self.backend.device_types.contains(&device_type)
    }

    pub(crate) fn unsupported_reason(&self, op: Op) -> Option<String> {
        let declared = self
            .backend
            .unsupported
            .iter()
            .chain(
                self.availability()
                    .as_ref()
                    .map(|a| a.unsupported.as_slice())
                    .unwrap_or(&[]),
            )
            .find(|(o, _)| *o == op);
        declared.map(|(_, why)| why.clone())
    }

    /// Applies the backend's device guard for `device`, if it has one; what it changed comes
    /// back when the token drops.
    pub(crate) fn enter(&self, device: Device) -> Result<Option<GuardToken>> {
        self.backend.guard.as_ref().map(|g| g(device)).transpose()
    }

    pub(crate) fn arch_of(&self, device: Device) -> Option<&str> {
        self.availability().as_ref().ok().and_then(|a| {
            a.devices
                .iter()
                .find(|d| d.device_type == device.device_type() && d.index == device.index())
                .and_then(|d| d.arch.as_deref())
        })
    }
}

/// The backends a device type dispatches to, in order, and how they were chosen.
pub(crate) struct Selection {
    pub active: Vec<Arc<Entry>>,
    /// Which step chose the first one.
    pub step: String,
    /// Backends serving the device type that were left out, and why.
    pub rejected: Vec<(String, String)>,
}

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

/// A cached resolution: the backend and implementation a call runs.
#[derive(Clone)]
struct Resolved {
    generation: u64,
    entry: Arc<Entry>,
    imp: Arc<Implementation>,
}

pub(crate) fn device_type_label(t: i32) -> String {
    device_type_name(t).map_or_else(|| format!("device type {t}"), str::to_owned)
}

fn dtype_list(dtypes: &[DataType]) -> String {
    dtypes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
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
        list.push(Arc::new(Entry {
            backend,
            order,
            probe: OnceLock::new(),
            impls: OnceLock::new(),
            tune: OnceLock::new(),
        }));
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

    /// Chooses the backend for the whole process (`None`: back to `RFFI_KERNELS_BACKEND`, then
    /// probes). An unknown name is an error listing the valid ones.
    pub fn set_backend(&self, name: Option<&str>) -> Result<()> {
        if let Some(n) = name {
            self.check_backend_name(n, "set_backend")?;
        }
        self.api.write().unwrap_or_else(|e| e.into_inner()).backend = name.map(str::to_owned);
        self.settings_changed();
        Ok(())
    }

    /// Disables these ops process-wide, replacing `RFFI_KERNELS_DISABLE` (`None`: back to it).
    pub fn set_disabled(&self, ops: Option<&[&str]>) -> Result<()> {
        let set = ops
            .map(|o| op::OpSet::from_ops(o.iter().copied(), "set_disabled"))
            .transpose()?;
        self.api.write().unwrap_or_else(|e| e.into_inner()).disabled = set;
        self.settings_changed();
        Ok(())
    }

    /// Enables only these ops process-wide, replacing `RFFI_KERNELS_ONLY` (`None`: back to it).
    pub fn set_only(&self, ops: Option<&[&str]>) -> Result<()> {
        let set = ops
            .map(|o| op::OpSet::from_ops(o.iter().copied(), "set_only"))
            .transpose()?;
        self.api.write().unwrap_or_else(|e| e.into_inner()).only = set;
        self.settings_changed();
        Ok(())
    }

    /// Starts a scope on this thread: `reg.scope().disable(&["add"])?.enter()`. The settings in
    /// force before come back when the guard drops.
    pub fn scope(&self) -> ScopeBuilder<'_> {
        ScopeBuilder {
            registry: self,
            settings: ScopeSettings::default(),
        }
    }

    /// `scope()` for bindings: pushes and returns a token for [`Registry::pop_scope`].
    pub fn push_scope(
        &self,
        disable: Option<&str>,
        only: Option<&str>,
        backend: Option<&str>,
    ) -> Result<usize> {
        let mut b = self.scope();
        if let Some(d) = disable {
            b = b.disable(&[d])?;
        }
        if let Some(o) = only {
            b = b.only(&[o])?;
        }
        if let Some(n) = backend {
            b = b.backend(n)?;
        }
        Ok(settings::push_scope(self.id, b.settings))
    }

    /// Ends the scope `token` (and any still open inside it) on this thread.
    pub fn pop_scope(&self, token: usize) -> Result<()> {
        settings::pop_scope(token)
    }

    fn scopes(&self) -> Vec<ScopeSettings> {
        settings::with_scopes(|s| {
            s.iter()
                .filter(|(id, _)| *id == self.id)
                .map(|(_, s)| s.clone())
                .collect()
        })
    }

    fn config_error(&self) -> Result<()> {
        match self.env().error() {
            Some(e) => Err(Error::value_error(e)),
            None => Ok(()),
        }
    }

    /// Why `op` is disabled, if it is.
    pub fn op_disabled_reason(&self, op: Op) -> Option<String> {
        let scopes = self.scopes();
        let refs: Vec<&ScopeSettings> = scopes.iter().collect();
        settings::op_disabled_reason(op, self.env(), &self.api(), &refs)
    }

    pub(crate) fn choice(&self) -> Option<(String, &'static str)> {
        let scopes = self.scopes();
        let refs: Vec<&ScopeSettings> = scopes.iter().collect();
        settings::backend_choice(self.env(), &self.api(), &refs)
    }

    /// The backends calls on `device_type` go to, in order.
    pub(crate) fn select(&self, device_type: i32) -> Result<Selection> {
        let entries = self.entries();
        let serving: Vec<&Arc<Entry>> = entries.iter().filter(|e| e.serves(device_type)).collect();
        let label = device_type_label(device_type);
        let mut rejected = Vec::new();
        let mut active: Vec<Arc<Entry>> = Vec::new();
        let step;
        if let Some((name, source)) = self.choice() {
            self.check_backend_name(&name, source)?;
            let chosen = entries.iter().find(|e| e.backend.name == name).unwrap();
            if let Err(why) = chosen.availability() {
                return Err(Error::runtime_error(format!(
                    "kernels backend `{name}` (chosen by {source}) is unavailable: {why}"
                )));
            }
            if chosen.serves(device_type) {
                active.push(chosen.clone());
            }
            step = format!("chosen by {source}");
            for e in &serving {
                if e.backend.name != name && !e.backend.fallback {
                    rejected.push((
                        e.backend.name.clone(),
                        format!("not chosen ({source} chose `{name}`)"),
                    ));
                }
            }
        } else {
            for e in serving.iter().filter(|e| !e.backend.fallback) {
                match e.availability() {
                    Ok(_) => active.push((*e).clone()),
                    Err(why) => rejected.push((e.backend.name.clone(), format!("probe: {why}"))),
                }
            }
            step = if active.is_empty() {
                "fallback (no other backend available)".to_owned()
            } else {
                format!("probe (priority {})", active[0].backend.priority)
            };
        }
        for e in serving.iter().filter(|e| e.backend.fallback) {
            if !active.iter().any(|a| Arc::ptr_eq(a, e)) {
                active.push((*e).clone());
            }
        }
        if active.is_empty() {
            let servers: Vec<&str> = serving.iter().map(|e| e.backend.name.as_str()).collect();
            let mut msg = format!("no kernels backend serves {label}");
            if let Some((name, source)) = self.choice() {
                msg =
                    format!("kernels backend `{name}` (chosen by {source}) does not serve {label}");
            }
            if servers.is_empty() {
                msg.push_str("; no registered backend does");
            } else {
                msg.push_str(&format!("; backends serving it: {}", servers.join(", ")));
            }
            for (n, why) in &rejected {
                msg.push_str(&format!("; {n}: {why}"));
            }
            return Err(Error::runtime_error(msg));
        }
        Ok(Selection {
            active,
            step,
            rejected,
        })
    }

    /// `resolve`, remembered per (op, device, dtype) until the settings or backends change.
    /// Calls inside a scope on this thread resolve afresh (scopes are per thread and short).
    pub(crate) fn resolve_cached(
        &self,
        op: Op,
        device: Device,
        dtype: DataType,
    ) -> Result<(Arc<Entry>, Arc<Implementation>)> {
        let key = (op, device, dtype);
        let generation = self.generation.load(Ordering::Acquire);
        let cacheable = !settings::in_scope();
        if cacheable {
            let map = self.resolved.read().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = map.get(&key).filter(|r| r.generation == generation) {
                return Ok((r.entry.clone(), r.imp.clone()));
            }
        }
        let (entry, imp) = self.resolve(op, device, dtype)?;
        let imp = Arc::new(imp);
        if cacheable {
            let r = Resolved {
                generation,
                entry: entry.clone(),
                imp: imp.clone(),
            };
            self.resolved
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, r);
        }
        Ok((entry, imp))
    }

    /// The implementation a call of `op` on `device` with `dtype` runs, or why there is none.
    fn resolve(
        &self,
        op: Op,
        device: Device,
        dtype: DataType,
    ) -> Result<(Arc<Entry>, Implementation)> {
        self.config_error()?;
        if let Some(why) = self.op_disabled_reason(op) {
            return Err(Error::runtime_error(format!("kernels.{op} is {why}")));
        }
        let sel = self.select(device.device_type())?;
        let mut reasons: Vec<String> = Vec::new();
        let mut dtype_only = true;
        for entry in &sel.active {
            let name = &entry.backend.name;
            let impls = match entry.implementations() {
                Ok(i) => i,
                Err(e) => {
                    reasons.push(format!("{name}: {e}"));
                    dtype_only = false;
                    continue;
                }
            };
            if let Some(why) = entry.unsupported_reason(op) {
                reasons.push(format!("{name}: does not support {op}: {why}"));
                dtype_only = false;
                continue;
            }
            let arch = entry.arch_of(device);
            let mut candidates: Vec<&Implementation> = impls
                .iter()
                .filter(|i| i.op == op && i.device_type == device.device_type())
                .filter(|i| i.arch.is_none() || i.arch.as_deref() == arch)
                .collect();
            if candidates.is_empty() {
                reasons.push(format!(
                    "{name}: no implementation of {op} for {}{}",
                    device_type_label(device.device_type()),
                    arch.map(|a| format!(" ({a})")).unwrap_or_default()
                ));
                dtype_only = false;
                continue;
            }
            candidates.sort_by_key(|i| (i.arch.is_none(), -i.priority));
            if let Some(found) = candidates.iter().find(|i| i.dtypes.contains(&dtype)) {
                return Ok((entry.clone(), (*found).clone()));
            }
            let mut supported: Vec<DataType> = Vec::new();
            for c in &candidates {
                for d in &c.dtypes {
                    if !supported.contains(d) {
                        supported.push(*d);
                    }
                }
            }
            reasons.push(format!("{name} supports {}", dtype_list(&supported)));
        }
        for (n, why) in &sel.rejected {
            reasons.push(format!("{n}: {why}"));
        }
        let msg = format!(
            "kernels.{op}: no implementation for {dtype} tensors on {device} ({})",
            reasons.join("; ")
        );
        Err(if dtype_only {
            Error::type_error(msg)
        } else {
            Error::runtime_error(msg)
        })
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

/// Builds a scope: `registry.scope().disable(&["add"])?.only(&["add", "mul"])?.enter()`.
pub struct ScopeBuilder<'a> {
    registry: &'a Registry,
    settings: ScopeSettings,
}

impl ScopeBuilder<'_> {
    /// Disables these ops (comma-separated lists are accepted) inside the scope, on top of what
    /// is already disabled.
    pub fn disable(mut self, ops: &[&str]) -> Result<Self> {
        let s = op::OpSet::from_ops(ops.iter().copied(), "kernels scope `disable`")?;
        self.settings.disable = self.settings.disable.union(s);
        Ok(self)
    }

    /// Enables only these ops inside the scope.
    pub fn only(mut self, ops: &[&str]) -> Result<Self> {
        let s = op::OpSet::from_ops(ops.iter().copied(), "kernels scope `only`")?;
        self.settings.only = Some(self.settings.only.unwrap_or_default().union(s));
        Ok(self)
    }

    /// Chooses the backend inside the scope.
    pub fn backend(mut self, name: &str) -> Result<Self> {
        self.registry
            .check_backend_name(name, "kernels scope `backend`")?;
        self.settings.backend = Some(name.to_owned());
        Ok(self)
    }

    /// Applies the scope on this thread until the guard drops.
    pub fn enter(self) -> ScopeGuard {
        ScopeGuard {
            depth: settings::push_scope(self.registry.id, self.settings),
            _not_send: core::marker::PhantomData,
        }
    }
}
