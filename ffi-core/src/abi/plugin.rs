//! The plugin handshake: the symbols a plugin exports and the table of runtime entry points the
//! loader hands it.
//!
//! A plugin's symbols live in two name spaces that cannot overlap: the loader's own symbols are
//! named `rffi_plugin_*`, and exported functions are `__rffi_<name>`. `get_function(name)` only ever
//! looks up `__rffi_` + name, and no loader symbol starts with `__rffi_`, so no name a caller
//! passes can reach the version record, the init entry or the host-table variable.

use super::{DLDataType, RFFIAny, RFFIByteArray, RFFIObjectHandle, RFFISafeCallType, RFFIVersion};
use super::{DLManagedTensor, DLManagedTensorVersioned, RFFIDLPackManagedTensorAllocator};
use super::{RFFIFieldInfo, RFFIMethodInfo, RFFITypeInfo, RFFITypeMetadata};
use core::ffi::{c_char, c_void};

/// Plugin symbol: `RFFIVersion rffi_plugin_version`, the ABI the plugin was built for. The loader
/// refuses a plugin whose major version differs, or whose minor version is newer than its own.
pub const RFFI_PLUGIN_VERSION_SYMBOL: &str = "rffi_plugin_version";
/// Plugin symbol: `int32_t rffi_plugin_init(const RFFIHostApi* host)`, called once after loading;
/// returns 0, or -1 with an error raised through `host`.
pub const RFFI_PLUGIN_INIT_SYMBOL: &str = "rffi_plugin_init";
/// Optional plugin symbol: a variable `const RFFIHostApi* rffi_plugin_host_api` that the loader sets
/// before `rffi_plugin_init`, for C plugins whose exported functions need the runtime.
pub const RFFI_PLUGIN_HOST_API_SYMBOL: &str = "rffi_plugin_host_api";
/// Prefix of C-exported safe-call functions: `__rffi_<name>` is found by `get_function(name)` and
/// called with a NULL handle. Every symbol with this prefix is a safe-call function; the loader's
/// symbols never use it.
pub const RFFI_PLUGIN_FUNCTION_PREFIX: &str = "__rffi_";

/// Signature of `rffi_plugin_init`.
pub type RFFIPluginInit = Option<unsafe extern "C" fn(host: *const RFFIHostApi) -> i32>;

