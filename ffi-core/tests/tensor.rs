//! Tensors: layout, allocation, DLPack import/export and its ownership rules, validation of
//! foreign tensors, views, arguments, the environment allocator, streams, threads.

use rffi_core::abi::*;
use rffi_core::tensor::{RFFIDLPackSetError, RFFITensorObject};
use rffi_core::{
    get_global_func, stream, tensor, Any, AnyView, DataType, Device, Function, ObjectType, Result,
    Shape, Tensor, TensorMut,
};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// A DLPack producer written the way a foreign framework would: the managed tensor, its shape,
// strides and data live in one heap block found through `manager_ctx`, and the deleter frees the
// block and counts how often it ran.

struct Producer {
    versioned: DLManagedTensorVersioned,
    legacy: DLManagedTensor,
    _shape: Vec<i64>,
    _strides: Option<Vec<i64>>,
    _data: Vec<f32>,
    deleted: Arc<AtomicUsize>,
}

unsafe extern "C" fn producer_deleter_versioned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: `manager_ctx` is the leaked Box<Producer> made by `make_producer`.
    let p = unsafe { Box::from_raw((*m).manager_ctx.cast::<Producer>()) };
    p.deleted.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn producer_deleter_legacy(m: *mut DLManagedTensor) {
    // SAFETY: as above.
    let p = unsafe { Box::from_raw((*m).manager_ctx.cast::<Producer>()) };
    p.deleted.fetch_add(1, Ordering::SeqCst);
}

/// A float32 CPU tensor holding 0, 1, 2, ... with `shape` and optional `strides`.
fn make_producer(shape: &[i64], strides: Option<&[i64]>) -> (*mut Producer, Arc<AtomicUsize>) {
    let numel: i64 = shape.iter().product();
    let mut shape = shape.to_vec();
    let mut strides = strides.map(<[i64]>::to_vec);
    let mut data: Vec<f32> = (0..numel.max(1)).map(|i| i as f32).collect();
    let deleted = Arc::new(AtomicUsize::new(0));
    let dl = DLTensor {
        data: data.as_mut_ptr().cast(),
        device: Device::cpu().raw(),
        ndim: shape.len() as i32,
        dtype: DataType::float(32).raw(),
        shape: shape.as_mut_ptr(),
        strides: strides
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    };
    let p = Box::into_raw(Box::new(Producer {
        versioned: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 1 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(producer_deleter_versioned),
            flags: 0,
            dl_tensor: dl,
        },
        legacy: DLManagedTensor {
            dl_tensor: dl,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(producer_deleter_legacy),
        },
        _shape: shape,
        _strides: strides,
        _data: data,
        deleted: deleted.clone(),
    }));
    // SAFETY: a fresh allocation we own.
    unsafe {
        (*p).versioned.manager_ctx = p.cast();
        (*p).legacy.manager_ctx = p.cast();
    }
    (p, deleted)
}

fn versioned(
    shape: &[i64],
    tweak: impl FnOnce(&mut DLManagedTensorVersioned),
) -> (NonNull<DLManagedTensorVersioned>, Arc<AtomicUsize>) {
    let (p, deleted) = make_producer(shape, None);
    // SAFETY: `p` is live until its deleter runs.
    let m = unsafe { &mut (*p).versioned };
    tweak(m);
    (NonNull::from(m), deleted)
}

fn legacy(
    shape: &[i64],
    tweak: impl FnOnce(&mut DLManagedTensor),
) -> (NonNull<DLManagedTensor>, Arc<AtomicUsize>) {
    let (p, deleted) = make_producer(shape, None);
    // SAFETY: as above.
    let m = unsafe { &mut (*p).legacy };
    tweak(m);
    (NonNull::from(m), deleted)
}

fn import(m: NonNull<DLManagedTensorVersioned>) -> Tensor {
    // SAFETY: a valid producer tensor, handed over.
    unsafe { Tensor::from_dlpack_versioned(m, 0, false) }.unwrap()
}

fn count(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}

// ---------------------------------------------------------------------------------------------
// Layout and allocation

#[test]
fn dltensor_sits_at_offset_24_with_strides_filled() {
    let t = Tensor::empty(&[2, 3, 4], DataType::float(32), Device::cpu()).unwrap();
    let obj = t.as_raw().cast::<RFFITensorObject>();
    // SAFETY: a live tensor object; only the ABI prefix is read.
    let dl = unsafe { &(*obj).dl_tensor };
    // SAFETY: pointer arithmetic inside the object.
    let at_24 = unsafe { t.as_raw().cast::<u8>().add(24) };
    assert_eq!(t.as_dltensor_ptr().cast::<u8>(), at_24);
    assert_eq!(dl.ndim, 3);
    assert!(!dl.strides.is_null());
    // SAFETY: strides holds ndim entries.
    let strides = unsafe { std::slice::from_raw_parts(dl.strides, 3) };
    assert_eq!(strides, &[12, 4, 1]);
    assert_eq!(t.as_object().type_index(), kRFFITensor);
    assert_eq!(Tensor::TYPE_KEY, "ffi.Tensor");
}

#[test]
fn cpu_allocation_is_aligned_zeroed_and_compact() {
    let t = Tensor::empty(&[2, 3], DataType::float(32), Device::cpu()).unwrap();
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.strides(), &[3, 1]);
    assert_eq!((t.numel(), t.nbytes(), t.ndim()), (6, 24, 2));
    assert_eq!(t.dtype(), DataType::float(32));
    assert_eq!(t.device(), Device::cpu());
    assert_eq!(t.byte_offset(), 0);
    assert_eq!(t.data_ptr() as usize % tensor::RFFI_CPU_TENSOR_ALIGNMENT, 0);
    assert!(t.is_contiguous() && t.is_aligned(64) && !t.read_only() && !t.is_borrowed());
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    assert_eq!(
        format!("{t:?}"),
        "Tensor(shape=[2, 3], dtype=float32, device=cpu:0)"
    );
}

