//! The type registry: type keys and indices, the fixed indices of the ABI and object types registered
//! at run time (indices from `kRFFIDynObjectBegin`). Functions by name live in `function_registry`.

use crate::abi::*;
use crate::error::Result;
use crate::host::host;
use crate::lifetime_map::LifetimeMap;
use std::sync::{OnceLock, RwLock};

/// Keys of the fixed indices, as tvm-ffi names them (the POD ones are pseudo-keys).
const STATIC_KEYS: &[(i32, &str)] = &[
    (kRFFINone, "None"),
    (kRFFIInt, "int"),
    (kRFFIBool, "bool"),
    (kRFFIFloat, "float"),
    (kRFFIOpaquePtr, "void*"),
    (kRFFIDataType, "DataType"),
    (kRFFIDevice, "Device"),
    (kRFFIDLTensorPtr, "DLTensor*"),
    (kRFFIRawStr, "const char*"),
    (kRFFIByteArrayPtr, "RFFIByteArray*"),
    (kRFFIObjectRValueRef, "ObjectRValueRef"),
    (kRFFISmallStr, "ffi.SmallStr"),
    (kRFFISmallBytes, "ffi.SmallBytes"),
    (kRFFIObject, "ffi.Object"),
    (kRFFIStr, "ffi.String"),
    (kRFFIBytes, "ffi.Bytes"),
    (kRFFIError, "ffi.Error"),
    (kRFFIFunction, "ffi.Function"),
    (kRFFIShape, "ffi.Shape"),
    (kRFFITensor, "ffi.Tensor"),
    (kRFFIArray, "ffi.Array"),
    (kRFFIMap, "ffi.Map"),
    (kRFFIModule, "ffi.Module"),
    (kRFFIOpaquePyObject, "ffi.OpaquePyObject"),
    (75, "ffi.List"),
    (76, "ffi.Dict"),
];

/// The last of the fixed object indices (`ffi.Dict`): 64..=76 are known without a lookup.
pub(crate) const LAST_STATIC_OBJECT: i32 = 76;
const _: () = assert!(STATIC_KEYS[STATIC_KEYS.len() - 1].0 == LAST_STATIC_OBJECT);

struct TypeTable {
    by_key: LifetimeMap<Box<str>, i32>,
    /// Keys of dynamic types, indexed by `index - kRFFIDynObjectBegin`.
    dynamic: Vec<&'static str>,
}

fn table() -> &'static RwLock<TypeTable> {
    static TABLE: OnceLock<RwLock<TypeTable>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut by_key = LifetimeMap::default();
        for &(i, k) in STATIC_KEYS {
            by_key.insert(k.into(), i);
        }
        RwLock::new(TypeTable {
            by_key,
            dynamic: Vec::new(),
        })
    })
}

/// The index registered for `key`, if any.
pub fn type_key_to_index(key: &str) -> Option<i32> {
    if let Some(host) = host() {
        return host.type_key_to_index(key);
    }
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    t.by_key.get(key).copied()
}

/// The key of a type index, if registered.
pub fn type_index_to_key(index: i32) -> Option<&'static str> {
    if index < kRFFIDynObjectBegin {
        return STATIC_KEYS
            .iter()
            .find(|&&(i, _)| i == index)
            .map(|&(_, k)| k);
    }
    if let Some(host) = host() {
        return host.type_index_to_key(index);
    }
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    t.dynamic
        .get((index - kRFFIDynObjectBegin) as usize)
        .copied()
}

/// Returns the index of `key`, registering it as a new dynamic object type if unknown. An empty
/// key or one with a NUL byte is a ValueError.
pub fn get_or_alloc_type_index(key: &str) -> Result<i32> {
    crate::function_registry::check_name("a type key", key)?;
    if let Some(host) = host() {
        return host.get_or_alloc_type_index(key);
    }
    if let Some(i) = type_key_to_index(key) {
        return Ok(i);
    }
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    if let Some(&i) = t.by_key.get(key) {
        return Ok(i);
    }
    let index = kRFFIDynObjectBegin + t.dynamic.len() as i32;
    // Keys live as long as the process: type indices are never reused.
    let key: &'static str = Box::leak(key.into());
    t.dynamic.push(key);
    t.by_key.insert(key.into(), index);
    Ok(index)
}

/// A user-facing name of a type index for error messages: `int`, `str`, `ffi.Array`, ...
pub fn type_name(index: i32) -> String {
    match index {
        kRFFIRawStr | kRFFISmallStr | kRFFIStr => "str".into(),
        kRFFIByteArrayPtr | kRFFISmallBytes | kRFFIBytes => "bytes".into(),
        _ => match type_index_to_key(index) {
            Some(k) => k.into(),
            None => format!("<unregistered type index {index}>"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_keys_round_trip() {
        for &(i, k) in STATIC_KEYS {
            assert_eq!(type_key_to_index(k), Some(i), "{k}");
            assert_eq!(type_index_to_key(i), Some(k));
        }
        // Index 7 is in the table (a C caller may pass DLTensor* where an object is expected).
        assert_eq!(type_key_to_index("DLTensor*"), Some(kRFFIDLTensorPtr));
    }

    #[test]
    fn dynamic_types_get_stable_indices() {
        let a = get_or_alloc_type_index("test.type_registry.A").unwrap();
        let b = get_or_alloc_type_index("test.type_registry.B").unwrap();
        assert!(a >= kRFFIDynObjectBegin && b >= kRFFIDynObjectBegin);
        assert_ne!(a, b);
        assert_eq!(get_or_alloc_type_index("test.type_registry.A").unwrap(), a);
        assert_eq!(
            get_or_alloc_type_index("").unwrap_err().kind(),
            "ValueError"
        );
        assert_eq!(type_index_to_key(b), Some("test.type_registry.B"));
        assert_eq!(type_key_to_index("test.type_registry.missing"), None);
        assert_eq!(type_name(kRFFISmallStr), "str");
        assert!(type_name(100_000).contains("unregistered"));
    }
}
