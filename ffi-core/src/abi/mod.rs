//! The C ABI of rffi: `#[repr(C)]` items, constants and function-pointer types only, no logic.
//!
//! Layouts match tvm-ffi 0.1.x so values, objects and functions cross between the two runtimes
//! without conversion. Every size and offset a foreign library relies on is asserted at compile
//! time below (and again from C in `tests/c/layout.c`).
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

mod dlpack;
mod plugin;
mod reflection;
mod tensor;
pub use dlpack::*;
pub use plugin::*;
pub use reflection::*;
pub use tensor::*;

use core::ffi::{c_char, c_void};
use core::mem::{offset_of, size_of};

/// Major version of the rffi C ABI. A plugin built for another major version is refused.
pub const RFFI_VERSION_MAJOR: u32 = 0;
/// Minor version: additions that keep every existing layout and signature.
pub const RFFI_VERSION_MINOR: u32 = 2;
/// Patch version.
pub const RFFI_VERSION_PATCH: u32 = 0;

/// The default maximum call depth of C callbacks (see `RFFISetMaxCallDepth`). A C round trip
/// (callback → `RFFIFunctionCall` → callback) takes about 130 bytes of stack in a release build,
/// so 10 000 levels fit a 2 MiB thread stack; heavier frames (a debug build's, a Python
/// callback's, about 3 KiB a level) meet the runtime's C-stack check first.
pub const RFFI_DEFAULT_MAX_CALL_DEPTH: u32 = 10_000;

/// Version triple reported by `RFFIGetVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RFFIVersion {
    /// `RFFI_VERSION_MAJOR` of the build: layouts and signatures.
    pub major: u32,
    /// `RFFI_VERSION_MINOR` of the build: compatible additions.
    pub minor: u32,
    /// `RFFI_VERSION_PATCH` of the build.
    pub patch: u32,
}

// ---- Type indices (stored as int32 in RFFIAny::type_index and RFFIObject::type_index) ----
/// Annotation only: "any type". Never stored in a value.
pub const kRFFIAny: i32 = -1;
/// `None`: no payload.
pub const kRFFINone: i32 = 0;
/// A 64-bit signed integer in `v_int64`.
pub const kRFFIInt: i32 = 1;
/// A boolean in `v_int64` (0 or 1).
pub const kRFFIBool: i32 = 2;
/// A 64-bit float in `v_float64`.
pub const kRFFIFloat: i32 = 3;
/// An opaque pointer in `v_ptr` (not owned).
pub const kRFFIOpaquePtr: i32 = 4;
/// A DLPack data type in `v_dtype`.
pub const kRFFIDataType: i32 = 5;
/// A DLPack device in `v_device`.
pub const kRFFIDevice: i32 = 6;
/// A borrowed `DLTensor*` (argument only).
pub const kRFFIDLTensorPtr: i32 = 7;
/// A borrowed NUL-terminated `const char*` (argument only, never owned).
pub const kRFFIRawStr: i32 = 8;
/// A borrowed `RFFIByteArray*` (argument only, never owned).
pub const kRFFIByteArrayPtr: i32 = 9;
/// `v_ptr` points at an object handle slot whose reference may be moved out.
pub const kRFFIObjectRValueRef: i32 = 10;
/// String of at most 7 bytes stored inline: bytes in `v_bytes`, length in `small_str_len`.
pub const kRFFISmallStr: i32 = 11;
/// Bytes of at most 7 bytes stored inline, like `kRFFISmallStr`.
pub const kRFFISmallBytes: i32 = 12;
/// First index of heap objects; values at or above it own a reference.
pub const kRFFIStaticObjectBegin: i32 = 64;
/// The root object type (`ffi.Object`): every object type derives from it.
pub const kRFFIObject: i32 = 64;
/// A heap string (`ffi.String`): an `RFFIStrCell`, UTF-8, NUL-terminated in place.
pub const kRFFIStr: i32 = 65;
/// A heap byte string (`ffi.Bytes`): an `RFFIStrCell`.
pub const kRFFIBytes: i32 = 66;
/// An error (`ffi.Error`): an `RFFIErrorCell`.
pub const kRFFIError: i32 = 67;
/// A function (`ffi.Function`): an `RFFIFunctionCell`.
pub const kRFFIFunction: i32 = 68;
/// A shape (`ffi.Shape`): an `RFFIShapeCell` of int64 dimensions.
pub const kRFFIShape: i32 = 69;
/// A tensor (`ffi.Tensor`): a `DLTensor` after the header.
pub const kRFFITensor: i32 = 70;
/// An immutable sequence of values (`ffi.Array`): an `RFFISeqCell`.
pub const kRFFIArray: i32 = 71;
/// An immutable mapping in insertion order (`ffi.Map`).
pub const kRFFIMap: i32 = 72;
/// A loaded module (plugin) (`ffi.Module`).
pub const kRFFIModule: i32 = 73;
/// A Python object carried through the runtime (`ffi.OpaquePyObject`).
pub const kRFFIOpaquePyObject: i32 = 74;
/// Mutable, shared sequence (`RFFISeqCell` with a separate buffer).
pub const kRFFIList: i32 = 75;
/// Mutable, shared mapping with insertion order.
pub const kRFFIDict: i32 = 76;
/// First index handed out to object types registered at run time.
pub const kRFFIDynObjectBegin: i32 = 128;

