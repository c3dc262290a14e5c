/* Layout of the ABI as a C compiler sees the generated header (compiled with -std=c11). */
#include <stddef.h>
#include "rffi/c_api.h"

_Static_assert(sizeof(RFFIAny) == 16, "RFFIAny size");
_Static_assert(_Alignof(RFFIAny) == 8, "RFFIAny alignment");
_Static_assert(offsetof(RFFIAny, type_index) == 0, "type_index");
_Static_assert(offsetof(RFFIAny, small_str_len) == 4, "small_str_len");
_Static_assert(offsetof(RFFIAny, v) == 8, "payload");
_Static_assert(sizeof(RFFIAnyValue) == 8, "payload size");

_Static_assert(sizeof(RFFIObject) == 24, "object header");
_Static_assert(offsetof(RFFIObject, combined_ref_count) == 0, "ref count");
_Static_assert(offsetof(RFFIObject, type_index) == 8, "object type_index");
_Static_assert(offsetof(RFFIObject, deleter) == 16, "deleter");

_Static_assert(sizeof(RFFIByteArray) == 16, "byte array");
_Static_assert(sizeof(RFFIStrCell) == 16, "Str cell");

/* Cells, placed at offset 24 of their objects. */
_Static_assert(sizeof(RFFIErrorCell) == 72, "Error cell");
_Static_assert(offsetof(RFFIErrorCell, kind) == 0, "Error kind @24");
_Static_assert(offsetof(RFFIErrorCell, message) == 16, "Error message @40");
_Static_assert(offsetof(RFFIErrorCell, backtrace) == 32, "Error backtrace @56");
_Static_assert(offsetof(RFFIErrorCell, update_backtrace) == 48, "update_backtrace @72");
_Static_assert(offsetof(RFFIErrorCell, cause_chain) == 56, "cause_chain @80");
_Static_assert(offsetof(RFFIErrorCell, extra_context) == 64, "extra_context @88");
_Static_assert(sizeof(RFFIFunctionCell) == 16, "Function cell");
_Static_assert(offsetof(RFFIFunctionCell, safe_call) == 0, "safe_call @24");
_Static_assert(offsetof(RFFIFunctionCell, cpp_call) == 8, "cpp_call @32");
_Static_assert(sizeof(RFFIShapeCell) == 16, "Shape cell");
_Static_assert(sizeof(RFFISeqCell) == 32, "Array cell");
_Static_assert(offsetof(RFFISeqCell, size) == 8, "Array size");
_Static_assert(offsetof(RFFISeqCell, capacity) == 16, "Array capacity");
_Static_assert(offsetof(RFFISeqCell, data_deleter) == 24, "Array data_deleter");
_Static_assert(sizeof(RFFIOpaqueObjectCell) == 8, "Opaque cell");
_Static_assert(sizeof(RFFIVersion) == 12, "version");

/* DLPack. */
_Static_assert(sizeof(DLDataType) == 4, "DLDataType");
_Static_assert(sizeof(DLDevice) == 8, "DLDevice");
_Static_assert(sizeof(DLTensor) == 48, "DLTensor");
_Static_assert(offsetof(DLTensor, ndim) == 16, "DLTensor ndim");
_Static_assert(offsetof(DLTensor, dtype) == 20, "DLTensor dtype");
_Static_assert(offsetof(DLTensor, byte_offset) == 40, "DLTensor byte_offset");
_Static_assert(sizeof(DLManagedTensor) == 64, "DLManagedTensor");
_Static_assert(sizeof(DLManagedTensorVersioned) == 80, "DLManagedTensorVersioned");
_Static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "versioned flags");
_Static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "versioned dl_tensor");

