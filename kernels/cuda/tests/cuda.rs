//! The CUDA backend. Without a driver (CI, this project's development machines) the backend
//! must report why it is unavailable and leave CPU dispatch untouched; the GPU tests then skip,
//! saying why. With a GPU they check every op and dtype against the CPU backend, on a
//! non-default stream, with strided operands, in place, and in the allocating form.

use cudarc::driver::{result, sys};
use half::{bf16, f16};
use rffi_core::abi::{kDLCUDA, DLTensor};
use rffi_core::stream::use_stream;
use rffi_core::{Any, AnyView, DataType, Device, Tensor};
use rffi_kernels::{Op, Registry};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| {
        let r = Registry::with_env(|_| None);
        r.register_backend(rffi_kernels_cpu::backend()).unwrap();
        r.register_backend(rffi_kernels_cuda::backend()).unwrap();
        r
    })
}

/// Why the GPU tests cannot run here, if they cannot.
fn no_gpu() -> Option<String> {
    rffi_kernels_cuda::probe().err()
}

macro_rules! require_gpu {
    () => {
        if let Some(why) = no_gpu() {
            eprintln!("skipping: no usable CUDA device ({why})");
            return;
        }
    };
}

#[test]
fn without_a_driver_the_backend_says_why_and_cpu_dispatch_is_unaffected() {
    let reg = registry();
    let a = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let r = reg
        .call(Op::Add, &[Any::from(&a).view(), Any::from(&a).view()])
        .unwrap();
    assert_eq!(
        r.try_as::<Tensor>().unwrap().to_vec::<f32>().unwrap(),
        [2.0, 4.0]
    );
    let d = reg.describe();
    let cuda = d["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "cuda")
        .unwrap();
    match no_gpu() {
        Some(why) => {
            eprintln!("no CUDA here: {why}");
            assert_eq!(cuda["available"], false);
            assert_eq!(cuda["reason"].as_str().unwrap(), why);
            // Its implementations were never installed.
            assert!(cuda["implementations"]
                .as_str()
                .unwrap()
                .starts_with("unavailable"));
            // A CUDA tensor gets an error naming the reason, not a crash.
            let mut shape = [2i64];
            let dl = DLTensor {
                data: 0x1000 as *mut c_void,
                device: Device::cuda(0).raw(),
                ndim: 1,
                dtype: DataType::float(32).raw(),
                shape: shape.as_mut_ptr(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            };
            // SAFETY: a valid DLTensor; its data is never read (no backend can run it).
            let t = unsafe { Tensor::from_dltensor_borrowed(NonNull::from(&dl)) }.unwrap();
            let e = reg.call(Op::Exp, &[Any::from(&t).view()]).unwrap_err();
            assert_eq!(e.kind(), "RuntimeError");
            assert!(
                e.message().contains("no kernels backend serves cuda"),
                "{}",
                e.message()
            );
            assert!(e.message().contains(&why), "{}", e.message());
        }
        None => {
            assert_eq!(cuda["available"], true);
            assert!(cuda["devices"][0]["arch"]
                .as_str()
                .unwrap()
                .starts_with("sm_"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GPU tests

/// The test process's view of device 0: its primary context and a non-default stream.
struct Gpu {
    stream: sys::CUstream,
}

// SAFETY: the stream handle is process-wide.
unsafe impl Send for Gpu {}
// SAFETY: as above.
unsafe impl Sync for Gpu {}

/// GPU tests run one at a time: they share the device and its stream.
static SERIAL: Mutex<()> = Mutex::new(());

fn gpu() -> &'static Gpu {
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

fn bind() {
    let dev = result::device::get(0).unwrap();
    // SAFETY: retaining again returns the same primary context.
    let ctx = unsafe { result::primary_ctx::retain(dev) }.unwrap();
    // SAFETY: a retained context.
    unsafe { result::ctx::set_current(ctx) }.unwrap();
}

/// A device buffer holding a copy of a CPU tensor's bytes, viewed with the same (or given)
/// shape and strides.
struct DevTensor {
    ptr: u64,
    tensor: Tensor,
    _shape: Vec<i64>,
}

impl Drop for DevTensor {
    fn drop(&mut self) {
        // SAFETY: allocated by `upload`; the stream was synchronized by the tests before.
        unsafe { result::free_sync(self.ptr) }.unwrap();
    }
}

fn upload_view(host: &Tensor, shape: &[i64], strides: &[i64], offset_elems: usize) -> DevTensor {
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

fn upload(host: &Tensor) -> DevTensor {
    let strides = host.strides().to_vec();
    upload_view(host, host.shape(), &strides, 0)
}

/// The elements of a device tensor (any strides) as a host tensor of the same dtype and shape.
fn download(t: &Tensor) -> Tensor {
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

fn as_f64(t: &Tensor) -> Vec<f64> {
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

fn random(shape: &[i64], dtype: DataType, seed: u64, lo: f64, hi: f64) -> Tensor {
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

fn tol(d: DataType) -> f64 {
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
fn assert_close(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (as_f64(got), as_f64(want));
    let t = tol(want.dtype());
    let scale = w.iter().fold(1e-6f64, |m, v| m.max(v.abs()));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || (a - b).abs() <= t * (b.abs() + 1e-2 * scale);
        assert!(
            ok,
            "{what} [{}]: element {i}: gpu {a}, cpu {b}",
            want.dtype()
        );
    }
}

fn call(op: Op, args: &[Any]) -> rffi_core::Result<Any> {
    let v: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
    let _s = use_stream(Device::cuda(0), gpu().stream.cast());
    registry().call(op, &v)
}

/// Runs `op` on CPU tensors and on their device copies (allocating form), and compares.
fn check(op: Op, host: &[&Tensor], extra: &[Any], what: &str) {
    let dev: Vec<DevTensor> = host.iter().map(|t| upload(t)).collect();
    let mut cpu_args: Vec<Any> = host.iter().map(|t| Any::from(*t)).collect();
    cpu_args.extend(extra.iter().cloned());
    let mut gpu_args: Vec<Any> = dev.iter().map(|d| Any::from(&d.tensor)).collect();
    gpu_args.extend(extra.iter().cloned());
    let want = registry()
        .call(op, &cpu_args.iter().map(Any::view).collect::<Vec<_>>())
        .unwrap();
    let got = call(op, &gpu_args).unwrap().try_as::<Tensor>().unwrap();
    assert_eq!(got.device(), Device::cuda(0));
    assert_close(&download(&got), &want.try_as::<Tensor>().unwrap(), what);
}

const ALL: [DataType; 6] = [
    DataType::float(32),
    DataType::float(64),
    DataType::float(16),
    DataType::bfloat16(),
    DataType::int(32),
    DataType::int(64),
];

#[test]
fn every_op_and_dtype_matches_the_cpu() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    for dt in ALL {
        let is_float = dt.code() != rffi_core::abi::kDLInt;
        // An odd size, so vector kernels have a tail.
        let shape = [37, 129];
        let a = random(&shape, dt, 1, -4.0, 4.0);
        let b = random(&shape, dt, 2, 0.5, 3.0);
        for op in [Op::Add, Op::Sub, Op::Mul] {
            check(op, &[&a, &b], &[], &format!("{op}"));
            check(op, &[&a], &[Any::from(3i64)], &format!("{op} scalar"));
        }
        if !is_float {
            continue;
        }
        check(Op::Div, &[&a, &b], &[], "div");
        check(Op::Div, &[&a], &[Any::from(0.25f64)], "div scalar");
        for op in [Op::Relu, Op::Gelu, Op::Exp, Op::Softmax] {
            check(op, &[&a], &[], &format!("{op}"));
        }
        check(Op::Sum, &[&a], &[], "sum all");
        check(Op::Sum, &[&a], &[Any::from(-1i64)], "sum last");
        for (rows, cols) in [(3, 5000), (1000, 3), (2, 8192 + 5)] {
            let x = random(&[rows, cols], dt, 3, -8.0, 8.0);
            check(Op::Softmax, &[&x], &[], &format!("softmax {rows}x{cols}"));
            check(
                Op::Sum,
                &[&x],
                &[Any::from(-1i64)],
                &format!("sum last {rows}x{cols}"),
            );
        }
        let m = random(&[33, 65], dt, 4, -1.0, 1.0);
        let n = random(&[65, 17], dt, 5, -1.0, 1.0);
        check(Op::Matmul, &[&m, &n], &[], "matmul 2-D");
        let mb = random(&[3, 2, 33, 65], dt, 6, -1.0, 1.0);
        let nb = random(&[3, 2, 65, 17], dt, 7, -1.0, 1.0);
        check(Op::Matmul, &[&mb, &nb], &[], "matmul batched");
        check(Op::Matmul, &[&mb, &n], &[], "matmul shared b");
    }
}

#[test]
fn strided_operands_in_place_and_destination_passing() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    for dt in [
        DataType::float(32),
        DataType::bfloat16(),
        DataType::float(16),
    ] {
        // A transposed view of a [40, 24] buffer, and a column-sliced one with an offset.
        let base = random(&[40, 24], dt, 11, -3.0, 3.0);
        let dev = upload(&base);
        let t_host = base.as_strided(&[24, 40], &[1, 24], 0).unwrap();
        let t_dev = upload_view(&base, &[24, 40], &[1, 24], 0);
        let s_host = base
            .as_strided(&[40, 10], &[24, 2], 3 * dt.bytes_per_element() as u64)
            .unwrap();
        let s_dev = upload_view(&base, &[40, 10], &[24, 2], 3);
        for (h, d, what) in [(&t_host, &t_dev, "transposed"), (&s_host, &s_dev, "sliced")] {
            for op in [Op::Exp, Op::Softmax, Op::Relu] {
                let want = registry()
                    .call(op, &[Any::from(h).view()])
                    .unwrap()
                    .try_as::<Tensor>()
                    .unwrap();
                let got = call(op, &[Any::from(&d.tensor)])
                    .unwrap()
                    .try_as::<Tensor>()
                    .unwrap();
                assert_close(&download(&got), &want, &format!("{op} {what}"));
            }
            let want = registry()
                .call(Op::Sum, &[Any::from(h).view(), Any::from(-1i64).view()])
                .unwrap()
                .try_as::<Tensor>()
                .unwrap();
            let got = call(Op::Sum, &[Any::from(&d.tensor), Any::from(-1i64)])
                .unwrap()
                .try_as::<Tensor>()
                .unwrap();
            assert_close(&download(&got), &want, &format!("sum {what}"));
            let want = registry()
                .call(Op::Mul, &[Any::from(h).view(), Any::from(h).view()])
                .unwrap()
                .try_as::<Tensor>()
                .unwrap();
            let got = call(Op::Mul, &[Any::from(&d.tensor), Any::from(&d.tensor)])
                .unwrap()
                .try_as::<Tensor>()
                .unwrap();
            assert_close(&download(&got), &want, &format!("mul {what}"));
        }
        // matmul with a transposed operand (no copy) and a sliced one (copied to scratch).
        let want = registry()
            .call(
                Op::Matmul,
                &[Any::from(&t_host).view(), Any::from(&s_host).view()],
            )
            .unwrap()
            .try_as::<Tensor>()
            .unwrap();
        let got = call(
            Op::Matmul,
            &[Any::from(&t_dev.tensor), Any::from(&s_dev.tensor)],
        )
        .unwrap()
        .try_as::<Tensor>()
        .unwrap();
        assert_close(&download(&got), &want, "matmul strided");
        // In place: out is a.
        let want = registry()
            .call(Op::Add, &[Any::from(&base).view(), Any::from(&base).view()])
            .unwrap()
            .try_as::<Tensor>()
            .unwrap();
        assert!(call(
            Op::Add,
            &[
                Any::from(&dev.tensor),
                Any::from(&dev.tensor),
                Any::from(&dev.tensor)
            ]
        )
        .unwrap()
        .is_none());
        assert_close(&download(&dev.tensor), &want, "add in place");
        // Into a transposed destination.
        let out = upload(&random(&[24, 40], dt, 12, 0.0, 1.0));
        let out_t = upload_view(&random(&[24, 40], dt, 12, 0.0, 1.0), &[40, 24], &[1, 40], 0);
        let want = registry()
            .call(Op::Exp, &[Any::from(&base).view()])
            .unwrap()
            .try_as::<Tensor>()
            .unwrap();
        let fresh = upload(&base);
        call(
            Op::Exp,
            &[Any::from(&fresh.tensor), Any::from(&out_t.tensor)],
        )
        .unwrap();
        assert_close(&download(&out_t.tensor), &want, "exp into transposed out");
        drop(out);
    }
}

#[test]
fn zero_size_tensors_and_errors_on_the_gpu() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    let e = upload(&Tensor::alloc_cpu(&[0, 4], DataType::float(32)).unwrap());
    let r = call(Op::Add, &[Any::from(&e.tensor), Any::from(&e.tensor)])
        .unwrap()
        .try_as::<Tensor>()
        .unwrap();
    assert_eq!(r.shape(), [0, 4]);
    let s = call(Op::Sum, &[Any::from(&e.tensor)])
        .unwrap()
        .try_as::<Tensor>()
        .unwrap();
    assert_eq!(as_f64(&download(&s)), [0.0]);
    let k0a = upload(&Tensor::alloc_cpu(&[3, 0], DataType::float(32)).unwrap());
    let k0b = upload(&Tensor::alloc_cpu(&[0, 2], DataType::float(32)).unwrap());
    let z = call(
        Op::Matmul,
        &[Any::from(&k0a.tensor), Any::from(&k0b.tensor)],
    )
    .unwrap()
    .try_as::<Tensor>()
    .unwrap();
    assert_eq!(as_f64(&download(&z)), [0.0; 6]);
    // int8 is not supported on either backend: a TypeError naming the dtypes.
    let i8t = upload(&Tensor::alloc_cpu(&[4], DataType::int(8)).unwrap());
    let err = call(Op::Add, &[Any::from(&i8t.tensor), Any::from(&i8t.tensor)]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(
        err.message().contains("cuda supports float32"),
        "{}",
        err.message()
    );
    // A CPU tensor with a CUDA one.
    let c = Tensor::alloc_cpu(&[0, 4], DataType::float(32)).unwrap();
    let err = call(Op::Add, &[Any::from(&c), Any::from(&e.tensor)]).unwrap_err();
    assert!(
        err.message()
            .contains("is on cpu:0 but b (argument #1) is on cuda:0"),
        "{}",
        err.message()
    );
}

#[test]
fn the_device_guard_restores_the_callers_context() {
    require_gpu!();
    let _l = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu();
    let a = upload(&random(&[8], DataType::float(32), 9, 0.0, 1.0));
    // SAFETY: clearing the current context; the guard must bind the device's and restore this.
    unsafe { result::ctx::set_current(std::ptr::null_mut()) }.unwrap();
    call(Op::Exp, &[Any::from(&a.tensor)]).unwrap();
    assert!(
        result::ctx::get_current().unwrap().is_none(),
        "the guard restored no context"
    );
    bind();
    let d = registry().describe();
    assert_eq!(d["selection"]["cuda"]["chosen"], "cuda");
    let _ = kDLCUDA;
}
