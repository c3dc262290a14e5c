//! Target `dlpack_import`: DLPack import of arbitrary `DLManagedTensorVersioned` /
//! `DLManagedTensor` / borrowed `DLTensor*` fields (version, flags, ndim, shape, strides, dtype
//! bits, device, data, byte_offset, the import options), then views, slices and re-exports of
//! what was accepted.
//!
//! What must hold: import accepts exactly what the model below (`expect_import`, written from
//! the DLPack contract and docs/RELIABILITY.md, in i128 so nothing in it can overflow) accepts,
//! on the fast path and the full one alike; an accepted tensor shows the producer's fields; the
//! producer's deleter runs exactly once, at once on a refusal and when the last view dies on
//! success; a slice succeeds whenever its arguments are valid and addresses exactly the elements
//! it names; `as_strided` succeeds exactly when the view stays inside the source's bytes.

use super::input::Input;
use rffi_core::abi::*;
use rffi_core::capi::tensor::{RFFITensorFromDLPack, RFFITensorFromDLPackVersioned};
use rffi_core::error::take_raised;
use rffi_core::{AnyView, DataType, Device, Error, ObjectRef, Tensor};
use std::cell::Cell;
use std::ptr::NonNull;

/// The most bytes a layout may span, in bits (2^63-1 bytes).
const LIMIT_BITS: i128 = i64::MAX as i128 * 8;

thread_local! {
    /// Producer deleters run on this thread so far.
    static DELETED: Cell<u64> = const { Cell::new(0) };
}

/// What data pointers point into: real memory, though nothing here reads or writes it.
static BUFFER: [u8; 4096] = [0; 4096];

fn deleted() -> u64 {
    DELETED.with(Cell::get)
}

/// A `DLTensor` and the arrays it points to (a fuzzed layout).
pub struct Layout {
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub dl: DLTensor,
}

impl Layout {
    /// Reads a layout. `shape` and `strides` hold `ndim` entries whenever they are non-NULL and
    /// `ndim` is not negative (the producer's side of the contract); everything else is free.
    pub fn read(input: &mut Input<'_>) -> Box<Layout> {
        let sel = input.u8();
        let ndim = if sel < 0xf0 {
            i32::from(sel % 9)
        } else {
            match input.i32() {
                n @ 0..=80 => n,
                n if n < 0 => n,
                // More than the fast path takes (64), fewer than the memory a fuzzer has.
                n => 65 + n % 16,
            }
        };
        let n = usize::try_from(ndim).unwrap_or(0);
        let shape: Vec<i64> = (0..n).map(|_| input.edgy_i64()).collect();
        let flags = input.u8();
        let strides: Vec<i64> = if flags & 3 == 0 {
            Vec::new()
        } else {
            (0..n).map(|_| input.edgy_i64()).collect()
        };
        let dtype = match input.u8() % 10 {
            0 => DataType::float(32).raw(),
            1 => DataType::int(64).raw(),
            2 => DataType::uint(8).raw(),
            3 => DataType::bool_().raw(),
            4 => DataType::float(16).raw(),
            5 => DataType::bfloat16().raw(),
            _ => DLDataType {
                code: input.u8(),
                bits: input.u8(),
                lanes: input.u16(),
            },
        };
        let device = match input.u8() % 6 {
            0..=2 => Device::cpu().raw(),
            3 => Device::cuda(0).raw(),
            _ => DLDevice {
                device_type: input.i32(),
                device_id: input.i32(),
            },
        };
        let data = if input.u8() % 8 == 0 {
            core::ptr::null_mut()
        } else {
            let at = usize::from(input.u8() % 64);
            BUFFER[at..].as_ptr().cast_mut().cast()
        };
        let byte_offset = match input.u8() % 4 {
            0 | 1 => 0,
            2 => u64::from(input.u8()),
            _ => input.edgy_u64(),
        };
        let mut layout = Box::new(Layout {
            shape,
            strides,
            dl: DLTensor {
                data,
                device,
                ndim,
                dtype,
                shape: core::ptr::null_mut(),
                strides: core::ptr::null_mut(),
                byte_offset,
            },
        });
        // An empty Vec's pointer is dangling but not NULL: reading it is caught (negative ndim).
        layout.dl.shape = if flags & 4 != 0 && ndim != 0 {
            core::ptr::null_mut()
        } else {
            layout.shape.as_mut_ptr()
        };
        layout.dl.strides = if flags & 3 == 0 {
            core::ptr::null_mut()
        } else {
            layout.strides.as_mut_ptr()
        };
        layout
    }

