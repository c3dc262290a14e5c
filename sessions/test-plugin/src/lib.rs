//! A plugin the session tests load on every worker: functions that use a worker's own values,
//! fail, or panic.

use rffi_core::{register_global, Error, Result, Tensor};

register_global!("session_test.add", |a: i64, b: i64| a + b);

// Multiplies a float32 tensor in place; returns it (so results chain as DRefs).
register_global!("session_test.scale", |t: Tensor,
                                        f: f64|
 -> Result<Tensor> {
    // SAFETY: the tensor is not aliased by another slice during this call.
    let data = unsafe { t.as_mut_slice::<f32>()? };
    data.iter_mut().for_each(|x| *x *= f as f32);
    Ok(t)
});

register_global!("session_test.sum", |t: Tensor| -> Result<f64> {
    Ok(t.to_vec::<f32>()?.iter().map(|x| *x as f64).sum())
});

register_global!("session_test.fail", |msg: String| -> Result<()> {
    Err(Error::value_error(msg))
});

register_global!("session_test.panic", |msg: String| -> Result<()> {
    panic!("{msg}")
});

rffi_core::export_plugin!();
