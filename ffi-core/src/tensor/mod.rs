//! Tensors: the `Tensor` object (type index 70, `"ffi.Tensor"`), zero-copy DLPack import and
//! export, allocation (built-in CPU allocator or a host-installed environment allocator), views,
//! and conversion from function arguments.
//!
//! Layout: the object header, then a `DLTensor` at offset 24, exactly as tvm-ffi lays out its
//! `TensorObj`, so foreign readers find the tensor at `obj + 24`; `strides` is always filled.
//! Tensors made by rffi continue with a fixed-layout private head (a magic, the read-only and
//! borrowed flags) and the shape/strides arrays at offset 96, then what to release (see
//! `TensorHead`). The fixed part lets any copy of rffi, including a plugin's, see the flags of a
//! tensor another copy made; a tensor made by another library (tvm-ffi) is read through its
//! `DLTensor` only and is never read-only or borrowed here.
//!
//! Arguments: a function taking `Tensor` accepts a Tensor object and a borrowed `DLTensor*`
//! (`kRFFIDLTensorPtr`). The latter becomes a *borrowed* Tensor (`is_borrowed()`): a fresh object
//! holding a copy of the `DLTensor` with its own shape and strides, and nothing to release. Its
//! data belongs to the caller and is valid only during the call; a callee that keeps the tensor
//! after returning (returns it, stores it) must copy the data instead.

pub(crate) mod alloc;
mod cache;
pub(crate) mod dlpack;
mod extent;
mod testing;
mod view;

// The C layouts live with the rest of the ABI; re-exported here where tensor code looks for them.
pub use crate::abi::{RFFIDLPackManagedTensorAllocator, RFFIDLPackSetError, RFFITensorObject};
pub use alloc::{env_allocator, set_env_allocator, RFFI_CPU_TENSOR_ALIGNMENT};

use crate::abi::*;
use crate::any::{Any, AnyView, FromAny, TypeMismatch};
use crate::error::{Error, Result};
use crate::object::{ObjectRef, ObjectType, INITIAL_COUNT};
use crate::type_registry::type_name;
use crate::{DataType, Device};
use core::ffi::c_void;
use core::ptr::NonNull;
use std::alloc::Layout;

/// An owned reference to a Tensor object (type index 70).
#[derive(Clone)]
#[repr(transparent)]
pub struct Tensor(ObjectRef);

/// Bits of `TensorHead::flags`. Part of the fixed layout: other copies of rffi read them.
const FLAG_READ_ONLY: u32 = 1;
const FLAG_BORROWED: u32 = 2;

/// What a tensor releases when its last reference dies. The DLPack imports come first and the
/// tag is a plain integer, so the deleter's common case is one compare.
#[repr(usize)]
pub(crate) enum Owner {
    /// A DLPack 1.x import: its deleter runs once.
    Versioned(NonNull<DLManagedTensorVersioned>) = 0,
    /// A legacy DLPack import: its deleter runs once.
    Legacy(NonNull<DLManagedTensor>) = 1,
    /// A view of a caller's `DLTensor*`: nothing (the data is the caller's).
    Borrowed = 2,
    /// `size` bytes from the built-in CPU allocator (aligned to `RFFI_CPU_TENSOR_ALIGNMENT`).
    Builtin { data: NonNull<u8>, size: usize } = 3,
    /// A view: keeps the source tensor (and so its data) alive.
    View(ObjectRef) = 4,
}

impl Drop for Owner {
    #[inline]
    fn drop(&mut self) {
        match *self {
            // SAFETY: the producer handed the managed tensor over on import; this is the one
            // place it is released (the deleter's shortcut does the same and then skips the drop).
            Owner::Versioned(m) => unsafe { release_versioned(m) },
            Owner::Legacy(m) => {
                // SAFETY: as for `Versioned`.
                unsafe {
                    if let Some(d) = (*m.as_ptr()).deleter {
                        d(m.as_ptr());
                    }
                }
            }
            Owner::Borrowed | Owner::View(_) => {}
            Owner::Builtin { data, size } => {
                // SAFETY: allocated by `alloc::builtin` with exactly this size and alignment
                // (a layout it checked).
                unsafe {
                    std::alloc::dealloc(
                        data.as_ptr(),
                        Layout::from_size_align_unchecked(size, alloc::RFFI_CPU_TENSOR_ALIGNMENT),
                    )
                }
            }
        }
    }
}

/// Runs a DLPack 1.x producer's deleter; a NULL deleter means "nothing to free".
///
/// # Safety
/// `m` was handed over on import and is released only this once, as DLPack requires.
#[inline(always)]
unsafe fn release_versioned(m: NonNull<DLManagedTensorVersioned>) {
    // SAFETY: forwarded contract; the managed tensor is valid until its deleter runs.
    unsafe {
        if let Some(d) = (*m.as_ptr()).deleter {
            d(m.as_ptr());
        }
    }
}