    fn strides_given(&self) -> bool {
        !self.dl.strides.is_null()
    }
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: made by `managed_versioned` below (Box of the tensor, Box<Layout> as context);
    // DLPack consumers call the deleter once.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx.cast::<Layout>()));
    }
    DELETED.with(|d| d.set(d.get() + 1));
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    // SAFETY: as `delete_versioned`, for `managed_legacy`.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx.cast::<Layout>()));
    }
    DELETED.with(|d| d.set(d.get() + 1));
}

fn managed_versioned(
    layout: Box<Layout>,
    version: DLPackVersion,
    flags: u64,
) -> *mut DLManagedTensorVersioned {
    let dl_tensor = layout.dl;
    Box::into_raw(Box::new(DLManagedTensorVersioned {
        version,
        manager_ctx: Box::into_raw(layout).cast(),
        deleter: Some(delete_versioned),
        flags,
        dl_tensor,
    }))
}

fn managed_legacy(layout: Box<Layout>) -> *mut DLManagedTensor {
    let dl_tensor = layout.dl;
    Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor,
        manager_ctx: Box::into_raw(layout).cast(),
        deleter: Some(delete_legacy),
    }))
}

/// How a layout reaches the runtime.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    /// `Tensor::from_dlpack_versioned`.
    Versioned,
    /// `RFFITensorFromDLPackVersioned`.
    VersionedC,
    /// `RFFITensorFromDLPack`.
    LegacyC,
    /// A `DLTensor*` argument converted to a Tensor (borrowed, no deleter).
    Borrowed,
}

pub fn run(data: &[u8]) {
    let _ = take_raised();
    let mut input = Input::new(data);
    let mode = input.u8();
    let path = [
        Path::Versioned,
        Path::VersionedC,
        Path::LegacyC,
        Path::Borrowed,
    ][usize::from(mode % 4)];
    let contiguous = mode & 4 != 0;
    let alignment = [0usize, 1, 2, 4, 8, 16, 64, 256][usize::from(mode >> 3) % 8];
    let version = if input.u8() < 0xf0 {
        DLPackVersion {
            major: DLPACK_MAJOR_VERSION,
            minor: u32::from(input.u8() % 3),
        }
    } else {
        DLPackVersion {
            major: input.u32(),
            minor: input.u32(),
        }
    };
    let flags = match input.u8() % 6 {
        0 | 1 => 0,
        2 => DLPACK_FLAG_BITMASK_READ_ONLY,
        3 => DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED,
        4 => 1u64.wrapping_shl(u32::from(input.u8())),
        _ => input.u64(),
    };
    let layout = Layout::read(&mut input);
    let (options, versioned) = match path {
        Path::Borrowed => ((0, false), None),
        Path::LegacyC => ((alignment, contiguous), None),
        _ => ((alignment, contiguous), Some((version, flags))),
    };
    let expected = expect_import(&layout, versioned, options.0, options.1);
    let dl = layout.dl;
    let shape = layout.shape.clone();
    let strides = layout.strides.clone();
    let strided = layout.strides_given();
    let before = deleted();
    let (result, borrowed_layout) = import(path, layout, version, flags, alignment, contiguous);
    let owned = path != Path::Borrowed;
    match (result, expected) {
        (Ok(t), Ok(())) => {
            assert_eq!(deleted(), before, "deleter ran while the tensor lives");
            assert_eq!(t.ndim(), shape.len());
            assert_eq!(t.shape(), &shape[..]);
            let mut compact = vec![0; shape.len()];
            fill_compact(&shape, &mut compact);
            assert_eq!(
                t.strides(),
                if strided { &strides[..] } else { &compact[..] }
            );
            assert_eq!(t.dtype().raw(), dl.dtype);
            assert_eq!(t.device().raw(), dl.device);
            assert_eq!(t.byte_offset(), dl.byte_offset);
            assert_eq!(t.data_ptr(), dl.data);
            let read_only = versioned.is_some() && flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0;
            assert_eq!(t.read_only(), read_only);
            assert_eq!(t.is_borrowed(), !owned);
            views(t, &mut input);
            if owned {
                assert_eq!(deleted(), before + 1, "deleter did not run once at the end");
            }
        }
        (Err(e), Err(why)) => {
            let kind = if path == Path::Borrowed {
                "TypeError"
            } else {
                "ValueError"
            };
            assert_eq!(e.kind(), kind, "{}", e.message());
            if owned {
                assert_eq!(
                    deleted(),
                    before + 1,
                    "refused import must run the deleter once"
                );
            }
            let _ = why;
        }
        (Ok(t), Err(why)) => panic!(
            "{path:?} accepted a layout the model refuses ({why}): {:?} {:?} {:?} {:?} {:?} \
             offset {}",
            t.shape(),
            t.strides(),
            t.dtype().raw(),
            t.device().raw(),
            dl.data,
            dl.byte_offset
        ),
        (Err(e), Ok(())) => panic!(
            "{path:?} refused a layout the model accepts: {} (shape {shape:?}, strides \
             {strides:?}, dtype {:?}, device {:?}, offset {}, version {version:?}, flags \
             {flags:#x}, alignment {alignment}, contiguous {contiguous})",
            e.message(),
            dl.dtype,
            dl.device,
            dl.byte_offset
        ),
    }
    drop(borrowed_layout);
}

