"""The C layouts the package reads and writes in place, described once.

Every byte offset the Python code uses comes from here (never a literal ``h + 24``). The
description mirrors ``include/rffi/c_api.h``, which cbindgen generates from the Rust ABI module
(``ffi-core/src/abi``); ``tests/test_layout.py`` compiles a C program against that header and
checks every size and offset below, so a layout change on the Rust side fails a test here.
"""

from __future__ import annotations

# name -> (size, {field: offset}). Only the fields the package touches, plus enough to check the
# size.
STRUCTS = {
    "RFFIObject": (24, {"combined_ref_count": 0, "type_index": 8, "deleter": 16}),
    "RFFIAny": (16, {"type_index": 0, "small_str_len": 4, "v": 8}),
    "RFFICallFrame": (32, {"func": 0, "num_args": 8, "reserved": 12, "result": 16}),
    "RFFIByteArray": (16, {"data": 0, "size": 8}),
    "RFFIErrorCell": (
        72,
        {
            "kind": 0,
            "message": 16,
            "backtrace": 32,
            "update_backtrace": 48,
            "cause_chain": 56,
            "extra_context": 64,
        },
    ),
    "RFFISeqCell": (32, {"data": 0, "size": 8, "capacity": 16, "data_deleter": 24}),
    "RFFIShapeCell": (16, {"data": 0, "size": 8}),
    "RFFIOpaqueObjectCell": (8, {"handle": 0}),
    "RFFITensorObject": (72, {"header": 0, "dl_tensor": 24}),
    "DLTensor": (
        48,
        {
            "data": 0,
            "device": 8,
            "ndim": 16,
            "dtype": 20,
            "shape": 24,
            "strides": 32,
            "byte_offset": 40,
        },
    ),
    "DLManagedTensor": (64, {"dl_tensor": 0, "manager_ctx": 48, "deleter": 56}),
    "DLManagedTensorVersioned": (
        80,
        {"version": 0, "manager_ctx": 8, "deleter": 16, "flags": 24, "dl_tensor": 32},
    ),
}


def size(struct: str) -> int:
    return STRUCTS[struct][0]


def offset(struct: str, field: str) -> int:
    return STRUCTS[struct][1][field]


# ---- What the package uses ----

#: A machine word: the unit of the int64/float64 views that frames are filled through.
WORD = 8
#: Bytes of one value (RFFIAny) in argument arrays, frames and containers, and where its payload
#: (int, float, pointer) is.
ANY = size("RFFIAny")
ANY_VALUE = offset("RFFIAny", "v")
#: A borrowed (data, size) pair.
BYTE_ARRAY = size("RFFIByteArray")
#: Two adjacent words read at once: (data, size) of a Str, Shape or Array cell.
PAIR = 2 * WORD
#: The object header; an object's cell (its type's fields) follows it.
CELL = size("RFFIObject")
#: The header's type index (int32).
OBJ_TYPE_INDEX = offset("RFFIObject", "type_index")
#: Str/Bytes: (data, size) of the content.
STR_DATA = CELL + offset("RFFIByteArray", "data")
#: Shape: (data, size) of the dimensions.
SHAPE_DATA = CELL + offset("RFFIShapeCell", "data")
#: Array: data pointer and item count.
SEQ_DATA = CELL + offset("RFFISeqCell", "data")
SEQ_SIZE = CELL + offset("RFFISeqCell", "size")
#: Opaque objects: the wrapped handle (a ``PyObject*`` for OpaquePyObject).
OPAQUE_HANDLE = CELL + offset("RFFIOpaqueObjectCell", "handle")
#: Error: kind and message (two RFFIByteArray), and its backtrace-append entry.
ERROR_KIND = CELL + offset("RFFIErrorCell", "kind")
ERROR_UPDATE_BACKTRACE = CELL + offset("RFFIErrorCell", "update_backtrace")
#: Tensor: its DLTensor.
TENSOR_DL = offset("RFFITensorObject", "dl_tensor")
DLTENSOR_SIZE = size("DLTensor")
#: The deleters of the two DLPack managed-tensor forms, and where the versioned one's DLTensor
#: is.
MANAGED_DELETER = offset("DLManagedTensor", "deleter")
VERSIONED_DELETER = offset("DLManagedTensorVersioned", "deleter")
VERSIONED_DL_TENSOR = offset("DLManagedTensorVersioned", "dl_tensor")
VERSIONED_FLAGS = offset("DLManagedTensorVersioned", "flags")
#: A call frame: its header, the argument count and the result slot in it; arguments follow the
#: header.
FRAME_HEADER = size("RFFICallFrame")
FRAME_NUM_ARGS = offset("RFFICallFrame", "num_args")
FRAME_RESULT = offset("RFFICallFrame", "result")
#: DLPackExchangeAPI (DLPack 1.3; not in the rffi header): version {major, minor}, prev_api, then
#: the allocator.
EXCHANGE_API_ALLOCATOR = 16

