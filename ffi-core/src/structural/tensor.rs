//! Tensors in structural operations: dtype, shape and device, and the data as bytes in row-major
//! order when it is in host memory.

use crate::any::AnyView;
use crate::error::{Error, Result};
use crate::Tensor;
use std::borrow::Cow;

/// Device types whose memory this process reads directly: CPU, CUDA host and CUDA managed.
const HOST_READABLE: [i32; 3] = [1, 3, 13];

/// Whether the tensor's data can be read here.
pub(crate) fn host_readable(t: &Tensor) -> bool {
    HOST_READABLE.contains(&t.device().0.device_type)
}

/// The data in row-major order (copied only when the tensor is not compact).
pub(crate) fn tensor_bytes<'t>(t: &'t Tensor, what: &str) -> Result<Cow<'t, [u8]>> {
    if !host_readable(t) {
        return Err(Error::value_error(format!(
            "{what}: the data of a tensor on {} is device memory, not readable here; copy it to \
             the CPU first",
            t.device()
        )));
    }
    let n = t.nbytes();
    if n == 0 {
        return Ok(Cow::Borrowed(&[]));
    }
    let base = t.element_ptr().cast::<u8>().cast_const();
    if t.is_contiguous() {
        // SAFETY: a compact tensor in host memory holds `nbytes` bytes from its first element.
        return Ok(Cow::Borrowed(unsafe {
            core::slice::from_raw_parts(base, n)
        }));
    }
    let bits = t.dtype().bits() as usize * t.dtype().lanes() as usize;
    if bits % 8 != 0 {
        return Err(Error::value_error(format!(
            "{what}: a strided tensor of {} (sub-byte elements) cannot be read",
            t.dtype()
        )));
    }
    let item = bits / 8;
    let (shape, strides) = (t.shape(), t.strides());
    let mut out = Vec::with_capacity(n);
    let mut index = vec![0i64; shape.len()];
    loop {
        let offset: i64 = index.iter().zip(strides).map(|(i, s)| i * s).sum();
        // SAFETY: every index is inside the shape, so the element lies in the tensor's memory.
        let elem = unsafe {
            core::slice::from_raw_parts(base.offset(offset as isize * item as isize), item)
        };
        out.extend_from_slice(elem);
        // The next index in row-major order; done after the last.
        let mut d = shape.len();
        loop {
            if d == 0 {
                return Ok(Cow::Owned(out));
            }
            d -= 1;
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// Structural equality of two tensor values.
pub(crate) fn tensors_equal(l: &AnyView<'_>, r: &AnyView<'_>, skip_content: bool) -> Result<bool> {
    let (a, b) = (l.try_as::<Tensor>()?, r.try_as::<Tensor>()?);
    if a.same_as(&b) {
        return Ok(true);
    }
    if a.dtype() != b.dtype() || a.shape() != b.shape() || a.device() != b.device() {
        return Ok(false);
    }
    if skip_content {
        return Ok(true);
    }
    let what =
        "structural_equal (pass skip_tensor_content=True to compare tensors by dtype and shape)";
    Ok(tensor_bytes(&a, what)? == tensor_bytes(&b, what)?)
}
