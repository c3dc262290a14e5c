//! Map: an immutable mapping that keeps insertion order. Keys are any hashable value: None, ints,
//! bools, floats, strings, bytes, dtypes, devices, opaque pointers, and objects by identity.
//!
//! The reference ABI gives maps no C cell; foreign code reaches them through the `ffi.Map*` global
//! functions, so the body layout is private to this runtime.

use crate::abi::*;
use crate::any::{Any, AnyView};
use crate::error::{Error, Result};
use crate::object::{alloc_object, body, static_object_type, ObjectRef};
use crate::string::str_bytes_of;
use rustc_hash::FxHashMap;

/// An owned reference to a Map object (type index 72).
#[derive(Clone)]
#[repr(transparent)]
pub struct Map(ObjectRef);
static_object_type!(Map, kRFFIMap, "ffi.Map");
crate::any::object_any_conversions!(Map);

struct MapBody {
    entries: Vec<(Any, Any)>,
    index: FxHashMap<MapKey, usize>,
}

/// The identity of a key: equal keys (a small and a heap string with the same text, say) map to
/// the same entry.
#[derive(PartialEq, Eq, Hash)]
pub(crate) enum MapKey {
    None,
    Int(i64),
    Bool(bool),
    Float(u64),
    Str(Box<[u8]>),
    Bytes(Box<[u8]>),
    DataType(DLDataType),
    Device(DLDevice),
    Ptr(usize),
    Object(usize),
    /// An `ffi.StructuralKey`: by its value's structure.
    Structural(StructuralKeyOf),
}

/// The identity of a `StructuralKey` key: its cached hash, and structural equality.
pub(crate) struct StructuralKeyOf(crate::reflection::Obj<crate::structural::StructuralKey>);

impl PartialEq for StructuralKeyOf {
    fn eq(&self, other: &Self) -> bool {
        // An error comparing (a value nested too deeply) counts as different.
        self.0.equal(&other.0).unwrap_or(false)
    }
}

impl Eq for StructuralKeyOf {}

impl std::hash::Hash for StructuralKeyOf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash_i64.hash(state)
    }
}

impl MapKey {
    pub(crate) fn of(v: &AnyView<'_>) -> Result<MapKey> {
        let raw = v.as_raw();
        // SAFETY: in every arm, the payload member read matches the type index.
        unsafe {
            Ok(match raw.type_index {
                kRFFINone => MapKey::None,
                kRFFIInt => MapKey::Int(raw.v.v_int64),
                kRFFIBool => MapKey::Bool(raw.v.v_int64 != 0),
                // Normalize -0.0 to 0.0 so equal floats hash equally.
                kRFFIFloat => MapKey::Float((raw.v.v_float64 + 0.0).to_bits()),
                kRFFIDataType => MapKey::DataType(raw.v.v_dtype),
                kRFFIDevice => MapKey::Device(raw.v.v_device),
                kRFFIOpaquePtr => MapKey::Ptr(raw.v.v_ptr as usize),
                kRFFIRawStr | kRFFISmallStr | kRFFIStr => {
                    MapKey::Str(str_bytes_of(v).unwrap_or_default().into())
                }
                kRFFIByteArrayPtr | kRFFISmallBytes | kRFFIBytes => {
                    MapKey::Bytes(str_bytes_of(v).unwrap_or_default().into())
                }
                i if i >= kRFFIDynObjectBegin && is_structural_key(i) => MapKey::Structural(
                    StructuralKeyOf(v.try_as().map_err(|e| Error::type_error(e.message()))?),
                ),
                i if i >= kRFFIStaticObjectBegin => MapKey::Object(raw.v.v_obj as usize),
                _ => {
                    return Err(Error::type_error(format!(
                        "unhashable map key of type {}",
                        v.type_name()
                    )))
                }
            })
        }
    }
}

fn is_structural_key(index: i32) -> bool {
    use crate::reflection::ObjectDef;
    index == crate::structural::StructuralKey::type_index()
}

/// The KeyError for a key a map or dict does not hold. The message names the key as Python's own
/// KeyError shows one (text quoted, `'name'`; other keys as they print), so every host shows the
/// same message and Python adds no quotes of its own.
pub(crate) fn missing_key(key: &AnyView<'_>) -> Error {
    let raw = key.as_raw();
    let text = matches!(raw.type_index, kRFFIRawStr | kRFFISmallStr | kRFFIStr);
    let message = match str_bytes_of(key) {
        Some(b) if text => format!("'{}'", String::from_utf8_lossy(b).escape_debug()),
        _ => format!("{key:?}"),
    };
    Error::key_error(message)
}