/* The Tensor object: the header, then the DLTensor at 24 (TVMFFITensorGetDLTensorPtr is obj + 24). */
_Static_assert(offsetof(RFFITensorObject, header) == 0, "Tensor header");
_Static_assert(offsetof(RFFITensorObject, dl_tensor) == 24, "Tensor DLTensor @24");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.data) == 24, "Tensor data @24");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.device) == 32, "Tensor device @32");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.device.device_id) == 36, "Tensor device id @36");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.ndim) == 40, "Tensor ndim @40");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.dtype) == 44, "Tensor dtype @44");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.dtype.lanes) == 46, "Tensor lanes @46");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.shape) == 48, "Tensor shape @48");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.strides) == 56, "Tensor strides @56");
_Static_assert(offsetof(RFFITensorObject, dl_tensor.byte_offset) == 64, "Tensor byte_offset @64");
_Static_assert(sizeof(RFFITensorObject) >= 72, "Tensor object at least 72 bytes");
_Static_assert(kRFFITensor == 70 && kRFFIDLTensorPtr == 7, "tensor type indices");
_Static_assert(sizeof(RFFIDLPackManagedTensorAllocator) == sizeof(void*), "allocator hook");
_Static_assert(offsetof(DLManagedTensorVersioned, manager_ctx) == 8, "versioned manager_ctx");
_Static_assert(offsetof(DLManagedTensorVersioned, deleter) == 16, "versioned deleter");
_Static_assert(offsetof(DLManagedTensor, manager_ctx) == 48, "legacy manager_ctx");
_Static_assert(offsetof(DLManagedTensor, deleter) == 56, "legacy deleter");

/* Type indices fixed by the ABI. */
_Static_assert(kRFFIStr == 65 && kRFFIFunction == 68 && kRFFIArray == 71, "type indices");
_Static_assert(kRFFISmallStr == 11 && kRFFISmallBytes == 12, "small string indices");
_Static_assert(kRFFIDynObjectBegin == 128, "dynamic types");
_Static_assert(kRFFIList == 75 && kRFFIDict == 76, "mutable container indices");

/* Reflection: tvm-ffi's TVMFFITypeInfo / FieldInfo / MethodInfo / TypeMetadata. */
_Static_assert(sizeof(RFFITypeInfo) == 72, "TypeInfo 72 bytes");
_Static_assert(offsetof(RFFITypeInfo, type_key) == 8, "TypeInfo type_key @8");
_Static_assert(offsetof(RFFITypeInfo, type_ancestors) == 24, "TypeInfo ancestors @24");
_Static_assert(offsetof(RFFITypeInfo, type_key_hash) == 32, "TypeInfo key hash @32");
_Static_assert(offsetof(RFFITypeInfo, num_fields) == 40, "TypeInfo num_fields @40");
_Static_assert(offsetof(RFFITypeInfo, fields) == 48, "TypeInfo fields @48");
_Static_assert(offsetof(RFFITypeInfo, methods) == 56, "TypeInfo methods @56");
_Static_assert(offsetof(RFFITypeInfo, metadata) == 64, "TypeInfo metadata @64");
_Static_assert(sizeof(RFFIFieldInfo) == 120, "FieldInfo 120 bytes");
_Static_assert(offsetof(RFFIFieldInfo, flags) == 48, "FieldInfo flags @48");
_Static_assert(offsetof(RFFIFieldInfo, offset) == 72, "FieldInfo offset @72");
_Static_assert(offsetof(RFFIFieldInfo, getter) == 80, "FieldInfo getter @80");
_Static_assert(offsetof(RFFIFieldInfo, setter) == 88, "FieldInfo setter @88");
_Static_assert(offsetof(RFFIFieldInfo, default_value_or_factory) == 96, "FieldInfo default @96");
_Static_assert(offsetof(RFFIFieldInfo, field_static_type_index) == 112, "FieldInfo index @112");
_Static_assert(sizeof(RFFIMethodInfo) == 72, "MethodInfo 72 bytes");
_Static_assert(offsetof(RFFIMethodInfo, method) == 56, "MethodInfo method @56");
_Static_assert(sizeof(RFFITypeMetadata) == 32, "TypeMetadata 32 bytes");
_Static_assert(offsetof(RFFITypeMetadata, total_size) == 24, "TypeMetadata total_size @24");
_Static_assert(sizeof(RFFITypeAttrColumn) == 16, "TypeAttrColumn 16 bytes");
_Static_assert(offsetof(RFFITypeAttrColumn, size) == 8, "TypeAttrColumn size @8");
_Static_assert(offsetof(RFFITypeAttrColumn, begin_index) == 12, "TypeAttrColumn begin_index @12");
_Static_assert(kRFFIFieldFlagBitMaskKwOnly == (1 << 10), "field flag bits");
_Static_assert(kRFFIFieldFlagBitMaskSetterIsFunctionObj == (1 << 11), "field flag bits");

int main(void) { return 0; }
