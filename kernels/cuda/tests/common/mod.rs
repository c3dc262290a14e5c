//! Helpers of the CUDA tests: the registry (CPU + CUDA), device buffers from host tensors and
//! back, comparisons against the CPU backend on the test's own non-default stream.
#![allow(dead_code)]

use cudarc::driver::{result, sys};
use half::{bf16, f16};
use rffi_core::abi::DLTensor;
use rffi_core::stream::use_stream;
use rffi_core::{Any, AnyView, DataType, Device, Tensor};
use rffi_kernels::{Op, Registry};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

pub fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| {
        let r = Registry::with_env(|_| None);
        r.register_backend(rffi_kernels_cpu::backend()).unwrap();
        r.register_backend(rffi_kernels_cuda::backend()).unwrap();
        r
    })
}

/// Why the GPU tests cannot run here, if they cannot.
pub fn no_gpu() -> Option<String> {
    rffi_kernels_cuda::probe().err()
}

#[macro_export]
macro_rules! require_gpu {
    () => {
        if let Some(why) = no_gpu() {
            eprintln!("skipping: no usable CUDA device ({why})");
            return;
        }
    };
}

// ---------------------------------------------------------------------------------------------
// GPU tests

/// The test process's view of device 0: its primary context and a non-default stream.
pub struct Gpu {
    pub stream: sys::CUstream,
}

// SAFETY: the stream handle is process-wide.
unsafe impl Send for Gpu {}
// SAFETY: as above.
unsafe impl Sync for Gpu {}

/// GPU tests run one at a time: they share the device and its stream.
pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn gpu() -> &'static Gpu {
    static G: OnceLock<Gpu> = OnceLock::new();
    G.get_or_init(|| {
        result::init().unwrap();
        let dev = result::device::get(0).unwrap();
        // SAFETY: device 0 exists (the probe passed).
        let ctx = unsafe { result::primary_ctx::retain(dev) }.unwrap();
        // SAFETY: a retained context.
        unsafe { result::ctx::set_current(ctx) }.unwrap();
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking).unwrap();
        Gpu { stream }
    })
}

pub fn bind() {
    let dev = result::device::get(0).unwrap();
    // SAFETY: retaining again returns the same primary context.
    let ctx = unsafe { result::primary_ctx::retain(dev) }.unwrap();
    // SAFETY: a retained context.
    unsafe { result::ctx::set_current(ctx) }.unwrap();
}

/// A device buffer holding a copy of a CPU tensor's bytes, viewed with the same (or given)
/// shape and strides.
pub struct DevTensor {
    pub ptr: u64,
    pub tensor: Tensor,
    _shape: Vec<i64>,
}

impl Drop for DevTensor {
    fn drop(&mut self) {
        // SAFETY: allocated by `upload`; the stream was synchronized by the tests before.
        unsafe { result::free_sync(self.ptr) }.unwrap();
    }
}

pub fn upload_view(
    host: &Tensor,
    shape: &[i64],
    strides: &[i64],
    offset_elems: usize,
) -> DevTensor {
    bind();
    let bytes = host.nbytes().max(1);
    // SAFETY: a fresh allocation in the current (primary) context.
    let ptr = unsafe { result::malloc_sync(bytes) }.unwrap();
    // SAFETY: the host tensor's compact bytes.
    let src = unsafe { std::slice::from_raw_parts(host.element_ptr().cast::<u8>(), host.nbytes()) };
    // SAFETY: `bytes` bytes at `ptr`.
    unsafe { result::memcpy_htod_sync(ptr, src) }.unwrap();
    let mut shape = shape.to_vec();
    let mut strides = strides.to_vec();
    let dl = DLTensor {
        data: ptr as usize as *mut c_void,
        device: Device::cuda(0).raw(),
        ndim: shape.len() as i32,
        dtype: host.dtype().raw(),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: (offset_elems * host.dtype().bytes_per_element()) as u64,
    };
    // SAFETY: a valid DLTensor over the buffer, which outlives the tensor's uses.
    let tensor = unsafe { Tensor::from_dltensor_borrowed(NonNull::from(&dl)) }.unwrap();
    DevTensor {
        ptr,
        tensor,
        _shape: shape,
    }
}

pub fn upload(host: &Tensor) -> DevTensor {
    let strides = host.strides().to_vec();
    upload_view(host, host.shape(), &strides, 0)
}

/// The elements of a device tensor (any strides) as a host tensor of the same dtype and shape.
pub fn download(t: &Tensor) -> Tensor {
    // SAFETY: the test's stream.
    unsafe { result::stream::synchronize(gpu().stream) }.unwrap();
    let esize = t.dtype().bytes_per_element();
    // The span the tensor addresses, from its first element.
    let span: i64 = t
        .shape()
        .iter()
        .zip(t.strides())
        .map(|(&d, &s)| (d - 1).max(0) * s)
        .sum::<i64>()
        + 1;
    let mut raw = vec![0u8; span as usize * esize];
    if t.numel() > 0 {
        // SAFETY: the span is inside the tensor's buffer.
        unsafe { result::memcpy_dtoh_sync(&mut raw, t.element_ptr() as usize as u64) }.unwrap();
    }
    let out = Tensor::alloc_cpu(t.shape(), t.dtype()).unwrap();
    let n = t.numel() as usize;
    for flat in 0..n {
        let mut rem = flat;
        let mut off = 0usize;
        for d in (0..t.ndim()).rev() {
            let i = rem % t.shape()[d] as usize;
            rem /= t.shape()[d] as usize;
            off += i * t.strides()[d] as usize;
        }
        // SAFETY: element `flat` of the compact output, and bytes inside `raw`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                raw.as_ptr().add(off * esize),
                out.element_ptr().cast::<u8>().add(flat * esize),
                esize,
            )
        };
    }
    out
}