/// Marks the private part of a tensor laid out by rffi (any copy of it: the host's, a plugin's),
/// "rffiTen" plus a layout version in the last byte.
const TENSOR_MAGIC: u64 = u64::from_le_bytes(*b"rffiTen\x01");

/// Start of the shape/strides tail, fixed so another copy of rffi can recognise the layout.
const TAIL_OFFSET: usize = size_of::<TensorHead>();

/// The fixed-layout head of tensors made by rffi:
///
/// | offset | field |
/// |---|---|
/// | 0 | object header |
/// | 24 | `DLTensor` (the ABI) |
/// | 72 | `magic` = `TENSOR_MAGIC` |
/// | 80 | `flags` (`FLAG_READ_ONLY`, `FLAG_BORROWED`) |
/// | 88 | `tail_ndim` |
/// | 96 | shape[n], then strides[n]; `DLTensor::shape` points here |
/// | after | `Owner` (Rust layout: touched only by the image that made the tensor) |
///
/// Objects of up to `SMALL_NDIM` dimensions are all laid out as if they had `SMALL_NDIM` (the
/// owner at a fixed offset), so their memory can be reused (`tensor_layout`, `cache`).
///
/// The head is plain `repr(C)` data so that a plugin's copy of rffi (another image, perhaps
/// another compiler) can read the flags of a tensor the host made, and the other way round;
/// see `Tensor::rffi_head`.
#[repr(C)]
pub(crate) struct TensorHead {
    base: RFFITensorObject,
    magic: u64,
    flags: u32,
    _reserved: u32,
    /// ndim the tail was sized for; kept apart from `base.dl_tensor.ndim`, which foreign code can
    /// write through the pointer `RFFITensorGetDLTensorPtr` hands out.
    tail_ndim: usize,
}

const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(TensorHead, magic) == 72);
    assert!(offset_of!(TensorHead, flags) == 80);
    assert!(offset_of!(TensorHead, tail_ndim) == 88);
    assert!(TAIL_OFFSET == 96);
};

/// Alignment of tensor objects (that of the head; the owner needs no more, see below).
const TENSOR_ALIGN: usize = align_of::<TensorHead>();

const _: () = {
    // The owner follows the tail at an offset that is a multiple of 8 and ends the object with
    // no padding, so `tensor_layout` needs no rounding.
    assert!(align_of::<Owner>() <= TENSOR_ALIGN);
    assert!(size_of::<Owner>() % TENSOR_ALIGN == 0);
    assert!(TAIL_OFFSET % TENSOR_ALIGN == 0);
};

/// Tensors of up to this many dimensions (nearly all) share one object size, so their memory
/// can be reused through a per-thread cache (see `cache`).
const SMALL_NDIM: usize = 4;

/// Offset of the owner in a small tensor object, and the object's size.
const SMALL_OWNER_OFFSET: usize = TAIL_OFFSET + 2 * SMALL_NDIM * size_of::<i64>();
const SMALL_SIZE: usize = SMALL_OWNER_OFFSET + size_of::<Owner>();

type SmallBlocks = cache::FreeBlocks<SMALL_SIZE, TENSOR_ALIGN>;

thread_local! {
    /// This thread's freed small tensor objects.
    static SMALL_TENSORS: core::cell::UnsafeCell<SmallBlocks> =
        const { core::cell::UnsafeCell::new(SmallBlocks::new()) };
}

/// The layout of a tensor object with an `ndim`-dimensional tail, and the offset of its owner:
/// the head, shape[ndim], strides[ndim], then the `Owner`. Tensors of up to `SMALL_NDIM`
/// dimensions all get the layout of `SMALL_NDIM` (`SmallBlocks::LAYOUT`).
#[inline]
fn tensor_layout(ndim: usize) -> (Layout, usize) {
    if ndim <= SMALL_NDIM {
        return (SmallBlocks::LAYOUT, SMALL_OWNER_OFFSET);
    }
    // ndim comes from an i32, so the object is below 33 GiB and never overflows on 64-bit
    // targets; the checks only matter (and only cost a compare) on narrower ones.
    let owner_offset = ndim
        .checked_mul(2 * size_of::<i64>())
        .and_then(|tail| tail.checked_add(TAIL_OFFSET));
    let layout = owner_offset
        .and_then(|o| o.checked_add(size_of::<Owner>()))
        .and_then(|size| Layout::from_size_align(size, TENSOR_ALIGN).ok());
    match (layout, owner_offset) {
        (Some(layout), Some(offset)) => (layout, offset),
        _ => tensor_too_large(ndim),
    }
}

#[cold]
#[inline(never)]
fn tensor_too_large(ndim: usize) -> ! {
    panic!("a tensor object with {ndim} dimensions does not fit in the address space")
}

