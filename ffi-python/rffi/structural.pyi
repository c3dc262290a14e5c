"""Type stubs of rffi.structural."""

from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import Any, ClassVar

from . import Object
from .access_path import AccessPath

__all__ = [
    "DefRegionKind",
    "InplaceMode",
    "StructuralKey",
    "StructuralMutator",
    "StructuralVisitor",
    "VisitInterrupt",
    "WalkOrder",
    "WalkResult",
    "deep_copy",
    "get_first_structural_mismatch",
    "repr_print",
    "structural_equal",
    "structural_hash",
    "structural_map",
    "structural_mutate",
    "structural_visit",
    "structural_walk",
]

#: A callback, a ``(type, callback)`` entry (the type may be a tuple of types), or a sequence of
#: entries.
_Callbacks = (
    Callable[..., Any] | tuple[Any, Callable[..., Any]] | Sequence[tuple[Any, Callable[..., Any]]]
)

def structural_equal(
    lhs: Any, rhs: Any, map_free_vars: bool = ..., skip_tensor_content: bool = ...
) -> bool: ...
def structural_hash(
    value: Any, map_free_vars: bool = ..., skip_tensor_content: bool = ...
) -> int: ...
def get_first_structural_mismatch(
    lhs: Any, rhs: Any, map_free_vars: bool = ..., skip_tensor_content: bool = ...
) -> tuple[AccessPath, AccessPath] | None: ...
def deep_copy(value: Any) -> Any: ...
def repr_print(value: Any, width: int = ...) -> str: ...

class StructuralKey(Object):
    __rffi_type_key__: ClassVar[str]
    __rffi_type_index__: ClassVar[int]
    @property
    def key(self) -> Any: ...
    @property
    def hash_i64(self) -> int: ...
    def __init__(self, key: Any) -> None: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __ne__(self, other: object) -> bool: ...

class WalkOrder(IntEnum):
    PREORDER = 0
    POSTORDER = 1

class WalkResult(IntEnum):
    ADVANCE = 0
    SKIP = 1

class InplaceMode(IntEnum):
    DISALLOW = 0
    ALLOW = 1

class DefRegionKind(IntEnum):
    NONE = 0
    DEF_PATTERN = 1
    DEF_SIMPLE = 2

class VisitInterrupt(Object):
    __rffi_type_key__: ClassVar[str]
    __rffi_type_index__: ClassVar[int]
    @property
    def value(self) -> Any: ...
    def __init__(self, value: Any = None) -> None: ...

class StructuralVisitor(Object):
    __rffi_type_key__: ClassVar[str]
    __rffi_type_index__: ClassVar[int]
    def visit(self, value: Any) -> VisitInterrupt | None: ...
    def default_visit(self, value: Any) -> VisitInterrupt | None: ...
    def def_region_kind(self) -> DefRegionKind: ...
    def with_def_region_kind(self, kind: int, callback: Callable[[], Any]) -> Any: ...

class StructuralMutator(Object):
    __rffi_type_key__: ClassVar[str]
    __rffi_type_index__: ClassVar[int]
    def mutate(self, value: Any) -> Any: ...
    def default_mutate(self, value: Any) -> Any: ...
    def var_remap_get(self, var: Object) -> Any: ...
    def var_remap_set(self, var: Object, mapped_value: Any) -> None: ...
    def def_region_kind(self) -> DefRegionKind: ...
    def with_def_region_kind(self, kind: int, callback: Callable[[], Any]) -> Any: ...

def structural_walk(
    root: Any,
    callbacks: _Callbacks = ...,
    with_def_region_kind: _Callbacks = ...,
    order: str | WalkOrder = ...,
) -> VisitInterrupt | None: ...
def structural_visit(root: Any, callbacks: _Callbacks = ...) -> VisitInterrupt | None: ...
def structural_map(
    root: Any,
    callbacks: _Callbacks = ...,
    with_def_region_kind: _Callbacks = ...,
    order: str | WalkOrder = ...,
) -> Any: ...
def structural_mutate(root: Any, callbacks: _Callbacks = ...) -> Any: ...
