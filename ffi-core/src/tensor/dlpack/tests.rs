use super::*;
use crate::{DataType, Device};

/// The shortcuts decide exactly the common cases, and only values the full checks accept.
#[test]
fn common_dtypes_and_devices_are_valid() {
    for code in 0..=255u8 {
        for bits in 0..=255u8 {
            for lanes in 0..=2u16 {
                let dt = DLDataType { code, bits, lanes };
                let expected = lanes == 1
                    && match code {
                        kDLInt | kDLUInt | kDLFloat => matches!(bits, 8 | 16 | 32 | 64),
                        kDLBfloat => bits == 16,
                        kDLBool => bits == 8,
                        _ => false,
                    };
                assert_eq!(is_common_dtype(dt), expected, "{code} {bits} {lanes}");
                if expected {
                    assert!(DataType::from_raw(dt).is_ok_and(|d| d != DataType::void()));
                }
            }
        }
    }
    for device_type in -2..40 {
        for device_id in [-1, 0, 3] {
            let dev = DLDevice {
                device_type,
                device_id,
            };
            if is_common_device(dev) {
                assert!(Device::from_raw(dev).is_ok(), "{device_type} {device_id}");
            }
        }
    }
}

fn same(a: &Tensor, b: &Tensor) {
    assert_eq!(a.shape(), b.shape());
    assert_eq!(a.strides(), b.strides());
    assert_eq!(a.dtype(), b.dtype());
    assert_eq!(a.device(), b.device());
    assert_eq!(a.data_ptr(), b.data_ptr());
    assert_eq!(a.byte_offset(), b.byte_offset());
    assert_eq!(a.read_only(), b.read_only());
    assert_eq!(a.is_borrowed(), b.is_borrowed());
}

/// `try_build` takes only what the full checks accept, and builds the same tensor.
#[test]
fn fast_path_agrees_with_the_full_checks() {
    #[repr(align(64))]
    struct Buf([u8; 256]);
    let mut buf = Buf([0; 256]);
    let data = buf.0.as_mut_ptr().cast::<core::ffi::c_void>();
    let shapes: Vec<Vec<i64>> = vec![
        vec![],
        vec![0],
        vec![3],
        vec![4],
        vec![2, 3],
        vec![0, 3],
        vec![3, 1, 2, 1],
        vec![i64::MAX, 2],
        vec![i64::MAX, 2, 0],
        vec![-1, 2],
        vec![2, -3],
        vec![1; 5],
        vec![1; 70],
    ];
    let dtypes = [
        DataType::float(32).raw(),
        DataType::int(8).raw(),
        DataType::bool_().raw(),
        DLDataType {
            code: kDLBfloat,
            bits: 16,
            lanes: 1,
        },
        DLDataType {
            code: kDLComplex,
            bits: 64,
            lanes: 1,
        },
        DLDataType {
            code: kDLFloat,
            bits: 32,
            lanes: 2,
        },
        DLDataType {
            code: kDLFloat,
            bits: 32,
            lanes: 0,
        },
        DLDataType {
            code: 99,
            bits: 32,
            lanes: 1,
        },
        DataType::void().raw(),
    ];
    let devices = [
        (kDLCPU, 0),
        (kDLCUDA, 1),
        (kDLCUDAHost, 0),
        (kDLOpenCL, 0),
        (99, 0),
        (kDLCPU, -1),
    ];
    let (mut checked, mut fast_built) = (0, 0);
    for shape in &shapes {
        let n = shape.len();
        let compact = {
            let mut s = vec![0; n];
            crate::tensor::fill_compact_strides(shape, &mut s);
            s
        };
        let reversed: Vec<i64> = compact.iter().rev().copied().collect();
        let mut shape = shape.clone();
        // Extremes whose byte extents overflow: the fast path must leave them to the checks.
        let huge = vec![(1i64 << 62) - 1; n];
        let min = vec![i64::MIN; n];
        // (4 - 1) × this is u64::MAX exactly, without overflowing (fuzz input
        // `fast-path-span-of-u64-max`: the span, one more, wrapped to 0 and passed).
        let third = vec![(u64::MAX / 3) as i64; n];
        let all = [
            Some(compact),
            Some(reversed),
            Some(huge),
            Some(min),
            Some(third),
        ];
        for mut strides in [None].into_iter().chain(all) {
            for (data, byte_offset) in [
                (data, 0),
                (core::ptr::null_mut(), 0),
                (data, 4),
                (data, i64::MAX as u64 - 2),
                (data, u64::MAX),
            ] {
                for &dtype in &dtypes {
                    for (device_type, device_id) in devices {
                        let dl = DLTensor {
                            data,
                            device: DLDevice {
                                device_type,
                                device_id,
                            },
                            ndim: n as i32,
                            dtype,
                            shape: shape.as_mut_ptr(),
                            strides: strides
                                .as_mut()
                                .map_or(core::ptr::null_mut(), |s| s.as_mut_ptr()),
                            byte_offset,
                        };
                        for align in [0, 1, 16, 3] {
                            for contiguous in [false, true] {
                                // SAFETY: shape and strides hold n entries; nothing to release.
                                let (fast, full) = unsafe {
                                    (
                                        try_build(&dl, 0, align, contiguous, Owner::Borrowed),
                                        import(&dl, Owner::Borrowed, false, align, contiguous, "f"),
                                    )
                                };
                                match (fast, full) {
                                    (Ok(a), Ok(b)) => {
                                        same(&a, &b);
                                        fast_built += 1;
                                    }
                                    (Ok(_), Err(e)) => {
                                        panic!("fast path took {dl:?}: {}", e.message())
                                    }
                                    (Err(_), _) => {}
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        checked > 10_000 && fast_built > 1_000,
        "{checked} {fast_built}"
    );
}

/// Small tensors reuse cached memory; more than the cache holds, made on one thread and freed
/// on another, all come back in one piece.
#[test]
fn cached_memory_moves_between_threads() {
    let mut shape = [4i64, 2];
    let mut data = [0f32; 8];
    let dl = DLTensor {
        data: data.as_mut_ptr().cast(),
        device: Device::cpu().raw(),
        ndim: 2,
        dtype: DataType::float(32).raw(),
        shape: shape.as_mut_ptr(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    };
    for _ in 0..3 {
        // SAFETY: a valid DLTensor that outlives the tensors.
        let made: Vec<Tensor> = (0..100)
            .map(|_| unsafe { borrow_dltensor(&dl) }.unwrap())
            .collect();
        let exports: Vec<_> = made.iter().map(Tensor::to_dlpack_versioned).collect();
        let handles: Vec<_> = exports.iter().map(|m| m.as_ptr() as usize).collect();
        std::thread::spawn(move || {
            for m in handles {
                let m = m as *mut DLManagedTensorVersioned;
                // SAFETY: our own exports, each released once.
                unsafe { (*m).deleter.unwrap()(m) };
            }
            drop(made);
        })
        .join()
        .unwrap();
        // SAFETY: as above.
        let t = unsafe { borrow_dltensor(&dl) }.unwrap();
        assert_eq!(t.shape(), &[4, 2]);
        assert_eq!(t.strides(), &[2, 1]);
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0; 8]);
    }
}