/// The owner of a tensor this image made.
///
/// # Safety
/// `head` must be a tensor made by `alloc_tensor` in this image.
#[inline]
unsafe fn owner_ptr(head: *mut TensorHead) -> *mut Owner {
    // SAFETY: forwarded contract; `tail_ndim` gives back the layout it was built with.
    unsafe { head.byte_add(tensor_layout((*head).tail_ndim).1).cast() }
}

unsafe extern "C" fn tensor_deleter(obj: *mut c_void, flags: i32) {
    let t = obj.cast::<TensorHead>();
    // SAFETY: `tail_ndim` is a plain integer written by `alloc_tensor`.
    let n = unsafe { (*t).tail_ndim };
    if flags == kRFFIObjectDeleterFlagBitMaskBoth && n <= SMALL_NDIM {
        // SAFETY: the owner of a small object, live: the protocol calls this once with both
        // bits while the body is live.
        let owner = unsafe { &*t.byte_add(SMALL_OWNER_OFFSET).cast::<Owner>() };
        if let &Owner::Versioned(m) = owner {
            // The usual case: the last reference to a DLPack 1.x import, whose owner holds
            // nothing else to drop. The memory goes first, so that the producer's deleter (which
            // may do anything) runs last, as a tail call.
            // SAFETY: a small object from `alloc_tensor`, not touched again; the producer's
            // tensor is released once, here.
            unsafe {
                cache::free(&SMALL_TENSORS, NonNull::new_unchecked(obj.cast()));
                release_versioned(m);
            }
            return;
        }
    }
    // SAFETY: forwarded from the protocol.
    unsafe { tensor_deleter_general(t, n, flags) }
}

/// `tensor_deleter` for every other owner and for the two-step (strong, then weak) protocol.
///
/// # Safety
/// As `tensor_deleter`, with `n` the object's `tail_ndim`.
#[inline(never)]
unsafe fn tensor_deleter_general(t: *mut TensorHead, n: usize, flags: i32) {
    if flags & kRFFIObjectDeleterFlagBitMaskStrong != 0 {
        // SAFETY: the protocol calls this once with the strong bit while the body is live; the
        // owner, at the offset the object was laid out with, is the only field to drop.
        unsafe { core::ptr::drop_in_place(t.byte_add(tensor_layout(n).1).cast::<Owner>()) };
    }
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        // SAFETY: allocated by `alloc_tensor(n)` (so not NULL); the owner was dropped above or by
        // an earlier strong-only call, so only the memory is left.
        unsafe { free_tensor_memory(NonNull::new_unchecked(t.cast()), n) };
    }
}

/// Frees the memory of a tensor object with an `n`-dimensional tail.
///
/// # Safety
/// `obj` came from `alloc_tensor(n)`, holds nothing that needs dropping, and is not used again.
#[inline]
unsafe fn free_tensor_memory(obj: NonNull<u8>, n: usize) {
    if n <= SMALL_NDIM {
        // SAFETY: small objects come from `cache::alloc` on this cache (see `alloc_tensor`).
        unsafe { cache::free(&SMALL_TENSORS, obj) }
    } else {
        // SAFETY: the others come from the global allocator with `tensor_layout(n)`.
        unsafe { std::alloc::dealloc(obj.as_ptr(), tensor_layout(n).0) }
    }
}

/// Allocates a tensor object with an `n`-dimensional tail and writes its object header (one
/// strong reference, `tensor_deleter`) and `tail_ndim`. The caller fills shape and strides at
/// `TAIL_OFFSET`, then calls `finish_tensor` (or frees the memory with `free_unfinished`).
#[inline]
fn alloc_tensor(n: usize) -> NonNull<TensorHead> {
    let t = if n <= SMALL_NDIM {
        cache::alloc(&SMALL_TENSORS).cast::<TensorHead>()
    } else {
        let (layout, _) = tensor_layout(n);
        // SAFETY: the layout has a non-zero size (at least the head).
        let mem = unsafe { std::alloc::alloc(layout) }.cast::<TensorHead>();
        let Some(t) = NonNull::new(mem) else {
            std::alloc::handle_alloc_error(layout)
        };
        t
    };
    // SAFETY: fresh memory, large enough for the head; header and `tail_ndim` are written
    // field by field, the rest of the head by `finish_tensor`.
    unsafe {
        let p = t.as_ptr();
        (&raw mut (*p).base.header).write(RFFIObject {
            combined_ref_count: INITIAL_COUNT,
            type_index: kRFFITensor,
            __padding: 0,
            deleter: Some(tensor_deleter),
        });
        (&raw mut (*p).tail_ndim).write(n);
    }
    t
}

/// The shape array of a tensor from `alloc_tensor` (strides follow at `+ n`): `TAIL_OFFSET`
/// bytes in, inside the allocation.
#[inline]
fn tail_ptr(t: NonNull<TensorHead>) -> *mut i64 {
    t.as_ptr().wrapping_byte_add(TAIL_OFFSET).cast()
}

