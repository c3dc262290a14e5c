//! Which backend and implementation a call runs: the backends serving a device type, in order
//! (`select`), the implementation for the op, arch and dtype (`resolve`), and the cache of
//! resolutions (`resolve_cached`); when there is none, an error saying why for each backend.

use super::{Entry, Registry};
use crate::backend::Implementation;
use crate::op::Op;
use crate::settings;
use rffi_core::device::device_type_name;
use rffi_core::{DataType, Device, Error, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The backends a device type dispatches to, in order, and how they were chosen.
pub(crate) struct Selection {
    pub active: Vec<Arc<Entry>>,
    /// Which step chose the first one.
    pub step: String,
    /// Backends serving the device type that were left out, and why.
    pub rejected: Vec<(String, String)>,
}

/// A cached resolution: the backend and implementation a call runs.
#[derive(Clone)]
pub(super) struct Resolved {
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
}
