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

    // Host-side cost of a tiny add (dispatch + launch), against the driver's cheapest enqueue.
    let (ta, tb, to) = (
        dev_tensor(pa, &[4], DataType::float(32)),
        dev_tensor(pb, &[4], DataType::float(32)),
        dev_tensor(po, &[4], DataType::float(32)),
    );
    let tiny = [Any::from(&ta), Any::from(&tb), Any::from(&to)];
    // Host time only: bursts short enough that the launch queue never fills (then the GPU's
    // pace would be measured), after the stream drained; the median burst.
    let per_call_us = |f: &mut dyn FnMut()| {
        let burst = 200;
        let mut t: Vec<f64> = (0..60)
            .map(|_| {
                // SAFETY: a stream of the current context.
                unsafe { result::stream::synchronize(stream) }.unwrap();
                let t = std::time::Instant::now();
                for _ in 0..burst {
                    f();
                }
                t.elapsed().as_secs_f64() * 1e6 / burst as f64
            })
            .collect();
        // SAFETY: as above.
        unsafe { result::stream::synchronize(stream) }.unwrap();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let add_us = per_call_us(&mut || call(Op::Add, &tiny));
    let memset_us = per_call_us(&mut || {
        // SAFETY: 16 bytes of a live buffer, on the stream.
        unsafe { result::memset_d8_async(po, 0, 16, stream) }.unwrap();
    });
    // The driver's floor for a launch: an empty kernel with the same four u64 parameters.
    let ptx = cudarc::nvrtc::compile_ptx(
        "extern \"C\" __global__ void empty(unsigned long long a, unsigned long long b, \
         unsigned long long c, unsigned long long n) {}",
    )
    .unwrap();
    let image = std::ffi::CString::new(ptx.to_src()).unwrap();
    // SAFETY: a NUL-terminated PTX image, loaded into the current context.
    let module = unsafe { result::module::load_data(image.as_ptr().cast()) }.unwrap();
    // SAFETY: a loaded module with that entry.
    let empty = unsafe { result::module::get_function(module, c"empty".into()) }.unwrap();
    let launch_us = per_call_us(&mut || {
        let (mut a, mut b, mut c, mut n) = (pa, pb, po, 4u64);
        let mut args: [*mut c_void; 4] = [
            (&raw mut a).cast(),
            (&raw mut b).cast(),
            (&raw mut c).cast(),
            (&raw mut n).cast(),
        ];
        // SAFETY: the kernel takes four u64 values and touches no memory.
        unsafe { result::launch_kernel(empty, (1, 1, 1), (32, 1, 1), 0, stream, &mut args) }
            .unwrap();
    });
    println!(
        "| tiny add, host us per call | {add_us:.2} | | empty-kernel launch {launch_us:.2} us, \
         cuMemsetD8Async {memset_us:.2} us | {:.2} |",
        add_us / launch_us
    );

    // softmax over the last dim of 65536 x 4096.
    let (rows, cols) = (65536i64, 4096i64);
    let sweep: Vec<(i64, Registry)> = [1i64, 2, 4, 8]
        .into_iter()
        .map(|packs| {
            let dir = std::env::temp_dir().join(format!("rffi-tune-softmax-{packs}"));
            std::fs::create_dir_all(dir.join("cuda")).unwrap();
            let file = format!("{{\"softmax\": [{{\"packs\": {packs}}}]}}");
            std::fs::write(dir.join("cuda").join("default.json"), file).unwrap();
            let dir = dir.display().to_string();
            let tuned =
                Registry::with_env(move |k| (k == "RFFI_KERNELS_TUNE_DIR").then(|| dir.clone()));
            tuned.register_backend(rffi_kernels_cpu::backend()).unwrap();
            tuned
                .register_backend(rffi_kernels_cuda::backend())
                .unwrap();
            (packs, tuned)
        })
        .collect();
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
        let args = [Any::from(&x), Any::from(-1i64), Any::from(&y)];
        let ms = time(stream, 10, || call(Op::Softmax, &args));
        let bw = 2.0 * bytes as f64 / ms / 1e6;
        println!(
            "| softmax {dt} 65536x4096 | {ms:.3} | {bw:.0} GB/s | copy {copy_bw:.0} GB/s | {:.2} |",
            bw / copy_bw
        );
        // The tuning sweep behind tune/cuda: 16-byte packs per thread of the one-read kernel.
        for (packs, tuned) in &sweep {
            let v: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
            let ms = time(stream, 10, || {
                tuned.call(Op::Softmax, &v).unwrap();
            });
            let bw = 2.0 * bytes as f64 / ms / 1e6;
            println!(
                "| softmax {dt} 65536x4096, packs={packs} | {ms:.3} | {bw:.0} GB/s | | {:.2} |",
                bw / copy_bw
            );
        }
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
