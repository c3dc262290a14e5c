//! The memory layout of tensor objects made by rffi: the fixed head that every copy of rffi can
//! read, the shape/strides tail, the `Owner` that says what to release, and the deleter. Objects
//! are allocated, filled and handed over here (`TensorParts::build`, and the steps DLPack import
//! uses directly: `alloc_tensor`, `tail_ptr`, `finish_tensor`).

use super::{alloc, cache, Tensor};
use crate::abi::*;
use crate::object::{ObjectRef, INITIAL_COUNT};
use crate::{DataType, Device};
use core::ffi::c_void;
use core::ptr::NonNull;
use std::alloc::Layout;

/// Bits of `TensorHead::flags`. Part of the fixed layout: other copies of rffi read them.
pub(super) const FLAG_READ_ONLY: u32 = 1;
pub(super) const FLAG_BORROWED: u32 = 2;

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
pub(super) const TENSOR_MAGIC: u64 = u64::from_le_bytes(*b"rffiTen\x01");

/// Start of the shape/strides tail, fixed so another copy of rffi can recognise the layout.
pub(super) const TAIL_OFFSET: usize = size_of::<TensorHead>();

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
    pub(super) magic: u64,
    pub(super) flags: u32,
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

pub(super) type SmallBlocks = cache::FreeBlocks<SMALL_SIZE, TENSOR_ALIGN>;

/// This thread's cache of freed small tensor objects.
const SMALL_TENSORS: cache::Pick<SmallBlocks> = |b| &b.small_tensors;

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
pub(super) unsafe fn owner_ptr(head: *mut TensorHead) -> *mut Owner {
    // SAFETY: forwarded contract; `tail_ndim` gives back the layout it was built with.
    unsafe { head.byte_add(tensor_layout((*head).tail_ndim).1).cast() }
}

pub(super) unsafe extern "C" fn tensor_deleter(obj: *mut c_void, flags: i32) {
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
                cache::free(SMALL_TENSORS, NonNull::new_unchecked(obj.cast()));
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
        unsafe { cache::free(SMALL_TENSORS, obj) }
    } else {
        // SAFETY: the others come from the global allocator with `tensor_layout(n)`.
        unsafe { std::alloc::dealloc(obj.as_ptr(), tensor_layout(n).0) }
    }
}

/// Allocates a tensor object with an `n`-dimensional tail and writes its object header (one
/// strong reference, `tensor_deleter`) and `tail_ndim`. The caller fills shape and strides at
/// `TAIL_OFFSET`, then calls `finish_tensor` (or frees the memory with `free_unfinished`).
#[inline]
pub(super) fn alloc_tensor(n: usize) -> NonNull<TensorHead> {
    let t = if n <= SMALL_NDIM {
        cache::alloc(SMALL_TENSORS).cast::<TensorHead>()
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
pub(super) fn tail_ptr(t: NonNull<TensorHead>) -> *mut i64 {
    t.as_ptr().wrapping_byte_add(TAIL_OFFSET).cast()
}

/// Frees a tensor from `alloc_tensor` that `finish_tensor` was not called on.
///
/// # Safety
/// `t` came from `alloc_tensor(n)` and is not used afterwards.
#[cold]
#[inline(never)]
pub(super) unsafe fn free_unfinished(t: NonNull<TensorHead>, n: usize) {
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
pub(super) unsafe fn finish_tensor(
    t: NonNull<TensorHead>,
    n: usize,
    f: TensorFields,
    owner: Owner,
) -> Tensor {
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
                None => super::fill_compact_strides(
                    self.shape,
                    core::slice::from_raw_parts_mut(strides, n),
                ),
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
