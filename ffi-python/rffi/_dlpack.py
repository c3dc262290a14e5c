"""DLPack capsules both ways, zero copy: exports of a Tensor (``Tensor.__dlpack__``), imports
of a producer's capsule (``rffi.from_dlpack``), the array API's device and stream checks, and the
allocator a producer's DLPack exchange API publishes.

Capsules are handled through ``ctypes.pythonapi``; numpy and torch are never imported here.
"""

from __future__ import annotations

import ctypes
import operator

from . import _layout as L
from . import _lib
from ._error import _OUT_POOL, _out_slot, take_raised_exception

_api = ctypes.pythonapi
_PyCapsule_GetPointer = _api.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_IsValid = _api.PyCapsule_IsValid
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_SetName = _api.PyCapsule_SetName
_PyCapsule_SetName.restype = ctypes.c_int
_PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_New = _api.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_PyCapsule_GetPointerRaw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api)
)
_PyCapsule_IsValidRaw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api)
)

# Capsule names live as module constants: PyCapsule_SetName keeps the pointer, not a copy.
_DLTENSOR = b"dltensor"
_USED_DLTENSOR = b"used_dltensor"
_DLTENSOR_VERSIONED = b"dltensor_versioned"
_USED_DLTENSOR_VERSIONED = b"used_dltensor_versioned"

_MANAGED_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_read_ptr = ctypes.c_void_p.from_address

# kDLCPU, kDLCUDAHost, kDLROCMHost: memory the host reads directly.
CPU = 1
HOST_DEVICE_TYPES = (CPU, 3, 11)
# kDLCUDA, kDLROCM: devices whose consumers name a stream.
_STREAM_DEVICE_TYPES = (2, 10)
_IS_COPIED = 1 << 1  # DLPack's DLPACK_FLAG_BITMASK_IS_COPIED


def device_pair(dl_device) -> tuple:
    try:
        ty, index = dl_device
        return (operator.index(ty), operator.index(index))
    except (TypeError, ValueError):
        raise TypeError(
            f"dl_device must be a (device type, index) pair as __dlpack_device__ gives, got "
            f"{dl_device!r}"
        ) from None


def check_stream(stream, device) -> None:
    """The array API's stream values: an int on CUDA (not 0, which is ambiguous) and ROCm (not 1
    or 2); only None (or -1: no synchronization) on devices without streams."""
    if stream is None:
        return
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError(f"stream must be an int or None, got {type(stream).__name__}")
    if stream == -1:
        return
    ty = device[0]
    if ty not in _STREAM_DEVICE_TYPES:
        raise BufferError(
            f"stream={stream} given for a tensor on a device without streams "
            f"(device type {ty}): only None is accepted there"
        )
    if stream < -1 or (ty == 2 and stream == 0) or (ty == 10 and stream in (1, 2)):
        raise BufferError(f"stream={stream} is not a valid stream for device type {ty}")


def export(t, versioned: bool, copied: bool):
    """A capsule owning a DLPack export of ``t`` (a Tensor)."""
    out = ctypes.c_void_p()
    if versioned:
        if _lib.TensorToDLPackVersioned(t._h, ctypes.byref(out)) != 0:
            raise take_raised_exception()
        if copied:
            flags = ctypes.c_uint64.from_address(out.value + L.VERSIONED_FLAGS)
            flags.value |= _IS_COPIED
        return _PyCapsule_New(out.value, _DLTENSOR_VERSIONED, _CAPSULE_DELETER_VERSIONED_ADDR)
    if _lib.TensorToDLPack(t._h, ctypes.byref(out)) != 0:
        raise take_raised_exception()
    return _PyCapsule_New(out.value, _DLTENSOR, _CAPSULE_DELETER_ADDR)


def _capsule_deleter(capsule, name, deleter_offset):
    # A capsule nobody consumed still owns its managed tensor: call the tensor's deleter.
    if _PyCapsule_IsValidRaw(capsule, name):
        managed = _PyCapsule_GetPointerRaw(capsule, name)
        deleter = _read_ptr(managed + deleter_offset).value
        if deleter:
            _MANAGED_DELETER(deleter)(managed)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_CAPSULE_DELETER = _CAPSULE_DESTRUCTOR(lambda c: _capsule_deleter(c, _DLTENSOR, L.MANAGED_DELETER))
_CAPSULE_DELETER_VERSIONED = _CAPSULE_DESTRUCTOR(
    lambda c: _capsule_deleter(c, _DLTENSOR_VERSIONED, L.VERSIONED_DELETER)
)
_CAPSULE_DELETER_ADDR = ctypes.cast(_CAPSULE_DELETER, ctypes.c_void_p).value
_CAPSULE_DELETER_VERSIONED_ADDR = ctypes.cast(_CAPSULE_DELETER_VERSIONED, ctypes.c_void_p).value


def consume_capsule(capsule, require_alignment: int, require_contiguous: bool) -> int:
    """Imports a DLPack capsule as a Tensor handle (owned), marking the capsule used."""
    # Asking for the pointer under each name checks the name too (a mismatch is a ValueError):
    # one C call in the common case instead of a check and a fetch.
    try:
        managed = _PyCapsule_GetPointer(capsule, _DLTENSOR_VERSIONED)
        used, importer = _USED_DLTENSOR_VERSIONED, _lib.TensorFromDLPackVersionedAt
    except ValueError:
        try:
            managed = _PyCapsule_GetPointer(capsule, _DLTENSOR)
            used, importer = _USED_DLTENSOR, _lib.TensorFromDLPackAt
        except ValueError:
            raise ValueError(
                "rffi.from_dlpack: expected an unused DLPack capsule ('dltensor' or "
                "'dltensor_versioned'); a capsule can be consumed only once"
            ) from None
    slot = _out_slot()
    try:
        rc = importer(managed, int(require_alignment), 1 if require_contiguous else 0, slot[2])
        # The runtime owns the managed tensor from here on, also when it refused it (its deleter
        # has run then): the capsule must not delete it again.
        _PyCapsule_SetName(capsule, used)
        if rc != 0:
            raise take_raised_exception()
        return slot[1][0]
    finally:
        _OUT_POOL.append(slot)


_EXCHANGE_API = b"dlpack_exchange_api"
_ALLOCATORS: dict = {}  # type -> the allocator of its DLPack exchange API, or 0


def allocator_of(t) -> int:
    """The DLPack allocator published by type ``t`` (``__dlpack_c_exchange_api__``), or 0."""
    try:
        return _ALLOCATORS[t]
    except KeyError:
        pass
    alloc = 0
    api = getattr(t, "__dlpack_c_exchange_api__", None)
    if api is not None and _PyCapsule_IsValid(api, _EXCHANGE_API):
        table = _PyCapsule_GetPointer(api, _EXCHANGE_API)
        # DLPackExchangeAPI: version {major, minor} at 0; managed_tensor_allocator at 16.
        if table and ctypes.c_uint32.from_address(table).value == 1:
            alloc = _read_ptr(table + L.EXCHANGE_API_ALLOCATOR).value or 0
    _ALLOCATORS[t] = alloc
    return alloc