/// Longest string or byte string stored inline (one byte stays free for a NUL terminator).
pub const RFFI_SMALL_STR_MAX: usize = 7;

// ---- Object header ----
/// Deleter flag: run the destructor (the last strong reference is gone).
pub const kRFFIObjectDeleterFlagBitMaskStrong: i32 = 1;
/// Deleter flag: free the memory (the last weak reference is gone).
pub const kRFFIObjectDeleterFlagBitMaskWeak: i32 = 2;
/// Both at once: the common case of an object that never had a weak reference.
pub const kRFFIObjectDeleterFlagBitMaskBoth: i32 = 3;

/// Deleter of an object: `flags` is a mask of `kRFFIObjectDeleterFlagBitMask*`.
pub type RFFIObjectDeleter = Option<unsafe extern "C" fn(self_: *mut c_void, flags: i32)>;

/// Header at the start of every object (24 bytes).
///
/// `combined_ref_count` holds the strong count in its low 32 bits and the weak count in its high
/// 32 bits; a new object starts at `1 | (1 << 32)`. It is only ever touched atomically.
#[repr(C)]
pub struct RFFIObject {
    /// Strong count (low 32 bits) and weak count (high 32 bits), changed atomically.
    pub combined_ref_count: u64,
    /// The object's type (`kRFFI*` or a registered index from `kRFFIDynObjectBegin`).
    pub type_index: i32,
    /// Zero.
    pub __padding: u32,
    /// Destroys the object when its counts reach zero.
    pub deleter: RFFIObjectDeleter,
}

/// Handle to an object: a pointer to its `RFFIObject` header.
pub type RFFIObjectHandle = *mut c_void;

// ---- Values ----
/// Payload of a value (8 bytes); which member is live is given by `RFFIAny::type_index`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union RFFIAnyValue {
    /// `kRFFIInt` and `kRFFIBool`.
    pub v_int64: i64,
    /// `kRFFIFloat`.
    pub v_float64: f64,
    /// `kRFFIOpaquePtr`, `kRFFIDLTensorPtr`, `kRFFIByteArrayPtr`, `kRFFIObjectRValueRef`.
    pub v_ptr: *mut c_void,
    /// `kRFFIRawStr`.
    pub v_c_str: *const c_char,
    /// Objects (`type_index >= kRFFIStaticObjectBegin`).
    pub v_obj: *mut RFFIObject,
    /// `kRFFIDataType`.
    pub v_dtype: DLDataType,
    /// `kRFFIDevice`.
    pub v_device: DLDevice,
    /// `kRFFISmallStr` and `kRFFISmallBytes` (length in `small_str_len`).
    pub v_bytes: [c_char; 8],
    /// The payload as raw bits (zero for `kRFFINone`).
    pub v_uint64: u64,
}

/// A value (16 bytes). Owning ("Any") when `type_index >= kRFFIStaticObjectBegin`, otherwise plain
/// data. `small_str_len` is the length for small strings/bytes and 0 for every other type; unused
/// payload bytes are zero, so POD values compare bytewise.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RFFIAny {
    /// The value's type: a `kRFFI*` index or a registered object type's.
    pub type_index: i32,
    /// The length of a small string or bytes; 0 otherwise.
    pub small_str_len: u32,
    /// The payload, read by `type_index`.
    pub v: RFFIAnyValue,
}

/// A borrowed byte range (not NUL-terminated in general).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RFFIByteArray {
    /// The first byte (may be NULL when `size` is 0).
    pub data: *const c_char,
    /// The number of bytes.
    pub size: usize,
}

/// The calling convention of every function: `args` are borrowed values, `result` is owned by the
/// caller and must hold a non-object value (zero it) before the call. Returns 0 on success and -1
/// with an error in the thread-local slot (see `RFFIErrorMoveFromRaised`).
pub type RFFISafeCallType = Option<
    unsafe extern "C" fn(
        handle: *mut c_void,
        args: *const RFFIAny,
        num_args: i32,
        result: *mut RFFIAny,
    ) -> i32,