#[test]
fn scalars_and_empty_tensors() {
    let s = Tensor::empty(&[], DataType::int(64), Device::cpu()).unwrap();
    assert_eq!((s.ndim(), s.numel(), s.nbytes()), (0, 1, 8));
    assert!(s.shape().is_empty() && s.strides().is_empty());
    let e = Tensor::empty(&[0, 5], DataType::int(8), Device::cpu()).unwrap();
    assert_eq!((e.numel(), e.nbytes()), (0, 0));
    assert!(!e.data_ptr().is_null(), "empty tensors still get a buffer");
    assert!(e.is_contiguous());
    // Sub-byte element types are packed: 3 int4 values take 2 bytes.
    assert_eq!(
        Tensor::empty(&[3], DataType::int(4), Device::cpu())
            .unwrap()
            .nbytes(),
        2
    );
}

#[test]
fn allocation_rejects_bad_requests() {
    let f32_ = DataType::float(32);
    let e = Tensor::empty(&[2, -1], f32_, Device::cpu()).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_eq!(e.message(), "Tensor::empty: `shape[1]` is negative (-1)");
    let e = Tensor::empty(&[2], DataType::void(), Device::cpu()).unwrap_err();
    assert_eq!(
        e.message(),
        "Tensor::empty: `dtype` is void, which has no elements"
    );
    let e = Tensor::empty(&[2], DataType::new(kDLFloat, 32, 0), Device::cpu()).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(e.message().contains("lanes is 0"), "{}", e.message());
    let e = Tensor::empty(&[i64::MAX, 4], f32_, Device::cpu()).unwrap_err();
    assert!(
        e.message().contains("more than 2^63-1 elements"),
        "{}",
        e.message()
    );
    let e = Tensor::empty(&[i64::MAX / 2], f32_, Device::cpu()).unwrap_err();
    assert_eq!(e.kind(), "MemoryError");
    // No allocator installed on this thread: other devices cannot be served.
    let e = Tensor::empty(&[2], f32_, Device::cuda(0)).unwrap_err();
    assert_eq!(e.kind(), "RuntimeError");
    assert!(
        e.message()
            .starts_with("Tensor::empty: no allocator for cuda:0"),
        "{}",
        e.message()
    );
}

#[test]
fn from_slice_and_to_vec_copy_host_data() {
    let t = Tensor::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    assert_eq!(t.dtype(), DataType::int(32));
    assert_eq!(t.to_vec::<i32>().unwrap(), [1, 2, 3, 4, 5, 6]);
    // SAFETY: nobody else touches `t`.
    unsafe { t.as_mut_slice::<i32>().unwrap()[0] = 10 };
    // SAFETY: as above.
    assert_eq!(unsafe { t.as_slice::<i32>() }.unwrap()[0], 10);
    let e = t.to_vec::<f32>().unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(
        e.message(),
        "Tensor::to_vec: tensor has dtype int32 but float32 was requested"
    );
    let e = Tensor::from_slice(&[1.0f64; 5], &[2, 3]).unwrap_err();
    assert_eq!(
        e.message(),
        "Tensor::from_slice: shape [2, 3] has 6 elements but 5 values were given"
    );
}

// ---------------------------------------------------------------------------------------------
// DLPack import and export

#[test]
fn versioned_import_shares_data_and_deleter_runs_once_at_last_drop() {
    let (m, deleted) = versioned(&[2, 3], |_| {});
    // SAFETY: reading the producer's fields before handing it over.
    let data = unsafe { m.as_ref().dl_tensor.data };
    let t = import(m);
    assert_eq!(t.data_ptr(), data, "zero copy");
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let t2 = t.clone();
    drop(t);
    assert_eq!(count(&deleted), 0, "a reference is still alive");
    drop(t2);
    assert_eq!(count(&deleted), 1);
}

#[test]
fn legacy_import_shares_data_and_deleter_runs_once() {
    let (m, deleted) = legacy(&[4], |_| {});
    // SAFETY: reading the producer's fields before handing it over.
    let data = unsafe { m.as_ref().dl_tensor.data };
    // SAFETY: a valid producer tensor, handed over.
    let t = unsafe { Tensor::from_dlpack(m, 0, false) }.unwrap();
    assert_eq!(t.data_ptr(), data);
    assert!(!t.read_only());
    drop(t);
    assert_eq!(count(&deleted), 1);
}

