//! Replays every saved fuzz input through the same harness the fuzzer runs (`fuzz/src`, included
//! by path, so `make test` needs no nightly toolchain): `fuzz/regressions/<target>/*` (inputs
//! that once failed, kept after the fix) and `fuzz/seeds/<target>/*` (the starting corpus).
//! Named regression tests for each finding follow, with what the input meant.

#[path = "../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod harness;

use harness::saved::inputs;

/// Runs every saved input of every target; a failure names the file.
fn replay(kind: &str) -> usize {
    let mut count = 0;
    for (target, run) in harness::TARGETS {
        for file in inputs(kind, target) {
            let data = std::fs::read(&file).unwrap();
            // A plain catch: a failing input's panic prints, showing why it fails.
            #[allow(clippy::disallowed_methods)]
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{target}: {} fails", file.display());
            count += 1;
        }
    }
    count
}

#[test]
fn every_saved_regression_input_passes() {
    replay("regressions");
}

#[test]
fn every_seed_input_passes() {
    assert!(replay("seeds") > 0, "no seed inputs found under fuzz/seeds");
}

// ---------------------------------------------------------------------------------------------
// Findings, one test each (the input that found it is in fuzz/regressions/<target>/).

use rffi_core::abi::{kRFFIFloat, RFFIAny, RFFIAnyValue};
use rffi_core::{AnyView, DataType, ObjectRef, Tensor};

/// any_args, `unknown-index-read-as-object`: a value with a type index no type has (87, 5000,
/// 100 000) and a payload that is no pointer was taken for an object by `AnyView::as_object`, so
/// printing it or converting it to `ObjectRef` dereferenced the payload (SIGSEGV).
#[test]
fn a_type_index_no_type_has_is_never_read_as_an_object() {
    for index in [75 + 12, 77, 127, 5000, 100_000, i32::MAX] {
        let raw = RFFIAny {
            type_index: index,
            small_str_len: 0,
            v: RFFIAnyValue { v_int64: 0xff },
        };
        // SAFETY: the payload is never read as a pointer (what this test checks).
        let view = unsafe { AnyView::from_raw(raw) };
        assert!(view.as_object().is_none(), "index {index}");
        let e = view.try_as::<ObjectRef>().unwrap_err();
        assert_eq!(e.kind(), "TypeError");
        assert_eq!(format!("{view:?}"), format!("<{}>", view.type_name()));
        let e = view.to_owned().unwrap_err();
        assert!(
            e.message().contains(&format!("unknown type index {index}")),
            "{}",
            e.message()
        );
    }
    // An index with a type still is an object.
    let s = rffi_core::Any::from("a heap string, longer than seven bytes");
    assert!(s.view().as_object().is_some());
    let f = rffi_core::Any::from(1.5);
    assert_eq!(f.type_index(), kRFFIFloat);
    assert!(f.view().as_object().is_none());
}

/// dlpack_import, `slice-of-empty-tensor-huge-stride`: slicing a tensor without elements whose
/// strides are huge (valid: a tensor without elements addresses no byte) was refused, because
/// the new byte_offset `start · stride · itemsize` did not fit; a view without elements now
/// keeps the source's offset.
#[test]
fn slices_of_a_tensor_without_elements_ignore_its_strides() {
    let base = Tensor::alloc_cpu(&[100, 0], DataType::float(32)).unwrap();
    let odd = base.as_strided(&[100, 0], &[1 << 61, 1], 0).unwrap();
    let s = odd.slice(0, 84, 90).unwrap();
    assert_eq!(s.shape(), &[6, 0]);
    assert_eq!(s.byte_offset(), odd.byte_offset());
    let s = odd.slice_step(0, -10, i64::MAX, 3).unwrap();
    assert_eq!(s.shape(), &[4, 0]);
    // dlpack_import, `slice-stride-times-step-saturated`: `stride · step` saturated at
    // i64::MAX instead of failing; a view without elements now keeps the source's stride.
    let s = odd.slice_step(0, 0, 100, 7).unwrap();
    assert_eq!((s.shape(), s.strides()), (&[15, 0][..], &[1 << 61, 1][..]));
    // With elements, the offset still moves and is still checked.
    let t = Tensor::alloc_cpu(&[4, 3], DataType::float(32)).unwrap();
    let s = t.slice(0, 1, 3).unwrap();
    assert_eq!(s.byte_offset(), t.byte_offset() + 12);
}

