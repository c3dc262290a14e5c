"""tvm-ffi's ``core`` module names: the classes of the runtime's built-in types and the type
information of every registered type, as objects.

``TypeInfo`` describes one type: ``type_key``, ``type_index``, ``type_ancestors`` (indices, root
first), its own ``fields`` (``TypeField``) and ``methods`` (``TypeMethod``), ``parent_type_info``
and ``type_cls``, the Python class bound to it (or None). Every class bound to a type carries its
``TypeInfo`` as ``__rffi_type_info__`` (and tvm-ffi's ``__tvm_ffi_type_info__``), made on first
use::

    from rffi.core import TypeInfo

    info: TypeInfo = rffi.Array.__rffi_type_info__
    assert info.type_key == "ffi.Array" and info.parent_type_info.type_cls is rffi.Object
"""

from __future__ import annotations

import functools
import typing
from typing import Any

from . import _lib
from ._container import Array, Map
from ._containers_mut import Dict, List
from ._device import Device
from ._dtype import DataType
from ._error import Error
from ._function import Function
from ._module import Module
from ._object import CLASS_OF_INDEX, Object
from ._object_model import (
    FLAG_COMPARE_OFF,
    FLAG_HAS_DEFAULT,
    FLAG_HASH_OFF,
    FLAG_INIT_OFF,
    FLAG_KW_ONLY,
    FLAG_REPR_OFF,
    FLAG_STATIC_METHOD,
    FLAG_WRITABLE,
    _ffi,
    type_info,
)
from ._schema import TypeSchema
from ._shape import Shape
from ._string import Bytes, String
from ._tensor import Tensor

__all__ = [
    "Array",
    "Bytes",
    "DataType",
    "Device",
    "Dict",
    "Error",
    "Function",
    "List",
    "Map",
    "Module",
    "Object",
    "Shape",
    "String",
    "Tensor",
    "TypeField",
    "TypeInfo",
    "TypeMethod",
    "TypeSchema",
]

#: The classes of built-in types that are not objects, or whose wrapper is not bound by index.
_BUILTIN_CLASSES = {
    _lib.kDataType: DataType,
    _lib.kDevice: Device,
    _lib.kObject: Object,
    _lib.kStr: String,
    _lib.kBytes: Bytes,
    _lib.kShape: Shape,
}


def _schema(metadata: dict) -> TypeSchema | None:
    text = metadata.get("type_schema")
    return TypeSchema.from_json_str(text) if text else None


class TypeField:
    """One field of a type: ``name``, ``doc``, ``flags`` and what they say (``frozen``,
    ``c_init``, ``c_kw_only``, ``c_has_default``, ``c_repr``, ``c_compare``, ``c_hash``),
    ``metadata`` and its type ``ty`` (a ``TypeSchema``, or None)."""

    __slots__ = ("doc", "flags", "metadata", "name", "ty")

    def __init__(self, d: dict) -> None:
        self.name: str = d["name"]
        self.doc: str | None = d["doc"] or None
        self.flags: int = d["flags"]
        self.metadata: dict[str, Any] = d["metadata"]
        self.ty = _schema(self.metadata)

    @property
    def frozen(self) -> bool:
        return not self.flags & FLAG_WRITABLE

    @property
    def c_init(self) -> bool:
        return not self.flags & FLAG_INIT_OFF

    @property
    def c_kw_only(self) -> bool:
        return bool(self.flags & FLAG_KW_ONLY)

    @property
    def c_has_default(self) -> bool:
        return bool(self.flags & FLAG_HAS_DEFAULT)

    @property
    def c_repr(self) -> bool:
        return not self.flags & FLAG_REPR_OFF

    @property
    def c_compare(self) -> bool:
        return not self.flags & FLAG_COMPARE_OFF

    @property
    def c_hash(self) -> bool:
        return not self.flags & FLAG_HASH_OFF

    def __repr__(self) -> str:
        return f"TypeField({self.name!r}, ty={self.ty!r}, frozen={self.frozen})"


class TypeMethod:
    """One method of a type: ``name``, ``doc``, ``func`` (the Function), ``is_static``,
    ``metadata``."""

    __slots__ = ("doc", "func", "is_static", "metadata", "name")

    def __init__(self, type_index: int, d: dict) -> None:
        self.name: str = d["name"]
        self.doc: str | None = d["doc"] or None
        self.is_static: bool = bool(d["flags"] & FLAG_STATIC_METHOD)
        self.metadata: dict[str, Any] = d["metadata"]
        self.func: Function = _ffi("ffi.TypeGetMethod")(type_index, self.name)

    def as_callable(self, cls: type) -> typing.Callable[..., Any]:
        """The method as an attribute of ``cls``: a ``staticmethod`` for a static one."""
        func = self.func
        if self.is_static:
            return staticmethod(func)

        def method(self_, *args):
            return func(self_, *args)

        method.__name__ = self.name
        method.__qualname__ = f"{cls.__qualname__}.{self.name}"
        method.__doc__ = self.doc
        return method

    def __repr__(self) -> str:
        return f"TypeMethod({self.name!r}, is_static={self.is_static})"


class TypeInfo:
    """What the runtime knows about one registered type (see the module's docstring)."""

    __slots__ = (
        "doc",
        "fields",
        "methods",
        "parent_type_info",
        "total_size",
        "type_ancestors",
        "type_index",
        "type_key",
    )

    def __init__(self, d: dict) -> None:
        self.type_key: str = d["type_key"]
        self.type_index: int = d["type_index"]
        self.doc: str | None = d["doc"] or None
        self.total_size: int = d["total_size"]
        self.type_ancestors: list[int] = [_ffi("ffi.TypeKeyToIndex")(k) for k in d["ancestors"]]
        self.fields = [TypeField(f) for f in d["fields"]]
        self.methods = [TypeMethod(self.type_index, m) for m in d["methods"]]
        self.parent_type_info: TypeInfo | None = (
            _type_index_to_type_info(self.type_ancestors[-1]) if self.type_ancestors else None
        )

    @property
    def type_cls(self) -> type | None:
        """The Python class bound to the type, or None."""
        return _class_of(self.type_index)

    def __repr__(self) -> str:
        return f"TypeInfo({self.type_key!r}, type_index={self.type_index})"


def _class_of(type_index: int) -> type | None:
    return CLASS_OF_INDEX.get(type_index) or _BUILTIN_CLASSES.get(type_index)


@functools.cache
def _type_index_to_type_info(type_index: int) -> TypeInfo:
    """The ``TypeInfo`` of a type index (one object per type)."""
    return TypeInfo(type_info(type_index))


def _type_key_to_type_info(type_key: str) -> TypeInfo:
    """The ``TypeInfo`` of a type key; a KeyError for an unknown key."""
    return _type_index_to_type_info(type_info(type_key)["type_index"])


def _own_type_index(cls: type) -> int | None:
    """The type index ``cls`` itself is bound to (not one it inherits), or None."""
    index = cls.__dict__.get("__rffi_type_index__")
    if index is not None:
        return index
    for i, c in (*CLASS_OF_INDEX.items(), *_BUILTIN_CLASSES.items()):
        if c is cls:
            return i
    return None


def _type_cls_to_type_info(type_cls: type) -> TypeInfo | None:
    """The ``TypeInfo`` of the type a class is bound to (its own binding, or the nearest base
    class's), or None for a class bound to none."""
    for c in type_cls.__mro__:
        index = _own_type_index(c)
        if index is not None:
            return _type_index_to_type_info(index)
    return None
