"""``List`` and ``Dict``: the runtime's mutable, shared containers (``ffi.List``, ``ffi.Dict``).

Every holder sees a change, whichever language makes it. ``List`` is a ``MutableSequence``
(``append``, ``insert``, ``pop``, ``extend``, ``clear``, item and slice assignment and deletion),
``Dict`` a ``MutableMapping`` (``update``, ``setdefault``, ``pop``, ``clear``, views). Both compare
``==`` by elements with their Python equivalents, ``repr`` like them, and copy and pickle by value.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, MutableSequence

from ._container import mapping_repr, reduce_container, sequence_repr
from ._mapping_views import MappingViewsMixin
from ._object import CLASS_OF_INDEX, Object
from ._object_model import _ffi

K_LIST = 75
K_DICT = 76


def _adopt(self, made) -> None:
    self._h, self._ti = made._h, made._ti
    made._h = 0


class List(Object, MutableSequence):
    """A mutable, shared sequence (``ffi.List``). ``rffi.List([1, 2])`` makes one."""

    __slots__ = ()

    def __init__(self, items=()):
        _adopt(self, _ffi("ffi.List")(*items))

    def __len__(self) -> int:
        return _ffi("ffi.ListSize")(self)

    def _items(self) -> list:
        return list(_ffi("ffi.ListItems")(self))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._items()[i]
        return _ffi("ffi.ListGetItem")(self, i)

    def __setitem__(self, i, value):
        if isinstance(i, slice):
            items = self._items()
            items[i] = value
            self._replace(items)
        else:
            _ffi("ffi.ListSetItem")(self, i, value)

    def __delitem__(self, i):
        if isinstance(i, slice):
            items = self._items()
            del items[i]
            self._replace(items)
        else:
            _ffi("ffi.ListPop")(self, i)

    def _replace(self, items) -> None:
        _ffi("ffi.ListClear")(self)
        _ffi("ffi.ListExtend")(self, items)

    def insert(self, i, value) -> None:
        _ffi("ffi.ListInsert")(self, i, value)

    def append(self, value) -> None:
        _ffi("ffi.ListAppend")(self, value)

    def pop(self, i=None):
        return _ffi("ffi.ListPop")(self, i)

    def clear(self) -> None:
        _ffi("ffi.ListClear")(self)

    def extend(self, values) -> None:
        _ffi("ffi.ListExtend")(self, list(values))

    def __iter__(self):
        return iter(self._items())

    def __contains__(self, value) -> bool:
        return value in self._items()

    def __eq__(self, other):
        if isinstance(other, (list, tuple, List)) or type(other).__name__ == "Array":
            return self._items() == list(other)
        return NotImplemented

    __hash__ = None  # mutable

    def __add__(self, other):
        return List(self._items() + list(other))

    def __radd__(self, other):
        return type(other)(list(other) + self._items())

    def __repr__(self) -> str:
        return sequence_repr(self, self._items())

    def _value_form(self, what: str):
        return (List, (self._items(),))

    def _copy_shell(self):
        return List(), self._items(), List.extend

    __reduce__ = reduce_container


class Dict(MappingViewsMixin, Object, MutableMapping):
    """A mutable, shared mapping in insertion order (``ffi.Dict``). ``rffi.Dict({"a": 1})``."""

    __slots__ = ()

    def __init__(self, items=()):
        if isinstance(items, Mapping):
            items = items.items()
        flat = []
        for k, v in items:
            flat += [k, v]
        _adopt(self, _ffi("ffi.Dict")(*flat))

    def _pairs(self) -> list:
        flat = list(_ffi("ffi.DictItems")(self))
        return list(zip(flat[0::2], flat[1::2]))

    def __len__(self) -> int:
        return _ffi("ffi.DictSize")(self)

    def __getitem__(self, key):
        return _ffi("ffi.DictGetItem")(self, key)

    def __setitem__(self, key, value):
        _ffi("ffi.DictSetItem")(self, key, value)

    def __delitem__(self, key):
        _ffi("ffi.DictPop")(self, key)

    def __contains__(self, key) -> bool:
        try:
            return bool(_ffi("ffi.DictCount")(self, key))
        except TypeError:  # a key the runtime cannot hold is in no Dict
            return False

    def __iter__(self):
        return iter([k for k, _ in self._pairs()])

    def clear(self) -> None:
        _ffi("ffi.DictClear")(self)

    def __eq__(self, other):
        if isinstance(other, Mapping):
            return dict(self._pairs()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return mapping_repr(self, self._pairs())


    # Pairs, not a dict: a key may be a List or Dict, which Python cannot hash.
    def _value_form(self, what: str):
        return (Dict, (self._pairs(),))

    def _copy_shell(self):
        return Dict(), self._pairs(), Dict.update

    __reduce__ = reduce_container


CLASS_OF_INDEX[K_LIST] = List
CLASS_OF_INDEX[K_DICT] = Dict
