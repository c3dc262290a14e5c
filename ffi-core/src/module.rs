//! Modules: shared libraries loaded into the runtime (plugins), kept for the life of the process.
//!
//! Loading a plugin: open it (`RTLD_NOW | RTLD_LOCAL`), check the ABI version it was built for
//! (`rffi_plugin_version`) before running any of its code beyond its loader constructors, hand it the
//! runtime's table (`rffi_plugin_host_api` if it has that variable), and call `rffi_plugin_init(table)`.
//! Registrations made during `rffi_plugin_init` are journaled: if it fails, they are undone, so a
//! failed plugin leaves the function registry as it was. A library without `rffi_plugin_init` loads as a
//! symbol-only module whose functions are its exported `__rffi_<name>` safe-call symbols.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::function::Function;
use crate::lifetime_map::LifetimeMap;
use crate::object::{
    alloc_object_with_deleter, body, obj_box_deleter, static_object_type, ObjectRef,
};
use core::ffi::c_void;
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// An owned reference to a Module object (type index 73).
#[derive(Clone)]
#[repr(transparent)]
pub struct Module(ObjectRef);
static_object_type!(Module, kRFFIModule, "ffi.Module");
crate::any::object_any_conversions!(Module);

struct ModuleBody {
    path: PathBuf,
    /// Never closed: function pointers and deleters from the library escape into objects.
    lib: core::mem::ManuallyDrop<Library>,
    /// Names the plugin registered in `rffi_plugin_init`, in order.
    registered: Vec<String>,
    /// `__rffi_<name>` symbols found so far, as functions.
    symbols: Mutex<LifetimeMap<String, Function>>,
}

/// The one deleter of modules made here, by which `own_body` recognizes them.
unsafe extern "C" fn module_deleter(obj: *mut c_void, flags: i32) {
    // SAFETY: installed only on objects allocated with a ModuleBody.
    unsafe { obj_box_deleter::<ModuleBody>(obj, flags) }
}

fn loaded() -> &'static Mutex<LifetimeMap<PathBuf, Module>> {
    static LOADED: OnceLock<Mutex<LifetimeMap<PathBuf, Module>>> = OnceLock::new();
    LOADED.get_or_init(Default::default)
}

// ---- Loading is serialized (a plugin's init may load another plugin on the same thread) ----

static LOAD_LOCK: Mutex<()> = Mutex::new(());

/// Registrations made by one plugin init: each name with what it held before.
type Journal = Vec<(String, Option<Function>)>;
thread_local! {
    static HOLDS_LOAD_LOCK: Cell<bool> = const { Cell::new(false) };
    /// One journal per plugin init running on this thread (nested loads push their own).
    static JOURNALS: RefCell<Vec<Journal>> = const { RefCell::new(Vec::new()) };
}

fn with_load_lock<R>(f: impl FnOnce() -> R) -> R {
    if HOLDS_LOAD_LOCK.get() {
        return f();
    }
    let _guard = LOAD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            HOLDS_LOAD_LOCK.set(false);
        }
    }
    HOLDS_LOAD_LOCK.set(true);
    let _reset = Reset;
    f()
}

/// Called by the function registry for every registration: inside a plugin's init, remember what the name
/// held before so a failed init can be undone.
pub(crate) fn journal_registration(name: &str, previous: Option<Function>) {
    JOURNALS.with(|j| {
        if let Some(top) = j.borrow_mut().last_mut() {
            top.push((name.to_owned(), previous));
        }
    });
}

fn rollback(journal: Journal) {
    for (name, previous) in journal.into_iter().rev() {
        match previous {
            Some(f) => {
                let _ = crate::register_global_func(&name, f, true);
            }
            None => {
                crate::remove_global_func(&name);
            }
        }
    }
}

/// An error and its causes on one line: the loader's own error says only "dlopen failed", and
/// the reason (a missing file, an undefined symbol) is its cause.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

fn load_error(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::value_error(format!("cannot load module `{}`: {why}", path.display()))
}