/// Frees a tensor from `alloc_tensor` that `finish_tensor` was not called on.
///
/// # Safety
/// `t` came from `alloc_tensor(n)` and is not used afterwards.
#[cold]
#[inline(never)]
unsafe fn free_unfinished(t: NonNull<TensorHead>, n: usize) {
    // SAFETY: forwarded contract; nothing in it needs dropping.
    unsafe { free_tensor_memory(t.cast(), n) }
}

/// The fields `finish_tensor` writes into the `DLTensor` and the head.
pub(crate) struct TensorFields {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub dtype: DLDataType,
    pub byte_offset: u64,
    pub flags: u32,
}

/// Completes a tensor from `alloc_tensor(n)` whose shape and strides are filled: writes the
/// `DLTensor`, the rest of the head and the owner, and hands over the one reference.
///
/// # Safety
/// `t` came from `alloc_tensor(n)` with the tail filled; `n` fits in i32.
#[inline(always)]
unsafe fn finish_tensor(t: NonNull<TensorHead>, n: usize, f: TensorFields, owner: Owner) -> Tensor {
    let p = t.as_ptr();
    let shape = tail_ptr(t);
    // SAFETY: the fields of a fresh object of `tensor_layout(n)`, written once; the header was
    // written by `alloc_tensor`, so the object is complete and its reference can be handed over.
    unsafe {
        (&raw mut (*p).base.dl_tensor).write(DLTensor {
            data: f.data,
            device: f.device,
            ndim: n as i32,
            dtype: f.dtype,
            shape,
            strides: shape.add(n),
            byte_offset: f.byte_offset,
        });
        (&raw mut (*p).magic).write(TENSOR_MAGIC);
        (&raw mut (*p).flags).write(f.flags);
        (&raw mut (*p)._reserved).write(0);
        p.byte_add(tensor_layout(n).1).cast::<Owner>().write(owner);
        Tensor(ObjectRef::from_raw(t.cast()))
    }
}

/// Everything a new tensor object needs; `shape`/`strides` are copied into the object.
pub(crate) struct TensorParts<'a> {
    pub data: *mut c_void,
    pub device: Device,
    pub dtype: DataType,
    pub shape: &'a [i64],
    /// `None`: compact row-major strides are computed.
    pub strides: Option<&'a [i64]>,
    pub byte_offset: u64,
    pub read_only: bool,
    pub borrowed: bool,
    pub owner: Owner,
}

impl TensorParts<'_> {
    /// Builds the object. The caller has validated the parts (`shape.len()` fits in i32, shape
    /// entries non-negative, `strides` of the same length).
    pub(crate) fn build(self) -> Tensor {
        let n = self.shape.len();
        debug_assert!(i32::try_from(n).is_ok());
        debug_assert!(self.strides.is_none_or(|s| s.len() == n));
        let flags = (if self.read_only { FLAG_READ_ONLY } else { 0 })
            | (if self.borrowed { FLAG_BORROWED } else { 0 });
        let t = alloc_tensor(n);
        let shape = tail_ptr(t);
        // SAFETY: the tail of a fresh `alloc_tensor(n)` holds 2n i64s, disjoint from the
        // caller's slices; once filled, `finish_tensor` completes the object.
        unsafe {
            let strides = shape.add(n);
            core::ptr::copy_nonoverlapping(self.shape.as_ptr(), shape, n);
            match self.strides {
                Some(s) => core::ptr::copy_nonoverlapping(s.as_ptr(), strides, n),
                None => {
                    fill_compact_strides(self.shape, core::slice::from_raw_parts_mut(strides, n))
                }
            }
            finish_tensor(
                t,
                n,
                TensorFields {
                    data: self.data,
                    device: self.device.raw(),
                    dtype: self.dtype.raw(),
                    byte_offset: self.byte_offset,
                    flags,
                },
                self.owner,
            )
        }
    }
}

/// Compact row-major strides (in elements). Dimensions of size 0 count as 1, as PyTorch does, and
/// the product saturates: both only matter for tensors without elements, where any stride is valid.
pub(crate) fn fill_compact_strides(shape: &[i64], strides: &mut [i64]) {
    let mut acc: i64 = 1;
    for (st, &dim) in strides.iter_mut().zip(shape).rev() {
        *st = acc;
        acc = acc.saturating_mul(dim.max(1));
    }
}

/// Number of elements, or `None` if it does not fit in i64. Dimensions must be non-negative.
pub(crate) fn checked_numel(shape: &[i64]) -> Option<i64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d))
}