/// any_args, `string-index-over-another-object`: a value whose index says Bytes (or String) but
/// whose object is a Map had the Map's body read as a string cell (a wild read when printed or
/// converted). The object's header must agree before its cell is read as a string's.
#[test]
fn a_string_index_over_another_object_is_not_read_as_a_string() {
    let map = rffi_core::Map::new(vec![(1i64.into(), 2i64.into())]).unwrap();
    let obj = rffi_core::ObjectType::as_object(&map).as_ptr();
    for index in [rffi_core::abi::kRFFIStr, rffi_core::abi::kRFFIBytes] {
        let raw = RFFIAny {
            type_index: index,
            small_str_len: 0,
            v: RFFIAnyValue { v_obj: obj },
        };
        // SAFETY: a live object (of another type than the index says: what this test checks).
        let view = unsafe { AnyView::from_raw(raw) };
        assert_eq!(view.try_as::<String>().unwrap_err().kind(), "TypeError");
        assert_eq!(view.try_as::<Vec<u8>>().unwrap_err().kind(), "TypeError");
        let e = view.to_owned().unwrap_err();
        assert!(
            e.message().contains("whose header says 72"),
            "{}",
            e.message()
        );
        assert_eq!(format!("{view:?}"), "{1: 2}");
    }
    // A real string still reads as one.
    let s = rffi_core::Any::from("a heap string, longer than seven bytes");
    assert_eq!(
        s.try_as::<String>().unwrap(),
        "a heap string, longer than seven bytes"
    );
}

/// dlpack_import, `slice-before-data-pointer-negative-stride`: a tensor with a negative stride
/// and byte_offset 0 (as PyTorch and NumPy export a flipped tensor: data points at its first
/// element, the others lie below) could not be sliced past its first element: the new
/// byte_offset would be negative, and DLPack's is unsigned. The view's data pointer now moves
/// back instead, on devices whose pointers are addresses; elsewhere it is a clear error.
#[test]
fn slices_of_a_flipped_tensor_move_the_data_pointer_back() {
    use rffi_core::abi::{DLDevice, DLTensor};
    let mut data = [10f32, 11., 12., 13.];
    let mut shape = [4i64];
    let mut strides = [-1i64];
    let mut dl = DLTensor {
        data: (&raw mut data[3]).cast(),
        device: rffi_core::Device::cpu().raw(),
        ndim: 1,
        dtype: DataType::float(32).raw(),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: `dl` and what it points to outlive every tensor below.
    let flipped = unsafe { Tensor::from_dltensor_borrowed(std::ptr::NonNull::from(&dl)) }.unwrap();
    assert_eq!(flipped.to_vec::<f32>().unwrap(), [13., 12., 11., 10.]);
    let tail = flipped.slice(0, 1, 4).unwrap();
    assert_eq!(tail.to_vec::<f32>().unwrap(), [12., 11., 10.]);
    assert_eq!(
        (tail.byte_offset(), tail.data_ptr()),
        (0, (&raw mut data[2]).cast())
    );
    let every_other = tail.slice_step(0, 1, 3, 2).unwrap();
    assert_eq!(every_other.to_vec::<f32>().unwrap(), [11.]);
    // dlpack_import, `slice-below-address-zero`: the moved pointer must not wrap below address
    // 0 (a layout that claims memory there is refused, not turned into a wrapped pointer).
    let mut low = dl;
    low.data = 0x1000 as *mut _;
    shape[0] = 1 << 20;
    low.shape = shape.as_mut_ptr();
    // SAFETY: the data is never read.
    let low = unsafe { Tensor::from_dltensor_borrowed(std::ptr::NonNull::from(&low)) }.unwrap();
    assert_eq!(
        low.slice(0, 1000, 1001).unwrap().data_ptr() as usize,
        0x1000 - 4000
    );
    let e = low.slice(0, 2000, 2001).unwrap_err();
    assert!(e.message().contains("below address 0"), "{}", e.message());
    dl.shape = shape.as_mut_ptr();
    // On a device whose data pointer is a handle, it cannot move.
    dl.device = DLDevice {
        device_type: 4, // OpenCL
        device_id: 0,
    };
    // SAFETY: as above.
    let on_opencl =
        unsafe { Tensor::from_dltensor_borrowed(std::ptr::NonNull::from(&dl)) }.unwrap();
    let e = on_opencl.slice(0, 1, 4).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(
        e.message().contains("4 bytes before the data pointer"),
        "{}",
        e.message()
    );
}

/// json_graph, `field-constructor-error-unnamed`: a node of a type built by its field constructor
/// (`testing.TestObjectDerived`) whose Map field names a string node was refused by the
/// constructor's TypeError, whose message did not say that reading a JSON graph failed (the
/// containers' errors on the same path neither).
#[test]
fn errors_of_a_field_constructor_name_the_json_graph_reader() {
    let text = r#"{"root_index": 0, "nodes": [
        {"type": "testing.TestObjectDerived", "data": {"v_map": 1, "v_array": 2}},
        {"type": "ffi.String", "data": "x"}, {"type": "ffi.Array", "data": []}]}"#;
    let e = rffi_core::structural::from_json_graph(text).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(
        e.message(),
        "from_json_graph_str: `testing.TestObjectDerived` from fields: field `v_map`: expected \
         ffi.Map but got str"
    );
}
