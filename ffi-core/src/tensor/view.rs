//! Views: tensors sharing another tensor's data (`as_strided`, `slice`), keeping it alive.
//!
//! Bounds: a view may only address bytes its source addresses. The runtime cannot know how large
//! a foreign producer's buffer really is, but it knows the span the source tensor covers, and a
//! view inside that span is inside the buffer.

use super::extent::{addresses_directly, byte_extent};
use super::{Owner, Tensor, TensorParts, FLAG_BORROWED, FLAG_READ_ONLY};
use crate::error::{Error, Result};
use crate::{Device, ObjectRef};

/// Calls `f` with the element offset (in elements, from the first element) of every element, in
/// row-major order. `shape` must have no zero dimension (the caller skips empty tensors).
pub(crate) fn for_each_offset(shape: &[i64], strides: &[i64], mut f: impl FnMut(i64)) {
    let n = shape.len();
    let mut index = vec![0i64; n];
    let mut offset = 0i64;
    loop {
        f(offset);
        // Odometer: bump the last axis, carrying into earlier ones.
        let mut axis = n;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < shape[axis] {
                offset += strides[axis];
                break;
            }
            // Back to the axis' first element: `stride · (dim − 1)` is within the tensor's
            // checked extent, where `stride · dim` might not fit.
            offset -= strides[axis] * (shape[axis] - 1);
            index[axis] = 0;
        }
    }
}

impl Tensor {
    /// Bytes per element for views, or a ValueError for sub-byte types (their elements have no
    /// byte address).
    fn view_element_size(&self, func: &str) -> Result<i128> {
        let bits = self.dtype().bits() as u32 * self.dtype().lanes() as u32;
        if bits % 8 != 0 {
            return Err(Error::value_error(format!(
                "{func}: views of {} tensors are not supported (elements smaller than a byte)",
                self.dtype()
            )));
        }
        Ok((bits / 8) as i128)
    }

    /// The object a view should keep alive: the root of a chain of views, so views of views do
    /// not pile up references.
    fn view_root(&self) -> ObjectRef {
        // SAFETY: a head from this image, whose owner is live while `self` is.
        match self.own_head().map(|h| unsafe { &*super::owner_ptr(h) }) {
            Some(Owner::View(root)) => root.clone(),
            _ => self.as_object().clone(),
        }
    }

    /// A view with the given shape, strides (in elements) and byte offset (from `data_ptr()`, as
    /// in DLPack), sharing this tensor's data and keeping it alive. Read-only and borrowed
    /// tensors give read-only and borrowed views. The view must stay within the bytes this
    /// tensor addresses (ValueError otherwise).
    pub fn as_strided(&self, shape: &[i64], strides: &[i64], byte_offset: u64) -> Result<Tensor> {
        self.view("Tensor::as_strided", 0, shape, strides, byte_offset)
    }

    /// A view whose data pointer is this tensor's moved by `shift` bytes (non-zero only on
    /// devices whose pointers are addresses).
    fn view(
        &self,
        func: &str,
        shift: i64,
        shape: &[i64],
        strides: &[i64],
        byte_offset: u64,
    ) -> Result<Tensor> {
        if shape.len() != strides.len() {
            return Err(Error::value_error(format!(
                "{func}: shape has {} dimensions but strides has {}",
                shape.len(),
                strides.len()
            )));
        }
        if i32::try_from(shape.len()).is_err() {
            return Err(Error::value_error(format!(
                "{func}: {} dimensions is more than a DLTensor can hold",
                shape.len()
            )));
        }
        if let Some(i) = shape.iter().position(|&d| d < 0) {
            return Err(Error::value_error(format!(
                "{func}: `shape[{i}]` is negative ({})",
                shape[i]
            )));
        }
        let elem = self.view_element_size(func)? as u64 * 8;
        let extent = |shape, strides, byte_offset| {
            byte_extent(shape, Some(strides), elem, byte_offset, "")
                .map_err(|e| Error::value_error(format!("{func}: {e}")))
        };
        if let Some((lo, hi)) = extent(shape, strides, byte_offset)? {
            // Both relative to this tensor's data pointer.
            let (lo, hi) = (
                i128::from(lo) + i128::from(shift),
                i128::from(hi) + i128::from(shift),
            );
            let source = extent(self.shape(), self.strides(), self.byte_offset())?
                .map(|(a, b)| (i128::from(a), i128::from(b)));
            if !source.is_some_and(|(slo, shi)| slo <= lo && hi <= shi) {
                let source = source.map_or("none (it has no elements)".to_owned(), |(a, b)| {
                    format!("[{a}, {b})")
                });
                return Err(Error::value_error(format!(
                    "{func}: the view (shape {shape:?}, strides {strides:?}, byte_offset \
                     {byte_offset}) addresses bytes [{lo}, {hi}) of the data, outside the \
                     source's bytes {source}"
                )));
            }
        }
        let flags = self.rffi_flags();
        Ok(TensorParts {
            data: self.data_ptr().wrapping_byte_offset(shift as isize),
            device: self.device(),
            dtype: self.dtype(),
            shape,
            strides: Some(strides),
            byte_offset,
            read_only: flags & FLAG_READ_ONLY != 0,
            borrowed: flags & FLAG_BORROWED != 0,
            owner: Owner::View(self.view_root()),
        }
        .build())
    }

