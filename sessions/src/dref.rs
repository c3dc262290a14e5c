//! Controller-side handles to values that live on the workers: `DRef` (register k on every
//! worker), `DFunction` and `DModule`. The last handle to a register frees it on every worker.
//!
//! A handle is also an rffi object (type `session.DRef`), so C, Python and plugins can hold one,
//! pass it back as an argument, and release it through the ordinary reference count.

use crate::controller::Controller;
use crate::protocol::Reg;
use rffi_core::{Any, AnyView, Error, ObjectRef, Result};
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

struct Handle {
    ctl: Arc<Controller>,
    reg: Reg,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.ctl.release(self.reg);
    }
}

/// A value on every worker of a session (one per worker, each stays where it is).
#[derive(Clone)]
pub struct DRef(Arc<Handle>);

/// A function on every worker, called with `call`.
#[derive(Clone)]
pub struct DFunction(pub DRef);

/// A loaded module on every worker.
#[derive(Clone)]
pub struct DModule(pub DRef);

/// The type index of `session.DRef` objects in this runtime.
pub fn dref_type_index() -> i32 {
    static INDEX: OnceLock<i32> = OnceLock::new();
    *INDEX.get_or_init(|| {
        rffi_core::type_registry::get_or_alloc_type_index("session.DRef")
            .expect("registering the session.DRef type")
    })
}

unsafe extern "C" fn drop_handle(p: *mut c_void) {
    // SAFETY: `p` came from `Arc::into_raw` in `to_object`, and the object's deleter runs once.
    drop(unsafe { Arc::from_raw(p.cast::<Handle>()) });
}

impl DRef {
    pub(crate) fn new(ctl: Arc<Controller>, reg: Reg) -> DRef {
        DRef(Arc::new(Handle { ctl, reg }))
    }

    /// The register id on every worker.
    pub fn register(&self) -> Reg {
        self.0.reg
    }

    pub(crate) fn controller(&self) -> &Arc<Controller> {
        &self.0.ctl
    }

    /// The value on worker `rank`, converted back to a runtime value (a CPU tensor comes back
    /// as a host tensor holding a copy). Raises the first pending failure of that worker.
    pub fn fetch(&self, rank: usize) -> Result<Any> {
        self.0.ctl.fetch(self.0.reg, rank)
    }

    /// `fetch`, waiting at most `timeout`: `Ok(None)` while the value has not come (call again
    /// to go on waiting; bindings wait in slices so an interrupt is seen).
    pub fn fetch_timeout(&self, rank: usize, timeout: Duration) -> Result<Option<Any>> {
        self.0.ctl.fetch_timeout(self.0.reg, rank, Some(timeout))
    }

    /// This handle as an rffi object (sharing the register: the last of all handles frees it).
    pub fn to_object(&self) -> ObjectRef {
        let raw = Arc::into_raw(self.0.clone()) as *mut c_void;
        // SAFETY: `drop_handle` releases exactly the Arc reference made here; a Handle is Send and
        // Sync, so the deleter may run on any thread.
        unsafe { ObjectRef::new_opaque(dref_type_index(), raw, Some(drop_handle)) }
    }

    /// The handle an rffi object wraps, if it is a `session.DRef`.
    pub fn from_object(obj: &ObjectRef) -> Option<DRef> {
        if obj.type_index() != dref_type_index() {
            return None;
        }
        // SAFETY: objects of this type are made by `to_object` only, whose handle is an
        // `Arc<Handle>` kept alive by the object we borrow.
        unsafe {
            let p = obj.opaque_handle().cast::<Handle>();
            Arc::increment_strong_count(p);
            Some(DRef(Arc::from_raw(p)))
        }
    }

    /// Reads a DRef argument of a global function.
    pub fn from_arg(v: &AnyView<'_>, what: &str) -> Result<DRef> {
        v.as_object().and_then(DRef::from_object).ok_or_else(|| {
            Error::type_error(format!(
                "{what}: expected a session.DRef but got {}",
                v.type_name()
            ))
        })
    }
}

impl From<&DRef> for Any {
    fn from(d: &DRef) -> Any {
        d.to_object().into()
    }
}
impl From<&DFunction> for Any {
    fn from(d: &DFunction) -> Any {
        d.0.to_object().into()
    }
}
impl From<&DModule> for Any {
    fn from(d: &DModule) -> Any {
        d.0.to_object().into()
    }
}

impl DFunction {
    /// Calls the function on every worker; the result stays on the workers. DRef arguments are
    /// each worker's own value. Returns at once: failures come back at the next sync or fetch.
    pub fn call(&self, args: &[Any]) -> Result<DRef> {
        let views: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
        crate::session::call(self.0.controller(), &self.0, &views)
    }
}

impl DModule {
    /// The module's function `name` on every worker.
    pub fn get_function(&self, name: &str) -> Result<DFunction> {
        let ctl = self.0.controller();
        let module = self.0.register();
        let reg = ctl.broadcast_new(|reg| crate::protocol::Command::ModuleGetFunction {
            reg,
            module,
            name: name.to_string(),
        })?;
        Ok(DFunction(DRef::new(ctl.clone(), reg)))
    }
}
