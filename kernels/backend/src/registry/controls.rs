//! What users set: the backend for the whole process, the disabled and the only enabled ops
//! (each replacing its environment variable), and scopes that change them on one thread.

use super::Registry;
use crate::op::{self, Op};
use crate::settings::{self, ApiSettings, ScopeGuard, ScopeSettings};
use rffi_core::{Error, Result};

impl Registry {
    /// Chooses the backend for the whole process (`None`: back to `RFFI_KERNELS_BACKEND`, then
    /// probes). An unknown name is an error listing the valid ones.
    pub fn set_backend(&self, name: Option<&str>) -> Result<()> {
        if let Some(n) = name {
            self.check_backend_name(n, "set_backend")?;
        }
        self.change_api(|api| api.backend = name.map(str::to_owned));
        Ok(())
    }

    /// Disables these ops process-wide, replacing `RFFI_KERNELS_DISABLE` (`None`: back to it).
    pub fn set_disabled(&self, ops: Option<&[&str]>) -> Result<()> {
        let set = ops
            .map(|o| op::OpSet::from_ops(o.iter().copied(), "set_disabled"))
            .transpose()?;
        self.change_api(|api| api.disabled = set);
        Ok(())
    }

    /// Enables only these ops process-wide, replacing `RFFI_KERNELS_ONLY` (`None`: back to it).
    pub fn set_only(&self, ops: Option<&[&str]>) -> Result<()> {
        let set = ops
            .map(|o| op::OpSet::from_ops(o.iter().copied(), "set_only"))
            .transpose()?;
        self.change_api(|api| api.only = set);
        Ok(())
    }

    /// Changes the process-wide settings; resolutions cached before are stale.
    fn change_api(&self, change: impl FnOnce(&mut ApiSettings)) {
        change(&mut self.api.write().unwrap_or_else(|e| e.into_inner()));
        self.settings_changed();
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

    pub(super) fn config_error(&self) -> Result<()> {
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
