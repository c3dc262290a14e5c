//! Reflection: the type information of the type registry, laid out as tvm-ffi's `TVMFFITypeInfo`,
//! `TVMFFIFieldInfo`, `TVMFFIMethodInfo` and `TVMFFITypeMetadata`.

use super::{RFFIAny, RFFIByteArray, RFFIObjectHandle};
use core::ffi::c_void;
use core::mem::{offset_of, size_of};

/// Field flag: the field may be written (`RFFIObjectSetField`).
pub const kRFFIFieldFlagBitMaskWritable: i64 = 1 << 0;
/// Field flag: `default_value_or_factory` holds a default.
pub const kRFFIFieldFlagBitMaskHasDefault: i64 = 1 << 1;
/// Method flag: a static method (no `self` argument).
pub const kRFFIFieldFlagBitMaskIsStaticMethod: i64 = 1 << 2;
/// Field flag: left out of structural equality and hashing (`ffi.StructuralEqual`, ...).
pub const kRFFIFieldFlagBitMaskSEqHashIgnore: i64 = 1 << 3;
/// Field flag: a definition site for structural equality and hashing: free variables first met
/// inside it are mapped to each other (`fn(x) { x }` equals `fn(y) { y }`).
pub const kRFFIFieldFlagBitMaskSEqHashDef: i64 = 1 << 4;
/// Field flag: the default is a Function called with no argument for each new object.
pub const kRFFIFieldFlagBitMaskDefaultFromFactory: i64 = 1 << 5;
/// Field flag: left out of `repr`.
pub const kRFFIFieldFlagBitMaskReprOff: i64 = 1 << 6;
/// Field flag: left out of `==`.
pub const kRFFIFieldFlagBitMaskCompareOff: i64 = 1 << 7;
/// Field flag: left out of `hash`.
pub const kRFFIFieldFlagBitMaskHashOff: i64 = 1 << 8;
/// Field flag: not a parameter of the generated `__init__`.
pub const kRFFIFieldFlagBitMaskInitOff: i64 = 1 << 9;
/// Field flag: a keyword-only parameter of the generated `__init__`.
pub const kRFFIFieldFlagBitMaskKwOnly: i64 = 1 << 10;
/// Field flag: `setter` is a Function object called as `setter(object, value)`.
pub const kRFFIFieldFlagBitMaskSetterIsFunctionObj: i64 = 1 << 11;
/// Field flag: a simple definition site: the variable the field holds is defined there, and what
/// the variable's own fields hold are uses (tvm-ffi's `kTVMFFIFieldFlagBitMaskSEqHashDefSimple`).
/// `kRFFIFieldFlagBitMaskSEqHashDef` is the pattern kind: everything inside is defined.
pub const kRFFIFieldFlagBitMaskSEqHashDefSimple: i64 = 1 << 12;
/// Field flag (rffi's own, beyond tvm-ffi's bits): structural equality and hashing compare the
/// field's object by identity (the same object), not by its contents.
pub const kRFFIFieldFlagBitMaskSEqHashIdentity: i64 = 1 << 20;

/// `RFFITypeMetadata::structural_eq_hash_kind`: not declared. rffi compares such types by their
/// fields, as `kRFFISEqHashKindTreeNode` (tvm-ffi refuses them).
pub const kRFFISEqHashKindUnsupported: i32 = 0;
/// Compared and hashed by the fields; sharing is not part of the value.
pub const kRFFISEqHashKindTreeNode: i32 = 1;
/// A variable: equal only to itself, or to the variable it was mapped to at a definition site
/// (or anywhere, with `map_free_vars`).
pub const kRFFISEqHashKindFreeVar: i32 = 2;
/// Compared by the fields, and sharing is part of the value: `[a, a]` differs from `[a, b]`.
pub const kRFFISEqHashKindDAGNode: i32 = 3;
/// A tree node whose identity implies equality (a shortcut for immutable values).
pub const kRFFISEqHashKindConstTreeNode: i32 = 4;
/// Equal only to itself.
pub const kRFFISEqHashKindUniqueInstance: i32 = 5;