/// Hands the layout to the runtime by `path`; for a borrowed import, also gives the layout back
/// (the caller keeps it alive until the tensor is gone).
fn import(
    path: Path,
    layout: Box<Layout>,
    version: DLPackVersion,
    flags: u64,
    alignment: usize,
    contiguous: bool,
) -> (Result<Tensor, Error>, Option<Box<Layout>>) {
    match path {
        Path::Versioned => {
            let m = managed_versioned(layout, version, flags);
            // SAFETY: a valid managed tensor, handed over.
            let r = unsafe {
                Tensor::from_dlpack_versioned(NonNull::new(m).unwrap(), alignment, contiguous)
            };
            (r, None)
        }
        Path::VersionedC => {
            let m = managed_versioned(layout, version, flags);
            let mut out = core::ptr::null_mut();
            // SAFETY: a valid managed tensor, handed over; a writable out-pointer.
            let rc = unsafe {
                RFFITensorFromDLPackVersioned(m, alignment as i32, contiguous as i32, &mut out)
            };
            (c_result(rc, out, "RFFITensorFromDLPackVersioned"), None)
        }
        Path::LegacyC => {
            let m = managed_legacy(layout);
            let mut out = core::ptr::null_mut();
            // SAFETY: as above.
            let rc =
                unsafe { RFFITensorFromDLPack(m, alignment as i32, contiguous as i32, &mut out) };
            (c_result(rc, out, "RFFITensorFromDLPack"), None)
        }
        Path::Borrowed => {
            let mut raw = rffi_core::any::NONE_RAW;
            raw.type_index = kRFFIDLTensorPtr;
            raw.v.v_ptr = (&raw const layout.dl).cast_mut().cast();
            // SAFETY: the DLTensor outlives the view (returned to the caller below).
            let view = unsafe { AnyView::from_raw(raw) };
            (view.try_as::<Tensor>(), Some(layout))
        }
    }
}

