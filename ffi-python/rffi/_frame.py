"""Call frames: the preallocated memory a call (or a conversion) writes its values into.

A frame is one block laid out as ``RFFICallFrame`` (``_layout``): the function, the argument
count, the result slot, then ``capacity`` argument slots of one value each, then as many scratch
slots (a bytes argument keeps its ``RFFIByteArray`` there). Python fills it through int64/float64
memoryviews instead of building ctypes structures per call (each costs ~0.5-1 us).

A frame is the tuple ``(buffer, int64 view, float64 view, address, capacity, byte view)``; the
byte view is what ``struct.pack_into`` writes through (it exports its buffer faster than the
ctypes array).
"""

from __future__ import annotations

import ctypes
import sys

from . import _layout as L
from . import _lib

#: Argument slots of a Function's frames (longer calls make a frame of their own).
CAP = 6
# In int64 units: the argument count, the result slot (type word, payload), and where the
# arguments start. The ctypes path's hot code (``_function``, ``_decode``) writes these indices as
# literals, which tests/test_layout.py checks against the layout.
NUM_ARGS = L.FRAME_NUM_ARGS // L.WORD
RESULT = L.FRAME_RESULT // L.WORD
ARGS = L.FRAME_HEADER // L.WORD

# ctypes caches array types only weakly, so a type whose last buffer dies becomes cyclic garbage:
# keep the frame types alive (capacities are CAP and, rarely, larger counts).
_FRAME_TYPES: dict = {}


def new_frame(handle: int, cap: int):
    size = L.FRAME_HEADER + 2 * L.ANY * cap
    array_type = _FRAME_TYPES.get(size)
    if array_type is None:
        array_type = _FRAME_TYPES[size] = ctypes.c_char * size
    buf = array_type()
    raw = memoryview(buf).cast("B")
    q = raw.cast("q")
    q[0] = handle
    return (buf, q, raw.cast("d"), ctypes.addressof(buf), cap, raw)


# Frames without a function, for conversions outside calls (callback results, `convert`).
SCRATCH: list = []


def scratch():
    """A frame for a conversion; give it back with ``SCRATCH.append(fr)``."""
    try:
        return SCRATCH.pop()
    except IndexError:
        return new_frame(0, 1)


def _bytes_address_probe():
    """The offset of a bytes object's data from its id() on this interpreter, if that holds.

    CPython keeps a bytes object's contents inline at a fixed offset (``ob_sval``), so its address
    costs one addition; passing a long str or bytes then copies nothing. Verified here on a probe
    value; other interpreters use ctypes' c_char_p, which is slower but always right.
    """
    if sys.implementation.name != "cpython":
        return None
    offset = bytes.__basicsize__ - 1
    probe = b"rffi: probing the bytes layout\x00!"
    try:
        if ctypes.string_at(id(probe) + offset, len(probe)) == probe:
            return offset
    except Exception:  # pragma: no cover - an unexpected layout
        pass
    return None  # pragma: no cover


_BYTES_OFFSET = _bytes_address_probe()


def bytes_address(b: bytes) -> int:
    """The address of a bytes object's (NUL-terminated) contents, valid while ``b`` lives."""
    if _BYTES_OFFSET is not None:
        return id(b) + _BYTES_OFFSET
    return ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value or 0  # pragma: no cover


def byte_array(b: bytes):
    """An ``RFFIByteArray`` over ``b`` (the caller keeps ``b`` alive)."""
    return _lib.ByteArray(bytes_address(b), len(b))