/// # Safety
/// `lib` must be a loaded library; the symbol, if present, must have type `T`.
unsafe fn symbol<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    let mut cname = name.as_bytes().to_vec();
    cname.push(0);
    // SAFETY: forwarded contract.
    unsafe { lib.get::<T>(cname.as_slice()) }.ok().map(|s| *s)
}

impl Module {
    /// Loads a plugin (or returns the module already loaded from the same file).
    pub fn load(path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        if let Some(host) = crate::host::host() {
            return host.load_module(path);
        }
        let canonical = std::fs::canonicalize(path).map_err(|e| load_error(path, e))?;
        with_load_lock(|| {
            if let Some(m) = loaded()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&canonical)
            {
                return Ok(m.clone());
            }
            let module = Self::open(&canonical)?;
            loaded()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(canonical, module.clone());
            Ok(module)
        })
    }

    fn open(path: &Path) -> Result<Module> {
        // SAFETY: loading runs the library's constructors; plugins are trusted code by nature.
        let lib = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }
            .map_err(|e| load_error(path, with_causes(&e)))?;
        // SAFETY: by the plugin convention `rffi_plugin_version` is an `RFFIVersion`.
        let version = unsafe { symbol::<*const RFFIVersion>(&lib, RFFI_PLUGIN_VERSION_SYMBOL) }
            // SAFETY: a data symbol's address points at its value.
            .map(|p| unsafe { p.read() });
        // SAFETY: by the convention `rffi_plugin_init` has the `RFFIPluginInit` signature.
        let init = unsafe {
            symbol::<unsafe extern "C" fn(*const RFFIHostApi) -> i32>(&lib, RFFI_PLUGIN_INIT_SYMBOL)
        };
        let ours = crate::version();
        match (version, init.is_some()) {
            (Some(v), _) if v.major != ours.major || v.minor > ours.minor => {
                return Err(Error::runtime_error(format!(
                    "cannot load module `{}`: it was built for rffi ABI {}.{}.{}, but this runtime \
                     provides ABI {}.{}.{}",
                    path.display(),
                    v.major,
                    v.minor,
                    v.patch,
                    ours.major,
                    ours.minor,
                    ours.patch
                )));
            }
            (None, true) => {
                return Err(load_error(
                    path,
                    format_args!("it exports `{RFFI_PLUGIN_INIT_SYMBOL}` without `{RFFI_PLUGIN_VERSION_SYMBOL}`"),
                ));
            }
            _ => {}
        }
        let api = crate::capi::host::api();
        // SAFETY: by the convention `rffi_plugin_host_api` is a `const RFFIHostApi*` variable.
        let slot = unsafe { symbol::<*mut *const RFFIHostApi>(&lib, RFFI_PLUGIN_HOST_API_SYMBOL) };
        if let Some(slot) = slot {
            // SAFETY: writing the plugin's own variable before any of its functions run.
            unsafe { slot.write(api) };
        }
        let mut registered = Vec::new();
        if let Some(init) = init {
            JOURNALS.with(|j| j.borrow_mut().push(Vec::new()));
            // SAFETY: the version was checked, so the plugin expects this table.
            let rc = unsafe { init(api) };
            let journal = JOURNALS.with(|j| j.borrow_mut().pop()).unwrap_or_default();
            if rc != 0 {
                let cause = crate::error::take_raised();
                rollback(journal);
                let (kind, msg) = cause.map_or_else(
                    || {
                        (
                            kind_runtime(),
                            "its init returned an error without raising one".into(),
                        )
                    },
                    |e| (e.kind(), e.message()),
                );
                return Err(Error::new(
                    &kind,
                    format!("initializing module `{}` failed: {msg}", path.display()),
                ));
            }
            for (name, _) in journal {
                if !registered.contains(&name) {
                    registered.push(name);
                }
            }
        }
        let body = ModuleBody {
            path: path.to_owned(),
            lib: core::mem::ManuallyDrop::new(lib),
            registered,
            symbols: Mutex::new(LifetimeMap::default()),
        };
        // SAFETY: `module_deleter` forwards to `obj_box_deleter::<ModuleBody>`.
        Ok(Module(unsafe {
            alloc_object_with_deleter(kRFFIModule, body, module_deleter)
        }))
    }

    fn own_body(&self) -> Option<&ModuleBody> {
        let ours: unsafe extern "C" fn(_, _) = module_deleter;
        // SAFETY: every object has a readable header; our deleter marks a ModuleBody.
        unsafe {
            (*self.0.as_ptr())
                .deleter
                .is_some_and(|d| std::ptr::fn_addr_eq(d, ours))
                .then(|| body::<ModuleBody>(&self.0))
        }
    }

    /// A module made by another image (this one is a plugin): reach it through the function registry.
    fn via_global(&self, global: &str, args: &[crate::Any]) -> Result<crate::Any> {
        let f = crate::get_global_func(global)
            .ok_or_else(|| Error::runtime_error(format!("`{global}` is not registered")))?;
        let mut all = vec![crate::Any::from(self.clone())];
        all.extend_from_slice(args);
        f.call(&all)
    }

    /// The file the module was loaded from.
    pub fn path(&self) -> Result<String> {
        match self.own_body() {
            Some(b) => Ok(b.path.display().to_string()),
            None => self.via_global("ffi.ModulePath", &[])?.try_as(),
        }
    }

    /// The functions the module provides: those its init registered, then the `__rffi_<name>`
    /// symbols looked up so far.
    pub fn function_names(&self) -> Result<Vec<String>> {
        let Some(b) = self.own_body() else {
            let arr: crate::Array = self.via_global("ffi.ModuleListFunctions", &[])?.try_as()?;
            return arr.iter().map(|v| v.try_as::<String>()).collect();
        };
        let mut names = b.registered.clone();
        let symbols = b.symbols.lock().unwrap_or_else(|e| e.into_inner());
        let mut found: Vec<String> = symbols
            .keys()
            .filter(|k| !names.contains(k))
            .cloned()
            .collect();
        found.sort();
        names.extend(found);
        Ok(names)
    }

    /// A function of the module by name: a registered name (or its last dotted part, when that
    /// is unambiguous), else the exported symbol `__rffi_<name>`. `None` if there is neither.
    pub fn get_function(&self, name: &str) -> Result<Option<Function>> {
        let Some(b) = self.own_body() else {
            return self
                .via_global("ffi.ModuleGetFunction", &[crate::Any::from(name)])?
                .try_as();
        };
        let suffix = format!(".{name}");
        let mut leaf = b.registered.iter().filter(|n| n.ends_with(&suffix));
        let full = b
            .registered
            .iter()
            .find(|n| *n == name)
            .or_else(|| leaf.next().filter(|_| leaf.next().is_none()));
        if let Some(full) = full {
            return Ok(crate::get_global_func(full));
        }
        let mut symbols = b.symbols.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = symbols.get(name) {
            return Ok(Some(f.clone()));
        }
        if name.is_empty() || name.contains('\0') {
            return Ok(None);
        }
        let symbol_name = format!("{RFFI_PLUGIN_FUNCTION_PREFIX}{name}");
        type SafeCall = unsafe extern "C" fn(*mut c_void, *const RFFIAny, i32, *mut RFFIAny) -> i32;
        // SAFETY: by the convention `__rffi_<name>` symbols are safe-call functions.
        let Some(call) = (unsafe { symbol::<SafeCall>(&b.lib, &symbol_name) }) else {
            return Ok(None);
        };
        // SAFETY: an exported safe-call function takes a NULL handle (it has no context), and
        // the library is never unloaded.
        let f = unsafe { Function::from_safe_call(core::ptr::null_mut(), call, None) };
        f.set_name(&symbol_name);
        symbols.insert(name.to_owned(), f.clone());
        Ok(Some(f))
    }
}

fn kind_runtime() -> String {
    crate::error::kind::RUNTIME_ERROR.to_owned()
}

impl core::fmt::Debug for Module {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Module({})", self.path().unwrap_or_default())
    }
}
