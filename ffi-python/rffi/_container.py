"""The containers: ``Array`` (``ffi.Array``) and ``Map`` (``ffi.Map``), immutable, holding any
values; ``Shape`` values are plain tuples (``_shape``). Made through the runtime's ``ffi.*``
functions, so their items go through the conversion table like any call argument."""

from __future__ import annotations

import ctypes
import struct
from _thread import get_ident
from collections.abc import Mapping, Sequence

from . import _layout as L
from . import _lib
from ._decode import decode_view
from ._function_registry import get_global_func
from ._mapping_views import MappingViewsMixin
from ._object import CLASS_OF_INDEX, Object, wrap_new

_string_at = getattr(ctypes, "_string_at", ctypes.string_at)
_unpack_QQ = struct.Struct("<QQ").unpack_from
_read_i64 = ctypes.c_int64.from_address


def reduce_container(self):
    """``__reduce__`` of the containers: one table of every container reachable, so cycles and
    sharing survive (see ``_container_pickle``)."""
    self._check_live("pickle")
    from ._container_pickle import reduce

    return reduce(self)


class Array(Object, Sequence):
    """An immutable sequence of values (``ffi.Array``): ``len``, indexing (negative too), slicing
    (to a list), iteration. ``rffi.Array([1, 2])`` makes one."""

    __slots__ = ()

    def __init__(self, items=()):
        ti, h = _FFI_ARRAY._call_keep(*items)
        self._h, self._ti = h, ti

    # Items are read from the array's memory: a released wrapper (address 0) must not get there.
    def __len__(self) -> int:
        if not self._h:
            self._check_live("read")
        return _read_i64(self._h + L.SEQ_SIZE).value

    def __getitem__(self, index):
        if not self._h:
            self._check_live("read")
        data, size = _unpack_QQ(_string_at(self._h + L.SEQ_DATA, L.PAIR))
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(size))]
        try:
            i = index.__index__()
        except AttributeError:
            raise TypeError(
                f"Array indices must be integers or slices, not {type(index).__name__}"
            ) from None
        if i < 0:
            i += size
        if not 0 <= i < size:
            raise IndexError(f"Array index {index} out of range for length {size}")
        return decode_view(_string_at(data + L.ANY * i, L.ANY), 0)

    def __iter__(self):
        if not self._h:
            self._check_live("read")
        data, size = _unpack_QQ(_string_at(self._h + L.SEQ_DATA, L.PAIR))
        if not size:
            return iter(())
        raw = _string_at(data, L.ANY * size)
        # Items are decoded up front: a lazy iterator would read memory owned by the array.
        return iter([decode_view(raw, L.ANY * k) for k in range(size)])

    def _value_form(self, what: str):
        return Array, (list(self),)

    __reduce__ = reduce_container

    # Value behaviour, as a tuple: `==` by elements (with lists, tuples and rffi.List too), a hash
    # of the elements, `+` concatenation.
    def __eq__(self, other):
        if isinstance(other, (Array, list, tuple)) or getattr(other, "_ti", None) == 75:
            return list(self) == list(other)
        return NotImplemented

    def __hash__(self):
        return hash(tuple(self))

    def __add__(self, other):
        if isinstance(other, (Array, list, tuple)) or getattr(other, "_ti", None) == 75:
            return Array([*self, *other])
        return NotImplemented

    # `[1] + Array([2])` is an Array too, whichever side the Array is on (as in tvm-ffi).
    def __radd__(self, other):
        if isinstance(other, (list, tuple)):
            return Array([*other, *self])
        return NotImplemented

    # As a list's (and tvm-ffi's Array): `[1, 2]`.
    def __repr__(self) -> str:
        if not self._h:
            return "<rffi.Array (released)>"
        return sequence_repr(self, list(self))


