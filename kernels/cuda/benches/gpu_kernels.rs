//! GPU kernels against the device's own ceilings, timed with CUDA events on a non-default
//! stream (`cargo bench -p rffi-kernels-cuda --bench gpu_kernels`; skips without a GPU):
//! `add` on 256 MiB float32 against a device-to-device copy of the same size, `softmax` over
//! the last dim of 65536 x 4096 in float32/float16/bfloat16 as effective bandwidth, and bf16
//! `matmul` 8192^3. The PyTorch comparisons are in `kernels/benches/bench_kernels.py`.

use cudarc::driver::{result, sys};
use rffi_core::abi::DLTensor;
use rffi_core::stream::use_stream;
use rffi_core::{Any, AnyView, DataType, Device, Tensor};
use rffi_kernels::{Op, Registry};
use std::ffi::c_void;
use std::ptr::NonNull;

fn dev_tensor(ptr: u64, shape: &[i64], dtype: DataType) -> Tensor {
    let mut shape = shape.to_vec();
    let dl = DLTensor {
        data: ptr as usize as *mut c_void,
        device: Device::cuda(0).raw(),
        ndim: shape.len() as i32,
        dtype: dtype.raw(),
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    // SAFETY: a valid DLTensor over a live device buffer.
    unsafe { Tensor::from_dltensor_borrowed(NonNull::from(&dl)) }.unwrap()
}

/// Median milliseconds of `f` over `reps` runs after 3 warm-ups, timed by events on `stream`.
fn time(stream: sys::CUstream, reps: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    let mut t = Vec::new();
    for _ in 0..reps {
        let (a, b) = (
            result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).unwrap(),
            result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).unwrap(),
        );
        // SAFETY: events and a stream of the current context.
        unsafe {
            result::event::record(a, stream).unwrap();
            f();
            result::event::record(b, stream).unwrap();
            result::event::synchronize(b).unwrap();
            t.push(result::event::elapsed(a, b).unwrap() as f64);
            result::event::destroy(a).unwrap();
            result::event::destroy(b).unwrap();
        }
    }
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn main() {
    if let Err(why) = rffi_kernels_cuda::probe() {
        println!("skipping the GPU benchmarks: {why}");
        return;
    }
    let reg = Registry::new();
    reg.register_backend(rffi_kernels_cpu::backend()).unwrap();
    reg.register_backend(rffi_kernels_cuda::backend()).unwrap();
    result::init().unwrap();
    let dev = result::device::get(0).unwrap();
    // SAFETY: device 0 exists; its primary context stays retained.
    let ctx = unsafe { result::primary_ctx::retain(dev) }.unwrap();
    // SAFETY: a retained context.
    unsafe { result::ctx::set_current(ctx) }.unwrap();
    let stream = result::stream::create(result::stream::StreamKind::NonBlocking).unwrap();
    let _s = use_stream(Device::cuda(0), stream.cast());
    let alloc = |bytes: usize| {
        // SAFETY: plain device allocations, freed at exit.
        let p = unsafe { result::malloc_sync(bytes) }.unwrap();
        // SAFETY: as above.
        unsafe { result::memset_d8_sync(p, 0, bytes) }.unwrap();
        p
    };
    let call = |op: Op, args: &[Any]| {
        let v: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
        reg.call(op, &v).unwrap();
    };
    println!("{}", reg.describe()["backends"][0]["detail"]);
    println!("| kernel | median ms | effective GB/s or TFLOP/s | reference | ratio |");
    println!("|---|---|---|---|---|");

    // add vs copy, 256 MiB float32 operands.
    let n: i64 = 64 << 20;
    let bytes = n as usize * 4;
    let (pa, pb, po) = (alloc(bytes), alloc(bytes), alloc(bytes));
    let (a, b, o) = (
        dev_tensor(pa, &[n], DataType::float(32)),
        dev_tensor(pb, &[n], DataType::float(32)),
        dev_tensor(po, &[n], DataType::float(32)),
    );
    let copy_ms = time(stream, 20, || {
        // SAFETY: two live buffers of `bytes` bytes.
        unsafe { result::memcpy_dtod_async(po, pa, bytes, stream) }.unwrap();
    });
    let copy_bw = 2.0 * bytes as f64 / copy_ms / 1e6;
    let add_ms = time(stream, 20, || {
        call(Op::Add, &[Any::from(&a), Any::from(&b), Any::from(&o)])
    });
    let add_bw = 3.0 * bytes as f64 / add_ms / 1e6;
    println!(
        "| add f32 256 MiB | {add_ms:.3} | {add_bw:.0} GB/s | copy {copy_bw:.0} GB/s ({copy_ms:.3} ms) | {:.2} |",
        add_bw / copy_bw
    );

    // softmax over the last dim of 65536 x 4096.
    let (rows, cols) = (65536i64, 4096i64);
    for dt in [
        DataType::float(32),
        DataType::float(16),
        DataType::bfloat16(),
    ] {
        let bytes = (rows * cols) as usize * dt.bytes_per_element();
        let (px, py) = (alloc(bytes), alloc(bytes));
        let (x, y) = (
            dev_tensor(px, &[rows, cols], dt),
            dev_tensor(py, &[rows, cols], dt),
        );
        let ms = time(stream, 10, || {
            call(
                Op::Softmax,
                &[Any::from(&x), Any::from(-1i64), Any::from(&y)],
            )
        });
        let bw = 2.0 * bytes as f64 / ms / 1e6;
        println!(
            "| softmax {dt} 65536x4096 | {ms:.3} | {bw:.0} GB/s | copy {copy_bw:.0} GB/s | {:.2} |",
            bw / copy_bw
        );
        // SAFETY: freeing the buffers allocated above, after the stream finished.
        unsafe {
            result::stream::synchronize(stream).unwrap();
            result::free_sync(px).unwrap();
            result::free_sync(py).unwrap();
        }
    }

    // bf16 matmul 8192^3.
    let s = 8192i64;
    let bytes = (s * s) as usize * 2;
    let (ma, mb, mc) = (alloc(bytes), alloc(bytes), alloc(bytes));
    let dt = DataType::bfloat16();
    let (x, y, z) = (
        dev_tensor(ma, &[s, s], dt),
        dev_tensor(mb, &[s, s], dt),
        dev_tensor(mc, &[s, s], dt),
    );
    let ms = time(stream, 10, || {
        call(Op::Matmul, &[Any::from(&x), Any::from(&y), Any::from(&z)])
    });
    let tflops = 2.0 * (s * s * s) as f64 / ms / 1e9;
    println!("| matmul bf16 8192^3 (zeros) | {ms:.3} | {tflops:.0} TFLOP/s | | |");
}
