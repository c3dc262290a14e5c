//! Which backend to use and which ops are enabled: from the environment (read once, at first use),
//! from the API (process-wide), and from scopes (this thread, restored when the guard drops).
//!
//! Precedence for the backend: the innermost scope, then `set_backend`, then
//! `RFFI_KERNELS_BACKEND`, then probes. For the op lists: disabled ops are the union of every
//! active scope's list with `set_disabled` (or, if it was never called, `RFFI_KERNELS_DISABLE`);
//! the include list is the innermost scope's, else `set_only`'s, else `RFFI_KERNELS_ONLY`. An op
//! runs only if it is in the include list (when there is one) and not disabled.

use crate::op::{Op, OpSet};
use rffi_core::{Error, Result};
use std::cell::RefCell;
use std::path::PathBuf;

/// The environment variable naming the backend to use (validated: an unknown name is an error).
pub const ENV_BACKEND: &str = "RFFI_KERNELS_BACKEND";
/// The environment variable listing ops to disable (comma-separated names).
pub const ENV_DISABLE: &str = "RFFI_KERNELS_DISABLE";
/// The environment variable listing the only ops to enable (comma-separated names).
pub const ENV_ONLY: &str = "RFFI_KERNELS_ONLY";
/// The environment variable naming a folder of tuning files that replace the built-in ones.
pub const ENV_TUNE_DIR: &str = "RFFI_KERNELS_TUNE_DIR";

/// The environment as read at first use. Op lists that do not parse keep their error, reported
/// by every call (a typo must not silently enable what it meant to disable).
#[derive(Clone, Debug)]
pub(crate) struct EnvSettings {
    pub backend: Option<String>,
    pub disabled: std::result::Result<OpSet, String>,
    pub disabled_raw: Option<String>,
    pub only: std::result::Result<Option<OpSet>, String>,
    pub only_raw: Option<String>,
    pub tune_dir: Option<PathBuf>,
}

impl EnvSettings {
    pub fn read(env: &dyn Fn(&str) -> Option<String>) -> EnvSettings {
        let nonempty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let disabled_raw = nonempty(ENV_DISABLE);
        let only_raw = nonempty(ENV_ONLY);
        EnvSettings {
            backend: nonempty(ENV_BACKEND).map(|s| s.trim().to_owned()),
            disabled: match &disabled_raw {
                None => Ok(OpSet::EMPTY),
                Some(s) => OpSet::parse_list(s, ENV_DISABLE).map_err(|e| e.message()),
            },
            only: match &only_raw {
                None => Ok(None),
                Some(s) => OpSet::parse_list(s, ENV_ONLY)
                    .map(Some)
                    .map_err(|e| e.message()),
            },
            disabled_raw,
            only_raw,
            tune_dir: nonempty(ENV_TUNE_DIR).map(PathBuf::from),
        }
    }

    /// The first configuration error, if any.
    pub fn error(&self) -> Option<String> {
        self.disabled
            .as_ref()
            .err()
            .or(self.only.as_ref().err())
            .cloned()
    }
}

/// Settings made through the API; `None` fields leave the environment in charge.
#[derive(Clone, Debug, Default)]
pub(crate) struct ApiSettings {
    pub backend: Option<String>,
    pub disabled: Option<OpSet>,
    pub only: Option<OpSet>,
}

/// One scope's overrides.
#[derive(Clone, Debug, Default)]
pub struct ScopeSettings {
    pub(crate) disable: OpSet,
    pub(crate) only: Option<OpSet>,
    pub(crate) backend: Option<String>,
}

thread_local! {
    /// (registry id, overrides), innermost last.
    static SCOPES: RefCell<Vec<(u64, ScopeSettings)>> = const { RefCell::new(Vec::new()) };
}

/// Whether any scope is open on this thread (of any registry).
pub(crate) fn in_scope() -> bool {
    SCOPES.try_with(|s| !s.borrow().is_empty()).unwrap_or(false)
}

pub(crate) fn with_scopes<R>(f: impl FnOnce(&[(u64, ScopeSettings)]) -> R) -> R {
    // During thread teardown the stack is gone: no scope applies.
    let snapshot: Vec<(u64, ScopeSettings)> =
        SCOPES.try_with(|s| s.borrow().clone()).unwrap_or_default();
    f(&snapshot)
}

/// Pushes a scope; returns the depth to truncate back to.
pub(crate) fn push_scope(registry: u64, s: ScopeSettings) -> usize {
    SCOPES.with(|st| {
        let mut st = st.borrow_mut();
        st.push((registry, s));
        st.len() - 1
    })
}

/// Restores the scope stack to `depth` entries (dropping that scope and any left open inside it).
pub(crate) fn pop_scope(depth: usize) -> Result<()> {
    SCOPES
        .try_with(|st| {
            let mut st = st.borrow_mut();
            if depth >= st.len() {
                return Err(Error::value_error(format!(
                    "kernels.pop_scope: token {depth} does not name an open scope on this thread \
                     ({} open)",
                    st.len()
                )));
            }
            st.truncate(depth);
            Ok(())
        })
        .unwrap_or(Ok(()))
}

/// Restores the settings in force before it was made when dropped; made by
/// [`crate::Registry::scope`]. Tied to the thread that made it.
#[must_use = "the scope ends when the guard is dropped"]
pub struct ScopeGuard {
    pub(crate) depth: usize,
    /// Scopes are per thread: the guard must be dropped there.
    pub(crate) _not_send: core::marker::PhantomData<*const ()>,
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        let _ = pop_scope(self.depth);
    }
}

/// Why an op is not enabled, or `None` if it is.
pub(crate) fn op_disabled_reason(
    op: Op,
    env: &EnvSettings,
    api: &ApiSettings,
    scopes: &[&ScopeSettings],
) -> Option<String> {
    for s in scopes.iter().rev() {
        if s.disable.contains(op) {
            return Some("disabled by a kernels scope on this thread".into());
        }
    }
    match api.disabled {
        Some(d) if d.contains(op) => return Some("disabled by set_disabled()".into()),
        Some(_) => {}
        None => {
            if env.disabled.as_ref().is_ok_and(|d| d.contains(op)) {
                return Some(format!(
                    "disabled by {ENV_DISABLE}={}",
                    env.disabled_raw.as_deref().unwrap_or("")
                ));
            }
        }
    }
    let (only, source) = if let Some(o) = scopes.iter().rev().find_map(|s| s.only) {
        (Some(o), "a kernels scope's include list".to_owned())
    } else if let Some(o) = api.only {
        (Some(o), "set_only()".to_owned())
    } else {
        (
            env.only.clone().ok().flatten(),
            format!("{ENV_ONLY}={}", env.only_raw.as_deref().unwrap_or("")),
        )
    };
    match only {
        Some(o) if !o.contains(op) => Some(format!("not in {source}")),
        _ => None,
    }
}

/// The backend the settings choose, and which setting chose it.
pub(crate) fn backend_choice(
    env: &EnvSettings,
    api: &ApiSettings,
    scopes: &[&ScopeSettings],
) -> Option<(String, &'static str)> {
    if let Some(b) = scopes.iter().rev().find_map(|s| s.backend.clone()) {
        return Some((b, "a kernels scope"));
    }
    if let Some(b) = &api.backend {
        return Some((b.clone(), "set_backend()"));
    }
    env.backend.clone().map(|b| (b, ENV_BACKEND))
}
