//! Introspection: which backend serves what (`describe`), every op and its implementations
//! (`list_ops`), and how one call would run (`explain`).

use crate::args;
use crate::op::{Op, OpKind};
use crate::registry::{device_type_label, Registry};
use crate::settings;
use rffi_core::{AnyView, Result};
use serde_json::{json, Value};

impl Registry {
    /// How `op` would run on these arguments, without running it: the backend and why it was
    /// chosen, the implementation, and what the backend says about the kernel variant and its
    /// launch parameters (where the tuning configs came in, which entry). An output is allocated
    /// when none is given (the kernel does not run).
    pub fn explain(&self, op: Op, args: &[AnyView<'_>]) -> Result<Value> {
        let parsed = args::parse(op, args)?;
        let (entry, imp) = self.resolve_cached(op, parsed.device, parsed.dtype)?;
        let shape = parsed.output_shape()?;
        if let Some((out, pos)) = &parsed.out {
            args::check_out(&parsed, out, *pos, &shape)?;
        }
        let sel = self.select(parsed.device.device_type())?;
        let (_, _, ex) = self.run(&parsed, &entry, &shape, |call| {
            imp.explain.as_ref().map(|f| f(call)).transpose()
        })?;
        let kernel = match ex {
            Some(e) => json!({
                "kernel": e.kernel,
                "why": e.why,
                "params": e.params.into_iter().map(|(k, v)| (k, json!(v))).collect::<serde_json::Map<String, Value>>(),
                "config": e.config,
            }),
            None => json!({
                "kernel": format!("{} {op}", entry.backend.name),
                "why": "this implementation has a single code path",
                "params": {},
                "config": null,
            }),
        };
        Ok(json!({
            "op": op.name(),
            "device": parsed.device.to_string(),
            "dtype": parsed.dtype.to_string(),
            "shape": parsed.inputs[0].0.shape(),
            "out_shape": shape,
            "backend": entry.backend.name,
            "selection": {
                "step": sel.step,
                "order": sel.active.iter().map(|e| e.backend.name.clone()).collect::<Vec<_>>(),
            },
            "implementation": {"arch": imp.arch, "priority": imp.priority},
            "variant": kernel,
        }))
    }

    /// Which backend serves what, and why the others were rejected (probes every backend).
    pub fn describe(&self) -> Value {
        let env = self.env();
        let api = self.api();
        let entries = self.entries();
        let backends: Vec<Value> = entries
            .iter()
            .map(|e| {
                let b = &e.backend;
                let (available, reason, devices, detail) = match e.availability() {
                    Ok(a) => (
                        true,
                        Value::Null,
                        a.devices
                            .iter()
                            .map(|d| {
                                json!({"device": format!("{}:{}", device_type_label(d.device_type), d.index),
                                       "arch": d.arch, "name": d.name})
                            })
                            .collect::<Vec<_>>(),
                        a.detail.clone(),
                    ),
                    Err(why) => (false, Value::from(why.clone()), Vec::new(), String::new()),
                };
                let impls = match e.implementations() {
                    Ok(i) => json!(i.len()),
                    Err(why) => json!(why),
                };
                let unsupported: serde_json::Map<String, Value> = e
                    .unsupported()
                    .map(|(op, why)| (op.name().to_owned(), json!(why)))
                    .collect();
                json!({
                    "name": b.name,
                    "priority": b.priority,
                    "fallback": b.fallback,
                    "device_types": b.device_types.iter().map(|&t| device_type_label(t)).collect::<Vec<_>>(),
                    "dtypes": b.dtypes.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "available": available,
                    "reason": reason,
                    "detail": detail,
                    "devices": devices,
                    "implementations": impls,
                    "unsupported_ops": unsupported,
                    "tune": match e.tune(env) { Ok(t) => json!(t.source), Err(err) => json!(err.message()) },
                })
            })
            .collect();
        let mut device_types: Vec<i32> = Vec::new();
        for e in &entries {
            for &t in &e.backend.device_types {
                if !device_types.contains(&t) {
                    device_types.push(t);
                }
            }
        }
        let mut selection = serde_json::Map::new();
        for t in device_types {
            let v = match self.select(t) {
                Ok(sel) => json!({
                    "chosen": sel.active[0].backend.name,
                    "step": sel.step,
                    "order": sel.active.iter().map(|e| e.backend.name.clone()).collect::<Vec<_>>(),
                    "rejected": sel.rejected.iter().map(|(n, w)| json!({"backend": n, "why": w})).collect::<Vec<_>>(),
                }),
                Err(e) => json!({"error": e.message()}),
            };
            selection.insert(device_type_label(t), v);
        }
        let choice = self.choice();
        json!({
            "settings": {
                "backend": choice.as_ref().map(|(n, _)| n.clone()),
                "backend_source": choice.as_ref().map(|(_, s)| *s),
                "disabled": Op::ALL.iter().filter(|o| self.op_disabled_reason(**o).is_some()).map(|o| o.name()).collect::<Vec<_>>(),
                "env": {
                    settings::ENV_BACKEND: env.backend,
                    settings::ENV_DISABLE: env.disabled_raw,
                    settings::ENV_ONLY: env.only_raw,
                    settings::ENV_TUNE_DIR: env.tune_dir.as_ref().map(|p| p.display().to_string()),
                },
                "api": {"backend": api.backend, "disabled": api.disabled.map(|s| s.to_string()),
                        "only": api.only.map(|s| s.to_string())},
            },
            "errors": env.error().into_iter().collect::<Vec<_>>(),
            "backends": backends,
            "selection": selection,
        })
    }

    /// Every op: enabled or why not, and each implementation with whether it would be used.
    pub fn list_ops(&self) -> Value {
        let entries = self.entries();
        let ops: Vec<Value> = Op::ALL
            .iter()
            .map(|&op| {
                let disabled = self.op_disabled_reason(op);
                let mut impls = Vec::new();
                for e in &entries {
                    let Ok(list) = e.implementations() else {
                        continue;
                    };
                    let unsupported = e.unsupported_reason(op);
                    for i in list.iter().filter(|i| i.op == op) {
                        impls.push(json!({
                            "backend": e.backend.name,
                            "device_type": device_type_label(i.device_type),
                            "arch": i.arch,
                            "dtypes": i.dtypes.iter().map(ToString::to_string).collect::<Vec<_>>(),
                            "priority": i.priority,
                            "usable": unsupported.is_none(),
                            "why": unsupported,
                        }));
                    }
                }
                json!({
                    "op": op.name(),
                    "function": op.global_name(),
                    "signature": op.signature(),
                    "enabled": disabled.is_none(),
                    "why": disabled,
                    "implementations": impls,
                })
            })
            .collect();
        Value::Array(ops)
    }

    /// Whether `op` takes two tensors that must match in shape (for the docs of bindings).
    pub fn op_kind(op: Op) -> OpKind {
        op.kind()
    }
}