fn c_result(rc: i32, out: RFFIObjectHandle, func: &str) -> Result<Tensor, Error> {
    match rc {
        0 => {
            // SAFETY: on success `out` holds a new reference to a Tensor.
            let obj = unsafe { ObjectRef::from_raw(NonNull::new(out.cast()).unwrap()) };
            Ok(rffi_core::ObjectType::from_object(obj).unwrap_or_else(|_| panic!("not a Tensor")))
        }
        -1 => {
            let e = take_raised().expect("-1 without an error raised");
            assert!(e.message().starts_with(func), "{}", e.message());
            Err(e)
        }
        rc => panic!("{func} returned {rc}"),
    }
}

/// Compact row-major strides as DLPack consumers compute them (size-0 dimensions count as 1; the
/// product saturates, which only happens for tensors without elements).
fn fill_compact(shape: &[i64], strides: &mut [i64]) {
    let mut acc = 1i64;
    for (st, &d) in strides.iter_mut().zip(shape).rev() {
        *st = acc;
        acc = acc.saturating_mul(d.max(1));
    }
}

/// The model of import: `Err` says why a layout must be refused.
fn expect_import(
    layout: &Layout,
    versioned: Option<(DLPackVersion, u64)>,
    alignment: usize,
    contiguous: bool,
) -> Result<(), String> {
    let dl = &layout.dl;
    if let Some((version, flags)) = versioned {
        if version.major != 1 {
            return Err("major version".into());
        }
        if flags & !(DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED) != 0 {
            return Err("flags".into());
        }
    }
    if dl.ndim < 0 {
        return Err("negative ndim".into());
    }
    if dl.ndim > 0 && dl.shape.is_null() {
        return Err("NULL shape".into());
    }
    let shape = &layout.shape[..];
    if shape.iter().any(|&d| d < 0) {
        return Err("negative dimension".into());
    }
    match DataType::from_raw(dl.dtype) {
        Ok(dt) if dt != DataType::void() => {}
        _ => return Err("dtype".into()),
    }
    if Device::from_raw(dl.device).is_err() {
        return Err("device".into());
    }
    let strides = (layout.strides_given() && dl.ndim > 0).then_some(&layout.strides[..]);
    let bits = i128::from(dl.dtype.bits) * i128::from(dl.dtype.lanes);
    let numel = numel(shape).ok_or("element count")?;
    if dl.data.is_null() && numel > 0 {
        return Err("NULL data".into());
    }
    extent(shape, strides, bits, dl.byte_offset)?;
    if alignment > 1 {
        let direct = matches!(dl.device.device_type, i32::MIN..=3 | 10 | 11 | 13);
        let at = if direct {
            (dl.data as u64).wrapping_add(dl.byte_offset)
        } else {
            dl.byte_offset
        };
        if at % alignment as u64 != 0 {
            return Err("alignment".into());
        }
    }
    if contiguous && numel > 0 {
        if let Some(strides) = strides {
            let mut expected = 1i128;
            for (&d, &s) in shape.iter().zip(strides).rev() {
                if d != 1 && i128::from(s) != expected {
                    return Err("not contiguous".into());
                }
                expected *= i128::from(d);
            }
        }
    }
    Ok(())
}

/// The element count, if it fits in i64.
fn numel(shape: &[i64]) -> Option<i128> {
    if shape.contains(&0) {
        return Some(0);
    }
    let mut n = 1i128;
    for &d in shape {
        n = n
            .checked_mul(i128::from(d))
            .filter(|&n| n <= i128::from(i64::MAX))?;
    }
    Some(n)
}

