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
    /// The type code: `kDLInt`, `kDLUInt`, `kDLFloat`, `kDLBfloat`, ... (validated on conversion).
    pub code: u8,
    /// Bits per lane (8 for int8, 32 for float32).
    pub bits: u8,
    /// Lanes per element: 1 for scalars, more for vector types.
    pub lanes: u16,
}

/// A device: DLPack device type (`kDLCPU`, `kDLCUDA`, ...) and the device index.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DLDevice {
    /// The DLPack device type (`kDLCPU`, `kDLCUDA`, ...), validated on conversion.
    pub device_type: i32,
    /// The device's index among devices of its type (0 for the CPU).
    pub device_id: i32,
}

/// DLPack ABI version carried by `DLManagedTensorVersioned`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DLPackVersion {
    /// Major version: a consumer refuses a tensor of another major version.
    pub major: u32,
    /// Minor version: additions compatible within the major version.
    pub minor: u32,
}

/// A strided view of memory. `shape` and `strides` have `ndim` entries; NULL `strides` means
/// compact row-major (DLPack < 1.2 producers).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// The start of the memory, on `device` (a device pointer for GPUs).
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// The number of dimensions (entries of `shape` and `strides`).
    pub ndim: i32,
    /// The element type.
    pub dtype: DLDataType,
    /// The extent of each dimension.
    pub shape: *mut i64,
    /// The step of each dimension, in elements (NULL: compact row-major).
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// Legacy (pre-1.0) managed tensor: the consumer calls `deleter(self)` when done.
#[repr(C)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context (what keeps the memory alive), for its deleter.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when it no longer needs the tensor; may be NULL.
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensor)>,
}

/// DLPack 1.x managed tensor, with version and flags.
#[repr(C)]
pub struct DLManagedTensorVersioned {
    /// The DLPack version the producer wrote (the major version must match).
    pub version: DLPackVersion,
    /// The producer's context (what keeps the memory alive), for its deleter.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when it no longer needs the tensor; may be NULL.
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*` bits: read-only, copied, sub-byte types padded.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// The DLPack major version this runtime reads and writes.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack minor version stamped on exported tensors.
pub const DLPACK_MINOR_VERSION: u32 = 1;
/// Flag: the consumer must not write the memory.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// Flag: the producer made a copy for this export (writes are not seen by the producer).
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// Flag: sub-byte elements are padded to whole bytes.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

// DLPack device types.
/// The host CPU.
pub const kDLCPU: i32 = 1;
/// An NVIDIA GPU (CUDA device memory).
pub const kDLCUDA: i32 = 2;
/// CUDA pinned host memory.
pub const kDLCUDAHost: i32 = 3;
/// An OpenCL device.
pub const kDLOpenCL: i32 = 4;
/// A Vulkan device.
pub const kDLVulkan: i32 = 7;
/// An Apple Metal device.
pub const kDLMetal: i32 = 8;
/// A Verilator (VPI) simulated device.
pub const kDLVPI: i32 = 9;
/// An AMD GPU (ROCm device memory).
pub const kDLROCM: i32 = 10;
/// ROCm pinned host memory.
pub const kDLROCMHost: i32 = 11;
/// A reserved extension device type.
pub const kDLExtDev: i32 = 12;
/// CUDA managed (unified) memory.
pub const kDLCUDAManaged: i32 = 13;
/// An Intel oneAPI (SYCL) device.
pub const kDLOneAPI: i32 = 14;
/// A WebGPU device.
pub const kDLWebGPU: i32 = 15;
/// A Qualcomm Hexagon DSP.
pub const kDLHexagon: i32 = 16;
/// A Microsoft MAIA accelerator.
pub const kDLMAIA: i32 = 17;
/// An AWS Trainium accelerator.
pub const kDLTrn: i32 = 18;

// DLPack data type codes.
/// Signed integers.
pub const kDLInt: u8 = 0;
/// Unsigned integers.
pub const kDLUInt: u8 = 1;
/// IEEE floating point.
pub const kDLFloat: u8 = 2;
/// Opaque handles (pointers).
pub const kDLOpaqueHandle: u8 = 3;
/// bfloat16 (brain floating point).
pub const kDLBfloat: u8 = 4;
/// Complex numbers (two floats per lane).
pub const kDLComplex: u8 = 5;
/// Booleans.
pub const kDLBool: u8 = 6;
/// 8-bit float, 3 exponent and 4 mantissa bits.
pub const kDLFloat8_e3m4: u8 = 7;
/// 8-bit float, 4 exponent and 3 mantissa bits.
pub const kDLFloat8_e4m3: u8 = 8;
/// 8-bit float e4m3, exponent bias 11, finite, no negative zero.
pub const kDLFloat8_e4m3b11fnuz: u8 = 9;
/// 8-bit float e4m3, finite (no infinities).
pub const kDLFloat8_e4m3fn: u8 = 10;
/// 8-bit float e4m3, finite, no negative zero.
pub const kDLFloat8_e4m3fnuz: u8 = 11;
/// 8-bit float, 5 exponent and 2 mantissa bits.
pub const kDLFloat8_e5m2: u8 = 12;
/// 8-bit float e5m2, finite, no negative zero.
pub const kDLFloat8_e5m2fnuz: u8 = 13;
/// 8-bit scale: 8 exponent bits, no mantissa, finite, unsigned.
pub const kDLFloat8_e8m0fnu: u8 = 14;
/// 6-bit float, 2 exponent and 3 mantissa bits, finite.
pub const kDLFloat6_e2m3fn: u8 = 15;
/// 6-bit float, 3 exponent and 2 mantissa bits, finite.
pub const kDLFloat6_e3m2fn: u8 = 16;
/// 4-bit float, 2 exponent and 1 mantissa bit, finite.
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
