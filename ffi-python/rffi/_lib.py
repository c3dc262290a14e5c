"""Loading ``librffi.so`` and declaring the C functions the package calls through ctypes.

The library is looked up in this order:

1. ``RFFI_LIBRARY_PATH``: a path to ``librffi.so`` (or to the folder holding it), so that a
   source checkout can run against a locally built library
   (``cargo build --release -p rffi-c`` puts it in ``target/release/``);
2. ``librffi.so`` inside this package, where ``pip install ./ffi-python`` puts it.

Nothing here imports numpy or torch.
"""

from __future__ import annotations

import ctypes
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
LIB_NAME = "librffi.dylib" if sys.platform == "darwin" else "librffi.so"
_LIB_NAME = LIB_NAME

# The ABI major version this package speaks. A library of another major version is refused at
# import with both versions named, rather than crashing on the first mismatched layout.
ABI_MAJOR = 0


def _find_library() -> str:
    env = os.environ.get("RFFI_LIBRARY_PATH")
    if env:
        path = os.path.join(env, _LIB_NAME) if os.path.isdir(env) else env
        if not os.path.isfile(path):
            raise ImportError(
                f"rffi: RFFI_LIBRARY_PATH={env!r} does not name {_LIB_NAME} or a folder holding it"
            )
        return os.path.abspath(path)
    path = os.path.join(_HERE, _LIB_NAME)
    if os.path.isfile(path):
        return path
    raise ImportError(
        f"rffi: {_LIB_NAME} is not inside the package ({_HERE}). Install the package with "
        "`pip install ./ffi-python` (which builds the library), or point RFFI_LIBRARY_PATH at a "
        "built library (`cargo build --release -p rffi-c` writes target/release/librffi.so)."
    )


# Rendering a native backtrace symbolizes every frame of the whole C stack (the Python
# interpreter's included), which costs tens of milliseconds per error; capturing it costs ~10 us
# per raise. Python users get the frame that raised (file, line, function) from the runtime
# either way, so native capture is off unless the user asks for it with RFFI_BACKTRACE=1.
os.environ.setdefault("RFFI_BACKTRACE", "0")

LIB_PATH = _find_library()
# RTLD_GLOBAL: a C plugin that links librffi.so (by its SONAME) or expects its symbols in the
# global scope then binds to this very copy, so the process has one function registry.
LIB = ctypes.CDLL(LIB_PATH, mode=ctypes.RTLD_GLOBAL)

c_void_p = ctypes.c_void_p
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
P = ctypes.POINTER


class ByteArray(ctypes.Structure):
    """``RFFIByteArray``: a borrowed (data, size) range."""

    _fields_ = [("data", c_void_p), ("size", c_size_t)]


class Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("patch", ctypes.c_uint32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


def _fn(name, restype, argtypes):
    f = getattr(LIB, name)
    f.restype = restype
    f.argtypes = argtypes
    return f


def _optional_fn(name, restype, argtypes):
    """A function that older libraries may lack (then None)."""
    try:
        return _fn(name, restype, argtypes)
    except AttributeError:
        return None


_GetVersion = _fn("RFFIGetVersion", None, [P(Version)])


def library_version() -> tuple:
    v = Version()
    _GetVersion(ctypes.byref(v))
    return (v.major, v.minor, v.patch)


VERSION = library_version()
if VERSION[0] != ABI_MAJOR:
    raise ImportError(
        f"rffi: {LIB_PATH} implements ABI {VERSION[0]}.{VERSION[1]}.{VERSION[2]}, but this package "
        f"speaks ABI {ABI_MAJOR}.x; install a matching library"
    )

# The hot call: one pointer to a prepared frame (see rffi/_core.py). No argtypes: a ctypes array
# passed without argtypes goes through as a plain pointer, which is the cheapest path ctypes has.
CallFrame = LIB.RFFIFunctionCallFrame
CallFrame.restype = c_int32

ObjectIncRef = _fn("RFFIObjectIncRef", c_int32, [c_void_p])
ObjectDecRef = _fn("RFFIObjectDecRef", c_int32, [c_void_p])
ObjectCreateOpaque = _fn(
    "RFFIObjectCreateOpaque", c_int32, [c_void_p, c_int32, c_void_p, P(c_void_p)]
)
TypeKeyToIndex = _fn("RFFITypeKeyToIndex", c_int32, [P(ByteArray), P(c_int32)])
TypeIndexToKey = _optional_fn("RFFITypeIndexToKey", c_int32, [c_int32, P(ByteArray)])

ErrorMoveFromRaised = _fn("RFFIErrorMoveFromRaised", None, [P(c_void_p)])
ErrorSetRaised = _fn("RFFIErrorSetRaised", None, [c_void_p])
ErrorSetRaisedFromCStr = _fn("RFFIErrorSetRaisedFromCStr", None, [c_char_p, c_char_p])
ErrorCreate = _fn(
    "RFFIErrorCreate", c_int32, [P(ByteArray), P(ByteArray), P(ByteArray), P(c_void_p)]
)
ErrorGetKind = _fn("RFFIErrorGetKind", c_int32, [c_void_p, P(ByteArray)])
ErrorGetMessage = _fn("RFFIErrorGetMessage", c_int32, [c_void_p, P(ByteArray)])
ErrorGetBacktrace = _fn("RFFIErrorGetBacktrace", c_int32, [c_void_p, P(ByteArray)])


def _fn_addr(name, restype, argtypes):
    """A second prototype of `name` whose pointer arguments are plain addresses (ints), for the
    error path, which writes its outputs into preallocated memory instead of ctypes objects."""
    f = LIB[name]  # indexing makes a new function object; attribute access would share one
    f.restype = restype
    f.argtypes = argtypes
    return f


ErrorMoveFromRaisedAt = _fn_addr("RFFIErrorMoveFromRaised", None, [c_void_p])
ErrorGetBacktraceAt = _fn_addr("RFFIErrorGetBacktrace", c_int32, [c_void_p, c_void_p])
FunctionCreateAt = _fn_addr("RFFIFunctionCreate", c_int32, [c_void_p, c_void_p, c_void_p, c_void_p])

SAFE_CALL = ctypes.CFUNCTYPE(c_int32, c_void_p, c_void_p, c_int32, c_void_p)
DELETER = ctypes.CFUNCTYPE(None, c_void_p)

FunctionCreate = _fn("RFFIFunctionCreate", c_int32, [c_void_p, c_void_p, c_void_p, P(c_void_p)])
FunctionGetGlobal = _fn("RFFIFunctionGetGlobal", c_int32, [P(ByteArray), P(c_void_p)])
FunctionSetGlobal = _fn("RFFIFunctionSetGlobal", c_int32, [P(ByteArray), c_void_p, c_int32])
FunctionRemoveGlobal = _fn("RFFIFunctionRemoveGlobal", c_int32, [P(ByteArray)])
FunctionListGlobalNames = _fn("RFFIFunctionListGlobalNames", c_int32, [P(c_void_p)])

# Addresses inside call frames are passed as ints, hence c_void_p rather than typed pointers.
StringFromByteArray = _fn("RFFIStringFromByteArray", c_int32, [c_void_p, c_void_p])
BytesFromByteArray = _fn("RFFIBytesFromByteArray", c_int32, [c_void_p, c_void_p])
AnyViewToOwnedAny = _fn("RFFIAnyViewToOwnedAny", c_int32, [c_void_p, c_void_p])
DataTypeFromString = _fn("RFFIDataTypeFromString", c_int32, [P(ByteArray), P(DLDataType)])
DataTypeToString = _fn("RFFIDataTypeToString", c_int32, [P(DLDataType), c_void_p])

ModuleLoadFromFile = _optional_fn("RFFIModuleLoadFromFile", c_int32, [P(ByteArray), P(c_void_p)])
ModuleGetFunction = _optional_fn(
    "RFFIModuleGetFunction", c_int32, [c_void_p, P(ByteArray), P(c_void_p)]
)
ModuleListFunctions = _optional_fn("RFFIModuleListFunctions", c_int32, [c_void_p, P(c_void_p)])

TensorFromDLPack = _optional_fn(
    "RFFITensorFromDLPack", c_int32, [c_void_p, c_int32, c_int32, P(c_void_p)]
)
TensorFromDLPackVersioned = _optional_fn(
    "RFFITensorFromDLPackVersioned", c_int32, [c_void_p, c_int32, c_int32, P(c_void_p)]
)
TensorToDLPack = _optional_fn("RFFITensorToDLPack", c_int32, [c_void_p, P(c_void_p)])
TensorAlloc = _optional_fn(
    "RFFITensorAlloc", c_int32, [c_void_p, c_int32, DLDataType, DLDevice, P(c_void_p)]
)
TensorToDLPackVersioned = _optional_fn(
    "RFFITensorToDLPackVersioned", c_int32, [c_void_p, P(c_void_p)]
)
TensorFromDLPackAt = TensorFromDLPackVersionedAt = None
if TensorFromDLPack is not None:
    TensorFromDLPackAt = _fn_addr(
        "RFFITensorFromDLPack", c_int32, [c_void_p, c_int32, c_int32, c_void_p]
    )
    TensorFromDLPackVersionedAt = _fn_addr(
        "RFFITensorFromDLPackVersioned", c_int32, [c_void_p, c_int32, c_int32, c_void_p]
    )
EnvSetStream = _optional_fn("RFFIEnvSetStream", c_int32, [c_int32, c_int32, c_void_p, P(c_void_p)])
EnvGetStream = _optional_fn("RFFIEnvGetStream", c_void_p, [c_int32, c_int32])
EnvSetDLPackManagedTensorAllocator = _optional_fn(
    "RFFIEnvSetDLPackManagedTensorAllocator", c_int32, [c_void_p, c_int32, P(c_void_p)]
)

# ---- Type indices (rffi/tvm-ffi ABI) ----
kNone = 0
kInt = 1
kBool = 2
kFloat = 3
kOpaquePtr = 4
kDataType = 5
kDevice = 6
kDLTensorPtr = 7
kRawStr = 8
kByteArrayPtr = 9
kObjectRValueRef = 10
kSmallStr = 11
kSmallBytes = 12
kStaticObjectBegin = 64
kObject = 64
kStr = 65
kBytes = 66
kError = 67
kFunction = 68
kShape = 69
kTensor = 70
kArray = 71
kMap = 72
kModule = 73
kOpaquePyObject = 74
