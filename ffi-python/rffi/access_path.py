"""Access paths: where a part of a value lies, as the steps from the root (``root.body[2].name``).

``rffi.get_first_structural_mismatch`` returns a pair of them; they are runtime objects
(``ffi.reflection.AccessPath``), so Rust and C read the same paths::

    from rffi.access_path import AccessPath

    p = AccessPath.root().attr("body").array_item(2).attr("name")
    assert str(p) == "root.body[2].name"
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any

from ._object import Object
from ._object_model import _ffi, register_object

__all__ = ["AccessKind", "AccessPath", "AccessStep"]


class AccessKind(IntEnum):
    """What one step does."""

    ATTR = 0
    ARRAY_ITEM = 1
    MAP_ITEM = 2
    ATTR_MISSING = 3
    ARRAY_ITEM_MISSING = 4
    MAP_ITEM_MISSING = 5


@register_object("ffi.reflection.AccessStep")
class AccessStep(Object):
    """One step: ``kind`` (an ``AccessKind``) and ``key`` (the attribute name, index or key)."""

    __slots__ = ()

    if TYPE_CHECKING:  # installed from the runtime's fields by register_object
        __rffi_type_key__: str
        __rffi_type_index__: int

        @property
        def kind(self) -> int: ...
        @property
        def key(self) -> Any: ...

    def __repr__(self) -> str:
        return f"AccessStep({AccessKind(self.kind).name}, {self.key!r})"


@register_object("ffi.reflection.AccessPath")
class AccessPath(Object):
    """A path from a root value to one of its parts: ``parent``, ``step`` and ``depth``; made
    from ``AccessPath.root()`` step by step, printed as ``root.body[2].name``."""

    __slots__ = ()

    if TYPE_CHECKING:  # installed from the runtime's fields by register_object
        __rffi_type_key__: str
        __rffi_type_index__: int

        @property
        def parent(self) -> AccessPath | None: ...
        @property
        def step(self) -> AccessStep | None: ...
        @property
        def depth(self) -> int: ...

    # The runtime's methods (`_root`, `_attr`, ...), installed by register_object, are reached
    # through getattr: they are Functions, not Python functions.

    def __init__(self) -> None:
        raise ValueError("AccessPath cannot be made directly: use AccessPath.root()")

    def _call(self, method: str, *args: Any) -> Any:
        return getattr(self, method)(*args)

    @staticmethod
    def root() -> AccessPath:
        """The path of the root itself."""
        return _ffi("ffi.TypeGetMethod")("ffi.reflection.AccessPath", "_root")()

    def attr(self, name: str) -> AccessPath:
        return self._call("_attr", name)

    def attr_missing(self, name: str) -> AccessPath:
        return self._call("_attr_missing", name)

    def array_item(self, index: int) -> AccessPath:
        return self._call("_array_item", index)

    def array_item_missing(self, index: int) -> AccessPath:
        return self._call("_array_item_missing", index)

    def map_item(self, key: Any) -> AccessPath:
        return self._call("_map_item", key)

    def map_item_missing(self, key: Any) -> AccessPath:
        return self._call("_map_item_missing", key)

    def is_prefix_of(self, other: AccessPath) -> bool:
        """Whether this path is a prefix of (or equal to) ``other``."""
        return self._call("_is_prefix_of", other)

    def to_steps(self) -> list[AccessStep]:
        """The steps from the root."""
        return list(self._call("_to_steps"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccessPath) and bool(self._call("_path_equal", other))

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        return _ffi("ffi.AccessPathToString")(self)

    def __repr__(self) -> str:
        return f"AccessPath({self})"
