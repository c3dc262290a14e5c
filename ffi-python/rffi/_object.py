"""``Object``: the Python wrapper of a reference-counted runtime object.

A wrapper owns one strong reference to its object (``_handle`` is the object's address) and
releases it when the wrapper dies. ``_tidx`` caches the object's type index, which is what a call
writes next to the handle when the object is passed as an argument.
"""

from __future__ import annotations

import ctypes

from . import _lib

_DecRef = _lib.ObjectDecRef
_IncRef = _lib.ObjectIncRef
_read_u64 = ctypes.c_uint64.from_address
_read_i32 = ctypes.c_int32.from_address

# Python class of each type index that has one (filled by the modules defining them).
CLASS_OF_INDEX: dict = {}


def type_key(type_index: int) -> str:
    """The runtime's name of a type index (``"ffi.Array"``), or ``"<type N>"``."""
    if _lib.TypeIndexToKey is not None:
        ba = _lib.ByteArray()
        if _lib.TypeIndexToKey(type_index, ctypes.byref(ba)) == 0 and ba.data:
            return ctypes.string_at(ba.data, ba.size).decode("utf-8", "replace")
        _lib.ErrorMoveFromRaised(None)  # not an error worth reporting: fall through
    return f"<type {type_index}>"


class Object:
    """A runtime object held from Python. Instances are made by the runtime's conversions; two
    wrappers of the same object compare equal."""

    __slots__ = ("_handle", "_tidx", "__weakref__")

    def __del__(self):
        h = getattr(self, "_handle", 0)
        if h:
            self._handle = 0
            try:
                _DecRef(h)
            except Exception:  # interpreter shutdown: the library may be gone already
                pass

    @property
    def type_index(self) -> int:
        return self._tidx

    @property
    def type_key(self) -> str:
        return type_key(self._tidx)

    def same_as(self, other) -> bool:
        """Whether both wrap the same runtime object."""
        return isinstance(other, Object) and other._handle == self._handle

    def __eq__(self, other):
        if isinstance(other, Object):
            return other._handle == self._handle
        return NotImplemented

    def __hash__(self):
        return hash(self._handle)

    def _use_count(self) -> int:
        """The object's strong reference count (this wrapper's included)."""
        return _read_u64(self._handle).value & 0xFFFFFFFF

    def __repr__(self) -> str:
        return f"<rffi.Object {self.type_key} at {self._handle:#x}>"


def wrap_new(cls, handle: int, tidx: int):
    """A wrapper of class ``cls`` that takes over one owned reference to ``handle``."""
    obj = cls.__new__(cls)
    obj._handle = handle
    obj._tidx = tidx
    return obj


def header_type_index(handle: int) -> int:
    """The type index stored in an object's header."""
    return _read_i32(handle + 8).value
