//! The type registry: type keys and indices, the fixed indices of the ABI and object types registered
//! at run time (indices from `kRFFIDynObjectBegin`). Functions by name live in `function_registry`.
//!
//! Every index has an `RFFITypeInfo` (key, single-inheritance ancestors, fields, methods,
//! metadata) at an address that never changes, so a C caller may keep the pointer and `isinstance`
//! is two loads: the ancestor at the target's depth is the target. Entries are never removed.
//! Fields and methods are added under the write lock; their arrays are replaced when they grow and
//! the old arrays stay allocated, so a pointer read earlier from `RFFITypeInfo` stays valid.

use crate::abi::*;
use crate::error::{Error, Result};
use crate::host::{byte_array, host};
use crate::lifetime_map::LifetimeMap;
use core::cell::UnsafeCell;
use std::sync::{Mutex, OnceLock, RwLock};

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
    (kRFFIList, "ffi.List"),
    (kRFFIDict, "ffi.Dict"),
];

/// The last of the fixed object indices (`ffi.Dict`): 64..=76 are known without a lookup.
pub(crate) const LAST_STATIC_OBJECT: i32 = 76;
const _: () = assert!(STATIC_KEYS[STATIC_KEYS.len() - 1].0 == LAST_STATIC_OBJECT);

/// One registered type: its `RFFITypeInfo` and the storage its pointers refer to.
pub(crate) struct TypeEntry {
    info: UnsafeCell<RFFITypeInfo>,
    fields: UnsafeCell<Vec<RFFIFieldInfo>>,
    methods: UnsafeCell<Vec<RFFIMethodInfo>>,
    /// Arrays replaced when `fields` / `methods` grew (start, capacity in bytes): a pointer read
    /// earlier may still be in use, so they are kept, and reachable.
    retired: UnsafeCell<Vec<(*mut u8, usize)>>,
}

// SAFETY: the cells are written only under the table's write lock; what they point to (leaked
// strings, ancestors, values the registry owns for ever) is immutable and shareable.
unsafe impl Sync for TypeEntry {}
// SAFETY: as above.
unsafe impl Send for TypeEntry {}

struct TypeTable {
    by_key: LifetimeMap<Box<str>, i32>,
    /// Entries by index (`None` for unused indices below 128).
    by_index: Vec<Option<&'static TypeEntry>>,
}

/// FNV-1a of the key: `RFFITypeInfo::type_key_hash`.
fn key_hash(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Copies `s` into memory that lives as long as the process.
pub(crate) fn leak_bytes(s: &[u8]) -> RFFIByteArray {
    if s.is_empty() {
        return byte_array(b"");
    }
    byte_array(Box::leak(s.to_vec().into_boxed_slice()))
}

fn new_entry(key: &'static str, index: i32, parent: Option<&'static TypeEntry>) -> TypeEntry {
    let (depth, ancestors): (i32, *const *const RFFITypeInfo) = match parent {
        None => (0, core::ptr::null()),
        Some(p) => {
            let pi = p.info();
            let mut chain: Vec<*const RFFITypeInfo> =
                Vec::with_capacity(pi.type_depth as usize + 1);
            // SAFETY: the parent's ancestors array has `type_depth` entries.
            chain.extend_from_slice(unsafe { slice(pi.type_ancestors, pi.type_depth) });
            chain.push(p.info.get());
            (
                chain.len() as i32,
                Box::leak(chain.into_boxed_slice()).as_ptr(),
            )
        }
    };
    TypeEntry {
        info: UnsafeCell::new(RFFITypeInfo {
            type_index: index,
            type_depth: depth,
            type_key: byte_array(key.as_bytes()),
            type_ancestors: ancestors,
            type_key_hash: key_hash(key),
            num_fields: 0,
            num_methods: 0,
            fields: core::ptr::null(),
            methods: core::ptr::null(),
            metadata: core::ptr::null(),
        }),
        fields: UnsafeCell::new(Vec::new()),
        methods: UnsafeCell::new(Vec::new()),
        retired: UnsafeCell::new(Vec::new()),
    }
}

/// A slice from a pointer and an i32 length (empty when NULL or 0).
///
/// # Safety
/// A non-null `p` must point to `n` items that outlive `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: i32) -> &'a [T] {
    if p.is_null() || n <= 0 {
        &[]
    } else {
        // SAFETY: forwarded contract.
        unsafe { core::slice::from_raw_parts(p, n as usize) }
    }
}

impl TypeEntry {
    pub(crate) fn info(&self) -> &RFFITypeInfo {
        // SAFETY: written only under the write lock; readers hold the read lock or accept the
        // registry's rule that a type's members are registered before the type is shared.
        unsafe { &*self.info.get() }
    }

