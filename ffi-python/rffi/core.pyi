"""Type stubs of rffi.core."""

from collections.abc import Callable
from typing import Any

from . import Array as Array
from . import Bytes as Bytes
from . import DataType as DataType
from . import Device as Device
from . import Dict as Dict
from . import Error as Error
from . import Function as Function
from . import List as List
from . import Map as Map
from . import Module as Module
from . import Object as Object
from . import Shape as Shape
from . import String as String
from . import Tensor as Tensor
from . import TypeSchema as TypeSchema

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

class TypeField:
    name: str
    doc: str | None
    flags: int
    metadata: dict[str, Any]
    ty: TypeSchema | None
    def __init__(self, d: dict[str, Any]) -> None: ...
    @property
    def frozen(self) -> bool: ...
    @property
    def c_init(self) -> bool: ...
    @property
    def c_kw_only(self) -> bool: ...
    @property
    def c_has_default(self) -> bool: ...
    @property
    def c_repr(self) -> bool: ...
    @property
    def c_compare(self) -> bool: ...
    @property
    def c_hash(self) -> bool: ...

class TypeMethod:
    name: str
    doc: str | None
    is_static: bool
    metadata: dict[str, Any]
    func: Function
    def __init__(self, type_index: int, d: dict[str, Any]) -> None: ...
    def as_callable(self, cls: type) -> Callable[..., Any]: ...

class TypeInfo:
    type_key: str
    type_index: int
    doc: str | None
    total_size: int
    type_ancestors: list[int]
    fields: list[TypeField]
    methods: list[TypeMethod]
    parent_type_info: TypeInfo | None
    def __init__(self, d: dict[str, Any]) -> None: ...
    @property
    def type_cls(self) -> type | None: ...
