//! `testing.*` tensor helpers, for the tests of every binding (C, Python).

use super::{Tensor, TensorMut};
use crate::error::{Error, Result};
use crate::function_registry::register_builtin;
use crate::{Array, DataType, Device, Shape};

register_builtin!("testing.tensor_shape", |t: Tensor| Shape::new(t.shape()));

register_builtin!("testing.tensor_strides", |t: Tensor| Shape::new(
    t.strides()
));

// Whether the argument arrived as a borrowed `DLTensor*`.
register_builtin!("testing.tensor_is_borrowed", |t: Tensor| t.is_borrowed());

register_builtin!("testing.tensor_is_read_only", |t: Tensor| t.read_only());

// Allocates through `Tensor::empty` (so through the environment allocator when one is set).
register_builtin!("testing.tensor_empty", |shape: Array,
                                           dtype: DataType,
                                           device: Device|
 -> Result<Tensor> {
    let dims = shape
        .iter()
        .enumerate()
        .map(|(i, d)| {
            d.try_as::<i64>().map_err(|e| {
                Error::type_error(format!(
                    "`testing.tensor_empty` shape[{i}]: {}",
                    e.message()
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::empty(&dims, dtype, device)
});

register_builtin!(
    "testing.tensor_slice",
    |t: Tensor, axis: i64, start: i64, stop: i64, step: i64| t.slice_step(axis, start, stop, step)
);

// Writes zeros into every element of a writable host tensor (any strides); refuses read-only
// tensors through `TensorMut`.
register_builtin!("testing.tensor_zero_", |t: TensorMut| -> Result<()> {
    if !super::host_accessible(t.device()) {
        return Err(Error::value_error(format!(
            "`testing.tensor_zero_`: tensor is on {}, not in host memory",
            t.device()
        )));
    }
    let bits = t.dtype().bits() as usize * t.dtype().lanes() as usize;
    if bits % 8 != 0 || t.numel() == 0 {
        return if t.numel() == 0 {
            Ok(())
        } else {
            Err(Error::value_error(format!(
                "`testing.tensor_zero_`: {} elements are smaller than a byte",
                t.dtype()
            )))
        };
    }
    let elem = bits / 8;
    let base = t.element_ptr().cast::<u8>();
    super::view::for_each_offset(t.shape(), t.strides(), |off| {
        // SAFETY: every offset is that of an element of this writable host tensor.
        unsafe {
            base.offset(off as isize * elem as isize)
                .write_bytes(0, elem)
        };
    });
    Ok(())
});

// An optional tensor parameter: None is "no tensor", a tensor (or a DLPack producer the caller
// converted) is one.
register_builtin!("testing.optional_tensor_view_has_value", |t: Option<
    Tensor,
>| t.is_some());
