//! `List` (type index 75).

use super::resolve_index;
use crate::abi::*;
use crate::any::Any;
use crate::error::{Error, Result};
use crate::object::{alloc_object, body, static_object_type, ObjectRef};
use core::cell::UnsafeCell;
use std::sync::Mutex;

/// An owned reference to a List object: mutable and shared (every holder sees a change).
#[derive(Clone)]
#[repr(transparent)]
pub struct List(ObjectRef);
static_object_type!(List, kRFFIList, "ffi.List");
crate::any::object_any_conversions!(List);

/// The ABI cell first (offset 24), mirrored from `items` after every change under the lock, so
/// a C reader of the cell sees the current buffer (as long as nobody mutates concurrently).
#[repr(C)]
struct ListBody {
    cell: UnsafeCell<RFFISeqCell>,
    items: Mutex<Vec<Any>>,
}

// SAFETY: the cell is written only under the `items` lock; the values are Send + Sync.
unsafe impl Sync for ListBody {}
// SAFETY: as above.
unsafe impl Send for ListBody {}

/// Never called by rffi: the buffer belongs to the body. Present because the ABI says a List's
/// buffer is separate from the object (`data_deleter` set).
unsafe extern "C" fn buffer_owned_by_list(_: *mut core::ffi::c_void) {}

impl List {
    /// A new list holding `items`.
    pub fn new(items: Vec<Any>) -> List {
        let l = List(alloc_object(
            kRFFIList,
            ListBody {
                cell: UnsafeCell::new(RFFISeqCell {
                    data: core::ptr::null_mut(),
                    size: 0,
                    capacity: 0,
                    data_deleter: Some(buffer_owned_by_list),
                }),
                items: Mutex::new(Vec::new()),
            },
        ));
        l.with(|v| *v = items);
        l
    }

    fn body(&self) -> &ListBody {
        // SAFETY: List objects are only made by `List::new` (checked by type index on conversion).
        unsafe { body::<ListBody>(&self.0) }
    }

    /// Runs `f` on the items under the lock, then mirrors them into the cell.
    fn with<R>(&self, f: impl FnOnce(&mut Vec<Any>) -> R) -> R {
        let b = self.body();
        let mut items = b.items.lock().unwrap_or_else(|e| e.into_inner());
        let r = f(&mut items);
        // SAFETY: written under the lock; Any is repr(transparent) over RFFIAny.
        unsafe {
            *b.cell.get() = RFFISeqCell {
                data: items.as_mut_ptr().cast(),
                size: items.len() as i64,
                capacity: items.capacity() as i64,
                data_deleter: Some(buffer_owned_by_list),
            }
        };
        r
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.with(|v| v.len())
    }

    /// Whether the list has no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A snapshot of the items.
    pub fn items(&self) -> Vec<Any> {
        self.with(|v| v.clone())
    }

    /// The item at `i` (negative counts from the end), or an IndexError.
    pub fn get_item(&self, i: i64) -> Result<Any> {
        self.with(|v| Ok(v[resolve_index(i, v.len(), "list")?].clone()))
    }

    /// Replaces the item at `i` (negative: from the end); an IndexError when out of range.
    pub fn set_item(&self, i: i64, value: Any) -> Result<()> {
        // The old value is released after the lock is dropped: its deleter may reach this list.
        let old = self.with(|v| {
            let j = resolve_index(i, v.len(), "list assignment")?;
            Ok::<_, Error>(core::mem::replace(&mut v[j], value))
        })?;
        drop(old);
        Ok(())
    }

    /// Adds `value` at the end.
    pub fn append(&self, value: Any) {
        self.with(|v| v.push(value));
    }

    /// Inserts before `i`; like Python, an index past either end clamps to it.
    pub fn insert(&self, i: i64, value: Any) {
        self.with(|v| {
            let n = v.len() as i64;
            let j = if i < 0 { (i + n).max(0) } else { i.min(n) };
            v.insert(j as usize, value);
        });
    }

    /// Removes and returns the item at `i` (default: the last).
    pub fn pop(&self, i: Option<i64>) -> Result<Any> {
        self.with(|v| {
            if v.is_empty() {
                return Err(Error::index_error("pop from empty list"));
            }
            let j = resolve_index(i.unwrap_or(-1), v.len(), "pop")?;
            Ok(v.remove(j))
        })
    }

    /// Removes every item (released after the lock is dropped).
    pub fn clear(&self) {
        let old = self.with(core::mem::take);
        drop(old);
    }

    /// Adds `items` at the end, in order.
    pub fn extend(&self, items: Vec<Any>) {
        self.with(|v| v.extend(items));
    }
}

impl core::fmt::Debug for List {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.items()).finish()
    }
}