impl Map {
    /// A map of `(key, value)` pairs in order; a repeated key keeps its first position and takes
    /// the last value, as a Python dict does.
    pub fn new(pairs: Vec<(Any, Any)>) -> Result<Map> {
        let mut entries: Vec<(Any, Any)> = Vec::with_capacity(pairs.len());
        let mut index: FxHashMap<MapKey, usize> = FxHashMap::default();
        for (k, v) in pairs {
            match index.entry(MapKey::of(&k.view())?) {
                std::collections::hash_map::Entry::Occupied(e) => entries[*e.get()].1 = v,
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(entries.len());
                    entries.push((k, v));
                }
            }
        }
        Ok(Map(alloc_object(kRFFIMap, MapBody { entries, index })))
    }

    fn body(&self) -> &MapBody {
        // SAFETY: Map objects are only made by `Map::new` (the type has no foreign layout).
        unsafe { body::<MapBody>(&self.0) }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.body().entries.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value for `key`; an unhashable key is an error, a missing one is `None`.
    pub fn get(&self, key: &AnyView<'_>) -> Result<Option<AnyView<'_>>> {
        let b = self.body();
        Ok(b.index
            .get(&MapKey::of(key)?)
            .map(|&i| b.entries[i].1.view()))
    }

    /// The value for `key`, or a KeyError naming it.
    pub fn get_item(&self, key: &AnyView<'_>) -> Result<Any> {
        match self.get(key)? {
            Some(v) => v.to_owned(),
            None => Err(missing_key(key)),
        }
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (AnyView<'_>, AnyView<'_>)> {
        self.body()
            .entries
            .iter()
            .map(|(k, v)| (k.view(), v.view()))
    }

    /// The entry at position `i` of the insertion order.
    pub(crate) fn entry_at(&self, i: usize) -> Option<(AnyView<'_>, AnyView<'_>)> {
        self.body()
            .entries
            .get(i)
            .map(|(k, v)| (k.view(), v.view()))
    }
}

impl core::fmt::Debug for Map {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insertion_order_and_lookup() {
        let m = Map::new(vec![
            (Any::from("zeta"), Any::from(1i64)),
            (Any::from(7i64), Any::from("seven")),
            (Any::from("a key longer than seven"), Any::from(3i64)),
            (Any::from("zeta"), Any::from(10i64)),
        ])
        .unwrap();
        assert_eq!(m.len(), 3);
        let keys: Vec<String> = m.iter().map(|(k, _)| format!("{k:?}")).collect();
        assert_eq!(keys, ["zeta", "7", "a key longer than seven"]);
        let zeta = Any::from("zeta");
        assert_eq!(
            m.get_item(&zeta.view()).unwrap().try_as::<i64>().unwrap(),
            10
        );
        let seven = Any::from(7i64);
        assert_eq!(
            m.get_item(&seven.view())
                .unwrap()
                .try_as::<String>()
                .unwrap(),
            "seven"
        );
        let long = Any::from(String::from("a key longer than seven"));
        assert!(
            m.get(&long.view()).unwrap().is_some(),
            "equal text, other object"
        );
        let missing = Any::from("nope");
        let e = m.get_item(&missing.view()).unwrap_err();
        assert_eq!(
            (e.kind().as_str(), e.message().as_str()),
            ("KeyError", "'nope'")
        );
    }

    #[test]
    fn objects_are_keys_by_identity_and_values_are_released() {
        let k = Any::from(crate::Shape::new(&[1]));
        let v = Any::from("a value that is on the heap");
        let vobj = v.view().as_object().unwrap().clone();
        let m = Map::new(vec![(k.clone(), v)]).unwrap();
        assert!(m.get(&k.view()).unwrap().is_some());
        let other = Any::from(crate::Shape::new(&[1]));
        assert!(m.get(&other.view()).unwrap().is_none());
        assert_eq!(vobj.strong_count(), 2);
        drop(m);
        assert_eq!(vobj.strong_count(), 1);
    }
}
