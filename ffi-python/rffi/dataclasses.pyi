"""Type stubs of rffi.dataclasses: `c_class` and `py_class` are dataclass transforms, so type
checkers see the generated `__init__` from the class's annotated fields (as for `dataclasses`)."""

import sys
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, TypeVar, overload

from typing_extensions import Self, dataclass_transform

from . import Object

__all__ = [
    "KW_ONLY",
    "MISSING",
    "Enum",
    "Field",
    "FrozenInstanceError",
    "IntEnum",
    "StrEnum",
    "asdict",
    "astuple",
    "auto",
    "c_class",
    "entry",
    "enum",
    "field",
    "fields",
    "is_dataclass",
    "method",
    "py_class",
    "replace",
]

_T = TypeVar("_T")
_C = TypeVar("_C", bound=type)
_F = TypeVar("_F", bound=Callable[..., Any] | staticmethod[..., Any])

class _Missing: ...

MISSING: _Missing

if sys.version_info >= (3, 10):
    from dataclasses import KW_ONLY as KW_ONLY
else:
    class KW_ONLY: ...

class FrozenInstanceError(AttributeError): ...

class Field:
    name: str | None
    default: Any
    default_factory: Any
    init: bool
    repr: bool
    compare: bool
    hash: bool | None
    kw_only: bool | _Missing
    doc: str
    annotation: Any
    type: Any
    schema: Any
    frozen: bool
    structural_eq: str | None
    def __init__(
        self,
        default: Any = ...,
        default_factory: Any = ...,
        init: bool = True,
        repr: bool = True,
        compare: bool = True,
        hash: bool | None = None,
        kw_only: bool | _Missing = ...,
        doc: str = "",
        frozen: bool = False,
        structural_eq: str | None = None,
    ) -> None: ...
    def has_default(self) -> bool: ...
    def make_default(self) -> Any: ...

# As `dataclasses.field`: the field's type is the default's, or the factory's result.
@overload
def field(
    *,
    default: _T,
    default_factory: _Missing = ...,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
    kw_only: bool | _Missing = ...,
    doc: str = "",
    frozen: bool = False,
    structural_eq: str | None = None,
) -> _T: ...
@overload
def field(
    *,
    default: _Missing = ...,
    default_factory: Callable[[], _T],
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
    kw_only: bool | _Missing = ...,
    doc: str = "",
    frozen: bool = False,
    structural_eq: str | None = None,
) -> _T: ...
@overload
def field(
    *,
    default: _Missing = ...,
    default_factory: _Missing = ...,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
    kw_only: bool | _Missing = ...,
    doc: str = "",
    frozen: bool = False,
    structural_eq: str | None = None,
) -> Any: ...
def fields(cls_or_obj: Any) -> tuple[Field, ...]: ...
@dataclass_transform(eq_default=False, field_specifiers=(Field, field))
def c_class(
    type_key: str,
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = False,
    order: bool = False,
    frozen: bool = False,
    unsafe_hash: bool = False,
    kw_only: bool = False,
    match_args: bool = True,
    structural_eq: str | None = None,
) -> Callable[[_C], _C]: ...
@overload
@dataclass_transform(eq_default=False, field_specifiers=(Field, field))
def py_class(type_key: _C) -> _C: ...
@overload
@dataclass_transform(eq_default=False, field_specifiers=(Field, field))
def py_class(
    type_key: str | None = None,
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = False,
    order: bool = False,
    frozen: bool = False,
    unsafe_hash: bool = False,
    kw_only: bool = False,
    match_args: bool = True,
    slots: bool = False,
    structural_eq: str | None = None,
) -> Callable[[_C], _C]: ...
def method(fn: _F) -> _F: ...
def is_dataclass(obj: object) -> bool: ...
def asdict(obj: object, *, dict_factory: Callable[[list[tuple[str, Any]]], Any] = ...) -> Any: ...
def astuple(obj: object, *, tuple_factory: Callable[[list[Any]], Any] = ...) -> Any: ...
def replace(obj: _T, /, **changes: Any) -> _T: ...
def enum(type_key: str | None = None) -> Callable[[_C], _C]: ...
def auto() -> Any: ...
def entry(*args: Any, **kwargs: Any) -> Any: ...

class _EnumMeta(type):
    def __iter__(cls) -> Iterator[Any]: ...
    def __len__(cls) -> int: ...
    def __call__(cls, value: Any) -> Any: ...

class Enum(Object, metaclass=_EnumMeta):
    __members__: ClassVar[dict[str, Any]]
    def __init_subclass__(cls, *, type_key: str | None = None, **kwargs: Any) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> Any: ...
    @classmethod
    def get(cls, index: int | str) -> Self: ...
    @classmethod
    def all_entries(cls) -> Iterator[Self]: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def __copy__(self, memo: Any = None) -> Self: ...
    def __deepcopy__(self, memo: Any = None) -> Self: ...

class IntEnum(Enum): ...
class StrEnum(Enum): ...
