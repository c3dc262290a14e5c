//! The CUDA backend of the rffi kernel layer, through cudarc with dynamic loading: it builds
//! and its tests run on machines without CUDA, and it installs implementations only where the
//! driver is present.
//!
//! Kernels are CUDA C++ compiled with NVRTC at first use, once per device and dtype, for the
//! device's arch, and launched on rffi's current stream for the device
//! (`rffi_core::stream::current_stream`, which the Python binding sets to PyTorch's). Tensors
//! are read and written in place through their device pointers (DLPack's `data + byte_offset`,
//! passed as u64 kernel arguments): memory from other frameworks is never copied, owned or
//! freed. `matmul` goes through cuBLAS. Every cudarc call is guarded: a missing library makes
//! the probe fail with the reason instead of panicking.
//!
//! Dtypes: float32, float64, float16, bfloat16 for every op; int32 and int64 for add, sub, mul.
//!
//! `ops` plans each call (the kernel variant for the shape class, from the SM count and the
//! tuning configs) before launching it; `kernels.explain` shows the plan.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
// DLPack constants keep their C names (`kDLCUDA`).
#![allow(non_upper_case_globals)]

mod blas;
mod driver;
// Implementation modules, hidden from the docs: the API is `backend()` and `probe()`.
#[doc(hidden)]
pub mod ops;
#[doc(hidden)]
pub mod source;

use driver::{guarded, ContextGuard};
use rffi_core::abi::{kDLCUDA, kDLCUDAManaged};
use rffi_core::{DataType, Result};
use rffi_kernels::{
    Availability, Backend, DeviceInfo, Explanation, GuardToken, Implementation, Op, OpCall,
};

pub use rffi_kernels::{FLOATS, INTS};

// The CUDA source of a dtype's module of one family (`elementwise`, `reduce_*`, `softmax`, `norm`,
// `softmax_quads`), for inspection and for compiling it where no GPU is (the kernels' Python tests
// check that every module compiles with NVRTC on CPU-only machines). Without a family: the
// families of the dtype, comma-separated.
rffi_core::register_global_packed!("kernels.cuda_source", |args: &[rffi_core::AnyView<
    '_,
>]|
 -> Result<rffi_core::Any> {
    if !(1..=2).contains(&args.len()) {
        return Err(rffi_core::Error::type_error(format!(
            "kernels.cuda_source expects (dtype[, family]) but {} arguments were given",
            args.len()
        )));
    }
    let dtype: DataType = args[0].try_as()?;
    let family: Option<String> = args.get(1).map(|v| v.try_as()).transpose()?.flatten();
    let dt = source::dt_of(dtype).ok_or_else(|| {
        rffi_core::Error::value_error(format!(
            "kernels.cuda_source: no CUDA module for dtype {dtype}"
        ))
    })?;
    let Some(name) = family else {
        let names: Vec<&str> = source::Family::ALL
            .into_iter()
            .filter(|f| f.serves(&dt))
            .map(source::Family::name)
            .collect();
        return Ok(rffi_core::Any::from(names.join(",")));
    };
    match source::Family::parse(&name).filter(|f| f.serves(&dt)) {
        Some(f) => Ok(rffi_core::Any::from(source::module_source(&dt, f))),
        None => Err(rffi_core::Error::value_error(format!(
            "kernels.cuda_source: no {name} module for dtype {dtype}"
        ))),
    }
});