/// The definition region a structural traversal is in (`ffi.StructuralVisitorDefRegionKind`):
/// not in one (variables met are uses).
pub const kRFFIDefRegionKindNone: i32 = 0;
/// Inside a field flagged `kRFFIFieldFlagBitMaskSEqHashDef`: every variable met is defined, and
/// the region holds for everything nested (kinds entered inside it have no effect).
pub const kRFFIDefRegionKindPattern: i32 = 1;
/// Inside a field flagged `kRFFIFieldFlagBitMaskSEqHashDefSimple`: the variable itself is
/// defined; its own fields are walked as uses.
pub const kRFFIDefRegionKindSimple: i32 = 2;

/// `flags` of `RFFIStructuralEqual` / `RFFIStructuralHash`: free variables may be mapped to each
/// other anywhere, not only at definition sites.
pub const kRFFIStructuralMapFreeVars: i32 = 1 << 0;
/// `flags` of the structural functions: tensors compare by dtype, shape and device, not data.
pub const kRFFIStructuralSkipTensorContent: i32 = 1 << 1;

/// Reads the field at `field` (the object's address plus the field's offset) into an owned value.
/// Returns 0, or -1 with an error raised.
pub type RFFIFieldGetter =
    Option<unsafe extern "C" fn(field: *mut c_void, result: *mut RFFIAny) -> i32>;
/// Writes a borrowed value into the field at `field`; returns 0, or -1 with an error raised.
pub type RFFIFieldSetter =
    Option<unsafe extern "C" fn(field: *mut c_void, value: *const RFFIAny) -> i32>;
/// Makes a new object of a type with every field at its default; returns 0, or -1 with an error.
pub type RFFIObjectCreator = Option<unsafe extern "C" fn(result: *mut RFFIObjectHandle) -> i32>;

/// One field of an object type (120 bytes).
///
/// A field is reached either through `getter`/`setter`, or, when they are NULL, by its `offset`
/// and `field_static_type_index`, for which the runtime has built-in accessors: `kRFFIInt`
/// (`size` 1, 2, 4 or 8), `kRFFIFloat` (4 or 8), `kRFFIBool` (1), `kRFFIAny` (an owned `RFFIAny`,
/// 16), and object indices (an owned `RFFIObjectHandle` that may be NULL, 8).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RFFIFieldInfo {
    /// The field's name (UTF-8).
    pub name: RFFIByteArray,
    /// Its docstring; may be empty.
    pub doc: RFFIByteArray,
    /// JSON text, such as `{"type_schema": {"type": "int"}}`; may be empty.
    pub metadata: RFFIByteArray,
    /// `kRFFIFieldFlagBitMask*`.
    pub flags: i64,
    /// The field's size in bytes (what a built-in accessor reads and writes).
    pub size: i64,
    /// The field's alignment in bytes.
    pub alignment: i64,
    /// Byte offset from the object header.
    pub offset: i64,
    /// Reads the field; NULL for a built-in accessor.
    pub getter: RFFIFieldGetter,
    /// An `RFFIFieldSetter`, or a Function object with `kRFFIFieldFlagBitMaskSetterIsFunctionObj`.
    pub setter: *mut c_void,
    /// The default value, or with `kRFFIFieldFlagBitMaskDefaultFromFactory` a Function making it.
    pub default_value_or_factory: RFFIAny,
    /// The value's type index (`kRFFIAny` for any value).
    pub field_static_type_index: i32,
}

/// One method of an object type (72 bytes). `method` holds a Function; an instance method takes
/// the object as its first argument.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RFFIMethodInfo {
    /// The method's name (UTF-8).
    pub name: RFFIByteArray,
    /// Its docstring; may be empty.
    pub doc: RFFIByteArray,
    /// JSON text, such as `{"type_schema": ...}`; may be empty.
    pub metadata: RFFIByteArray,
    /// `kRFFIFieldFlagBitMaskIsStaticMethod` for a static method.
    pub flags: i64,
    /// The method: a value holding a Function.
    pub method: RFFIAny,
}

