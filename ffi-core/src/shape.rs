//! Shape: an immutable list of int64 dimensions stored in place after the cell.

use crate::abi::*;
use crate::object::{alloc_with_tail, static_object_type, ObjectRef};
use core::ffi::c_void;
use std::alloc::Layout;

/// An owned reference to a Shape object (type index 69).
#[derive(Clone)]
#[repr(transparent)]
pub struct Shape(ObjectRef);
static_object_type!(Shape, kRFFIShape, "ffi.Shape");
crate::any::object_any_conversions!(Shape);

const DIMS_OFFSET: usize = size_of::<RFFIObject>() + size_of::<RFFIShapeCell>();

fn shape_layout(ndim: usize) -> Layout {
    let bytes = ndim
        .checked_mul(8)
        .and_then(|b| b.checked_add(DIMS_OFFSET))
        .expect("shape too large");
    Layout::from_size_align(bytes, 8).expect("shape too large")
}

unsafe extern "C" fn shape_deleter(obj: *mut c_void, flags: i32) {
    if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
        // SAFETY: made by `Shape::new`; the cell's size gives back the allocation layout.
        unsafe {
            let cell = obj.cast::<RFFIObject>().add(1).cast::<RFFIShapeCell>();
            std::alloc::dealloc(obj.cast(), shape_layout((*cell).size));
        }
    }
}

impl Shape {
    /// A new shape of `dims`.
    pub fn new(dims: &[i64]) -> Shape {
        let n = dims.len();
        // SAFETY: the builder writes the cell and `n` dims, the whole tail; the deleter frees
        // the same layout.
        Shape(unsafe {
            alloc_with_tail(kRFFIShape, shape_layout(n), shape_deleter, |tail| {
                let data = tail.add(size_of::<RFFIShapeCell>()).cast::<i64>();
                core::ptr::copy_nonoverlapping(dims.as_ptr(), data, n);
                tail.cast::<RFFIShapeCell>()
                    .write(RFFIShapeCell { data, size: n });
            })
        })
    }

    /// The dimensions.
    pub fn as_slice(&self) -> &[i64] {
        // SAFETY: a Shape's cell describes `size` dims owned by the object (possibly a foreign
        // one following the same ABI).
        unsafe {
            let cell = &*self.0.cell_ptr::<RFFIShapeCell>();
            if cell.size == 0 {
                &[]
            } else {
                core::slice::from_raw_parts(cell.data, cell.size)
            }
        }
    }

    /// Number of elements (product of the dims).
    pub fn numel(&self) -> i64 {
        self.as_slice().iter().product()
    }
}

impl core::ops::Deref for Shape {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        self.as_slice()
    }
}

impl core::fmt::Debug for Shape {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Shape({:?})", self.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Any;

    #[test]
    fn shape_round_trip() {
        let s = Shape::new(&[2, 3, 4]);
        assert_eq!(&*s, &[2, 3, 4]);
        assert_eq!(s.numel(), 24);
        let a = Any::from(s.clone());
        assert_eq!(a.type_index(), kRFFIShape);
        assert_eq!(&*a.try_as::<Shape>().unwrap(), &[2, 3, 4]);
        assert_eq!(Shape::new(&[]).numel(), 1);
        let e = Any::from(1i64).try_as::<Shape>().unwrap_err();
        assert_eq!(e.message(), "expected ffi.Shape but got int");
    }
}
