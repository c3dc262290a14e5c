//! A Rust program using the rffi runtime: declare functions at compile time and at run time, call
//! them by name, pass a callback, and turn errors into tracebacks.

use rffi_core::{get_global_func, register_global_func, Any, Array, Error, Function, Result};

// Collected into the registry when the runtime starts.
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
    Ok(())
}
