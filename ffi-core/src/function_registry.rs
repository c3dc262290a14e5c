//! The global function registry: names to functions, safe under concurrent use.
//!
//! Functions declared with `register_global!` are collected through `inventory` when the function
//! registry is first touched (the runtime's start), never from a load-time constructor. In a plugin image
//! every operation forwards to the host runtime (see `plugin`), and the plugin's declarations are
//! registered there by its `rffi_plugin_init`.

use crate::error::{Error, Result};
use crate::function::Function;
use crate::host::host;
use std::sync::{OnceLock, RwLock};

/// A function declared at compile time; see `register_global!`.
pub struct StaticFunction {
    /// The global name.
    pub name: &'static str,
    /// Makes the Function (called once, when the registry is first used).
    pub make: fn() -> Function,
    /// Declared by the runtime itself (`testing.*`, `ffi.*`): a plugin's copy of the runtime
    /// leaves these to the host.
    pub builtin: bool,
    /// What the function declares about blocking (see [`Nonblocking`]).
    pub nonblocking: Nonblocking,
}

/// Whether a function may block, as declared where it is registered. A binding may keep its
/// interpreter lock (the Python package: the GIL) during a call of a non-blocking function;
/// the function's metadata says so (`"nonblocking"`), for bindings and for readers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i64)]
pub enum Nonblocking {
    /// Nothing declared: the function may block (the default).
    No = 0,
    /// The function returns promptly, without waiting for anything another thread does (no
    /// sleep, I/O, lock another thread may hold, or join), and calls no function it is given.
    /// Metadata: `"nonblocking": true`.
    Yes = 1,
    /// As `Yes`, except that it calls Functions passed directly as its arguments, on the calling
    /// thread (as `testing.apply` does): a call is non-blocking when they are. Metadata:
    /// `"nonblocking": "with_arguments"`.
    WithArguments = 2,
}

impl Nonblocking {
    /// The declaration a metadata value of `"nonblocking"` states (`None`: the key is absent).
    pub fn from_metadata(value: Option<&crate::schema::JsonValue>) -> Result<Nonblocking> {
        use crate::schema::JsonValue;
        match value {
            None | Some(JsonValue::Bool(false)) => Ok(Nonblocking::No),
            Some(JsonValue::Bool(true)) => Ok(Nonblocking::Yes),
            Some(JsonValue::Str(s)) if s == "with_arguments" => Ok(Nonblocking::WithArguments),
            Some(other) => Err(Error::value_error(format!(
                "metadata `nonblocking` must be true, false or \"with_arguments\", not {}",
                other.to_json()
            ))),
        }
    }

    /// From its number (`as i64`); anything else is `No`.
    pub fn from_code(code: i64) -> Nonblocking {
        match code {
            1 => Nonblocking::Yes,
            2 => Nonblocking::WithArguments,
            _ => Nonblocking::No,
        }
    }
}

inventory::collect!(StaticFunction);

/// Keys are the names' bytes, so a lookup by a name from C needs no UTF-8 check (an invalid name
/// simply is not there); registration checks UTF-8.
type Table = crate::lifetime_map::LifetimeMap<Box<[u8]>, Function>;

/// The functions declared non-blocking, kept for the life of the process (so that no other
/// function ever takes one's address).
fn nonblocking() -> &'static RwLock<Vec<(Function, Nonblocking)>> {
    static NONBLOCKING: OnceLock<RwLock<Vec<(Function, Nonblocking)>>> = OnceLock::new();
    NONBLOCKING.get_or_init(Default::default)
}

/// What the function object `f` was declared as where it was registered (see [`Nonblocking`]).
pub fn declared_nonblocking(f: &Function) -> Nonblocking {
    let declared = nonblocking().read().unwrap_or_else(|e| e.into_inner());
    declared
        .iter()
        .find(|(d, _)| d.as_raw() == f.as_raw())
        .map_or(Nonblocking::No, |&(_, n)| n)
}

fn table() -> &'static RwLock<Table> {
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        crate::error::install_panic_hook();
        let mut t = Table::default();
        for s in inventory::iter::<StaticFunction> {
            if crate::plugin::is_plugin() && !s.builtin {
                continue;
            }
            let f = (s.make)();
            f.set_name(s.name);
            if s.nonblocking != Nonblocking::No {
                let mut declared = nonblocking().write().unwrap_or_else(|e| e.into_inner());
                declared.push((f.clone(), s.nonblocking));
            }
            if t.insert(s.name.as_bytes().into(), f).is_some() {
                // Two crates declared the same name; the function registry keeps the later one and
                // says so rather than failing the whole runtime start.
                eprintln!("rffi: global function `{}` declared twice", s.name);
            }
        }
        RwLock::new(t)
    })
}

/// The one rule for names that enter the runtime (global function names, type keys, error
/// kinds): not empty, and no NUL byte, which would cut the name short wherever it is read as a C
/// string (a `dlsym`, a C caller's `printf`) and make two different names look alike.
pub fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::value_error(format!("{what} must not be empty")));
    }
    if let Some(at) = name.bytes().position(|b| b == 0) {
        return Err(Error::value_error(format!(
            "{what} {name:?} contains a NUL byte (at {at})"
        )));
    }
    Ok(())
}

