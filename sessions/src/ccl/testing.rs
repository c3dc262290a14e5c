//! Test helpers every worker offers (`testing.*`, as the runtime's own test helpers): fill a CPU
//! tensor with values that depend on the worker's rank, and read one back as numbers (tensors
//! cannot be fetched, lists can).

use half::{bf16, f16};
use rffi_core::{register_global, Any, Array, Error, Result, Tensor};

/// The value `testing.ccl_fill` writes at element `i` of rank `rank`: 1 to 4, exact in every
/// collective dtype, so that sums and products of up to 4 ranks stay exact.
pub fn fill_value(rank: usize, i: usize, seed: i64) -> f64 {
    1.0 + ((rank as i64 + i as i64 + seed).rem_euclid(4)) as f64
}

fn rank() -> Result<usize> {
    crate::worker::current()
        .map(|(r, _)| r)
        .ok_or_else(|| Error::runtime_error("testing.ccl_*: not on a session worker"))
}

fn check(t: &Tensor, what: &str) -> Result<()> {
    if t.device() != rffi_core::Device::cpu() || !t.is_contiguous() {
        return Err(Error::value_error(format!(
            "{what}: expected a contiguous CPU tensor"
        )));
    }
    super::check_dtype(t.dtype(), what)
}

register_global!("testing.ccl_fill", |t: Tensor, seed: i64| -> Result<()> {
    check(&t, "testing.ccl_fill")?;
    let r = rank()?;
    let n = t.numel() as usize;
    let p = t
        .data_ptr_mut()?
        .cast::<u8>()
        .wrapping_add(t.byte_offset() as usize);
    let dt = t.dtype();
    for i in 0..n {
        let v = fill_value(r, i, seed);
        // SAFETY: element `i < n` of a contiguous, writable CPU tensor of this dtype.
        unsafe {
            match (dt.code(), dt.bits()) {
                (2, 32) => p.cast::<f32>().add(i).write_unaligned(v as f32),
                (2, 16) => p.cast::<f16>().add(i).write_unaligned(f16::from_f64(v)),
                (4, 16) => p.cast::<bf16>().add(i).write_unaligned(bf16::from_f64(v)),
                (0, 32) => p.cast::<i32>().add(i).write_unaligned(v as i32),
                (0, 64) => p.cast::<i64>().add(i).write_unaligned(v as i64),
                _ => p.add(i).write(v as u8),
            }
        }
    }
    Ok(())
});

register_global!("testing.ccl_values", |t: Tensor| -> Result<Array> {
    check(&t, "testing.ccl_values")?;
    let n = t.numel() as usize;
    let p = t.element_ptr().cast::<u8>();
    let dt = t.dtype();
    let values = (0..n)
        .map(|i| {
            // SAFETY: element `i < n` of a contiguous CPU tensor of this dtype.
            let v = unsafe {
                match (dt.code(), dt.bits()) {
                    (2, 32) => p.cast::<f32>().add(i).read_unaligned() as f64,
                    (2, 16) => p.cast::<f16>().add(i).read_unaligned().to_f64(),
                    (4, 16) => p.cast::<bf16>().add(i).read_unaligned().to_f64(),
                    (0, 32) => p.cast::<i32>().add(i).read_unaligned() as f64,
                    (0, 64) => p.cast::<i64>().add(i).read_unaligned() as f64,
                    _ => p.add(i).read() as f64,
                }
            };
            Any::from(v)
        })
        .collect();
    Ok(Array::new(values))
});