/// Contiguity as tvm-ffi and PyTorch define it: compact row-major strides, ignoring dimensions of
/// size 1 (their stride is arbitrary); a tensor without elements is contiguous.
pub(crate) fn is_contiguous_parts(shape: &[i64], strides: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected: i64 = 1;
    for (&dim, &st) in shape.iter().zip(strides).rev() {
        if dim == 1 {
            continue;
        }
        if st != expected {
            return false;
        }
        expected = expected.saturating_mul(dim);
    }
    true
}

/// Whether data pointers on `device` are addresses (CPU, CUDA, ROCm and their host and managed
/// memory), so that pointer arithmetic on them means something; on the others (OpenCL, Vulkan,
/// ...) they are opaque handles and only `byte_offset` may move.
pub(crate) fn addresses_directly(device: i32) -> bool {
    device <= kDLCUDAHost || device == kDLCUDAManaged || device == kDLROCM || device == kDLROCMHost
}

/// Whether `data + byte_offset` of a tensor on `device` is aligned: by address on devices whose
/// pointers are addresses, by `byte_offset` alone on the others (OpenCL, Vulkan, ... hand out
/// opaque handles), as tvm-ffi checks it.
pub(crate) fn is_aligned_parts(
    data: *mut c_void,
    byte_offset: u64,
    device: i32,
    alignment: usize,
) -> bool {
    if alignment <= 1 {
        return true;
    }
    if addresses_directly(device) {
        (data as usize as u64).wrapping_add(byte_offset) % alignment as u64 == 0
    } else {
        byte_offset % alignment as u64 == 0
    }
}

impl Tensor {
    /// The `DLTensor` at offset 24.
    #[inline]
    pub fn dl_tensor(&self) -> &DLTensor {
        // SAFETY: every Tensor object (ours or foreign) holds a DLTensor at offset 24, alive as
        // long as our reference.
        unsafe { &*self.0.cell_ptr::<DLTensor>() }
    }

    /// The `DLTensor` pointer handed to C (`RFFITensorGetDLTensorPtr`, kernel arguments).
    #[inline]
    pub fn as_dltensor_ptr(&self) -> *mut DLTensor {
        self.0.cell_ptr::<DLTensor>()
    }

    /// The head, if this image made the tensor (only then may its `Owner` be read).
    #[inline]
    fn own_head(&self) -> Option<*mut TensorHead> {
        // SAFETY: reading the header of a live object; a deleter equal to ours marks a body laid
        // out by `TensorParts::build` in this image.
        unsafe {
            let header = &*self.0.as_ptr();
            let ours: unsafe extern "C" fn(*mut c_void, i32) = tensor_deleter;
            header
                .deleter
                .is_some_and(|d| core::ptr::fn_addr_eq(d, ours))
                .then(|| self.0.as_ptr().cast::<TensorHead>())
        }
    }

    /// The head, if any copy of rffi laid the tensor out (this image, or another: a plugin's
    /// copy of the runtime, or the host's when this is a plugin). Recognised by structure: its
    /// `shape` points at offset 96 of the object, which proves the object extends that far, and
    /// the magic at offset 72 matches.
    #[inline]
    fn rffi_head(&self) -> Option<&TensorHead> {
        let obj = self.0.as_ptr().cast::<TensorHead>();
        if self.own_head().is_none() {
            let tail = obj.cast::<u8>().wrapping_add(TAIL_OFFSET);
            if self.dl_tensor().shape.cast::<u8>() != tail {
                return None;
            }
            // SAFETY: the object's own shape array starts at offset 96, so its memory covers
            // the 24 bytes after the DLTensor read here.
            if unsafe { (*obj).magic } != TENSOR_MAGIC {
                return None;
            }
        }
        // SAFETY: an rffi head (this image's, or checked above), alive as long as `self`.
        Some(unsafe { &*obj })
    }

    #[inline]
    fn rffi_flags(&self) -> u32 {
        self.rffi_head().map_or(0, |h| h.flags)
    }