/// The bytes `[lo, hi)` a layout addresses relative to `data` (`None`: no elements), or why it
/// is too large: every quantity must stay within 2^63-1 bytes.
fn extent(
    shape: &[i64],
    strides: Option<&[i64]>,
    bits: i128,
    byte_offset: u64,
) -> Result<Option<(i128, i128)>, String> {
    if byte_offset > i64::MAX as u64 {
        return Err("byte_offset".into());
    }
    let numel = numel(shape).ok_or("element count")?;
    if numel * bits > LIMIT_BITS {
        return Err("bytes of all elements".into());
    }
    if numel == 0 {
        return Ok(None);
    }
    let (lo, hi) = match strides {
        None => (0, numel * bits),
        Some(strides) => {
            let (mut pos, mut neg) = (0i128, 0i128);
            for (&d, &s) in shape.iter().zip(strides) {
                // (dim − 1) · stride fits in i128; times bits it may not, and is then too large.
                let reach = ((i128::from(d) - 1) * i128::from(s))
                    .checked_mul(bits)
                    // (checked: the product may be i128::MIN itself)
                    .filter(|r| r.checked_abs().is_some_and(|a| a <= LIMIT_BITS))
                    .ok_or("one dimension's reach")?;
                if reach > 0 {
                    pos += reach;
                } else {
                    neg -= reach;
                }
            }
            if pos > LIMIT_BITS || neg > LIMIT_BITS {
                return Err("all dimensions' reach".into());
            }
            (-neg, pos + bits)
        }
    };
    let base = i128::from(byte_offset) * 8;
    if base + hi > LIMIT_BITS {
        return Err("byte_offset plus the span".into());
    }
    Ok(Some((
        (base + lo).div_euclid(8),
        (base + hi + 7).div_euclid(8),
    )))
}

/// Views of an accepted tensor, checked against the model; each success becomes the tensor the
/// next operation works on, and the source may be dropped first (the view keeps the data alive).
fn views(t: Tensor, input: &mut Input<'_>) {
    let mut current = t;
    let mut keep = Vec::new();
    for _ in 0..4 {
        if input.is_empty() {
            break;
        }
        let next = match input.u8() % 4 {
            0 => slice(&current, input),
            1 => as_strided(&current, input),
            2 => Some(reexport(&current)),
            _ => None,
        };
        if let Some(next) = next {
            // Sometimes drop the source before using the view.
            if input.bool() {
                keep.push(current);
            }
            current = next;
        }
    }
    // Reading every field of the last view after its sources may be gone.
    let _ = (
        current.shape().to_vec(),
        current.strides().to_vec(),
        current.byte_offset(),
    );
}

fn elem_bits(t: &Tensor) -> i128 {
    i128::from(t.dtype().bits()) * i128::from(t.dtype().lanes())
}

fn slice(t: &Tensor, input: &mut Input<'_>) -> Option<Tensor> {
    let axis = i64::from(input.u8() as i8);
    let start = input.edgy_i64();
    let stop = input.edgy_i64();
    let step = input.edgy_i64();
    let got = t.slice_step(axis, start, stop, step);
    let ndim = t.ndim() as i64;
    let ax = if axis < 0 { axis + ndim } else { axis };
    let byte_elements = elem_bits(t) % 8 == 0;
    if !(0..ndim).contains(&ax) || step <= 0 || !byte_elements {
        let e = got.expect_err("an invalid slice was accepted");
        assert!(
            matches!(&*e.kind(), "IndexError" | "ValueError"),
            "{}",
            e.message()
        );
        return None;
    }
    let ax = ax as usize;
    let dim = i128::from(t.shape()[ax]);
    let clamp = |i: i64| {
        let i = i128::from(i);
        (if i < 0 { i + dim } else { i }).clamp(0, dim)
    };
    let (start, stop) = (clamp(start), clamp(stop));
    let len = if stop > start {
        (stop - start - 1) / i128::from(step) + 1
    } else {
        0
    };
    let item = elem_bits(t) / 8;
    let s = i128::from(t.strides()[ax]);
    // A view without elements addresses nothing: it keeps the source's stride and offset.
    let empty = len == 0
        || t.shape()
            .iter()
            .enumerate()
            .any(|(k, &d)| k != ax && d == 0);
    // The first element's address, relative to the source's data pointer.
    let first = if empty {
        i128::from(t.byte_offset())
    } else {
        i128::from(t.byte_offset()) + start * s * item
    };
    // Before the data pointer, only an address (not a device handle) can move there.
    let direct = matches!(t.device().device_type(), 1..=3 | 10 | 11 | 13);
    // ... and no address lies below 0.
    if first < 0 && (!direct || (t.data_ptr() as usize as i128) < -first) {
        let e = got.expect_err("a slice before an opaque handle or address 0 was accepted");
        assert!(
            e.message().contains("before the data pointer"),
            "{}",
            e.message()
        );
        return None;
    }
    let v = got.unwrap_or_else(|e| panic!("a valid slice was refused: {}", e.message()));
    for k in 0..t.ndim() {
        if k == ax {
            assert_eq!(i128::from(v.shape()[k]), len);
            let stride = if len > 1 && !empty {
                s * i128::from(step)
            } else {
                s
            };
            assert_eq!(i128::from(v.strides()[k]), stride);
        } else {
            assert_eq!(v.shape()[k], t.shape()[k]);
            assert_eq!(v.strides()[k], t.strides()[k]);
        }
    }
    let address = |x: &Tensor| x.data_ptr() as usize as i128 + i128::from(x.byte_offset());
    assert_eq!(address(&v), t.data_ptr() as usize as i128 + first);
    if first >= 0 {
        assert_eq!(v.data_ptr(), t.data_ptr());
    }
    Some(v)
}