    /// Appends to one of the entry's arrays, keeping the old array allocated if it moves.
    ///
    /// # Safety
    /// Caller holds the table's write lock.
    unsafe fn push<T: Copy>(&self, vec: &UnsafeCell<Vec<T>>, item: T) -> (*const T, i32) {
        // SAFETY: exclusive under the write lock (contract).
        let v = unsafe { &mut *vec.get() };
        if v.len() == v.capacity() {
            let mut grown = Vec::with_capacity((v.capacity() * 2).max(4));
            grown.extend_from_slice(v);
            // The old buffer may still be read through a pointer handed out earlier: kept.
            let mut old = core::mem::ManuallyDrop::new(core::mem::replace(v, grown));
            if old.capacity() > 0 {
                let bytes = old.capacity() * core::mem::size_of::<T>();
                // SAFETY: exclusive under the write lock (contract).
                unsafe { (*self.retired.get()).push((old.as_mut_ptr().cast(), bytes)) };
            }
        }
        v.push(item);
        (v.as_ptr(), v.len() as i32)
    }
}

fn table() -> &'static RwLock<TypeTable> {
    static TABLE: OnceLock<RwLock<TypeTable>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = TypeTable {
            by_key: LifetimeMap::default(),
            by_index: Vec::new(),
        };
        let object: &'static TypeEntry =
            Box::leak(Box::new(new_entry("ffi.Object", kRFFIObject, None)));
        for &(i, k) in STATIC_KEYS {
            let entry = if i == kRFFIObject {
                object
            } else {
                let parent = (i >= kRFFIStaticObjectBegin).then_some(object);
                Box::leak(Box::new(new_entry(k, i, parent)))
            };
            t.insert(k, i, entry);
        }
        RwLock::new(t)
    })
}

impl TypeTable {
    fn insert(&mut self, key: &'static str, index: i32, entry: &'static TypeEntry) {
        let at = index as usize;
        if self.by_index.len() <= at {
            self.by_index.resize(at + 1, None);
        }
        self.by_index[at] = Some(entry);
        self.by_key.insert(key.into(), index);
    }

    fn entry(&self, index: i32) -> Option<&'static TypeEntry> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.by_index.get(i).copied().flatten())
    }
}

/// The index registered for `key`, if any.
pub fn type_key_to_index(key: &str) -> Option<i32> {
    if let Some(host) = host() {
        return host.type_key_to_index(key);
    }
    crate::reflection::declare_static_types();
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    t.by_key.get(key).copied()
}

/// The key of a type index, if registered.
pub fn type_index_to_key(index: i32) -> Option<&'static str> {
    let info = type_info(index)?;
    // SAFETY: keys are UTF-8 (checked at registration) and live as long as the process.
    Some(unsafe { std::str::from_utf8_unchecked(crate::error::byte_array_bytes(&info.type_key)) })
}

/// The type information of `index`, if registered: in a plugin, the host runtime's.
pub fn type_info(index: i32) -> Option<&'static RFFITypeInfo> {
    if let Some(host) = host() {
        return host.type_info(index);
    }
    if index >= kRFFIDynObjectBegin {
        crate::reflection::declare_static_types();
    }
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    t.entry(index).map(TypeEntry::info)
}

/// Whether an object of type `index` is a `target` (the same type or a descendant): O(1).
pub fn is_instance(index: i32, target: i32) -> bool {
    if index == target || target == kRFFIObject && index >= kRFFIStaticObjectBegin {
        return true;
    }
    let (Some(i), Some(t)) = (type_info(index), type_info(target)) else {
        return false;
    };
    // SAFETY: `type_ancestors` has `type_depth` entries.
    let ancestors = unsafe { slice(i.type_ancestors, i.type_depth) };
    ancestors
        .get(t.type_depth as usize)
        .is_some_and(|&a| core::ptr::eq(a, t))
}

/// Returns the index of `key`, registering it as a new dynamic object type (parent `ffi.Object`)
/// if unknown. An empty key or one with a NUL byte is a ValueError.
pub fn get_or_alloc_type_index(key: &str) -> Result<i32> {
    crate::function_registry::check_name("a type key", key)?;
    if let Some(host) = host() {
        return host.get_or_alloc_type_index(key);
    }
    register_type(key, None)
}

/// Registers `key` as an object type whose parent is `parent` (`None`: `ffi.Object`) and returns
/// its index; registering a known key again returns its index if the parent is the same.
pub fn register_type(key: &str, parent: Option<i32>) -> Result<i32> {
    crate::function_registry::check_name("a type key", key)?;
    let parent = parent.unwrap_or(kRFFIObject);
    if let Some(host) = host() {
        return host.register_type(key, parent);
    }
    register_type_here(key, parent)
}

