//! A registered backend and what was learnt about it: its probe's result, its implementations
//! and its tuning tables, each found once, at the first call that needs it.

use crate::backend::{Availability, Backend, GuardToken, Implementation};
use crate::op::Op;
use crate::settings::EnvSettings;
use crate::tune::TuneTable;
use rffi_core::error::catch_panic;
use rffi_core::{Device, Error, Result};
use std::sync::OnceLock;

/// A registered backend with what was learnt about it.
pub(crate) struct Entry {
    pub backend: Backend,
    /// Registration order, which breaks ties of priority.
    pub(super) order: usize,
    probe: OnceLock<std::result::Result<Availability, String>>,
    impls: OnceLock<std::result::Result<Vec<Implementation>, String>>,
    tune: OnceLock<std::result::Result<TuneTable, String>>,
}

impl Entry {
    /// A backend registered `order`-th, nothing about it learnt yet.
    pub(super) fn new(backend: Backend, order: usize) -> Entry {
        Entry {
            backend,
            order,
            probe: OnceLock::new(),
            impls: OnceLock::new(),
            tune: OnceLock::new(),
        }
    }

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

    pub(super) fn serves(&self, device_type: i32) -> bool {
        self.backend.device_types.contains(&device_type)
    }

    /// The ops the backend does not support, and why: those it declares, then those its probe
    /// found.
    pub(crate) fn unsupported(&self) -> impl Iterator<Item = &(Op, String)> {
        let probed = self
            .availability()
            .as_ref()
            .map(|a| a.unsupported.as_slice())
            .unwrap_or(&[]);
        self.backend.unsupported.iter().chain(probed)
    }

    pub(crate) fn unsupported_reason(&self, op: Op) -> Option<String> {
        self.unsupported()
            .find(|(o, _)| *o == op)
            .map(|(_, why)| why.clone())
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