>;

// ---- Cells that follow the header at offset 24 ----
/// `kRFFIStr` / `kRFFIBytes`: the content, NUL-terminated in place after the cell.
pub type RFFIStrCell = RFFIByteArray;

/// Backtrace update mode for `RFFIErrorCell::update_backtrace`: replace the text.
pub const kRFFIBacktraceUpdateModeReplace: i32 = 0;
/// Backtrace update mode: append frames (an outer layer adding where the error passed).
pub const kRFFIBacktraceUpdateModeAppend: i32 = 1;
/// rffi extension: symbolize pending native frames into the cell's text (the text argument is
/// empty, so a library that treats unknown modes as "append" changes nothing).
pub const kRFFIBacktraceUpdateModeRender: i32 = 2;

/// `kRFFIError`: kind, message and backtrace (most recent call first).
#[repr(C)]
pub struct RFFIErrorCell {
    /// The kind (`ValueError`, `TypeError`, ... or a custom one).
    pub kind: RFFIByteArray,
    /// The message.
    pub message: RFFIByteArray,
    /// The traceback text, most recent call first (`  File "f", line n, in fn` lines).
    pub backtrace: RFFIByteArray,
    /// Changes the backtrace (`kRFFIBacktraceUpdateMode*`); how each layer adds its frames.
    pub update_backtrace: Option<
        unsafe extern "C" fn(self_: RFFIObjectHandle, backtrace: *const RFFIByteArray, mode: i32),
    >,
    /// An Error this one was raised from, or NULL (owned by the cell).
    pub cause_chain: RFFIObjectHandle,
    /// Extra context object, or NULL (owned by the cell).
    pub extra_context: RFFIObjectHandle,
}

/// `kRFFIFunction`: `safe_call` is called with the function object itself as `handle`.
#[repr(C)]
pub struct RFFIFunctionCell {
    /// Calls the function (the calling convention of `RFFISafeCallType`).
    pub safe_call: RFFISafeCallType,
    /// Optional same-library fast path; NULL for every function rffi makes.
    pub cpp_call: *mut c_void,
}

/// `kRFFIShape`: `size` dimensions, stored in place after the cell.
#[repr(C)]
pub struct RFFIShapeCell {
    /// The dimensions.
    pub data: *const i64,
    /// The number of dimensions.
    pub size: usize,
}

/// `kRFFIArray`: `size` owned values; rffi stores them in place after the cell
/// (`data_deleter` NULL).
#[repr(C)]
pub struct RFFISeqCell {
    /// The items.
    pub data: *mut RFFIAny,
    /// The number of items.
    pub size: i64,
    /// The number of items `data` has room for.
    pub capacity: i64,
    /// Frees `data` when it was allocated apart from the object (a List's buffer); NULL when the
    /// items are stored in place.
    pub data_deleter: Option<unsafe extern "C" fn(data: *mut c_void)>,
}

/// Opaque objects (`kRFFIOpaquePyObject` and user types): the wrapped foreign handle.
#[repr(C)]
pub struct RFFIOpaqueObjectCell {
    /// The foreign object (a `PyObject*` for `kRFFIOpaquePyObject`).
    pub handle: *mut c_void,
}

// ---- Layout checks (LP64) ----
const HDR: usize = size_of::<RFFIObject>();
const _: () = {
    assert!(size_of::<RFFIAny>() == 16);
    assert!(core::mem::align_of::<RFFIAny>() == 8);
    assert!(offset_of!(RFFIAny, small_str_len) == 4);
    assert!(offset_of!(RFFIAny, v) == 8);
    assert!(HDR == 24);
    assert!(offset_of!(RFFIObject, type_index) == 8);
    assert!(offset_of!(RFFIObject, deleter) == 16);
    assert!(size_of::<RFFIByteArray>() == 16);
    assert!(size_of::<RFFIErrorCell>() == 72);
    assert!(offset_of!(RFFIErrorCell, message) == 16);
    assert!(offset_of!(RFFIErrorCell, backtrace) == 32);
    assert!(offset_of!(RFFIErrorCell, update_backtrace) == 48);
    assert!(offset_of!(RFFIErrorCell, cause_chain) == 56);
    assert!(offset_of!(RFFIErrorCell, extra_context) == 64);
    assert!(size_of::<RFFIFunctionCell>() == 16);
    assert!(size_of::<RFFIShapeCell>() == 16);
    assert!(size_of::<RFFISeqCell>() == 32);
    assert!(size_of::<RFFIOpaqueObjectCell>() == 8);
    assert!(size_of::<RFFIVersion>() == 12);
};
