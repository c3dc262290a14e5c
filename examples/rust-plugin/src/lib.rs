//! An rffi plugin written in Rust. Built as a `cdylib`, it links its own copy of `rffi-core`;
//! when a host (C, Python or Rust) loads it with `RFFIModuleLoadFromFile` / `load_module` /
//! `Module::load`, its functions land in the host's function registry.

use rffi_core::{register_global, register_global_func, Any, Array, Error, Function, Result};

// Declared at compile time: registered by the plugin's entry point when it is loaded.
register_global!("rust_plugin.add", |a: i64, b: i64| a + b);

register_global!("rust_plugin.greet", |name: String| format!(
    "hello, {name}, from Rust"
));

// Returns an error, whose traceback reaches the host.
register_global!("rust_plugin.checked_div", |a: i64, b: i64| -> Result<i64> {
    a.checked_div(b)
        .ok_or_else(|| Error::value_error(format!("cannot divide {a} by {b}")))
});

// A type registered at run time: the index comes from the host's one type registry.
register_global!("rust_plugin.point_type_index", || {
    rffi_core::type_registry::get_or_alloc_type_index("rust_plugin.Point")
});

// An object type with fields and methods, declared once here: the host (C, Python or Rust) reads
// its fields and calls its methods by name, through the one type registry.
rffi_core::object_type! {
    /// A named counter made by the Rust plugin.
    pub struct Counter("rust_plugin.Counter") {
        /// The counter's name (frozen).
        pub name: String,
        /// The current count (writable from every language).
        pub count: rffi_core::reflection::Mut<i64>,
    }
    methods {
        /// Adds `by` to the count and returns the new count.
        "increment" => |c: rffi_core::reflection::Obj<Counter>, by: i64| {
            c.count.set(c.count.get() + by);
            c.count.get()
        };
    }
}

register_global!("rust_plugin.make_counter", |name: String, start: i64| {
    rffi_core::reflection::Obj::new(Counter {
        base: Default::default(),
        name,
        count: rffi_core::reflection::Mut::new(start),
    })
});

// Reads a field of any object by name, whichever language defined its type (a Python py_class,
// a C field table, a Rust object_type!): the plugin sees the host's one type registry.
register_global!(
    "rust_plugin.get_field",
    |obj: rffi_core::ObjectRef, name: String| rffi_core::reflection::get_field(&obj, &name)
);

// Writes a field by name (checked against the field's type; a frozen field is refused) and calls
// a method by name, of objects of any language's types.
register_global!("rust_plugin.set_field", |obj: rffi_core::ObjectRef,
                                           name: String,
                                           value: Any|
 -> Result<()> {
    rffi_core::reflection::set_field(&obj, &name, &value.view())
});
register_global!("rust_plugin.call_method", |obj: rffi_core::ObjectRef,
                                             name: String,
                                             args: Array|
 -> Result<Any> {
    let views: Vec<_> = args.iter().collect();
    rffi_core::reflection::call_method(&obj, &name, &views)
});

// The stream a kernel would launch on: the host's current stream for the device.
register_global!("rust_plugin.current_stream", |d: rffi_core::Device| {
    rffi_core::OpaquePtr(rffi_core::stream::current_stream(d))
});

// Takes a callback from the host and calls it on every element.
register_global!("rust_plugin.map", |f: Function,
                                     items: Array|
 -> Result<Array> {
    items.iter().map(|x| f.call_views(&[x])).collect()
});

/// Runs after the declared functions are registered: registration at load time, from code.
fn init() -> Result<()> {
    let version = rffi_core::version();
    register_global_func(
        "rust_plugin.abi_version",
        Function::from_typed(move || {
            format!("{}.{}.{}", version.major, version.minor, version.patch)
        }),
        false,
    )?;
    // Values made here are ordinary objects the host can hold.
    let _ = Any::from("plugin initialized");
    Ok(())
}

rffi_core::export_plugin!(init = init);
