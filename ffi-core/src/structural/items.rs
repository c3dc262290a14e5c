//! Reading containers without copying them: an Array's and a Map's items are read in place; a
//! List's and a Dict's (which another thread may change) are a snapshot taken once.

use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::map::MapKey;
use crate::{Array, Dict, List, Map, ObjectRef};

/// `v`'s object as a `T` (a `#[repr(transparent)]` wrapper of `ObjectRef`), borrowed: no count
/// change, which walks over big graphs would otherwise pay twice per container.
///
/// # Safety
/// `v` must hold an object of `T`'s type index.
unsafe fn borrowed<'a, T>(v: &'a AnyView<'_>) -> &'a T {
    let o: &ObjectRef = v.as_object().expect("an object value");
    // SAFETY: `T` is `#[repr(transparent)]` over `ObjectRef` and the object is a `T` (contract).
    unsafe { &*(o as *const ObjectRef).cast::<T>() }
}

/// The items of an Array or a List.
pub(crate) enum Seq<'a> {
    Array(&'a Array),
    List(Vec<Any>),
}

impl<'a> Seq<'a> {
    pub(crate) fn of(v: &'a AnyView<'_>) -> Result<Seq<'a>> {
        Ok(match v.type_index() {
            // SAFETY: the type index says Array.
            kRFFIArray => Seq::Array(unsafe { borrowed(v) }),
            kRFFIList => Seq::List(v.try_as::<List>()?.items()),
            _ => {
                return Err(Error::type_error(format!(
                    "not a sequence: {}",
                    v.type_name()
                )))
            }
        })
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Seq::Array(a) => a.len(),
            Seq::List(v) => v.len(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> AnyView<'_> {
        match self {
            Seq::Array(a) => a.as_slice()[i],
            Seq::List(v) => v[i].view(),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = AnyView<'_>> {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// The entries of a Map or a Dict, in their order.
pub(crate) enum Entries<'a> {
    Map(&'a Map),
    Dict(Dict, Vec<(Any, Any)>),
}

impl<'a> Entries<'a> {
    pub(crate) fn of(v: &'a AnyView<'_>) -> Result<Entries<'a>> {
        Ok(match v.type_index() {
            // SAFETY: the type index says Map.
            kRFFIMap => Entries::Map(unsafe { borrowed(v) }),
            kRFFIDict => {
                let d: Dict = v.try_as()?;
                let items = d.items();
                Entries::Dict(d, items)
            }
            _ => return Err(Error::type_error(format!("not a map: {}", v.type_name()))),
        })
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Entries::Map(m) => m.len(),
            Entries::Dict(_, items) => items.len(),
        }
    }

    /// The entry at position `i < len()`.
    pub(crate) fn at(&self, i: usize) -> (AnyView<'_>, AnyView<'_>) {
        match self {
            Entries::Map(m) => m.entry_at(i).expect("an index below len()"),
            Entries::Dict(_, items) => (items[i].0.view(), items[i].1.view()),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (AnyView<'_>, AnyView<'_>)> {
        (0..self.len()).map(|i| self.at(i))
    }

    /// The value of `key`, if present.
    pub(crate) fn get(&self, key: &AnyView<'_>) -> Result<Option<Any>> {
        match self {
            Entries::Map(m) => m.get(key)?.map(|v| v.to_owned()).transpose(),
            Entries::Dict(d, _) => d.get(key),
        }
    }
}

/// Whether two keys name the same entry of a map (as the map's own lookup decides), without
/// allocating for the common keys (strings, numbers, objects).
pub(crate) fn same_key(a: &AnyView<'_>, b: &AnyView<'_>) -> bool {
    let (ta, tb) = (a.type_index(), b.type_index());
    let text = |t: i32| matches!(t, kRFFIRawStr | kRFFISmallStr | kRFFIStr);
    let bytes = |t: i32| matches!(t, kRFFIByteArrayPtr | kRFFISmallBytes | kRFFIBytes);
    if (text(ta) && text(tb)) || (bytes(ta) && bytes(tb)) {
        return super::text_of(a) == super::text_of(b);
    }
    if ta == tb && ta >= kRFFIStaticObjectBegin {
        return super::addr(a) == super::addr(b);
    }
    matches!((MapKey::of(a), MapKey::of(b)), (Ok(x), Ok(y)) if x == y)
}
