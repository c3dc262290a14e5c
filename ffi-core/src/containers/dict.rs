//! `Dict` (type index 76).

use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::Result;
use crate::map::{missing_key, MapKey};
use crate::object::{alloc_object, body, static_object_type, ObjectRef};
use rustc_hash::FxHashMap;
use std::sync::Mutex;

/// An owned reference to a Dict object: a mutable, shared mapping in insertion order, with the
/// key rules of `Map`.
#[derive(Clone)]
#[repr(transparent)]
pub struct Dict(ObjectRef);
static_object_type!(Dict, kRFFIDict, "ffi.Dict");
crate::any::object_any_conversions!(Dict);

#[derive(Default)]
struct Entries {
    items: Vec<(Any, Any)>,
    index: FxHashMap<MapKey, usize>,
}

struct DictBody {
    entries: Mutex<Entries>,
}

impl Dict {
    /// A dict of `(key, value)` pairs; a repeated key keeps its first position and the last value.
    pub fn new(pairs: Vec<(Any, Any)>) -> Result<Dict> {
        let d = Dict(alloc_object(
            kRFFIDict,
            DictBody {
                entries: Mutex::new(Entries::default()),
            },
        ));
        for (k, v) in pairs {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    fn with<R>(&self, f: impl FnOnce(&mut Entries) -> R) -> R {
        // SAFETY: Dict objects are only made by `Dict::new` (checked by type index on conversion).
        let b = unsafe { body::<DictBody>(&self.0) };
        f(&mut b.entries.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.with(|e| e.items.len())
    }

    /// Whether the dict has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value for `key`; an unhashable key is a TypeError, a missing one `None`.
    pub fn get(&self, key: &AnyView<'_>) -> Result<Option<Any>> {
        let k = MapKey::of(key)?;
        Ok(self.with(|e| e.index.get(&k).map(|&i| e.items[i].1.clone())))
    }

    /// The value for `key`, or a KeyError naming it.
    pub fn get_item(&self, key: &AnyView<'_>) -> Result<Any> {
        self.get(key)?.ok_or_else(|| missing_key(key))
    }

    /// Sets `key` to `value` (a new key goes last); a key that cannot be hashed is a TypeError.
    pub fn set_item(&self, key: Any, value: Any) -> Result<()> {
        let k = MapKey::of(&key.view())?;
        let old = self.with(|e| match e.index.get(&k) {
            Some(&i) => Some(core::mem::replace(&mut e.items[i].1, value)),
            None => {
                e.index.insert(k, e.items.len());
                e.items.push((key, value));
                None
            }
        });
        drop(old); // released outside the lock
        Ok(())
    }

    /// Removes `key` and returns its value (`None` if absent).
    pub fn pop(&self, key: &AnyView<'_>) -> Result<Option<Any>> {
        let k = MapKey::of(key)?;
        let removed = self.with(|e| {
            let i = e.index.remove(&k)?;
            let (_, v) = e.items.remove(i);
            for slot in e.index.values_mut() {
                if *slot > i {
                    *slot -= 1;
                }
            }
            Some(v)
        });
        Ok(removed)
    }

    /// Removes every entry (released after the lock is dropped, since a value's deleter may reach
    /// this dict).
    pub fn clear(&self) {
        let old = self.with(core::mem::take);
        drop(old);
    }

    /// A snapshot of the entries in insertion order.
    pub fn items(&self) -> Vec<(Any, Any)> {
        self.with(|e| e.items.clone())
    }
}

impl core::fmt::Debug for Dict {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_map().entries(self.items()).finish()
    }
}
