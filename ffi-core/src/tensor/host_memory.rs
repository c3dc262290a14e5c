//! A tensor's elements from the CPU: `Element` (Rust types with a DLPack data type), copies in
//! (`Tensor::from_slice`) and out (`to_vec`), and borrowed slices of host-accessible tensors.

use super::{view, Tensor};
use crate::abi::*;
use crate::error::{Error, Result};
use crate::{DataType, Device};

/// Rust element types with a fixed DLPack data type, for copying data in and out of CPU tensors.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid `Self`, and `DTYPE` must
/// describe exactly that size (tensor memory is reinterpreted as `[Self]`).
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// The DLPack data type of the element.
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
pub(super) fn host_accessible(device: Device) -> bool {
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