fn as_strided(t: &Tensor, input: &mut Input<'_>) -> Option<Tensor> {
    let n = usize::from(input.u8() % 5);
    let shape: Vec<i64> = (0..n).map(|_| input.edgy_i64()).collect();
    let strides: Vec<i64> = (0..n).map(|_| input.edgy_i64()).collect();
    let offset = match input.u8() % 3 {
        0 => t.byte_offset(),
        1 => u64::from(input.u8()),
        _ => input.edgy_u64(),
    };
    let got = t.as_strided(&shape, &strides, offset);
    let expected = (|| {
        if shape.iter().any(|&d| d < 0) {
            return Err("negative dimension".to_owned());
        }
        let bits = elem_bits(t);
        if bits % 8 != 0 {
            return Err("sub-byte elements".into());
        }
        let Some((lo, hi)) = extent(&shape, Some(&strides), bits, offset)? else {
            return Ok(());
        };
        let source = extent(t.shape(), Some(t.strides()), bits, t.byte_offset())
            .expect("an accepted tensor's extent");
        match source {
            Some((slo, shi)) if slo <= lo && hi <= shi => Ok(()),
            _ => Err("outside the source".into()),
        }
    })();
    match (got, expected) {
        (Ok(v), Ok(())) => {
            assert_eq!(v.shape(), &shape[..]);
            assert_eq!(v.strides(), &strides[..]);
            assert_eq!(v.byte_offset(), offset);
            assert_eq!(v.read_only(), t.read_only());
            Some(v)
        }
        (Err(e), Err(_)) => {
            assert_eq!(e.kind(), "ValueError", "{}", e.message());
            None
        }
        (Ok(_), Err(why)) => panic!(
            "as_strided({shape:?}, {strides:?}, {offset}) accepted ({why}) on {:?} {:?} {}",
            t.shape(),
            t.strides(),
            t.byte_offset()
        ),
        (Err(e), Ok(())) => panic!(
            "as_strided({shape:?}, {strides:?}, {offset}) refused: {} (source {:?} {:?} {})",
            e.message(),
            t.shape(),
            t.strides(),
            t.byte_offset()
        ),
    }
}

/// Exports as DLPack 1.x and imports the result again: the same tensor, sharing the data.
fn reexport(t: &Tensor) -> Tensor {
    let m = t.to_dlpack_versioned();
    // SAFETY: a managed tensor this runtime just made, handed over.
    let back = unsafe { Tensor::from_dlpack_versioned(m, 0, false) }
        .unwrap_or_else(|e| panic!("re-import failed: {}", e.message()));
    assert_eq!(back.shape(), t.shape());
    assert_eq!(back.strides(), t.strides());
    assert_eq!(back.byte_offset(), t.byte_offset());
    assert_eq!(back.data_ptr(), t.data_ptr());
    assert_eq!(back.dtype(), t.dtype());
    assert_eq!(back.read_only(), t.read_only());
    back
}