    /// Number of dimensions.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.dl_tensor().ndim.max(0) as usize
    }

    /// The dimensions.
    pub fn shape(&self) -> &[i64] {
        let dl = self.dl_tensor();
        let n = self.ndim();
        if n == 0 || dl.shape.is_null() {
            return &[];
        }
        // SAFETY: a Tensor's shape holds ndim entries owned by the object.
        unsafe { core::slice::from_raw_parts(dl.shape, n) }
    }

    /// The strides, in elements (always filled: compact strides when the producer gave none).
    pub fn strides(&self) -> &[i64] {
        let dl = self.dl_tensor();
        let n = self.ndim();
        if n == 0 || dl.strides.is_null() {
            // Only a foreign object breaking the ABI's "strides always filled" rule gets here;
            // `from_object` wraps such objects, so this is unreachable from safe code.
            return &[];
        }
        // SAFETY: as for `shape`.
        unsafe { core::slice::from_raw_parts(dl.strides, n) }
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DataType {
        DataType(self.dl_tensor().dtype)
    }

    /// The device the data lives on.
    #[inline]
    pub fn device(&self) -> Device {
        Device(self.dl_tensor().device)
    }

    /// Number of elements (1 for a 0-d tensor).
    pub fn numel(&self) -> i64 {
        // Tensors made or imported here have a count that fits; a foreign object that does not
        // saturates instead of overflowing.
        checked_numel(self.shape()).unwrap_or(i64::MAX)
    }

    /// Bytes the elements take when packed (sub-byte types rounded up to whole bytes).
    pub fn nbytes(&self) -> usize {
        let bits =
            self.numel() as u128 * self.dtype().bits() as u128 * self.dtype().lanes() as u128;
        bits.div_ceil(8) as usize
    }

    /// The `data` field: the start of the allocation, *without* `byte_offset` (as in DLPack and
    /// tvm-ffi). See [`Tensor::element_ptr`].
    #[inline]
    pub fn data_ptr(&self) -> *mut c_void {
        self.dl_tensor().data
    }

    /// Offset of the first element from `data_ptr()`, in bytes.
    #[inline]
    pub fn byte_offset(&self) -> u64 {
        self.dl_tensor().byte_offset
    }

    /// Address of the first element: `data_ptr() + byte_offset()` (meaningful on devices whose
    /// pointers are addresses).
    #[inline]
    pub fn element_ptr(&self) -> *mut c_void {
        let dl = self.dl_tensor();
        dl.data
            .cast::<u8>()
            .wrapping_add(dl.byte_offset as usize)
            .cast()
    }

    /// Compact row-major layout (dimensions of size 1 ignored; empty tensors are contiguous).
    pub fn is_contiguous(&self) -> bool {
        is_contiguous_parts(self.shape(), self.strides())
    }

    /// Whether `data + byte_offset` is aligned to `alignment` bytes (see `require_alignment`).
    pub fn is_aligned(&self, alignment: usize) -> bool {
        let dl = self.dl_tensor();
        is_aligned_parts(dl.data, dl.byte_offset, dl.device.device_type, alignment)
    }

    /// Whether the producer marked the data read-only (`DLPACK_FLAG_BITMASK_READ_ONLY`); views
    /// inherit it. Functions that write take [`TensorMut`], which refuses such tensors.
    #[inline]
    pub fn read_only(&self) -> bool {
        self.rffi_flags() & FLAG_READ_ONLY != 0
    }

    /// Whether this tensor views a caller's borrowed `DLTensor*` (a `kRFFIDLTensorPtr` argument):
    /// its data is valid only during the call that received it.
    #[inline]
    pub fn is_borrowed(&self) -> bool {
        self.rffi_flags() & FLAG_BORROWED != 0
    }

    /// The data pointer for writing, or a ValueError if the tensor is read-only.
    pub fn data_ptr_mut(&self) -> Result<*mut c_void> {
        if self.read_only() {
            return Err(Error::value_error(format!(
                "cannot write to a read-only tensor ({self:?})"
            )));
        }
        Ok(self.data_ptr())
    }

    pub fn as_object(&self) -> &ObjectRef {
        &self.0
    }

    pub fn as_raw(&self) -> *mut RFFIObject {
        self.0.as_ptr()
    }

    /// Pointer identity.
    pub fn same_as(&self, other: &Tensor) -> bool {
        self.0.same_as(&other.0)
    }

    /// A borrowed Tensor over a caller's `DLTensor` (what a `kRFFIDLTensorPtr` argument becomes):
    /// the fields are validated and copied, `shape` and `strides` into the new object, and nothing
    /// is released when it dies.
    ///
    /// # Safety
    /// `dl` must point to a `DLTensor` whose `shape` (and non-NULL `strides`) hold `ndim` entries.
    /// The data must stay valid as long as the returned tensor is used.
    pub unsafe fn from_dltensor_borrowed(dl: NonNull<DLTensor>) -> Result<Tensor> {
        // SAFETY: forwarded contract.
        unsafe { dlpack::borrow_dltensor(dl.as_ref()) }
            .map_err(|e| Error::value_error(format!("Tensor::from_dltensor_borrowed: {e}")))
    }
}

impl Tensor {
    /// A foreign tensor object breaking the ABI's "strides always filled" rule, which
    /// `from_object` wraps.
    #[inline]
    fn lacks_strides(&self) -> bool {
        let dl = self.dl_tensor();
        dl.ndim > 0 && dl.strides.is_null() && self.rffi_head().is_none()
    }

