//! DLPack value types that appear inside `RFFIAny` (DLPack 1.x layout).
//!
//! Fields that foreign code writes (`device_type`, `code`) are plain integers, never Rust enums: a
//! producer built against a newer DLPack may store a value this build does not know, and reading an
//! unlisted discriminant into a Rust enum is undefined behaviour. They are validated when converted
//! into `Device` / `DataType`.

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

const _: () = assert!(core::mem::size_of::<DLDataType>() == 4);
const _: () = assert!(core::mem::size_of::<DLDevice>() == 8);