class Map(MappingViewsMixin, Object, Mapping):
    """An immutable mapping in insertion order (``ffi.Map``): ``m[key]`` (KeyError when missing),
    ``in``, ``len``, iteration over keys, ``get()``, and ``keys()``, ``values()``, ``items()``
    views like a dict's.
    ``rffi.Map({"a": 1})`` makes one."""

    __slots__ = ()

    def __init__(self, items=()):
        if isinstance(items, Mapping):
            items = items.items()
        flat = []
        for k, v in items:
            flat.append(k)
            flat.append(v)
        ti, h = _FFI_MAP._call_keep(*flat)
        self._h, self._ti = h, ti

    def __len__(self) -> int:
        return _FFI_MAP_SIZE(self)

    def __getitem__(self, key):
        return _FFI_MAP_GET(self, key)

    def __contains__(self, key) -> bool:
        try:
            return _FFI_MAP_COUNT(self, key) != 0
        except TypeError:  # an unhashable key is not in the map
            return False

    def get(self, key, default=None):
        if key in self:
            return self[key]
        return default

    def _pairs(self) -> list:
        flat = _FFI_MAP_ITEMS(self)
        return list(zip(flat[0::2], flat[1::2]))

    def __iter__(self):
        return iter([k for k, _ in self._pairs()])

    def _value_form(self, what: str):
        return Map, (self._pairs(),)

    __reduce__ = reduce_container

    # Value behaviour, as a dict's: `==` by items (with any mapping); immutable, so hashable
    # when its values are.
    def __eq__(self, other):
        if isinstance(other, Mapping):
            return dict(self._pairs()) == dict(other.items())
        return NotImplemented

    def __hash__(self):
        return hash(frozenset(self._pairs()))

    # As a dict's (and tvm-ffi's Map): `{'a': 1}`.
    def __repr__(self) -> str:
        return mapping_repr(self, self._pairs())


_REPR_ACTIVE: set = set()


def _guarded(obj, fill: str, render) -> str:
    # A List or Dict may hold itself (directly or not): its repr shows `[...]` / `{...}` there,
    # as Python's do. Keyed by the runtime object, since each read makes a new wrapper.
    key = (obj._h, get_ident())
    if key in _REPR_ACTIVE:
        return fill
    _REPR_ACTIVE.add(key)
    try:
        return render()
    finally:
        _REPR_ACTIVE.discard(key)


def sequence_repr(obj, items: list) -> str:
    """``[a, b]``, as a list's repr."""
    return _guarded(obj, "[...]", lambda: "[" + ", ".join(repr(x) for x in items) + "]")


def mapping_repr(obj, pairs: list) -> str:
    """``{k: v}``, as a dict's repr (keys the runtime tells apart stay apart)."""
    return _guarded(obj, "{...}", lambda: "{" + ", ".join(f"{k!r}: {v!r}" for k, v in pairs) + "}")


CLASS_OF_INDEX[_lib.kArray] = Array
CLASS_OF_INDEX[_lib.kMap] = Map

_FFI_ARRAY = get_global_func("ffi.Array")
_FFI_MAP = get_global_func("ffi.Map")
_FFI_MAP_SIZE = get_global_func("ffi.MapSize")
_FFI_MAP_GET = get_global_func("ffi.MapGetItem")
_FFI_MAP_COUNT = get_global_func("ffi.MapCount")
_FFI_MAP_ITEMS = get_global_func("ffi.MapItems")
_FFI_SHAPE = get_global_func("ffi.Shape")


def make_array(items) -> Array:
    """A new Array of ``items`` (a call of ``ffi.Array``)."""
    return _FFI_ARRAY(*items)


def make_map(mapping) -> Map:
    """A new Map of a mapping's items, in order."""
    flat = []
    for k, v in mapping.items():
        flat.append(k)
        flat.append(v)
    return _FFI_MAP(*flat)


def make_shape(dims) -> Object:
    """A new ``ffi.Shape`` object of ``dims`` (a Shape converts back to a tuple, so this is the
    wrapper a call argument needs)."""
    ti, h = _FFI_SHAPE._call_keep(*dims)
    return wrap_new(Object, h, ti)