    /// A live object as a Tensor without a reference of its own, if it is a Tensor that
    /// `from_object` takes as it is (`None` for other types, and for the tensors it wraps).
    ///
    /// # Safety
    /// `obj` must be a live object, and the result must not be used after the caller's
    /// reference is gone. The result is never dropped, so it releases nothing.
    #[inline]
    pub(crate) unsafe fn borrow_object(
        obj: NonNull<RFFIObject>,
    ) -> Option<core::mem::ManuallyDrop<Tensor>> {
        // SAFETY: a live object per the contract; its header says whether it is a tensor, and
        // then the wrapper only lives as long as the caller's reference.
        unsafe {
            if (*obj.as_ptr()).type_index != kRFFITensor {
                return None;
            }
            let t = core::mem::ManuallyDrop::new(Tensor(ObjectRef::from_raw(obj)));
            (!t.lacks_strides()).then_some(t)
        }
    }
}

impl core::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={}, device={}",
            self.shape(),
            self.dtype(),
            self.device()
        )?;
        if !self.is_contiguous() {
            write!(f, ", strides={:?}", self.strides())?;
        }
        if self.read_only() {
            write!(f, ", read_only")?;
        }
        write!(f, ")")
    }
}

// SAFETY: `Tensor` is `#[repr(transparent)]` over ObjectRef and only built from objects of index
// `kRFFITensor` (checked in `from_object`).
unsafe impl ObjectType for Tensor {
    const TYPE_KEY: &'static str = "ffi.Tensor";

    #[inline]
    fn type_index() -> i32 {
        kRFFITensor
    }

    #[inline]
    fn as_object(&self) -> &ObjectRef {
        &self.0
    }

    #[inline]
    unsafe fn from_object_unchecked(obj: ObjectRef) -> Self {
        Tensor(obj)
    }

    /// Checks the type index. A foreign Tensor whose `strides` is NULL (the ABI says it never is,
    /// but a producer may break the rule) is wrapped in a view of ours with compact strides, so
    /// `strides()` can always return the real strides.
    fn from_object(obj: ObjectRef) -> Result<Self, ObjectRef> {
        if obj.type_index() != kRFFITensor {
            return Err(obj);
        }
        let t = Tensor(obj);
        if t.lacks_strides() {
            return Ok(view::wrap_foreign_without_strides(t));
        }
        Ok(t)
    }

    fn into_object(self) -> ObjectRef {
        self.0
    }
}

impl FromAny for Tensor {
    const EXPECTED: &'static str = "ffi.Tensor";

    /// A Tensor object, an rvalue reference to one, or a borrowed `DLTensor*` (see the module
    /// docs for the lifetime of the latter).
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        let raw = v.as_raw();
        match raw.type_index {
            kRFFIDLTensorPtr => {
                // SAFETY: a DLTensorPtr value keeps a `DLTensor*` in v_ptr.
                let p = unsafe { raw.v.v_ptr }.cast::<DLTensor>();
                let Some(p) = NonNull::new(p) else {
                    return Err(TypeMismatch {
                        expected: Self::EXPECTED,
                        actual: "DLTensor* (NULL)".into(),
                    });
                };
                // SAFETY: the caller passes a valid DLTensor for the duration of the call.
                unsafe { dlpack::borrow_dltensor(p.as_ref()) }.map_err(|e| TypeMismatch {
                    expected: Self::EXPECTED,
                    actual: format!("an invalid DLTensor* ({e})"),
                })
            }
            _ => {
                let obj = ObjectRef::from_any(v).map_err(|mut m| {
                    m.expected = Self::EXPECTED;
                    m
                })?;
                Tensor::from_object(obj).map_err(|o| TypeMismatch {
                    expected: Self::EXPECTED,
                    actual: type_name(o.type_index()),
                })
            }
        }
    }
}

impl From<Tensor> for Any {
    fn from(t: Tensor) -> Any {
        Any::from(t.0)
    }
}

impl From<&Tensor> for Any {
    fn from(t: &Tensor) -> Any {
        Any::from(t.0.clone())
    }
}

/// A tensor argument the function writes to: converts like [`Tensor`] but refuses read-only
/// tensors, so a read-only import cannot be modified through a typed function.
#[derive(Clone, Debug)]
pub struct TensorMut(Tensor);

impl TensorMut {
    /// `t` if it is writable, else a ValueError.
    pub fn new(t: Tensor) -> Result<TensorMut> {
        t.data_ptr_mut()?;
        Ok(TensorMut(t))
    }

    pub fn into_inner(self) -> Tensor {
        self.0
    }
}

impl core::ops::Deref for TensorMut {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        &self.0
    }
}

impl FromAny for TensorMut {
    const EXPECTED: &'static str = "writable ffi.Tensor";
    fn from_any(v: &AnyView<'_>) -> Result<Self, TypeMismatch> {
        let t = Tensor::from_any(v).map_err(|mut m| {
            m.expected = Self::EXPECTED;
            m
        })?;
        if t.read_only() {
            return Err(TypeMismatch {
                expected: Self::EXPECTED,
                actual: "read-only ffi.Tensor".into(),
            });
        }
        Ok(TensorMut(t))
    }
}

impl From<TensorMut> for Any {
    fn from(t: TensorMut) -> Any {
        Any::from(t.0)
    }
}

