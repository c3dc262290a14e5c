//! DLPack value types that appear inside `RFFIAny` (DLPack 1.x layout).
//!
//! Fields that foreign code writes (`device_type`, `code`) are plain integers, never Rust enums: a
//! producer built against a newer DLPack may store a value this build does not know, and reading an
//! unlisted discriminant into a Rust enum is undefined behaviour. They are validated when converted
//! into `Device` / `DataType`.
//!
//! The structs are written here rather than taken from the `dlpack-rs` crate: its `pack()` leaves
//! `strides` NULL (DLPack >= 1.2 forbids that for ndim > 0), it stamps every versioned tensor 1.0,
//! and its types sit behind `include!` in a private module where cbindgen cannot see them.

use core::ffi::c_void;

/// Element type of a tensor: `code` (a `kDL*` type code), `bits` per lane, and `lanes`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

/// A device: DLPack device type (`kDLCPU`, `kDLCUDA`, ...) and the device index.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

/// DLPack ABI version carried by `DLManagedTensorVersioned`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

/// A strided view of memory. `shape` and `strides` have `ndim` entries; NULL `strides` means
/// compact row-major (DLPack < 1.2 producers).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// Legacy (pre-1.0) managed tensor: the consumer calls `deleter(self)` when done.
#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensor)>,
}

/// DLPack 1.x managed tensor, with version and flags.
#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

/// The DLPack major version this runtime reads and writes.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack minor version stamped on exported tensors.
pub const DLPACK_MINOR_VERSION: u32 = 1;
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

// DLPack device types.
pub const kDLCPU: i32 = 1;
pub const kDLCUDA: i32 = 2;
pub const kDLCUDAHost: i32 = 3;
pub const kDLOpenCL: i32 = 4;
pub const kDLVulkan: i32 = 7;
pub const kDLMetal: i32 = 8;
pub const kDLVPI: i32 = 9;
pub const kDLROCM: i32 = 10;
pub const kDLROCMHost: i32 = 11;
pub const kDLExtDev: i32 = 12;
pub const kDLCUDAManaged: i32 = 13;
pub const kDLOneAPI: i32 = 14;
pub const kDLWebGPU: i32 = 15;
pub const kDLHexagon: i32 = 16;
pub const kDLMAIA: i32 = 17;
pub const kDLTrn: i32 = 18;

// DLPack data type codes.
pub const kDLInt: u8 = 0;
pub const kDLUInt: u8 = 1;
pub const kDLFloat: u8 = 2;
pub const kDLOpaqueHandle: u8 = 3;
pub const kDLBfloat: u8 = 4;
pub const kDLComplex: u8 = 5;
pub const kDLBool: u8 = 6;
pub const kDLFloat8_e3m4: u8 = 7;
pub const kDLFloat8_e4m3: u8 = 8;
pub const kDLFloat8_e4m3b11fnuz: u8 = 9;
pub const kDLFloat8_e4m3fn: u8 = 10;
pub const kDLFloat8_e4m3fnuz: u8 = 11;
pub const kDLFloat8_e5m2: u8 = 12;
pub const kDLFloat8_e5m2fnuz: u8 = 13;
pub const kDLFloat8_e8m0fnu: u8 = 14;
pub const kDLFloat6_e2m3fn: u8 = 15;
pub const kDLFloat6_e3m2fn: u8 = 16;
pub const kDLFloat4_e2m1fn: u8 = 17;

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<DLDataType>() == 4);
    assert!(size_of::<DLDevice>() == 8);
    assert!(size_of::<DLTensor>() == 48);
    assert!(offset_of!(DLTensor, device) == 8);
    assert!(offset_of!(DLTensor, ndim) == 16);
    assert!(offset_of!(DLTensor, dtype) == 20);
    assert!(offset_of!(DLTensor, shape) == 24);
    assert!(offset_of!(DLTensor, strides) == 32);
    assert!(offset_of!(DLTensor, byte_offset) == 40);
    assert!(size_of::<DLManagedTensor>() == 64);
    assert!(size_of::<DLManagedTensorVersioned>() == 80);
    assert!(offset_of!(DLManagedTensorVersioned, manager_ctx) == 8);
    assert!(offset_of!(DLManagedTensorVersioned, deleter) == 16);
    assert!(offset_of!(DLManagedTensorVersioned, flags) == 24);
    assert!(offset_of!(DLManagedTensorVersioned, dl_tensor) == 32);
};
