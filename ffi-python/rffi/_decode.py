"""rffi -> Python: the value a runtime value becomes, by type index.

Results, callback arguments and container items all come through here. A *borrowed* value
(callback arguments, container items) leaves the runtime's reference alone; an *owned* one (call
results) is taken over: plain values release it, wrappers keep it. Object types that become plain
Python values (Str, Bytes, Shape, opaque Python objects, Functions) have a decoder in
``OBJ_DECODERS``; the others are wrapped in their class from ``CLASS_OF_INDEX``.
"""

from __future__ import annotations

import ctypes
import struct

from . import _layout as L
from . import _lib
from ._device import Device
from ._dtype import DataType
from ._object import CLASS_OF_INDEX, Object, header_type_index, wrap_new
from ._shape import Shape

# ctypes.string_at is a Python wrapper around this foreign function; calling it directly saves a
# Python call on every read of native memory.
_string_at = getattr(ctypes, "_string_at", ctypes.string_at)
_c_void_p = ctypes.c_void_p
_DecRef = _lib.ObjectDecRef
_IncRef = _lib.ObjectIncRef
_unpack_iIq = struct.Struct("<iIq").unpack_from
_unpack_QQ = struct.Struct("<QQ").unpack_from
_unpack_d = struct.Struct("<d").unpack_from
_ANY_VALUE = L.ANY_VALUE
_pack_q = struct.Struct("<q").pack
pack_any = struct.Struct("<qq").pack
_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


def read_str_cell(h: int) -> bytes:
    """The content of a Str or Bytes object."""
    data, size = _unpack_QQ(_string_at(h + L.STR_DATA, L.PAIR))
    return _string_at(data, size) if size else b""


def read_shape(h: int) -> tuple:
    data, size = _unpack_QQ(_string_at(h + L.SHAPE_DATA, L.PAIR))
    if not size:
        return ()
    return struct.unpack(f"<{size}q", _string_at(data, L.WORD * size))


def py_object_at(addr: int):
    return ctypes.py_object.from_address(addr).value


_DYN_BEGIN = 128  # kRFFIDynObjectBegin


def obj_owned(ti: int, h: int):
    """The Python value for an object handle whose reference we own (it is taken over)."""
    if ti == _lib.kStr:
        try:
            return read_str_cell(h).decode("utf-8")
        finally:
            _DecRef(h)
    dec = OBJ_DECODERS.get(ti)
    if dec is not None:
        return dec(h)
    cls = CLASS_OF_INDEX.get(ti)
    if cls is not None:
        return wrap_new(cls, h, ti)
    if ti >= _DYN_BEGIN:  # a registered type without a class: one built from its type info
        from ._object_model import fallback_class

        return wrap_new(fallback_class(ti), h, ti)
    return wrap_new(Object, h, ti)


def obj_borrowed(ti: int, h: int):
    """The Python value for an object we only borrow (callback arguments, container items)."""
    if ti == _lib.kStr:
        return read_str_cell(h).decode("utf-8")
    if ti == _lib.kBytes:
        return read_str_cell(h)
    if ti == _lib.kShape:
        return Shape(read_shape(h))
    if ti == _lib.kOpaquePyObject:
        return py_object_at(h + L.OPAQUE_HANDLE)
    _IncRef(h)
    return obj_owned(ti, h)


def decode_pod(ti: int, ln: int, p: int):
    """A non-object value from its type index, small-string length and int64 payload."""
    if ti == _lib.kNone:
        return None
    if ti == _lib.kInt:
        return p
    if ti == _lib.kBool:
        return p != 0
    if ti == _lib.kSmallStr:
        return (p & _M64).to_bytes(8, "little")[:ln].decode("utf-8")
    if ti == _lib.kSmallBytes:
        return (p & _M64).to_bytes(8, "little")[:ln]
    if ti == _lib.kFloat:
        return _unpack_d(_pack_q(p))[0]
    if ti == _lib.kOpaquePtr:
        return _c_void_p(p & _M64 or None)
    if ti == _lib.kDataType:
        return DataType._from_fields(p & 0xFF, (p >> 8) & 0xFF, (p >> 16) & 0xFFFF)
    if ti == _lib.kDevice:
        return Device._from_fields(p & _M32, (p >> 32) & _M32)
    if ti == _lib.kRawStr:
        return _string_at(p, -1).decode("utf-8") if p else None
    if ti == _lib.kByteArrayPtr:
        data, size = _unpack_QQ(_string_at(p, L.BYTE_ARRAY))
        return _string_at(data, size) if size else b""
    if ti == _lib.kDLTensorPtr:
        dec = OBJ_DECODERS.get(_lib.kDLTensorPtr)
        return dec(p) if dec is not None else _c_void_p(p or None)
    if ti == _lib.kObjectRValueRef:
        # A moved object: the callee takes the reference out of the slot, so the caller's
        # wrapper is empty after the call (as when a compiled callee moves out of it).
        slot = _c_void_p.from_address(p)
        h = slot.value
        if not h:
            return None
        slot.value = None
        return obj_owned(header_type_index(h), h)
    raise TypeError(f"rffi: cannot convert a value of type index {ti} to Python")


def decode_view(raw: bytes, off: int):
    """A borrowed value (an ``RFFIAny``) at ``raw[off:]`` as a Python value."""
    ti, ln, p = _unpack_iIq(raw, off)
    if ti == 1:  # kInt, the common case, without a call
        return p
    if ti >= 64:
        return obj_borrowed(ti, p)
    if ti == _lib.kFloat:
        return _unpack_d(raw, off + _ANY_VALUE)[0]
    return decode_pod(ti, ln, p)


def decode_frame_result(fr, w: int):
    """The owned result in a frame (``w`` its type word), taken over; an object result leaves the
    slot None again, as the next call requires."""
    q = fr[1]
    ti = w & _M32
    if ti == 11:  # kSmallStr
        return q[3].to_bytes(8, "little")[: w >> 32].decode()
    if ti >= 64:
        h = q[3]
        q[2] = 0
        return obj_owned(ti, h)
    if ti == 3:  # kFloat
        return fr[2][3]
    return decode_pod(ti, w >> 32, q[3])


def decode_owned(w: int, p: int):
    """A result given as type word (index | small length << 32) and payload; an object result's
    reference is taken over (the native path hands over what it does not convert itself)."""
    ti = w & _M32
    if ti >= 64:
        return obj_owned(ti, p)
    return decode_pod(ti, w >> 32, p)


def decode_borrowed(w: int, p: int):
    """A borrowed value given as (type word, payload): a callback's argument."""
    return decode_view(pack_any(w, p), 0)


def _decode_bytes(h: int) -> bytes:
    try:
        return read_str_cell(h)
    finally:
        _DecRef(h)


def _decode_shape(h: int) -> Shape:
    try:
        return Shape(read_shape(h))
    finally:
        _DecRef(h)


def _decode_opaque(h: int):
    try:
        return py_object_at(h + L.OPAQUE_HANDLE)
    finally:
        _DecRef(h)


# Object types that convert to plain Python values (their handle is released); the Function
# wrapper's is added by rffi._function.
OBJ_DECODERS: dict = {
    _lib.kBytes: _decode_bytes,
    _lib.kShape: _decode_shape,
    _lib.kOpaquePyObject: _decode_opaque,
}


def register_object_decoder(type_index: int, decoder) -> None:
    """Installs the Python value for an object type: ``decoder(owned_handle)``."""
    OBJ_DECODERS[type_index] = decoder