/// Rust element types with a fixed DLPack data type, for copying data in and out of CPU tensors.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid `Self`, and `DTYPE` must
/// describe exactly that size (tensor memory is reinterpreted as `[Self]`).
pub unsafe trait Element: Copy + Send + Sync + 'static {
    const DTYPE: DataType;
}

macro_rules! elements {
    ($($t:ty => $dt:expr),*) => {$(
        // SAFETY: a plain integer or float type, for which every bit pattern is valid, and the
        // data type of its exact size.
        unsafe impl Element for $t {
            const DTYPE: DataType = $dt;
        }
    )*};
}
elements!(
    i8 => DataType::int(8), i16 => DataType::int(16), i32 => DataType::int(32),
    i64 => DataType::int(64), u8 => DataType::uint(8), u16 => DataType::uint(16),
    u32 => DataType::uint(32), u64 => DataType::uint(64), f32 => DataType::float(32),
    f64 => DataType::float(64)
);

/// Device types whose memory the host can read and write directly.
fn host_accessible(device: Device) -> bool {
    matches!(
        device.device_type(),
        kDLCPU | kDLCUDAHost | kDLROCMHost | kDLCUDAManaged
    )
}

impl Tensor {
    /// A new CPU tensor holding a copy of `data`, with the given shape (built-in allocator).
    pub fn from_slice<T: Element>(data: &[T], shape: &[i64]) -> Result<Tensor> {
        let t = Tensor::alloc_cpu(shape, T::DTYPE)?;
        if t.numel() as usize != data.len() {
            return Err(Error::value_error(format!(
                "Tensor::from_slice: shape {shape:?} has {} elements but {} values were given",
                t.numel(),
                data.len()
            )));
        }
        if !data.is_empty() {
            // SAFETY: a fresh compact CPU tensor of exactly `data.len()` elements of `T`.
            unsafe {
                core::ptr::copy_nonoverlapping(data.as_ptr(), t.element_ptr().cast(), data.len())
            };
        }
        Ok(t)
    }

    fn check_host_elements<T: Element>(&self, func: &str) -> Result<()> {
        if self.dtype() != T::DTYPE {
            return Err(Error::type_error(format!(
                "{func}: tensor has dtype {} but {} was requested",
                self.dtype(),
                T::DTYPE
            )));
        }
        if !host_accessible(self.device()) {
            return Err(Error::value_error(format!(
                "{func}: tensor is on {}, not in host memory",
                self.device()
            )));
        }
        if self.numel() > 0 && self.element_ptr() as usize % align_of::<T>() != 0 {
            return Err(Error::value_error(format!(
                "{func}: first element at {:p} is not aligned for {}",
                self.element_ptr(),
                T::DTYPE
            )));
        }
        Ok(())
    }

    /// The elements of a contiguous host tensor, borrowed.
    ///
    /// # Safety
    /// Nobody may write the data (through another Tensor sharing it, C code, a kernel) while the
    /// slice is alive.
    pub unsafe fn as_slice<T: Element>(&self) -> Result<&[T]> {
        self.check_host_elements::<T>("Tensor::as_slice")?;
        if !self.is_contiguous() {
            return Err(Error::value_error(format!(
                "Tensor::as_slice: tensor is not contiguous ({self:?})"
            )));
        }
        let n = self.numel() as usize;
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: a contiguous host tensor of `n` elements of `T` (dtype checked), aligned; the
        // caller rules out concurrent writes.
        Ok(unsafe { core::slice::from_raw_parts(self.element_ptr().cast(), n) })
    }

    /// The elements of a contiguous, writable host tensor, mutably borrowed.
    ///
    /// # Safety
    /// Nobody else may read or write the data while the slice is alive (Tensors are shared
    /// references, so the borrow checker cannot see other users of the same buffer).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice<T: Element>(&self) -> Result<&mut [T]> {
        self.data_ptr_mut()?;
        // SAFETY: forwarded contract.
        let s = unsafe { self.as_slice::<T>() }?;
        // SAFETY: the tensor is writable and the caller guarantees exclusive access.
        Ok(unsafe { core::slice::from_raw_parts_mut(s.as_ptr().cast_mut(), s.len()) })
    }

    /// A copy of the elements of a host tensor in row-major order (any strides).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.check_host_elements::<T>("Tensor::to_vec")?;
        let n = self.numel() as usize;
        let mut out = Vec::with_capacity(n);
        if n == 0 {
            return Ok(out);
        }
        let base = self.element_ptr().cast::<T>();
        view::for_each_offset(self.shape(), self.strides(), |off| {
            // SAFETY: every offset produced is that of an element of this tensor, which the
            // producer made readable on the host (device checked above).
            out.push(unsafe { base.offset(off as isize).read() });
        });
        Ok(out)
    }
}
