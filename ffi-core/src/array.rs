//! Array: an immutable sequence of owned values, stored in place after the cell.

use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::object::{alloc_with_tail, static_object_type, ObjectRef};
use core::ffi::c_void;
use std::alloc::Layout;

/// An owned reference to an Array object (type index 71).
#[derive(Clone)]
#[repr(transparent)]
pub struct Array(ObjectRef);
static_object_type!(Array, kRFFIArray, "ffi.Array");
crate::any::object_any_conversions!(Array);

const ITEMS_OFFSET: usize = size_of::<RFFIObject>() + size_of::<RFFISeqCell>();

fn array_layout(capacity: usize) -> Layout {
    let bytes = capacity
        .checked_mul(size_of::<RFFIAny>())
        .and_then(|b| b.checked_add(ITEMS_OFFSET))
        .expect("array too large");
    Layout::from_size_align(bytes, 8).expect("array too large")
}

unsafe extern "C" fn array_deleter(obj: *mut c_void, flags: i32) {
    // SAFETY: made by `Array::from_iter_exact`: the cell is followed by `size` owned values in a
    // `capacity`-sized block.
    unsafe {
        let cell = obj.cast::<RFFIObject>().add(1).cast::<RFFISeqCell>();
        if flags & kRFFIObjectDeleterFlagBitMaskStrong != 0 {
            for i in 0..(*cell).size as usize {
                drop(Any::from_raw((*cell).data.add(i).read()));
            }
        }
        if flags & kRFFIObjectDeleterFlagBitMaskWeak != 0 {
            std::alloc::dealloc(obj.cast(), array_layout((*cell).capacity as usize));
        }
    }
}

impl Array {
    /// An array of the given values.
    pub fn new(items: Vec<Any>) -> Array {
        let n = items.len();
        // SAFETY: the builder writes the cell and moves exactly `n` values into the tail; the
        // deleter drops them and frees the same layout.
        Array(unsafe {
            alloc_with_tail(kRFFIArray, array_layout(n), array_deleter, |tail| {
                let data = tail.add(size_of::<RFFISeqCell>()).cast::<RFFIAny>();
                for (i, item) in items.into_iter().enumerate() {
                    data.add(i).write(item.into_raw());
                }
                tail.cast::<RFFISeqCell>().write(RFFISeqCell {
                    data,
                    size: n as i64,
                    capacity: n as i64,
                    data_deleter: None,
                });
            })
        })
    }

    fn cell(&self) -> &RFFISeqCell {
        // SAFETY: the cell is at offset 24 of every Array (ours or a foreign one).
        unsafe { &*self.0.cell_ptr::<RFFISeqCell>() }
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.cell().size.max(0) as usize
    }

    /// Whether the array has no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Borrowed views of the elements.
    pub fn as_slice(&self) -> &[AnyView<'_>] {
        let cell = self.cell();
        // SAFETY: `size` owned values at `data`, alive as long as the array.
        unsafe { AnyView::slice_from_raw(cell.data, self.len()) }
    }

    /// The item at `index`, or None past the end.
    pub fn get(&self, index: usize) -> Option<AnyView<'_>> {
        self.as_slice().get(index).copied()
    }

    /// Element at a Python-style index (negative counts from the end), as an owned value.
    pub fn get_item(&self, index: i64) -> crate::Result<Any> {
        let len = self.len() as i64;
        let i = if index < 0 { index + len } else { index };
        if !(0..len).contains(&i) {
            return Err(crate::Error::index_error(format!(
                "array index {index} out of range for length {len}"
            )));
        }
        self.as_slice()[i as usize].to_owned()
    }

    /// Replaces the item at `index` (in range) by `value`, dropping the old one: for an Array
    /// that only its owner can see (a structural map changing an array it was handed).
    ///
    /// # Safety
    /// Nothing else may hold or read the array: Arrays are otherwise immutable.
    pub(crate) unsafe fn replace_unique(&self, index: usize, value: Any) {
        assert!(index < self.len(), "array index {index} out of range");
        let cell = self.cell();
        // SAFETY: `index` is in range; the old value is owned by the array and dropped once.
        unsafe {
            let slot = cell.data.add(index);
            drop(Any::from_raw(slot.replace(value.into_raw())));
        }
    }

    /// The items in order, borrowed from the array.
    pub fn iter(&self) -> impl Iterator<Item = AnyView<'_>> {
        self.as_slice().iter().copied()
    }
}

impl FromIterator<Any> for Array {
    fn from_iter<I: IntoIterator<Item = Any>>(iter: I) -> Self {
        Array::new(iter.into_iter().collect())
    }
}

impl core::fmt::Debug for Array {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_and_releases_elements() {
        let s = Any::from("a string stored on the heap");
        let obj = s.view().as_object().unwrap().clone();
        let arr = Array::new(vec![Any::from(1i64), s, Any::from(2.5)]);
        assert_eq!(obj.strong_count(), 2);
        assert_eq!(arr.len(), 3);
        assert_eq!(arr.get_item(-1).unwrap().try_as::<f64>().unwrap(), 2.5);
        assert_eq!(arr.get_item(0).unwrap().try_as::<i64>().unwrap(), 1);
        let e = arr.get_item(3).unwrap_err();
        assert_eq!(e.kind(), "IndexError");
        drop(arr);
        assert_eq!(obj.strong_count(), 1);
    }

    #[test]
    fn nested_counts() {
        let inner = Array::new(vec![Any::from(1i64)]);
        let outer: Array = (0..3).map(|_| Any::from(inner.clone())).collect();
        assert_eq!(inner.0.strong_count(), 4);
        drop(outer);
        assert_eq!(inner.0.strong_count(), 1);
        assert!(Array::new(vec![]).is_empty());
    }
}
