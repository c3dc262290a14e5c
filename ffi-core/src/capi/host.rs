//! The table of this image's C entry points that the loader hands to plugins.

use super::{error::*, function::*, module::*, object::*, reflection::*, tensor::*, value::*};
use crate::abi::RFFIHostApi;

static HOST_API: RFFIHostApi = RFFIHostApi {
    version: crate::version(),
    size: core::mem::size_of::<RFFIHostApi>() as u32,
    object_inc_ref: RFFIObjectIncRef,
    object_dec_ref: RFFIObjectDecRef,
    function_create: RFFIFunctionCreate,
    function_call: RFFIFunctionCall,
    function_get_global: RFFIFunctionGetGlobal,
    function_set_global: RFFIFunctionSetGlobal,
    function_remove_global: RFFIFunctionRemoveGlobal,
    function_list_global_names: RFFIFunctionListGlobalNames,
    error_set_raised: RFFIErrorSetRaised,
    error_set_raised_from_cstr: RFFIErrorSetRaisedFromCStr,
    error_move_from_raised: RFFIErrorMoveFromRaised,
    error_create: RFFIErrorCreate,
    string_from_byte_array: RFFIStringFromByteArray,
    bytes_from_byte_array: RFFIBytesFromByteArray,
    data_type_from_string: RFFIDataTypeFromString,
    type_key_to_index: RFFITypeKeyToIndex,
    type_register_key: RFFITypeRegisterKey,
    type_index_to_key: RFFITypeIndexToKey,
    module_load_from_file: RFFIModuleLoadFromFile,
    env_set_stream: RFFIEnvSetStream,
    env_get_stream: RFFIEnvGetStream,
    env_get_dlpack_managed_tensor_allocator: RFFIEnvGetDLPackManagedTensorAllocator,
    tensor_from_dlpack: RFFITensorFromDLPack,
    tensor_from_dlpack_versioned: RFFITensorFromDLPackVersioned,
    env_set_dlpack_managed_tensor_allocator: RFFIEnvSetDLPackManagedTensorAllocator,
    type_get_or_alloc_index: RFFITypeGetOrAllocIndex,
    get_type_info: RFFIGetTypeInfo,
    type_register_field: RFFITypeRegisterField,
    type_register_method: RFFITypeRegisterMethod,
    type_register_metadata: RFFITypeRegisterMetadata,
};

/// The table handed to plugins: this image's, or — when this image is itself a plugin — the
/// table of the runtime it forwards to, so nested plugins bind to the one runtime too.
pub fn api() -> &'static RFFIHostApi {
    crate::host::host().map_or(&HOST_API, |h| h.table())
}