/// Finds the driver and the devices. Never panics: cudarc's panics on missing libraries are
/// caught and reported as the reason the backend is unavailable.
pub fn probe() -> std::result::Result<Availability, String> {
    if !driver::driver_present() {
        return Err("the CUDA driver library (libcuda.so) was not found".into());
    }
    if !driver::nvrtc_present() {
        return Err(
            "the NVRTC library (libnvrtc.so) was not found; it compiles the kernels".into(),
        );
    }
    let found = guarded("probing", || {
        cudarc::driver::result::init().map_err(|e| driver::err("cuInit", e))?;
        let count = cudarc::driver::result::device::get_count()
            .map_err(|e| driver::err("cuDeviceGetCount", e))?;
        (0..count)
            .map(driver::device_info)
            .collect::<Result<Vec<_>>>()
    })
    .map_err(|e| e.message())?;
    if found.is_empty() {
        return Err("the CUDA driver reports no devices".into());
    }
    let mut unsupported = Vec::new();
    if !driver::cublas_present() {
        unsupported.push((
            Op::Matmul,
            "the cuBLAS library (libcublas.so) was not found".to_owned(),
        ));
    }
    let mut devices = Vec::new();
    for (i, d) in found.iter().enumerate() {
        for t in [kDLCUDA, kDLCUDAManaged] {
            devices.push(DeviceInfo {
                device_type: t,
                index: i as i32,
                arch: Some(d.arch()),
                name: d.name.clone(),
            });
        }
    }
    Ok(Availability {
        detail: format!(
            "{} device(s): {}",
            found.len(),
            found
                .iter()
                .map(|d| format!("{} ({}, {} SMs)", d.name, d.arch(), d.sms))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        devices,
        unsupported,
    })
}

type Kernel = fn(&OpCall<'_>) -> Result<()>;
type Explain = fn(&OpCall<'_>) -> Result<Explanation>;

fn imp(op: Op, dtypes: &[DataType], k: Kernel, explain: Explain) -> Vec<Implementation> {
    [kDLCUDA, kDLCUDAManaged]
        .into_iter()
        .map(|t| {
            Implementation::new(op, t, dtypes, move |c: &OpCall<'_>| {
                guarded(c.op.name(), || k(c))
            })
            .with_explain(move |c: &OpCall<'_>| guarded(c.op.name(), || explain(c)))
        })
        .collect()
}

fn implementations() -> Vec<Implementation> {
    use ops::{elementwise as ew, norm, reduce, softmax};
    let all: Vec<DataType> = FLOATS.iter().chain(&INTS).copied().collect();
    let mut v = Vec::new();
    for op in [Op::Add, Op::Sub, Op::Mul] {
        v.extend(imp(op, &all, ew::elementwise, ew::explain));
    }
    for op in [Op::Div, Op::Relu, Op::Gelu, Op::Exp] {
        v.extend(imp(op, &FLOATS, ew::elementwise, ew::explain));
    }
    for op in [Op::Sum, Op::Mean, Op::Max, Op::Min, Op::Argmax] {
        v.extend(imp(op, &FLOATS, reduce::reduce, reduce::explain));
    }
    v.extend(imp(
        Op::Softmax,
        &FLOATS,
        softmax::softmax,
        softmax::explain,
    ));
    for op in [Op::LayerNorm, Op::RmsNorm] {
        v.extend(imp(op, &FLOATS, norm::norm, norm::explain));
    }
    v.extend(imp(Op::Matmul, &FLOATS, blas::matmul, blas::explain));
    v
}

/// The CUDA backend, to pass to `rffi_kernels::install` or a `Registry`. Building it touches no
/// library; the probe runs at the first call on a CUDA tensor (or `describe()`).
pub fn backend() -> Backend {
    let all: Vec<DataType> = FLOATS.iter().chain(&INTS).copied().collect();
    Backend::new("cuda", &[kDLCUDA, kDLCUDAManaged])
        .priority(100)
        .dtypes(&all)
        .tune_file("default.json", include_str!("../../tune/cuda/default.json"))
        .tune_file("sm_90.json", include_str!("../../tune/cuda/sm_90.json"))
        .probe(probe)
        .implementations(|_| Ok(implementations()))
        .device_guard(|device| {
            let guard = ContextGuard::enter(device)?;
            // The common case restores nothing: a token of no size, so no allocation.
            Ok(if guard.switched() {
                Box::new(guard) as GuardToken
            } else {
                Box::new(())
            })
        })
        .allocator(|shape, dtype, device, _stream| {
            let bytes = shape.iter().product::<i64>().max(0) as usize * dtype.bytes_per_element();
            let (ptr, release) = driver::alloc_output(bytes, device)?;
            // SAFETY: a fresh device buffer of `bytes` bytes, freed by `release` only.
            unsafe {
                rffi_kernels::alloc::wrap_allocation(
                    ptr as usize as *mut std::ffi::c_void,
                    shape,
                    dtype,
                    device,
                    release,
                )
            }
        })
}