/// Registers `f` as `name`. An existing name is an error unless `allow_override`.
pub fn register_global_func(name: &str, f: Function, allow_override: bool) -> Result<()> {
    check_name("a global function name", name)?;
    f.set_name(name);
    if let Some(host) = host() {
        return host.register_global_func(name, &f, allow_override);
    }
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    if !allow_override && t.contains_key(name.as_bytes()) {
        return Err(Error::key_error(format!(
            "global function `{name}` is already registered (pass override to replace it)"
        )));
    }
    let previous = t.insert(name.as_bytes().into(), f);
    drop(t);
    crate::module::journal_registration(name, previous);
    Ok(())
}

/// Registers a name given as bytes (from C): the name must be UTF-8.
pub fn register_global_func_bytes(name: &[u8], f: Function, allow_override: bool) -> Result<()> {
    let name = std::str::from_utf8(name).map_err(|e| {
        Error::value_error(format!(
            "global function name is not valid UTF-8 ({e}): {:?}",
            String::from_utf8_lossy(name)
        ))
    })?;
    register_global_func(name, f, allow_override)
}

/// The function registered as `name`, if any (a new reference to the registered object).
#[inline]
pub fn get_global_func(name: impl AsRef<[u8]>) -> Option<Function> {
    if let Some(host) = host() {
        return host.get_global_func(name.as_ref());
    }
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    t.get(name.as_ref()).cloned()
}

/// Removes `name`; returns whether it was registered.
pub fn remove_global_func(name: impl AsRef<[u8]>) -> bool {
    if let Some(host) = host() {
        return host.remove_global_func(name.as_ref());
    }
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    t.remove(name.as_ref()).is_some()
}

/// Every registered name, sorted.
pub fn list_global_func_names() -> Vec<String> {
    if let Some(host) = host() {
        return host.list_global_func_names();
    }
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    let mut names: Vec<String> = t
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    names.sort_unstable();
    names
}

/// Declares a global function at compile time from a typed closure or fn item; it is registered
/// when the runtime starts.
///
/// ```
/// rffi_core::register_global!("demo.add", |a: i64, b: i64| a + b);
/// let f = rffi_core::get_global_func("demo.add").unwrap();
/// let r = f.call(&[1i64.into(), 2i64.into()]).unwrap();
/// assert_eq!(r.try_as::<i64>().unwrap(), 3);
/// ```
#[macro_export]
macro_rules! register_global {
    ($name:expr, $f:expr) => {
        const _: () = {
            fn __rffi_make() -> $crate::Function {
                $crate::Function::from_typed($f)
            }
            $crate::inventory::submit! {
                $crate::function_registry::StaticFunction {
                    name: $name,
                    make: __rffi_make,
                    builtin: false,
                    nonblocking: $crate::function_registry::Nonblocking::No,
                }
            }
        };
    };
}

/// Like `register_global!`, for a packed closure over `&[AnyView]`.
#[macro_export]
macro_rules! register_global_packed {
    ($name:expr, $f:expr) => {
        const _: () = {
            fn __rffi_make() -> $crate::Function {
                $crate::Function::from_packed($f)
            }
            $crate::inventory::submit! {
                $crate::function_registry::StaticFunction {
                    name: $name,
                    make: __rffi_make,
                    builtin: false,
                    nonblocking: $crate::function_registry::Nonblocking::No,
                }
            }
        };
    };
}

/// `register_global!` for the runtime's own functions (`testing.*`, `ffi.*`); `nonblocking` or
/// `nonblocking_with_arguments` before the name declares the function so (see [`Nonblocking`]).
macro_rules! register_builtin {
    (@ $make:ident, $name:expr, $f:expr, $nonblocking:ident) => {
        const _: () = {
            fn __rffi_make() -> $crate::Function {
                $crate::Function::$make($f)
            }
            inventory::submit! {
                $crate::function_registry::StaticFunction {
                    name: $name,
                    make: __rffi_make,
                    builtin: true,
                    nonblocking: $crate::function_registry::Nonblocking::$nonblocking,
                }
            }
        };
    };
    (nonblocking $name:expr, $f:expr) => {
        $crate::function_registry::register_builtin!(@ from_typed, $name, $f, Yes);
    };
    (nonblocking_with_arguments $name:expr, $f:expr) => {
        $crate::function_registry::register_builtin!(@ from_typed, $name, $f, WithArguments);
    };
    ($name:expr, $f:expr) => {
        $crate::function_registry::register_builtin!(@ from_typed, $name, $f, No);
    };
}
pub(crate) use register_builtin;

/// `register_global_packed!` for the runtime's own functions, as `register_builtin!`.
macro_rules! register_builtin_packed {
    (nonblocking $name:expr, $f:expr) => {
        $crate::function_registry::register_builtin!(@ from_packed, $name, $f, Yes);
    };
    (nonblocking_with_arguments $name:expr, $f:expr) => {
        $crate::function_registry::register_builtin!(@ from_packed, $name, $f, WithArguments);
    };
    ($name:expr, $f:expr) => {
        $crate::function_registry::register_builtin!(@ from_packed, $name, $f, No);
    };
}
pub(crate) use register_builtin_packed;
