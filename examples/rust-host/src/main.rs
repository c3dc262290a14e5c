//! A Rust program using the rffi runtime: declare functions at compile time and at run time, call
//! them by name, pass a callback, turn errors into tracebacks, and load plugins (paths given as
//! arguments: a Rust plugin and a C plugin) whose functions join this program's function registry.
//!
//! usage: rffi-example-rust-host [rust_plugin.so c_plugin.so]

use rffi_core::{
    get_global_func, register_global_func, Any, Array, Error, Function, Module, Result,
};

// Collected into the function registry when the runtime starts.
rffi_core::register_global!("demo.hypot", |a: f64, b: f64| a.hypot(b));

fn main() -> Result<()> {
    let v = rffi_core::version();
    println!("rffi ABI {}.{}.{}", v.major, v.minor, v.patch);

    let hypot = get_global_func("demo.hypot").expect("registered at start");
    let r = hypot.call(&[Any::from(3.0), Any::from(4.0)])?;
    println!("demo.hypot(3, 4) = {}", r.try_as::<f64>()?);

    // A function registered at run time, with typed arguments and an error path.
    register_global_func(
        "demo.checked_div",
        Function::from_typed(|a: i64, b: i64| -> Result<i64> {
            a.checked_div(b)
                .ok_or_else(|| Error::value_error(format!("cannot divide {a} by {b}")))
        }),
        false,
    )?;
    let div = get_global_func("demo.checked_div").unwrap();
    println!(
        "demo.checked_div(7, 2) = {:?}",
        div.call(&[7i64.into(), 2i64.into()])?
    );
    match div.call(&[7i64.into(), 0i64.into()]) {
        Ok(_) => unreachable!("division by zero must fail"),
        Err(e) => println!(
            "caught {e}\ntraceback (most recent call first):\n{}",
            e.backtrace()
        ),
    }

    // The runtime calls a Rust closure back through testing.apply.
    let square_all = Function::from_typed(|items: Array| -> Result<Array> {
        items
            .iter()
            .map(|x| Ok(Any::from(x.try_as::<i64>()?.pow(2))))
            .collect()
    });
    let apply = get_global_func("testing.apply").unwrap();
    let input = Array::new(vec![1i64.into(), 2i64.into(), 3i64.into()]);
    let out = apply.call(&[square_all.into(), input.into()])?;
    println!(
        "testing.apply(square_all, [1, 2, 3]) = {:?}",
        out.try_as::<Array>()?
    );

    let paths: Vec<String> = std::env::args().skip(1).collect();
    if let [rust_plugin, c_plugin] = paths.as_slice() {
        load_plugins(rust_plugin, c_plugin)?;
    }
    Ok(())
}

fn load_plugins(rust_plugin: &str, c_plugin: &str) -> Result<()> {
    let rust_mod = Module::load(rust_plugin)?;
    let c_mod = Module::load(c_plugin)?;
    println!("loaded {rust_plugin}: {:?}", rust_mod.function_names()?);
    let call = |name: &str, args: &[Any]| get_global_func(name).unwrap().call(args);
    println!(
        "rust_plugin.add(40, 2) = {:?}",
        call("rust_plugin.add", &[40i64.into(), 2i64.into()])?
    );
    println!(
        "c_plugin.mul(6, 7) = {:?}",
        call("c_plugin.mul", &[6i64.into(), 7i64.into()])?
    );
    // The plugin calls back into this program.
    let negate = Function::from_typed(|x: i64| -x);
    let items = Array::new(vec![1i64.into(), 2i64.into()]);
    println!(
        "rust_plugin.map(negate, [1, 2]) = {:?}",
        call("rust_plugin.map", &[negate.into(), items.into()])?
    );
    if let Err(e) = call("rust_plugin.checked_div", &[1i64.into(), 0i64.into()]) {
        println!("caught {e} from the plugin:\n{}", e.backtrace());
    }
    let square = c_mod
        .get_function("square")?
        .expect("exported by the C plugin");
    println!(
        "c_plugin module function square(12) = {:?}",
        square.call(&[12i64.into()])?
    );
    Ok(())
}