pub(crate) fn register_type_here(key: &str, parent: i32) -> Result<i32> {
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    let parent_entry = match t.entry(parent) {
        Some(p) if parent >= kRFFIStaticObjectBegin => p,
        _ => {
            return Err(Error::value_error(format!(
                "type `{key}`: parent type index {parent} is not a registered object type"
            )))
        }
    };
    if let Some(&i) = t.by_key.get(key) {
        let entry = t.entry(i).expect("registered keys have entries");
        let depth = entry.info().type_depth;
        // SAFETY: `type_ancestors` has `type_depth` entries.
        let have = unsafe { slice(entry.info().type_ancestors, depth) }
            .last()
            .copied();
        let same = have.is_some_and(|p| core::ptr::eq(p, parent_entry.info.get()))
            || i < kRFFIDynObjectBegin;
        if !same {
            return Err(Error::value_error(format!(
                "type `{key}` is already registered with another parent than `{}`",
                parent_entry.key()
            )));
        }
        return Ok(i);
    }
    let index = (t.by_index.len() as i32).max(kRFFIDynObjectBegin);
    // Keys live as long as the process: type indices are never reused.
    let key: &'static str = Box::leak(key.into());
    let entry = Box::leak(Box::new(new_entry(key, index, Some(parent_entry))));
    t.insert(key, index, entry);
    Ok(index)
}

impl TypeEntry {
    fn key(&self) -> &str {
        // SAFETY: keys are leaked UTF-8 strings.
        unsafe {
            std::str::from_utf8_unchecked(crate::error::byte_array_bytes(&self.info().type_key))
        }
    }
}

/// Runs `f` on the entry of `index` under the write lock (registration of members).
pub(crate) fn with_entry_mut<R>(
    index: i32,
    f: impl FnOnce(&'static TypeEntry, &mut EntryWriter) -> Result<R>,
) -> Result<R> {
    let t = table().write().unwrap_or_else(|e| e.into_inner());
    let entry = t
        .entry(index)
        .ok_or_else(|| Error::key_error(format!("unknown type index {index}")))?;
    let mut w = EntryWriter { entry };
    let r = f(entry, &mut w);
    drop(t);
    r
}

/// Write access to one entry, only handed out under the write lock.
pub(crate) struct EntryWriter {
    entry: &'static TypeEntry,
}

impl EntryWriter {
    pub(crate) fn push_field(&mut self, f: RFFIFieldInfo) {
        // SAFETY: the write lock is held while an EntryWriter exists.
        unsafe {
            let (p, n) = self.entry.push(&self.entry.fields, f);
            let info = &mut *self.entry.info.get();
            info.fields = p;
            info.num_fields = n;
        }
    }

    pub(crate) fn push_method(&mut self, m: RFFIMethodInfo) {
        // SAFETY: the write lock is held while an EntryWriter exists.
        unsafe {
            let (p, n) = self.entry.push(&self.entry.methods, m);
            let info = &mut *self.entry.info.get();
            info.methods = p;
            info.num_methods = n;
        }
    }

    pub(crate) fn set_metadata(&mut self, m: RFFITypeMetadata) {
        /// The addresses of metadata a later call replaced. Readers (C among them) may still
        /// hold the old one, so it lives on, as every entry does; its address kept here keeps it
        /// reachable, so LeakSanitizer (which scans memory for addresses) does not take it for a
        /// leak.
        static REPLACED: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let m: &'static RFFITypeMetadata = Box::leak(Box::new(m));
        // SAFETY: the write lock is held while an EntryWriter exists.
        let old = unsafe { core::mem::replace(&mut (*self.entry.info.get()).metadata, m) };
        if !old.is_null() {
            REPLACED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(old as usize);
        }
    }
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
        assert!(is_instance(kRFFIArray, kRFFIObject));
        assert!(!is_instance(kRFFIArray, kRFFIMap));
        assert_eq!(type_info(kRFFIObject).unwrap().type_depth, 0);
        assert_eq!(type_info(kRFFIStr).unwrap().type_depth, 1);
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

    #[test]
    fn ancestors_make_isinstance_one_lookup() {
        let base = register_type("test.type_registry.Base", None).unwrap();
        let mid = register_type("test.type_registry.Mid", Some(base)).unwrap();
        let leaf = register_type("test.type_registry.Leaf", Some(mid)).unwrap();
        let other = register_type("test.type_registry.Other", None).unwrap();
        assert_eq!(type_info(leaf).unwrap().type_depth, 3);
        assert!(is_instance(leaf, base) && is_instance(leaf, mid) && is_instance(leaf, leaf));
        assert!(is_instance(leaf, kRFFIObject));
        assert!(!is_instance(base, leaf) && !is_instance(leaf, other));
        // The same key with the same parent is the same type; another parent is refused.
        assert_eq!(
            register_type("test.type_registry.Leaf", Some(mid)).unwrap(),
            leaf
        );
        let e = register_type("test.type_registry.Leaf", Some(other)).unwrap_err();
        assert!(e.message().contains("another parent"), "{}", e.message());
        let e = register_type("test.type_registry.Bad", Some(kRFFIInt)).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
    }
}