#[test]
fn import_fills_compact_strides_and_copies_given_ones() {
    let (m, deleted) = versioned(&[2, 3, 4], |_| {});
    let t = import(m);
    assert_eq!(t.strides(), &[12, 4, 1]);
    // SAFETY: the producer is still alive (its deleter has not run).
    let producer_shape = unsafe { m.as_ref().dl_tensor.shape };
    assert_ne!(t.dl_tensor().shape, producer_shape, "shape is owned");
    drop(t);
    // Producer-given (transposed) strides are kept.
    let (p, deleted2) = make_producer(&[3, 2], Some(&[1, 3]));
    // SAFETY: `p` is live until its deleter runs.
    let t = import(NonNull::from(unsafe { &mut (*p).versioned }));
    assert_eq!(t.strides(), &[1, 3]);
    assert!(!t.is_contiguous());
    assert_eq!(t.to_vec::<f32>().unwrap(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    drop(t);
    assert_eq!((count(&deleted), count(&deleted2)), (1, 1));
}

#[test]
fn read_only_flag_is_kept_and_writers_are_refused() {
    let (m, deleted) = versioned(&[3], |m| m.flags = DLPACK_FLAG_BITMASK_READ_ONLY);
    let t = import(m);
    assert!(t.read_only());
    assert_eq!(t.data_ptr_mut().unwrap_err().kind(), "ValueError");
    // A typed function that writes takes TensorMut and refuses the tensor.
    let zero = get_global_func("testing.tensor_zero_").unwrap();
    let e = zero.call(&[Any::from(&t)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(
        e.message(),
        "Mismatched type on argument #0 when calling `testing.tensor_zero_`: expected writable \
         ffi.Tensor but got read-only ffi.Tensor (signature: testing.tensor_zero_(_0: Tensor) -> None)"
    );
    assert!(TensorMut::new(t.clone()).is_err());
    // Views and exports keep the flag; the legacy form, which cannot carry it, is refused.
    assert!(t.slice(0, 1, 3).unwrap().read_only());
    let out = t.to_dlpack_versioned();
    // SAFETY: our own export; its deleter is called once below.
    unsafe {
        assert_eq!(out.as_ref().flags, DLPACK_FLAG_BITMASK_READ_ONLY);
        out.as_ref().deleter.unwrap()(out.as_ptr());
    }
    assert_eq!(t.to_dlpack().unwrap_err().kind(), "ValueError");
    // The data is untouched.
    assert_eq!(t.to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0]);
    drop(t);
    assert_eq!(count(&deleted), 1);
}

#[test]
fn versioned_export_stamps_version_and_shares_data() {
    let t = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let m = t.to_dlpack_versioned();
    assert_eq!(
        t.as_object().strong_count(),
        2,
        "the export holds a reference"
    );
    // SAFETY: our own export, released once at the end.
    unsafe {
        let mr = m.as_ref();
        assert_eq!(
            mr.version,
            DLPackVersion {
                major: DLPACK_MAJOR_VERSION,
                minor: DLPACK_MINOR_VERSION
            }
        );
        assert_eq!(mr.flags, 0);
        assert_eq!(mr.dl_tensor.data, t.data_ptr());
        assert_eq!(mr.dl_tensor.ndim, 1);
        assert_eq!(*mr.dl_tensor.strides, 1);
        mr.deleter.unwrap()(m.as_ptr());
    }
    assert_eq!(t.as_object().strong_count(), 1);
    let l = t.to_dlpack().unwrap();
    // SAFETY: as above.
    unsafe {
        assert_eq!(l.as_ref().dl_tensor.data, t.data_ptr());
        l.as_ref().deleter.unwrap()(l.as_ptr());
    }
    assert_eq!(t.as_object().strong_count(), 1);
}

#[test]
fn round_trip_keeps_one_buffer_and_frees_it_once() {
    let (m, deleted) = versioned(&[2, 2], |_| {});
    // SAFETY: reading before handing over.
    let data = unsafe { m.as_ref().dl_tensor.data };
    let a = import(m);
    let exported = a.to_dlpack_versioned();
    drop(a);
    assert_eq!(count(&deleted), 0, "the export keeps the buffer alive");
    let b = import(exported);
    assert_eq!(b.data_ptr(), data);
    let legacy_out = b.to_dlpack().unwrap();
    drop(b);
    // SAFETY: our own legacy export, handed over.
    let c = unsafe { Tensor::from_dlpack(legacy_out, 0, false) }.unwrap();
    assert_eq!(c.data_ptr(), data);
    assert_eq!(count(&deleted), 0);
    drop(c);
    assert_eq!(count(&deleted), 1);
}

#[test]
fn import_options_alignment_and_contiguity() {
    let (m, deleted) = versioned(&[4], |m| m.dl_tensor.byte_offset = 4);
    // SAFETY: a valid producer tensor, handed over.
    let e = unsafe { Tensor::from_dlpack_versioned(m, 64, false) }.unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(
        e.message().contains("is not aligned to 64 bytes"),
        "{}",
        e.message()
    );
    assert_eq!(count(&deleted), 1, "refused tensors are released");

    let (p, deleted) = make_producer(&[3, 2], Some(&[1, 3]));
    // SAFETY: as above.
    let m = NonNull::from(unsafe { &mut (*p).versioned });
    // SAFETY: as above.
    let e = unsafe { Tensor::from_dlpack_versioned(m, 0, true) }.unwrap_err();
    assert_eq!(
        e.message(),
        "Tensor::from_dlpack_versioned: tensor is not contiguous (shape [3, 2], strides [1, 3]) \
         but require_contiguous is set"
    );
    assert_eq!(count(&deleted), 1);

    // Compact strides, size-1 dimensions with any stride, and NULL strides all pass.
    let (p, deleted) = make_producer(&[2, 1, 3], Some(&[3, 99, 1]));
    // SAFETY: as above.
    let m = NonNull::from(unsafe { &mut (*p).versioned });
    // SAFETY: as above.
    let t = unsafe { Tensor::from_dlpack_versioned(m, 4, true) }.unwrap();
    assert!(t.is_contiguous());
    drop(t);
    assert_eq!(count(&deleted), 1);
}

/// Imports a tweaked producer tensor, expects a ValueError with `message`, and checks that the
/// producer's deleter ran exactly once.
fn expect_rejected(tweak: impl FnOnce(&mut DLManagedTensorVersioned), message: &str) {
    let (m, deleted) = versioned(&[2, 3], tweak);
    // SAFETY: a producer tensor (deliberately invalid in one field), handed over.
    let e = unsafe { Tensor::from_dlpack_versioned(m, 0, false) }.unwrap_err();
    assert_eq!(e.kind(), "ValueError", "{}", e.message());
    assert_eq!(
        e.message(),
        format!("Tensor::from_dlpack_versioned: {message}")
    );
    assert_eq!(
        count(&deleted),
        1,
        "the deleter runs exactly once on refusal"
    );
}

#[test]
fn rejects_null_data_with_elements() {
    expect_rejected(
        |m| m.dl_tensor.data = std::ptr::null_mut(),
        "`dl_tensor.data` is NULL but the tensor has 6 elements",
    );
    // NULL data is fine without elements.
    let (m, deleted) = versioned(&[0, 3], |m| m.dl_tensor.data = std::ptr::null_mut());
    drop(import(m));
    assert_eq!(count(&deleted), 1);
}

#[test]
fn rejects_negative_ndim() {
    expect_rejected(
        |m| m.dl_tensor.ndim = -1,
        "`dl_tensor.ndim` is negative (-1)",
    );
}

#[test]
fn rejects_negative_shape() {
    // SAFETY: the producer's shape array has 2 entries.
    expect_rejected(
        |m| unsafe { *m.dl_tensor.shape.add(1) = -3 },
        "`dl_tensor.shape[1]` is negative (-3)",
    );
}

#[test]
fn rejects_null_shape_with_dimensions() {
    expect_rejected(
        |m| m.dl_tensor.shape = std::ptr::null_mut(),
        "`dl_tensor.shape` is NULL with ndim 2",
    );
}

#[test]
fn rejects_zero_lanes() {
    expect_rejected(
        |m| m.dl_tensor.dtype.lanes = 0,
        "`dl_tensor.dtype` (code 2, bits 32, lanes 0) is rejected: invalid DLDataType: lanes is \
         0 for type code 2 (float)",
    );
}

#[test]
fn rejects_unknown_dtype_code() {
    expect_rejected(
        |m| m.dl_tensor.dtype.code = 99,
        "`dl_tensor.dtype` (code 99, bits 32, lanes 1) is rejected: invalid DLDataType: unknown \
         type code 99",
    );
}

#[test]
fn rejects_unknown_device_type() {
    expect_rejected(
        |m| m.dl_tensor.device.device_type = 99,
        "`dl_tensor.device` is rejected: invalid DLDevice: unknown device type 99",
    );
}

#[test]
fn rejects_unsupported_major_version() {
    expect_rejected(
        |m| m.version = DLPackVersion { major: 2, minor: 0 },
        "unsupported DLPack version 2.0 (`version.major` must be 1)",
    );
    // A newer minor version of the same major is read.
    let (m, deleted) = versioned(&[1], |m| m.version.minor = 7);
    drop(import(m));
    assert_eq!(count(&deleted), 1);
}

#[test]
fn rejects_padded_subbyte_flag() {
    expect_rejected(
        |m| m.flags = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
        "`flags` has DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, which rffi does not support \
         (sub-byte elements must be packed)",
    );
}

/// Layouts whose byte offsets do not fit in i64 are refused at import, naming the field and
/// dimension, on the common fast path (float32 on the CPU) and the full one alike.
#[test]
fn rejects_layouts_whose_extent_overflows() {
    let big = (1i64 << 62) - 1;
    for (strides, dtype_bits, message) in [
        (
            [big, 1],
            32,
            "`dl_tensor.strides[0]` (4611686018427387903) over `dl_tensor.shape[0]` (2) reaches \
             more than 2^63-1 bytes",
        ),
        (
            [1, i64::MIN],
            32,
            "`dl_tensor.strides[1]` (-9223372036854775808) over `dl_tensor.shape[1]` (3) reaches \
             more than 2^63-1 bytes",
        ),
        (
            [1 << 61, 1 << 60],
            16,
            "`dl_tensor.strides` [2305843009213693952, 1152921504606846976] over \
             `dl_tensor.shape` [2, 3] reach more than 2^63-1 bytes together (at dimension 1)",
        ),
    ] {
        let mut strides = strides;
        let (m, deleted) = versioned(&[2, 3], |m| {
            m.dl_tensor.dtype.bits = dtype_bits;
            // The array outlives the import, which refuses the tensor before returning.
            m.dl_tensor.strides = strides.as_mut_ptr();
        });
        // SAFETY: a producer tensor (deliberately invalid), handed over.
        let e = unsafe { Tensor::from_dlpack_versioned(m, 0, false) }.unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert_eq!(
            e.message(),
            format!("Tensor::from_dlpack_versioned: {message}")
        );
        assert_eq!(count(&deleted), 1);
    }
    expect_rejected(
        // SAFETY: the producer's shape array has 2 entries.
        |m| unsafe {
            *m.dl_tensor.shape = 1 << 31;
            *m.dl_tensor.shape.add(1) = 1 << 31;
        },
        "`dl_tensor.shape` [2147483648, 2147483648] holds 4611686018427387904 elements of 32 \
         bits: more than 2^63-1 bytes",
    );
    expect_rejected(
        |m| m.dl_tensor.byte_offset = u64::MAX - 3,
        "`dl_tensor.byte_offset` (18446744073709551612) is more than 2^63-1",
    );
    expect_rejected(
        |m| m.dl_tensor.byte_offset = i64::MAX as u64 - 8,
        "`dl_tensor.byte_offset` (9223372036854775799) plus the 24 bytes the layout spans is \
         more than 2^63-1",
    );
}

#[test]
fn rejects_unknown_flag_bits_and_widths_no_dtype_has() {
    expect_rejected(
        |m| m.flags = DLPACK_FLAG_BITMASK_READ_ONLY | 1 << 9,
        "`flags` (0x201) has bits DLPack does not define (0x200); a producer newer than DLPack \
         1.x may mean something rffi cannot honour",
    );
    expect_rejected(
        |m| m.dl_tensor.dtype.bits = 24,
        "`dl_tensor.dtype` (code 2, bits 24, lanes 1) is rejected: invalid DLDataType: float has \
         no 24-bit form (bits must be one of [8, 16, 32, 64])",
    );
    // The defined bits are still accepted.
    let (m, deleted) = versioned(&[2], |m| {
        m.flags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED
    });
    assert!(import(m).read_only());
    assert_eq!(count(&deleted), 1);
}

#[test]
fn legacy_import_is_validated_too() {
    let (m, deleted) = legacy(&[2], |m| m.dl_tensor.ndim = -4);
    // SAFETY: a producer tensor, handed over.
    let e = unsafe { Tensor::from_dlpack(m, 0, false) }.unwrap_err();
    assert_eq!(
        e.message(),
        "Tensor::from_dlpack: `dl_tensor.ndim` is negative (-4)"
    );
    assert_eq!(count(&deleted), 1);
}

#[test]
fn null_deleter_is_allowed() {
    let (m, deleted) = versioned(&[2], |_| {});
    // SAFETY: the producer stays alive; we free it ourselves since its deleter is removed.
    let producer = unsafe { m.as_ref().manager_ctx.cast::<Producer>() };
    // SAFETY: as above.
    unsafe { (*m.as_ptr()).deleter = None };
    drop(import(m));
    assert_eq!(count(&deleted), 0);
    // SAFETY: made by `make_producer`, not freed by anyone else.
    drop(unsafe { Box::from_raw(producer) });
}

// ---------------------------------------------------------------------------------------------
// Views

#[test]
fn as_strided_view_shares_data_and_keeps_source_alive() {
    let (m, deleted) = versioned(&[2, 3], |_| {});
    let t = import(m);
    // The transpose, through as_strided.
    let tt = t.as_strided(&[3, 2], &[1, 3], 0).unwrap();
    assert_eq!(tt.data_ptr(), t.data_ptr());
    assert_eq!(tt.to_vec::<f32>().unwrap(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    // The last row, through a byte offset.
    let row = t.as_strided(&[3], &[1], 12).unwrap();
    assert_eq!(row.to_vec::<f32>().unwrap(), [3.0, 4.0, 5.0]);
    drop(t);
    assert_eq!(count(&deleted), 0, "views keep the data alive");
    // A view of a view keeps the root alive, not a chain.
    let v = row.slice(0, 1, 3).unwrap();
    drop((tt, row));
    assert_eq!(v.to_vec::<f32>().unwrap(), [4.0, 5.0]);
    assert_eq!(count(&deleted), 0);
    drop(v);
    assert_eq!(count(&deleted), 1);
}

#[test]
fn as_strided_is_bounds_checked() {
    let t = Tensor::from_slice(&[0i16, 1, 2, 3, 4, 5], &[2, 3]).unwrap();
    let e = t.as_strided(&[2, 3], &[3, 1], 2).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_eq!(
        e.message(),
        "Tensor::as_strided: the view (shape [2, 3], strides [3, 1], byte_offset 2) addresses \
         bytes [2, 14) of the data, outside the source's bytes [0, 12)"
    );
    assert!(t.as_strided(&[7], &[1], 0).is_err());
    assert!(
        t.as_strided(&[2], &[-1], 0).is_err(),
        "negative reach before the start"
    );
    assert!(t.as_strided(&[2], &[-1], 2).is_ok());
    assert!(t.as_strided(&[2, 3], &[3], 0).is_err(), "lengths differ");
    assert!(
        t.as_strided(&[0, 100], &[1, 1], 1000).is_ok(),
        "empty views address nothing"
    );
    let e = Tensor::empty(&[4], DataType::int(4), Device::cpu())
        .unwrap()
        .as_strided(&[2], &[1], 0)
        .unwrap_err();
    assert!(
        e.message()
            .contains("views of int4 tensors are not supported"),
        "{}",
        e.message()
    );
}

/// Views and slices compute their extents checked too: a stride or offset near the i64 limits
/// is an error naming it, never a wrapped offset.
#[test]
fn views_and_slices_refuse_extents_that_overflow() {
    let t = Tensor::from_slice(&[0i64, 1, 2, 3, 4, 5], &[6]).unwrap();
    for (shape, strides, offset, needle) in [
        (
            vec![2i64],
            vec![i64::MAX],
            0,
            "`strides[0]` (9223372036854775807) over `shape[0]` (2)",
        ),
        (
            vec![3],
            vec![i64::MIN],
            0,
            "`strides[0]` (-9223372036854775808)",
        ),
        (
            vec![1],
            vec![1],
            u64::MAX,
            "`byte_offset` (18446744073709551615) is more than 2^63-1",
        ),
        (
            vec![1 << 40, 1 << 40],
            vec![1, 1],
            0,
            "has more than 2^63-1 elements",
        ),
    ] {
        let e = t.as_strided(&shape, &strides, offset).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(
            e.message().starts_with("Tensor::as_strided: "),
            "{}",
            e.message()
        );
        assert!(e.message().contains(needle), "{}", e.message());
    }
    // A step whose stride saturates is refused, not wrapped.
    let e = t.slice_step(0, 0, 6, i64::MAX).map(|v| v.shape().to_vec());
    assert_eq!(e.unwrap(), vec![1]);
    let wide = t.as_strided(&[2], &[5], 0).unwrap();
    let e = wide.slice_step(0, 0, 2, i64::MAX / 2).unwrap();
    assert_eq!(e.shape(), &[1]);
}

#[test]
fn slice_follows_python_rules() {
    let t = Tensor::from_slice(&(0..12).collect::<Vec<i64>>(), &[3, 4]).unwrap();
    let v = |s: &Tensor| s.to_vec::<i64>().unwrap();
    assert_eq!(v(&t.slice(0, 1, 2).unwrap()), [4, 5, 6, 7]);
    assert_eq!(v(&t.slice(1, -2, i64::MAX).unwrap()), [2, 3, 6, 7, 10, 11]);
    assert_eq!(v(&t.slice_step(-1, 0, 4, 3).unwrap()), [0, 3, 4, 7, 8, 11]);
    assert_eq!(
        v(&t.slice_step(0, -100, 100, 2).unwrap()),
        [0, 1, 2, 3, 8, 9, 10, 11]
    );
    let empty = t.slice(0, 2, 1).unwrap();
    assert_eq!((empty.shape(), empty.numel()), (&[0, 4][..], 0));
    let s = t.slice_step(1, 1, 4, 2).unwrap();
    assert_eq!(
        (s.shape(), s.strides(), s.byte_offset()),
        (&[3, 2][..], &[4, 2][..], 8)
    );
    let e = t.slice(2, 0, 1).unwrap_err();
    assert_eq!(e.kind(), "IndexError");
    assert_eq!(
        e.message(),
        "Tensor::slice: axis 2 is out of range for a 2-d tensor"
    );
    let e = t.slice_step(0, 0, 1, 0).unwrap_err();
    assert_eq!(
        (e.kind().as_str(), e.message().as_str()),
        ("ValueError", "Tensor::slice: step must be positive, got 0")
    );
    assert_eq!(
        get_global_func("testing.tensor_slice")
            .unwrap()
            .call(&[
                Any::from(&t),
                0i64.into(),
                1i64.into(),
                3i64.into(),
                1i64.into()
            ])
            .unwrap()
            .try_as::<Tensor>()
            .unwrap()
            .shape(),
        &[2, 4]
    );
}

// ---------------------------------------------------------------------------------------------
// Function arguments and results

fn dltensor_arg(dl: &mut DLTensor) -> RFFIAny {
    let mut raw = RFFIAny {
        type_index: kRFFIDLTensorPtr,
        small_str_len: 0,
        v: RFFIAnyValue { v_int64: 0 },
    };
    raw.v.v_ptr = (dl as *mut DLTensor).cast();
    raw
}

#[test]
fn typed_function_takes_a_tensor_object_or_a_borrowed_dltensor() {
    let f = Function::from_typed(|t: Tensor| -> Result<Shape> {
        assert!(t.is_borrowed() == (t.ndim() == 2));
        Ok(Shape::new(t.shape()))
    });
    // A Tensor object.
    let t = Tensor::empty(&[5], DataType::uint(8), Device::cpu()).unwrap();
    assert_eq!(
        &*f.call(&[Any::from(&t)]).unwrap().try_as::<Shape>().unwrap(),
        &[5]
    );
    // A caller's DLTensor* with NULL strides: a borrowed tensor over the same data.
    let mut data = [0f64; 6];
    let mut shape = [2i64, 3];
    let mut dl = DLTensor {
        data: data.as_mut_ptr().cast(),
        device: Device::cpu().raw(),
        ndim: 2,
        dtype: DataType::float(64).raw(),
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let raw = dltensor_arg(&mut dl);
    // SAFETY: `dl` outlives the call.
    let view = unsafe { AnyView::from_raw(raw) };
    assert_eq!(
        &*f.call_views(&[view]).unwrap().try_as::<Shape>().unwrap(),
        &[2, 3]
    );
    let strides = get_global_func("testing.tensor_strides").unwrap();
    assert_eq!(
        &*strides
            .call_views(&[view])
            .unwrap()
            .try_as::<Shape>()
            .unwrap(),
        &[3, 1]
    );
    // The callee writes through the borrowed tensor into the caller's memory.
    data = [1.0; 6];
    let zero = get_global_func("testing.tensor_zero_").unwrap();
    dl.data = data.as_mut_ptr().cast();
    let raw = dltensor_arg(&mut dl);
    // SAFETY: `dl` and `data` outlive the call.
    zero.call_views(&[unsafe { AnyView::from_raw(raw) }])
        .unwrap();
    assert_eq!(data, [0.0; 6]);
}

#[test]
fn invalid_dltensor_argument_is_a_type_error_naming_the_argument() {
    let f = Function::from_typed(|_a: i64, t: Tensor| t.numel());
    rffi_core::register_global_func("test_tensor.numel", f.clone(), true).unwrap();
    let mut dl = DLTensor {
        data: std::ptr::null_mut(),
        device: Device::cpu().raw(),
        ndim: 1,
        dtype: DataType::float(32).raw(),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let raw = dltensor_arg(&mut dl);
    let one = Any::from(1i64);
    // SAFETY: `dl` outlives the call.
    let e = f
        .call_views(&[one.view(), unsafe { AnyView::from_raw(raw) }])
        .unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(
        e.message(),
        "Mismatched type on argument #1 when calling `test_tensor.numel`: expected ffi.Tensor but \
         got an invalid DLTensor* (`shape` is NULL with ndim 1) (signature: \
         test_tensor.numel(_0: int, _1: Tensor) -> int)"
    );
    let e = f.call(&[one.clone(), Any::from("x")]).unwrap_err();
    assert!(
        e.message().contains("expected ffi.Tensor but got str"),
        "{}",
        e.message()
    );
}

#[test]
fn typed_function_returns_a_tensor_and_echo_keeps_identity() {
    let f = Function::from_typed(|t: Tensor| t.slice(0, 0, 1));
    let t = Tensor::from_slice(&[1u16, 2, 3], &[3]).unwrap();
    let r = f.call(&[Any::from(&t)]).unwrap();
    assert_eq!(r.type_index(), kRFFITensor);
    assert_eq!(r.try_as::<Tensor>().unwrap().to_vec::<u16>().unwrap(), [1]);
    drop(r); // the view holds a reference to `t`
    let echo = get_global_func("testing.echo").unwrap();
    let back = echo
        .call(&[Any::from(&t)])
        .unwrap()
        .try_as::<Tensor>()
        .unwrap();
    assert!(back.same_as(&t));
    assert_eq!(t.as_object().strong_count(), 2);
    // Optional tensors accept None.
    let g = Function::from_typed(|t: Option<Tensor>| t.is_some());
    assert!(!g.call(&[Any::none()]).unwrap().try_as::<bool>().unwrap());
}

unsafe extern "C" fn foreign_tensor_deleter(obj: *mut c_void, flags: i32) {
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        // SAFETY: made as a Box<ForeignTensor> below.
        drop(unsafe { Box::from_raw(obj.cast::<ForeignTensor>()) });
    }
}

#[repr(C)]
struct ForeignTensor {
    base: RFFITensorObject,
    shape: [i64; 2],
    data: [f32; 6],
}

#[test]
fn foreign_tensor_object_without_strides_is_wrapped() {
    // A Tensor object made by another library that left `strides` NULL.
    let mut obj = Box::new(ForeignTensor {
        base: RFFITensorObject {
            header: RFFIObject {
                combined_ref_count: 1 | (1 << 32),
                type_index: kRFFITensor,
                __padding: 0,
                deleter: Some(foreign_tensor_deleter),
            },
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: Device::cpu().raw(),
                ndim: 2,
                dtype: DataType::float(32).raw(),
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        shape: [3, 2],
        data: [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    });
    obj.base.dl_tensor.shape = obj.shape.as_mut_ptr();
    obj.base.dl_tensor.data = obj.data.as_mut_ptr().cast();
    let raw = NonNull::from(Box::leak(obj)).cast::<RFFIObject>();
    // SAFETY: a live object whose one reference we hand over.
    let any = Any::from(unsafe { rffi_core::ObjectRef::from_raw(raw) });
    let t = any.try_as::<Tensor>().unwrap();
    assert_eq!(t.strides(), &[2, 1]);
    assert_eq!(t.to_vec::<f32>().unwrap()[5], 5.0);
    let foreign = any.view().as_object().unwrap().clone();
    assert!(
        !t.as_object().same_as(&foreign),
        "a wrapper of ours, not the foreign object"
    );
    drop(foreign);
    drop(any);
    assert_eq!(
        t.shape(),
        &[3, 2],
        "the wrapper keeps the foreign object alive"
    );
}

/// Layout of a copy of a 1-d rffi tensor's fixed part: header, DLTensor, private head, shape and
/// strides (96 + 16 bytes).
const COPY_SIZE: usize = 112;

unsafe extern "C" fn other_image_deleter(obj: *mut c_void, flags: i32) {
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        let layout = std::alloc::Layout::from_size_align(COPY_SIZE, 8).unwrap();
        // SAFETY: allocated with this layout by `copy_as_other_image`.
        unsafe { std::alloc::dealloc(obj.cast(), layout) };
    }
}

/// What a tensor made by another copy of rffi (a plugin's, or the host's seen from a plugin)
/// looks like here: the same bytes, but a deleter this image does not know.
fn copy_as_other_image(t: &Tensor, corrupt_magic: bool) -> Tensor {
    assert_eq!(t.ndim(), 1);
    let layout = std::alloc::Layout::from_size_align(COPY_SIZE, 8).unwrap();
    // SAFETY: a fresh allocation filled from the first COPY_SIZE bytes of a live 1-d tensor,
    // whose fixed part is exactly that long; the pointers are then moved into the copy.
    unsafe {
        let mem = std::alloc::alloc(layout);
        std::ptr::copy_nonoverlapping(t.as_raw().cast::<u8>(), mem, COPY_SIZE);
        let obj = mem.cast::<RFFITensorObject>();
        (*obj).header.combined_ref_count = 1 | (1 << 32);
        (*obj).header.deleter = Some(other_image_deleter);
        (*obj).dl_tensor.shape = mem.add(96).cast();
        (*obj).dl_tensor.strides = mem.add(104).cast();
        if corrupt_magic {
            *mem.add(72) ^= 0xff;
        }
        let any = Any::from(rffi_core::ObjectRef::from_raw(
            NonNull::new(mem.cast()).unwrap(),
        ));
        any.try_as::<Tensor>().unwrap()
    }
}

#[test]
fn flags_are_seen_on_tensors_made_by_another_copy_of_rffi() {
    let (m, deleted) = versioned(&[3], |m| m.flags = DLPACK_FLAG_BITMASK_READ_ONLY);
    let t = import(m);
    let other = copy_as_other_image(&t, false);
    assert_eq!((other.shape(), other.strides()), (&[3][..], &[1][..]));
    assert!(other.read_only(), "the flag is read from the fixed head");
    let zero = get_global_func("testing.tensor_zero_").unwrap();
    let e = zero.call(&[Any::from(&other)]).unwrap_err();
    assert!(
        e.message().contains("got read-only ffi.Tensor"),
        "{}",
        e.message()
    );
    // Views made here of the other image's tensor keep it alive and read-only.
    let v = other.slice(0, 1, 3).unwrap();
    assert!(v.read_only());
    drop((other, v));
    // Without the magic, the bytes are not trusted: a foreign tensor has no rffi flags.
    let forged = copy_as_other_image(&t, true);
    assert!(!forged.read_only());
    drop((forged, t));
    assert_eq!(count(&deleted), 1);
}

// ---------------------------------------------------------------------------------------------
// The environment allocator

static HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);

/// An allocator a host framework might install: it makes the tensor itself (a Producer) and
/// reports what it was asked for through the prototype.
unsafe extern "C" fn test_allocator(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: RFFIDLPackSetError,
) -> i32 {
    HOOK_CALLS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the runtime passes a valid prototype.
    let proto = unsafe { &*prototype };
    // SAFETY: shape holds ndim entries.
    let shape = unsafe { std::slice::from_raw_parts(proto.shape, proto.ndim as usize) };
    if shape.first() == Some(&13) {
        // SAFETY: the runtime passes its error callback and context.
        unsafe {
            set_error.unwrap()(
                error_ctx,
                c"MemoryError".as_ptr(),
                c"13 is unlucky".as_ptr(),
            )
        };
        return -1;
    }
    let (p, _) = make_producer(shape, None);
    // SAFETY: `p` is a live producer; the runtime takes it over.
    unsafe {
        (*p).versioned.dl_tensor.device = proto.device;
        if shape.first() == Some(&7) {
            // Misbehave: answer with another shape.
            *(*p).versioned.dl_tensor.shape = 8;
        }
        *out = &mut (*p).versioned;
    }
    0
}

unsafe extern "C" fn silent_failing_allocator(
    _: *mut DLTensor,
    _: *mut *mut DLManagedTensorVersioned,
    _: *mut c_void,
    _: RFFIDLPackSetError,
) -> i32 {
    -1
}

/// Reports a MemoryError with an empty message.
unsafe extern "C" fn empty_message_allocator(
    _: *mut DLTensor,
    _: *mut *mut DLManagedTensorVersioned,
    ctx: *mut c_void,
    set_error: RFFIDLPackSetError,
) -> i32 {
    // SAFETY: the runtime's set_error with its context and NUL-terminated strings.
    unsafe { set_error.unwrap()(ctx, c"MemoryError".as_ptr(), c"".as_ptr()) };
    -1
}

#[test]
fn environment_allocator_serves_every_device_on_its_thread() {
    let prev = tensor::set_env_allocator(Some(test_allocator), false);
    assert!(prev.is_none());
    let before = HOOK_CALLS.load(Ordering::SeqCst);
    let t = Tensor::empty(&[2, 2], DataType::float(32), Device::cuda(1)).unwrap();
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), before + 1);
    assert_eq!((t.device(), t.shape()), (Device::cuda(1), &[2, 2][..]));
    // The hook's tensor is an import: the allocator's deleter runs when it dies.
    let c = Tensor::empty(&[3], DataType::float(32), Device::cpu()).unwrap();
    assert_eq!(
        c.to_vec::<f32>().unwrap(),
        [0.0, 1.0, 2.0],
        "made by the hook, not built in"
    );
    // Errors reported through set_error keep their kind and message.
    let e = Tensor::empty(&[13], DataType::float(32), Device::cpu()).unwrap_err();
    assert_eq!(
        (e.kind().as_str(), e.message().as_str()),
        ("MemoryError", "13 is unlucky")
    );
    // A tensor that does not match the request is refused.
    let e = Tensor::empty(&[7], DataType::float(32), Device::cpu()).unwrap_err();
    assert_eq!(e.kind(), "RuntimeError");
    assert!(
        e.message()
            .contains("returned a float32 tensor of shape [8]"),
        "{}",
        e.message()
    );
    // Another thread has no allocator.
    std::thread::spawn(|| {
        assert!(tensor::env_allocator().is_none());
        assert!(Tensor::empty(&[1], DataType::float(32), Device::cuda(0)).is_err());
    })
    .join()
    .unwrap();
    // The built-in allocator ignores the hook.
    let h = Tensor::alloc_cpu(&[3], DataType::float(32)).unwrap();
    assert_eq!(h.to_vec::<f32>().unwrap(), [0.0; 3]);
    let prev = tensor::set_env_allocator(Some(silent_failing_allocator), false);
    assert!(prev.is_some_and(|p| std::ptr::fn_addr_eq(
        p,
        test_allocator as unsafe extern "C" fn(_, _, _, _) -> _
    )));
    // A failure without an error, or with an empty message, names the allocator.
    let e = Tensor::empty(&[1], DataType::float(32), Device::cpu()).unwrap_err();
    let at = format!("{:p}", silent_failing_allocator as *const c_void);
    assert!(
        e.message()
            .starts_with("Tensor::empty: the environment allocator ")
            && e.message().contains(&at)
            && e.message()
                .ends_with(" failed (returned -1) without reporting an error"),
        "{}",
        e.message()
    );
    tensor::set_env_allocator(Some(empty_message_allocator), false);
    let e = Tensor::empty(&[1], DataType::float(32), Device::cpu()).unwrap_err();
    let at = format!("{:p}", empty_message_allocator as *const c_void);
    assert_eq!(e.kind(), "MemoryError");
    assert!(
        e.message().contains(&at)
            && e.message().ends_with(
                " failed (returned -1) and reported a MemoryError with an empty message"
            ),
        "{}",
        e.message()
    );
    tensor::set_env_allocator(None, false);
    assert!(tensor::env_allocator().is_none());
}

// ---------------------------------------------------------------------------------------------
// Streams and threads

#[test]
fn streams_are_per_thread_and_per_device() {
    let d = Device::cuda(0);
    let s = 0x1234 as stream::StreamHandle;
    assert!(stream::set_current_stream(d, s).is_null());
    assert_eq!(stream::current_stream(d), s);
    assert!(stream::current_stream(Device::cuda(1)).is_null());
    std::thread::spawn(move || assert!(stream::current_stream(d).is_null()))
        .join()
        .unwrap();
    assert_eq!(stream::set_current_stream(d, std::ptr::null_mut()), s);
}

#[test]
fn tensors_move_across_threads_and_die_there() {
    let (m, deleted) = versioned(&[64], |_| {});
    let t = import(m);
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let t = t.clone();
            std::thread::spawn(move || {
                let v = t.slice(0, i * 8, i * 8 + 8).unwrap();
                let sum: f32 = v.to_vec::<f32>().unwrap().iter().sum();
                let exported = v.to_dlpack_versioned();
                drop((t, v));
                // SAFETY: our own export, released once.
                unsafe { exported.as_ref().deleter.unwrap()(exported.as_ptr()) };
                sum
            })
        })
        .collect();
    drop(t);
    let total: f32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, (0..64).sum::<i32>() as f32);
    assert_eq!(
        count(&deleted),
        1,
        "the last thread to let go ran the deleter, once"
    );
}

#[test]
fn testing_helpers_allocate_and_report() {
    let empty = get_global_func("testing.tensor_empty").unwrap();
    let shape = Any::from(rffi_core::Array::new(vec![2i64.into(), 5i64.into()]));
    let r = empty
        .call(&[
            shape,
            Any::from(DataType::int(16)),
            Any::from(Device::cpu()),
        ])
        .unwrap();
    let t = r.try_as::<Tensor>().unwrap();
    assert_eq!((t.shape(), t.dtype()), (&[2, 5][..], DataType::int(16)));
    let is_ro = get_global_func("testing.tensor_is_read_only").unwrap();
    assert!(!is_ro
        .call(std::slice::from_ref(&r))
        .unwrap()
        .try_as::<bool>()
        .unwrap());
    let shape_of = get_global_func("testing.tensor_shape").unwrap();
    assert_eq!(
        &*shape_of.call(&[r]).unwrap().try_as::<Shape>().unwrap(),
        &[2, 5]
    );
}
