"""How the containers (``Array``, ``Map``, ``List``, ``Dict``) pickle: as one table of every
container reachable from the pickled one, each reached again by its number.

Reading an item of a container makes a new wrapper each time, so pickle's memo (which goes by the
Python object) never sees that two items are one container: a cycle through a ``List`` would
recurse until a RecursionError, and a container held twice would come back as two. The table
goes by the runtime object instead: the walk that builds it numbers each container once, by its
handle, and puts a ``_Ref`` to that number wherever it is held. Everything that is not a container
(strings, tensors, objects of registered types, Python objects) stays in the table as itself, for
pickle to handle as usual. The walk and the rebuild are loops, so nesting depth costs no stack.
"""

from __future__ import annotations

from ._container import Array, Map
from ._containers_mut import Dict, List

_KINDS = (Array, Map, List, Dict)
_MUTABLE = (List, Dict)
_MAPPINGS = (Map, Dict)


class _Ref:
    """Container number ``i`` of the table, where one is held."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __reduce__(self):
        return _Ref, (self.i,)


def _entries(c) -> list:
    """A container's items (sequences) or key-value pairs (mappings), as wrappers."""
    if isinstance(c, Array):
        return list(c)
    if isinstance(c, List):
        return c._items()
    return c._pairs()


def reduce(root):
    """``__reduce__`` of a container: ``(rebuild, (kinds, entries))``."""
    number = {root._h: 0}
    table = [root]
    entries = []

    def ref(value):
        if not isinstance(value, _KINDS) or not value._h:
            return value
        i = number.get(value._h)
        if i is None:
            i = number[value._h] = len(table)
            table.append(value)
        return _Ref(i)

    # `table` grows as the walk finds containers; each is listed once.
    k = 0
    while k < len(table):
        c = table[k]
        if isinstance(c, _MAPPINGS):
            entries.append([(ref(key), ref(v)) for key, v in _entries(c)])
        else:
            entries.append([ref(v) for v in _entries(c)])
        k += 1
    return rebuild, ([_kind_of(c) for c in table], entries)


def _kind_of(c) -> int:
    for k, cls in enumerate(_KINDS):
        if isinstance(c, cls):
            return k
    raise TypeError(f"not a container: {type(c).__qualname__}")


def rebuild(kinds, entries):
    """The containers of a table, made again: Lists and Dicts empty first (a cycle runs
    through them, as only they can be changed after they are made), then each Array and Map
    once the containers it holds exist, then the Lists and Dicts filled. Returns container 0."""
    if len(kinds) != len(entries):
        raise ValueError("a pickled container table whose kinds and entries differ in length")
    made: list = [None] * len(kinds)
    for i, k in enumerate(kinds):
        if _KINDS[k] in _MUTABLE:
            made[i] = _KINDS[k]()
    for i in range(len(kinds)):
        _build_immutable(i, kinds, entries, made)
    for i, k in enumerate(kinds):
        if _KINDS[k] in _MUTABLE:
            fill = made[i].update if _KINDS[k] is Dict else made[i].extend
            fill(_resolved(entries[i], kinds[i], made))
    return made[0]


def _resolved(entry, kind: int, made) -> list:
    """A table entry with each ``_Ref`` replaced by the container made for it."""

    def one(v):
        return made[v.i] if isinstance(v, _Ref) else v

    if _KINDS[kind] in _MAPPINGS:
        return [(one(key), one(v)) for key, v in entry]
    return [one(v) for v in entry]


def _build_immutable(start: int, kinds, entries, made) -> None:
    """Makes Array / Map ``start`` and, before it, the Arrays and Maps it holds: a depth-first
    walk over an explicit stack (they may nest deeply). They cannot form a cycle without a List
    or Dict, so one found on the walk's own path is a malformed table."""
    examined = set()
    stack = [start]
    while stack:
        i = stack[-1]
        if made[i] is not None:
            stack.pop()
            continue
        missing = [
            v.i for v in _flat(entries[i], kinds[i]) if isinstance(v, _Ref) and made[v.i] is None
        ]
        if missing:
            # An examined container not yet made is on the path to this one.
            if i in examined or any(j in examined for j in missing):
                raise ValueError("a pickled container table with a cycle of immutable containers")
            examined.add(i)
            stack.extend(missing)
            continue
        made[i] = _KINDS[kinds[i]](_resolved(entries[i], kinds[i], made))
        stack.pop()


def _flat(entry, kind: int) -> list:
    if _KINDS[kind] in _MAPPINGS:
        return [x for pair in entry for x in pair]
    return entry