/// Type-wide information (32 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RFFITypeMetadata {
    /// The type's docstring; may be empty.
    pub doc: RFFIByteArray,
    /// Makes an object with every field at its default, or NULL.
    pub creator: RFFIObjectCreator,
    /// Size of the object in bytes, header included.
    pub total_size: i32,
    /// How structural equality and hashing treat the type (tvm-ffi's `TVMFFISEqHashKind`; 0: not
    /// supported).
    pub structural_eq_hash_kind: i32,
}

/// One column of the type attribute table (16 bytes): the values of one attribute name, by type
/// index. The entry of type `t` is `data[t - begin_index]` when
/// `begin_index <= t < begin_index + size`, else absent; an entry holding None is absent too.
/// A type's entry is its own, not inherited from its ancestors.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RFFITypeAttrColumn {
    /// The entries, indexed by `type_index - begin_index`.
    pub data: *const RFFIAny,
    /// The number of entries.
    pub size: i32,
    /// The type index of `data[0]`.
    pub begin_index: i32,
}

/// A type of the type registry (72 bytes): key, index, single-inheritance ancestors, fields,
/// methods and metadata. The runtime owns it; it lives as long as the process.
#[repr(C)]
pub struct RFFITypeInfo {
    /// The type's index.
    pub type_index: i32,
    /// Number of ancestors: 0 for a root type (`ffi.Object` and the POD pseudo-types).
    pub type_depth: i32,
    /// The type's key (`"my.Point"`).
    pub type_key: RFFIByteArray,
    /// `type_ancestors[d]` is the ancestor at depth `d`, for `d < type_depth`.
    pub type_ancestors: *const *const RFFITypeInfo,
    /// A hash of `type_key`.
    pub type_key_hash: u64,
    /// The number of entries of `fields`.
    pub num_fields: i32,
    /// The number of entries of `methods`.
    pub num_methods: i32,
    /// The type's own fields (not its ancestors').
    pub fields: *const RFFIFieldInfo,
    /// The type's own methods (not its ancestors').
    pub methods: *const RFFIMethodInfo,
    /// NULL until registered.
    pub metadata: *const RFFITypeMetadata,
}

const _: () = {
    assert!(size_of::<RFFIFieldInfo>() == 120);
    assert!(offset_of!(RFFIFieldInfo, flags) == 48);
    assert!(offset_of!(RFFIFieldInfo, offset) == 72);
    assert!(offset_of!(RFFIFieldInfo, getter) == 80);
    assert!(offset_of!(RFFIFieldInfo, setter) == 88);
    assert!(offset_of!(RFFIFieldInfo, default_value_or_factory) == 96);
    assert!(offset_of!(RFFIFieldInfo, field_static_type_index) == 112);
    assert!(size_of::<RFFIMethodInfo>() == 72);
    assert!(offset_of!(RFFIMethodInfo, method) == 56);
    assert!(size_of::<RFFITypeMetadata>() == 32);
    assert!(offset_of!(RFFITypeMetadata, total_size) == 24);
    assert!(size_of::<RFFITypeAttrColumn>() == 16);
    assert!(offset_of!(RFFITypeAttrColumn, begin_index) == 12);
    assert!(size_of::<RFFITypeInfo>() == 72);
    assert!(offset_of!(RFFITypeInfo, type_ancestors) == 24);
    assert!(offset_of!(RFFITypeInfo, type_key_hash) == 32);
    assert!(offset_of!(RFFITypeInfo, num_fields) == 40);
    assert!(offset_of!(RFFITypeInfo, fields) == 48);
    assert!(offset_of!(RFFITypeInfo, metadata) == 64);
};
