//! The CUDA backend. Without a driver (CI, this project's development machines) the backend
//! must report why it is unavailable and leave CPU dispatch untouched; the GPU tests then skip,
//! saying why. With a GPU they check every op and dtype against the CPU backend, on a
//! non-default stream, with strided operands, in place, and in the allocating form.

#[macro_use]
mod common;

use common::*;
use cudarc::driver::result;
use rffi_core::abi::{kDLCUDA, DLTensor};
use rffi_core::{Any, DataType, Device, Tensor};
use rffi_kernels::Op;
use std::ffi::c_void;
use std::ptr::NonNull;

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

const ALL: [DataType; 6] = rffi_kernels_cuda::source::DTYPES;

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
            check_after(
                op,
                &[Any::from(3i64)],
                &[&a],
                &[],
                &format!("{op} number first"),
            );
        }
        if !is_float {
            continue;
        }
        check(Op::Div, &[&a, &b], &[], "div");
        check(Op::Div, &[&a], &[Any::from(0.25f64)], "div scalar");
        check_after(
            Op::Div,
            &[Any::from(0.25f64)],
            &[&b],
            &[],
            "div number first",
        );
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
