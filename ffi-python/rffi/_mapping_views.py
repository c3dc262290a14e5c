"""The ``keys()``, ``values()`` and ``items()`` views of ``Map`` and ``Dict``, as Python's dict
views: live (a ``Dict`` changed later shows the change), sized, iterable (``reversed`` too),
``in``, set operations on keys and items, and a repr like ``dict_keys([...])``
(``map_keys([...])`` for a ``Map``).

A view reads its mapping's pairs with one runtime call per iteration (``_pairs()`` of the mapping),
never one call per key.
"""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, ValuesView


def _kind(view, what: str) -> str:
    return f"{type(view._mapping).__name__.lower()}_{what}"


class MappingKeys(KeysView):
    """The live keys of a ``Map`` or ``Dict`` (a set-like view)."""

    __slots__ = ()

    def __iter__(self):
        return iter([k for k, _ in self._mapping._pairs()])

    def __reversed__(self):
        return iter([k for k, _ in reversed(self._mapping._pairs())])

    def __repr__(self) -> str:
        return f"{_kind(self, 'keys')}({list(self)!r})"


class MappingValues(ValuesView):
    """The live values of a ``Map`` or ``Dict``."""

    __slots__ = ()

    def __iter__(self):
        return iter([v for _, v in self._mapping._pairs()])

    def __reversed__(self):
        return iter([v for _, v in reversed(self._mapping._pairs())])

    def __contains__(self, value) -> bool:
        return any(v is value or v == value for _, v in self._mapping._pairs())

    def __repr__(self) -> str:
        return f"{_kind(self, 'values')}({list(self)!r})"


class MappingItems(ItemsView):
    """The live ``(key, value)`` pairs of a ``Map`` or ``Dict`` (a set-like view)."""

    __slots__ = ()

    def __iter__(self):
        return iter(self._mapping._pairs())

    def __reversed__(self):
        return iter(list(reversed(self._mapping._pairs())))

    def __contains__(self, item) -> bool:
        if not isinstance(item, tuple) or len(item) != 2:
            return False
        key, value = item
        if key not in self._mapping:  # an unhashable key is in no mapping
            return False
        v = self._mapping[key]
        return v is value or v == value

    def __repr__(self) -> str:
        return f"{_kind(self, 'items')}({list(self)!r})"


class MappingViewsMixin:
    """``keys()``, ``values()`` and ``items()`` as views, for a mapping with ``_pairs()``."""

    __slots__ = ()

    def keys(self) -> MappingKeys:
        """The keys, as a live set-like view (like ``dict.keys()``)."""
        return MappingKeys(self)

    def values(self) -> MappingValues:
        """The values, as a live view (like ``dict.values()``)."""
        return MappingValues(self)

    def items(self) -> MappingItems:
        """The ``(key, value)`` pairs, as a live set-like view (like ``dict.items()``)."""
        return MappingItems(self)