/// The runtime's stateful entry points, handed to a plugin so that everything it registers or
/// raises lands in the one runtime of the process (whichever image that is), and so that a C
/// plugin needs no link-time dependency. Each entry behaves as the C function of the same name.
///
/// New entries are only ever appended; `size` tells a plugin which ones this host has.
#[repr(C)]
pub struct RFFIHostApi {
    /// ABI version of the host runtime.
    pub version: RFFIVersion,
    /// `sizeof(RFFIHostApi)` as the host knows it.
    pub size: u32,
    /// `RFFIObjectIncRef`.
    pub object_inc_ref: unsafe extern "C" fn(RFFIObjectHandle) -> i32,
    /// `RFFIObjectDecRef`.
    pub object_dec_ref: unsafe extern "C" fn(RFFIObjectHandle) -> i32,
    /// `RFFIFunctionCreate`.
    pub function_create: unsafe extern "C" fn(
        *mut c_void,
        RFFISafeCallType,
        Option<unsafe extern "C" fn(*mut c_void)>,
        *mut RFFIObjectHandle,
    ) -> i32,
    /// `RFFIFunctionCall`.
    pub function_call:
        unsafe extern "C" fn(RFFIObjectHandle, *mut RFFIAny, i32, *mut RFFIAny) -> i32,
    /// `RFFIFunctionGetGlobal`.
    pub function_get_global:
        unsafe extern "C" fn(*const RFFIByteArray, *mut RFFIObjectHandle) -> i32,
    /// `RFFIFunctionSetGlobal`.
    pub function_set_global:
        unsafe extern "C" fn(*const RFFIByteArray, RFFIObjectHandle, i32) -> i32,
    /// `RFFIFunctionRemoveGlobal`.
    pub function_remove_global: unsafe extern "C" fn(*const RFFIByteArray) -> i32,
    /// `RFFIFunctionListGlobalNames`.
    pub function_list_global_names: unsafe extern "C" fn(*mut RFFIObjectHandle) -> i32,
    /// `RFFIErrorSetRaised`.
    pub error_set_raised: unsafe extern "C" fn(RFFIObjectHandle),
    /// `RFFIErrorSetRaisedFromCStr`.
    pub error_set_raised_from_cstr: unsafe extern "C" fn(*const c_char, *const c_char),
    /// `RFFIErrorMoveFromRaised`.
    pub error_move_from_raised: unsafe extern "C" fn(*mut RFFIObjectHandle),
    /// `RFFIErrorCreate`.
    pub error_create: unsafe extern "C" fn(
        *const RFFIByteArray,
        *const RFFIByteArray,
        *const RFFIByteArray,
        *mut RFFIObjectHandle,
    ) -> i32,
    /// `RFFIStringFromByteArray`.
    pub string_from_byte_array: unsafe extern "C" fn(*const RFFIByteArray, *mut RFFIAny) -> i32,
    /// `RFFIBytesFromByteArray`.
    pub bytes_from_byte_array: unsafe extern "C" fn(*const RFFIByteArray, *mut RFFIAny) -> i32,
    /// `RFFIDataTypeFromString`.
    pub data_type_from_string: unsafe extern "C" fn(*const RFFIByteArray, *mut DLDataType) -> i32,
    /// `RFFITypeKeyToIndex`.
    pub type_key_to_index: unsafe extern "C" fn(*const RFFIByteArray, *mut i32) -> i32,
    /// `RFFITypeRegisterKey`.
    pub type_register_key: unsafe extern "C" fn(*const RFFIByteArray, *mut i32) -> i32,
    /// `RFFITypeIndexToKey`.
    pub type_index_to_key: unsafe extern "C" fn(i32, *mut RFFIByteArray) -> i32,
    /// `RFFIModuleLoadFromFile`.
    pub module_load_from_file:
        unsafe extern "C" fn(*const RFFIByteArray, *mut RFFIObjectHandle) -> i32,
    /// `RFFIEnvSetStream`.
    pub env_set_stream: unsafe extern "C" fn(i32, i32, *mut c_void, *mut *mut c_void) -> i32,
    /// `RFFIEnvGetStream`.
    pub env_get_stream: unsafe extern "C" fn(i32, i32) -> *mut c_void,
    /// `RFFIEnvGetDLPackManagedTensorAllocator`.
    pub env_get_dlpack_managed_tensor_allocator:
        unsafe extern "C" fn() -> RFFIDLPackManagedTensorAllocator,
    /// `RFFITensorFromDLPack`.
    pub tensor_from_dlpack:
        unsafe extern "C" fn(*mut DLManagedTensor, i32, i32, *mut RFFIObjectHandle) -> i32,
    /// `RFFITensorFromDLPackVersioned`.
    pub tensor_from_dlpack_versioned:
        unsafe extern "C" fn(*mut DLManagedTensorVersioned, i32, i32, *mut RFFIObjectHandle) -> i32,
    /// `RFFIEnvSetDLPackManagedTensorAllocator`.
    pub env_set_dlpack_managed_tensor_allocator: unsafe extern "C" fn(
        RFFIDLPackManagedTensorAllocator,
        i32,
        *mut RFFIDLPackManagedTensorAllocator,
    ) -> i32,
    // ABI 0.2: the type registry's reflection.
    /// `RFFITypeGetOrAllocIndex` (ABI 0.2).
    pub type_get_or_alloc_index:
        unsafe extern "C" fn(*const RFFIByteArray, i32, i32, i32, i32, i32) -> i32,
    /// `RFFIGetTypeInfo` (ABI 0.2).
    pub get_type_info: extern "C" fn(i32) -> *const RFFITypeInfo,
    /// `RFFITypeRegisterField` (ABI 0.2).
    pub type_register_field: unsafe extern "C" fn(i32, *const RFFIFieldInfo) -> i32,
    /// `RFFITypeRegisterMethod` (ABI 0.2).
    pub type_register_method: unsafe extern "C" fn(i32, *const RFFIMethodInfo) -> i32,
    /// `RFFITypeRegisterMetadata` (ABI 0.2).
    pub type_register_metadata: unsafe extern "C" fn(i32, *const RFFITypeMetadata) -> i32,
}
