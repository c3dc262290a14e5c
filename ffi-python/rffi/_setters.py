"""The setters of the plain value kinds: each writes one Python value into a frame slot.

A *setter* ``setter(value, frame, slot)`` writes a borrowed value (one ``RFFIAny``: its type word
at ``slot``, its payload at ``slot + 1``, in the frame's int64 words; ``_frame``) and returns
whatever must stay alive until the call returns (or None). The conversion table (``_convert``)
names the setter of each kind; the protocols' setters are in ``_protocols``.
"""

from __future__ import annotations

import ctypes
import operator

from . import _layout as L
from . import _lib
from ._device import device
from ._dtype import DataType
from ._error import take_raised_exception
from ._frame import bytes_address
from ._object import Object, wrap_new
from ._shape import I64_MAX, I64_MIN

_U64 = 2**64


def set_rvalue(v, fr, i):
    """An ``obj._move()``: a pointer to a slot holding the handle, which the callee may empty."""
    h = v.obj._h
    if not h:
        raise ValueError("cannot pass a moved or released object")
    # The reference moves into the slot for the call; the wrapper gets it back afterwards
    # unless the callee took it. Meanwhile the wrapper is empty, so nothing can reach the object
    # through it once the callee owns it.
    v.slot = ctypes.c_void_p(h)
    v.obj._h = 0
    q = fr[1]
    q[i] = _lib.kObjectRValueRef
    q[i + 1] = ctypes.addressof(v.slot)
    return v


def set_none(v, fr, i):
    q = fr[1]
    q[i] = 0
    q[i + 1] = 0


def set_bool(v, fr, i):
    q = fr[1]
    q[i] = _lib.kBool
    q[i + 1] = 1 if v else 0


def set_int(v, fr, i):
    v = int(v)
    if not I64_MIN <= v <= I64_MAX:
        raise OverflowError(f"int {v} does not fit in int64")
    q = fr[1]
    q[i] = _lib.kInt
    q[i + 1] = v


def set_float(v, fr, i):
    fr[1][i] = _lib.kFloat
    fr[2][i + 1] = float(v)


def _set_heap_bytes(b: bytes, fr, i, make, ti):
    """A Str/Bytes object made from ``b`` by ``make`` into slot ``i``; its wrapper (returned)
    releases it after the call."""
    q, addr = fr[1], fr[3]
    s = i + 2 * fr[4]
    q[s] = bytes_address(b)
    q[s + 1] = len(b)
    if make(addr + L.WORD * s, addr + L.WORD * i) != 0:
        raise take_raised_exception()
    return wrap_new(Object, q[i + 1], ti)


def set_str(v, fr, i, _from_bytes=int.from_bytes):
    b = v.encode()
    n = len(b)
    q = fr[1]
    if n <= 7:
        q[i] = _lib.kSmallStr | (n << 32)  # the length in the upper half
        q[i + 1] = _from_bytes(b, "little")
        return None
    if "\x00" not in v:
        # Borrowed C string, zero copy: CPython bytes are NUL-terminated.
        q[i] = _lib.kRawStr
        q[i + 1] = bytes_address(b)
        return b
    return _set_heap_bytes(b, fr, i, _lib.StringFromByteArray, _lib.kStr)


def set_bytes(v, fr, i):
    b = v if type(v) is bytes else bytes(v)
    n = len(b)
    q = fr[1]
    if n <= 7:
        q[i] = _lib.kSmallBytes | (n << 32)
        q[i + 1] = int.from_bytes(b, "little")
        return None
    # Borrowed RFFIByteArray in the scratch slot, pointing at the bytes' own data.
    s = i + 2 * fr[4]
    q[s] = bytes_address(b)
    q[s + 1] = n
    q[i] = _lib.kByteArrayPtr
    q[i + 1] = fr[3] + L.WORD * s
    return b


def set_object(v, fr, i):
    h = v._h
    if not h:
        raise ValueError(f"{type(v).__name__} object has been released")
    q = fr[1]
    q[i] = v._ti
    q[i + 1] = h


def set_device(v, fr, i):
    q = fr[1]
    q[i] = _lib.kDevice
    q[i + 1] = v._device_type | (v._index << 32)


def set_dtype(v, fr, i):
    q = fr[1]
    q[i] = _lib.kDataType
    q[i + 1] = v._code | (v._bits << 8) | (v._lanes << 16)


def set_dtype_like(v, fr, i):
    set_dtype(DataType(v), fr, i)


def set_device_like(v, fr, i):
    set_device(device(v), fr, i)


def set_void_p(v, fr, i):
    set_address(v.value or 0, fr, i)


def set_address(p, fr, i):
    q = fr[1]
    q[i] = _lib.kOpaquePtr
    q[i + 1] = p - _U64 if p > I64_MAX else p


def address(x, what) -> int:
    """An address given as an int or a ``ctypes.c_void_p``."""
    if isinstance(x, ctypes.c_void_p):
        return x.value or 0
    p = operator.index(x)
    if not 0 <= p < _U64:
        raise ValueError(f"{what} gave {p}, which is not an address")
    return p


def set_made(obj, fr, i):
    """Passes ``obj``, a wrapper made for this call (returned: it is released after it)."""
    q = fr[1]
    q[i] = obj._ti
    q[i + 1] = obj._h
    return obj