    /// Elements `start..stop` along `axis` (see [`Tensor::slice_step`]).
    pub fn slice(&self, axis: i64, start: i64, stop: i64) -> Result<Tensor> {
        self.slice_step(axis, start, stop, 1)
    }

    /// A view of every `step`-th element in `start..stop` along `axis`, with Python's rules:
    /// negative `axis`, `start` and `stop` count from the end, `start`/`stop` are clamped to the
    /// dimension (so `i64::MAX` means "to the end"), and an empty range gives an empty view. The
    /// axis must exist (IndexError) and `step` must be positive (ValueError).
    pub fn slice_step(&self, axis: i64, start: i64, stop: i64, step: i64) -> Result<Tensor> {
        const F: &str = "Tensor::slice";
        let ndim = self.ndim() as i64;
        let ax = if axis < 0 { axis + ndim } else { axis };
        if !(0..ndim).contains(&ax) {
            return Err(Error::index_error(format!(
                "{F}: axis {axis} is out of range for a {ndim}-d tensor"
            )));
        }
        if step <= 0 {
            return Err(Error::value_error(format!(
                "{F}: step must be positive, got {step}"
            )));
        }
        let ax = ax as usize;
        let dim = self.shape()[ax];
        let clamp = |i: i64| {
            let i = if i < 0 { i.saturating_add(dim) } else { i };
            i.clamp(0, dim)
        };
        let (start, stop) = (clamp(start), clamp(stop));
        let len = if stop > start {
            (stop - start - 1) / step + 1
        } else {
            0
        };
        let elem = self.view_element_size(F)?;
        let mut shape = self.shape().to_vec();
        let mut strides = self.strides().to_vec();
        let mut byte_offset = self.byte_offset();
        // A view without elements addresses nothing, so it keeps the source's offset: in a
        // tensor without elements a stride can be anything, and `start · stride` need not fit.
        let empty = len == 0 || shape.iter().enumerate().any(|(i, &d)| i != ax && d == 0);
        // Where the slice's first element is, in bytes from this tensor's data pointer: within
        // the checked extent when there are elements, so the i128 arithmetic is exact and fits.
        let mut shift = 0i64;
        if !empty {
            let first =
                i128::from(start) * i128::from(strides[ax]) * elem + i128::from(byte_offset);
            if first >= 0 {
                byte_offset = first as u64;
            } else if addresses_directly(self.device().device_type()) {
                // Before the data pointer (a negative stride): DLPack's byte_offset is unsigned,
                // so the view's data pointer moves back instead, as PyTorch exports such views.
                // No memory lies below address 0: a layout claiming some is refused, never
                // turned into a wrapped pointer.
                if (self.data_ptr() as usize as i128) < -first {
                    return Err(Error::value_error(format!(
                        "{F}: the slice starts {} bytes before the data pointer {:p} (stride {} \
                         on axis {ax}), below address 0",
                        -first,
                        self.data_ptr(),
                        strides[ax]
                    )));
                }
                shift = first as i64;
                byte_offset = 0;
            } else {
                return Err(Error::value_error(format!(
                    "{F}: the slice starts {} bytes before the data pointer (stride {} on axis \
                     {ax}), which on {} is a handle that cannot move",
                    -first,
                    strides[ax],
                    self.device()
                )));
            }
        }
        shape[ax] = len;
        // With at most one element left along the axis its stride is never used, nor is any
        // stride of a view without elements. Otherwise `stride · step` is at most the source's
        // `stride · (dim − 1)`, which its checked extent bounds.
        if len > 1 && !empty {
            strides[ax] = strides[ax].checked_mul(step).ok_or_else(|| {
                Error::value_error(format!(
                    "{F}: stride {} times step {step} does not fit in int64",
                    strides[ax]
                ))
            })?;
        }
        self.view(F, shift, &shape, &strides, byte_offset)
    }
}

/// Wraps a foreign Tensor whose `strides` is NULL in a view of ours with compact strides.
pub(crate) fn wrap_foreign_without_strides(t: Tensor) -> Tensor {
    TensorParts {
        data: t.data_ptr(),
        device: Device(t.dl_tensor().device),
        dtype: t.dtype(),
        shape: t.shape(),
        strides: None,
        byte_offset: t.byte_offset(),
        read_only: false,
        borrowed: false,
        owner: Owner::View(t.as_object().clone()),
    }
    .build()
}
