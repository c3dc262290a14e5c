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
//!
//! Where things are: this module holds `Tensor` and what it reads of any tensor object;
//! `layout` the object layout of tensors made here (head, tail, owner, deleter, building);
//! `convert` tensors as values (object type, arguments, results, `TensorMut`); `host_memory`
//! the elements from the CPU; `dlpack` import and export; `view` views and slices; `alloc`
//! allocation; `extent` the checked shape and stride arithmetic; `cache` the per-thread block
//! cache.

pub(crate) mod alloc;
mod cache;
mod convert;
pub(crate) mod dlpack;
#[cfg(feature = "dlpack")]
mod dlpack_crate;
mod extent;
mod host_memory;
mod layout;
mod testing;
mod view;

// The C layouts live with the rest of the ABI; re-exported here where tensor code looks for them.
pub use crate::abi::{RFFIDLPackManagedTensorAllocator, RFFIDLPackSetError, RFFITensorObject};
pub use alloc::{env_allocator, set_env_allocator, RFFI_CPU_TENSOR_ALIGNMENT};
pub use convert::TensorMut;
pub use host_memory::Element;

pub(crate) use cache::ThreadBlocks;
pub(crate) use extent::{
    checked_numel, fill_compact_strides, is_aligned_parts, is_contiguous_parts,
};
use host_memory::host_accessible;
use layout::{
    alloc_tensor, finish_tensor, free_unfinished, owner_ptr, tail_ptr, tensor_deleter,
    FLAG_BORROWED, FLAG_READ_ONLY, TAIL_OFFSET, TENSOR_MAGIC,
};
pub(crate) use layout::{Owner, TensorFields, TensorHead, TensorParts};

use crate::abi::*;
use crate::error::{Error, Result};
use crate::object::ObjectRef;
use crate::{DataType, Device};
use core::ffi::c_void;
use core::ptr::NonNull;

/// An owned reference to a Tensor object (type index 70).
#[derive(Clone)]
#[repr(transparent)]
pub struct Tensor(ObjectRef);

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

    /// The reference as a plain object.
    pub fn as_object(&self) -> &ObjectRef {
        &self.0
    }

    /// The Tensor object's address (this reference keeps it alive); the `DLTensor` is at offset 24.
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