pub fn as_f64(t: &Tensor) -> Vec<f64> {
    let n = t.numel() as usize;
    let p = t.element_ptr();
    let d = t.dtype();
    // SAFETY: a compact host tensor of `n` elements of dtype `d`.
    unsafe {
        (0..n)
            .map(|i| {
                if d == DataType::float(32) {
                    *p.cast::<f32>().add(i) as f64
                } else if d == DataType::float(64) {
                    *p.cast::<f64>().add(i)
                } else if d == DataType::float(16) {
                    (*p.cast::<f16>().add(i)).to_f64()
                } else if d == DataType::bfloat16() {
                    (*p.cast::<bf16>().add(i)).to_f64()
                } else if d == DataType::int(32) {
                    *p.cast::<i32>().add(i) as f64
                } else {
                    *p.cast::<i64>().add(i) as f64
                }
            })
            .collect()
    }
}

pub fn random(shape: &[i64], dtype: DataType, seed: u64, lo: f64, hi: f64) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
    };
    let t = Tensor::alloc_cpu(shape, dtype).unwrap();
    let p = t.element_ptr();
    for i in 0..n {
        let v = next();
        // SAFETY: element i of a compact host tensor of this dtype.
        unsafe {
            if dtype == DataType::float(32) {
                *p.cast::<f32>().add(i) = v as f32;
            } else if dtype == DataType::float(64) {
                *p.cast::<f64>().add(i) = v;
            } else if dtype == DataType::float(16) {
                *p.cast::<f16>().add(i) = f16::from_f64(v);
            } else if dtype == DataType::bfloat16() {
                *p.cast::<bf16>().add(i) = bf16::from_f64(v);
            } else if dtype == DataType::int(32) {
                *p.cast::<i32>().add(i) = v as i32;
            } else {
                *p.cast::<i64>().add(i) = v as i64;
            }
        }
    }
    t
}

pub fn tol(d: DataType) -> f64 {
    if d == DataType::float(64) {
        1e-10
    } else if d == DataType::float(32) {
        2e-5
    } else if d == DataType::float(16) {
        2e-3
    } else if d == DataType::bfloat16() {
        1.6e-2
    } else {
        0.0
    }
}

#[track_caller]
/// One unit in the last place of `v` in a 16-bit dtype (0 for the others): two results rounded
/// from float32 values a little apart may land on neighbouring 16-bit values, which near the
/// subnormal range of float16 is more than any relative tolerance.
pub fn ulp16(v: f64, d: DataType) -> f64 {
    let (mant, min_exp) = if d == DataType::float(16) {
        (10, -14)
    } else if d == DataType::bfloat16() {
        (7, -126)
    } else {
        return 0.0;
    };
    let e = if v == 0.0 {
        min_exp
    } else {
        (v.abs().log2().floor() as i32).max(min_exp)
    };
    2f64.powi(e - mant)
}

pub fn assert_close(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (as_f64(got), as_f64(want));
    let t = tol(want.dtype());
    let scale = w.iter().fold(1e-6f64, |m, v| m.max(v.abs()));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let slack = (t * (b.abs() + 1e-2 * scale)).max(ulp16(*b, want.dtype()));
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= slack;
        assert!(
            ok,
            "{what} [{}]: element {i}: gpu {a}, cpu {b}",
            want.dtype()
        );
    }
}

pub fn call(op: Op, args: &[Any]) -> rffi_core::Result<Any> {
    let v: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
    let _s = use_stream(Device::cuda(0), gpu().stream.cast());
    registry().call(op, &v)
}

/// Runs `op` on CPU tensors and on their device copies (allocating form), and compares.
pub fn check(op: Op, host: &[&Tensor], extra: &[Any], what: &str) {
    check_after(op, &[], host, extra, what)
}

/// `check` with `lead` (numbers) before the tensors: `sub(3, x)`.
pub fn check_after(op: Op, lead: &[Any], host: &[&Tensor], extra: &[Any], what: &str) {
    let dev: Vec<DevTensor> = host.iter().map(|t| upload(t)).collect();
    let cpu_args: Vec<Any> = lead
        .iter()
        .cloned()
        .chain(host.iter().map(|t| Any::from(*t)))
        .chain(extra.iter().cloned())
        .collect();
    let gpu_args: Vec<Any> = lead
        .iter()
        .cloned()
        .chain(dev.iter().map(|d| Any::from(&d.tensor)))
        .chain(extra.iter().cloned())
        .collect();
    let want = registry()
        .call(op, &cpu_args.iter().map(Any::view).collect::<Vec<_>>())
        .unwrap();
    let got = call(op, &gpu_args).unwrap().try_as::<Tensor>().unwrap();
    assert_eq!(got.device(), Device::cuda(0));
    assert_close(&download(&got), &want.try_as::<Tensor>().unwrap(), what);
}
