"""Structural operations on values and object graphs, by the fields the runtime knows.

* ``structural_equal(a, b)`` / ``structural_hash(x)``: equal shape and contents (objects by their
  fields; ``field(structural_eq="ignore")`` leaves a field out, ``"def"`` marks where variables are
  bound, ``"identity"`` compares by identity; ``py_class(structural_eq="var")`` and friends set a
  type's kind). Cycles and shared parts are handled; equal values hash equal.
* ``get_first_structural_mismatch(a, b)``: ``None``, or the pair of ``AccessPath``s where they
  first differ (``str(path)`` is ``root.body[2].name``).
* ``deep_copy(x)``: a new graph with the same sharing and cycles (what ``copy.deepcopy`` does for
  objects of registered types).
* ``repr_print(x, width=0)``: the field-wise text (shared objects once as ``#1``, cycles
  ``...``); the default ``repr`` of registered objects.
* ``StructuralKey(x)``: a key that hashes and compares structurally (in a ``dict`` or a ``Map``).
* ``structural_walk(root, callbacks, order=...)`` / ``structural_visit(root, callbacks)``: call
  typed callbacks on every value of a graph (the traversal in ``rffi_core::structural``);
  ``structural_map(root, callbacks)`` / ``structural_mutate(root, callbacks)``: rebuild it with
  the values they return. Callbacks are ``(type, fn)`` entries tried in order (see
  docs/STRUCTURAL.md).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Sequence
from enum import IntEnum

from . import _lib
from . import access_path as _access_path  # noqa: F401  (binds the path classes)
from ._device import Device
from ._dtype import DataType
from ._object import CLASS_OF_INDEX, Object
from ._object_model import _ffi, register_object
from ._string import Bytes, String

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


def structural_equal(
    lhs, rhs, map_free_vars: bool = False, skip_tensor_content: bool = False
) -> bool:
    """Whether ``lhs`` and ``rhs`` are structurally equal."""
    return _ffi("ffi.StructuralEqual")(lhs, rhs, bool(map_free_vars), bool(skip_tensor_content))


def structural_hash(value, map_free_vars: bool = False, skip_tensor_content: bool = False) -> int:
    """The structural hash of ``value`` (an unsigned 64-bit int; equal values hash equal)."""
    h = _ffi("ffi.StructuralHash")(value, bool(map_free_vars), bool(skip_tensor_content))
    return h & 0xFFFFFFFFFFFFFFFF


def get_first_structural_mismatch(
    lhs, rhs, map_free_vars: bool = False, skip_tensor_content: bool = False
):
    """``None`` when ``lhs`` and ``rhs`` are structurally equal, else ``(lhs_path, rhs_path)``:
    the ``AccessPath`` of the first difference on each side."""
    found = _ffi("ffi.GetFirstStructuralMismatch")(
        lhs, rhs, bool(map_free_vars), bool(skip_tensor_content)
    )
    return None if found is None else (found[0], found[1])


def deep_copy(value):
    """A deep copy of ``value``: new containers and objects, the same sharing and cycles."""
    return _ffi("ffi.DeepCopy")(value)


def repr_print(value, width: int = 0) -> str:
    """The field-wise text of ``value``: one line with ``width`` 0, else broken over indented
    lines of about ``width`` characters."""
    return _ffi("ffi.ReprPrint")(value, width)


# ---- Structural keys ----


@register_object("ffi.StructuralKey")
class StructuralKey(Object):
    """A key that hashes and compares by structure: ``StructuralKey([1, 2])`` and another
    ``StructuralKey([1, 2])`` are the same key of a ``dict`` or an ``rffi.Map``. ``key`` is the
    value, ``hash_i64`` its structural hash (computed once)."""

    __slots__ = ()

    if typing.TYPE_CHECKING:
        key: typing.Any
        hash_i64: int

    def __hash__(self) -> int:
        return self.hash_i64 & 0xFFFFFFFFFFFFFFFF

    def __eq__(self, other) -> bool:
        return isinstance(other, StructuralKey) and bool(
            _ffi("ffi.StructuralKeyEqual")(self, other)
        )

    def __ne__(self, other) -> bool:
        return not self == other


# ---- Traversals ----


class WalkOrder(IntEnum):
    """Whether callbacks run before (``PREORDER``) or after (``POSTORDER``) the children."""

    PREORDER = 0
    POSTORDER = 1


class WalkResult(IntEnum):
    """What a walk callback may return: ``ADVANCE`` (as None: go on), ``SKIP`` (in pre-order:
    leave this value's children out). A ``VisitInterrupt`` stops the walk."""

    ADVANCE = 0
    SKIP = 1


class InplaceMode(IntEnum):
    """The third argument of a ``structural_mutate`` callback that takes one: ``ALLOW`` when the
    value is reached only through the root handed over (``root._move()``), so it may be changed
    in place; ``DISALLOW`` otherwise."""

    DISALLOW = 0
    ALLOW = 1


class DefRegionKind(IntEnum):
    """The definition region a value is met in: ``NONE`` (a use), ``DEF_PATTERN`` (inside a field
    ``structural_eq="def"``/``"def-pattern"``: everything in it is defined), ``DEF_SIMPLE`` (the
    variable of a ``"def-simple"`` field; its own fields are uses)."""

    NONE = 0
    DEF_PATTERN = 1
    DEF_SIMPLE = 2


@register_object("ffi.VisitInterrupt")
class VisitInterrupt(Object):
    """Returned by a walk or visit callback to stop the traversal, which returns it; ``value`` is
    what it carries back."""

    __slots__ = ()

    if typing.TYPE_CHECKING:
        value: typing.Any

    def __init__(self, value=None) -> None:
        made = _ffi("ffi.VisitInterrupt")(value)
        self._h, self._ti = made._h, made._ti
        made._h = 0


@register_object("ffi.StructuralVisitor")
class StructuralVisitor(Object):
    """The traversal a ``structural_visit`` (or walk) callback gets: valid during its call."""

    __slots__ = ()

    def visit(self, value):
        """Visits ``value`` as the traversal does (its callback, if one matches); None or the
        ``VisitInterrupt`` that stopped it."""
        return _ffi("ffi.StructuralVisitorVisit")(self, value)

    def default_visit(self, value):
        """Visits ``value``'s children (each through ``visit``), whatever callback ``value``
        has."""
        return _ffi("ffi.StructuralVisitorDefaultVisit")(self, value)

    def def_region_kind(self) -> DefRegionKind:
        """The definition region the traversal is in."""
        return DefRegionKind(_ffi("ffi.StructuralVisitorDefRegionKind")(self))

    def with_def_region_kind(self, kind: int, callback):
        """``callback()`` run in definition region ``kind`` (inside a pattern, the pattern
        holds)."""
        return _ffi("ffi.StructuralVisitorWithDefRegionKind")(self, int(kind), callback)


@register_object("ffi.StructuralMutator")
class StructuralMutator(Object):
    """The traversal a ``structural_mutate`` (or map) callback gets: valid during its call."""

    __slots__ = ()

    def mutate(self, value):
        """``value`` mapped as the traversal maps it (its callback, if one matches); the value
        itself when nothing changed, else a changed copy."""
        return _ffi("ffi.StructuralMutatorMutate")(self, value)

    def default_mutate(self, value):
        """``value`` with its children mapped (each through ``mutate``), whatever callback
        ``value`` has."""
        return _ffi("ffi.StructuralMutatorDefaultMutate")(self, value)

    def var_remap_get(self, var):
        """What the traversal recorded as ``var``'s replacement (a variable or DAG node), or
        None."""
        return _ffi("ffi.StructuralMutatorVarRemapGet")(self, var)

    def var_remap_set(self, var, mapped_value) -> None:
        """Records ``mapped_value`` as ``var``'s replacement for its later occurrences."""
        _ffi("ffi.StructuralMutatorVarRemapSet")(self, var, mapped_value)

    def def_region_kind(self) -> DefRegionKind:
        """The definition region the traversal is in."""
        return DefRegionKind(_ffi("ffi.StructuralMutatorDefRegionKind")(self))

    def with_def_region_kind(self, kind: int, callback):
        """``callback()`` run in definition region ``kind``."""
        return _ffi("ffi.StructuralMutatorWithDefRegionKind")(self, int(kind), callback)


_ANY = -1
#: Python types of the values that are not objects, and their type indices.
_PLAIN_INDEX = {
    type(None): _lib.kNone,
    int: _lib.kInt,
    bool: _lib.kBool,
    float: _lib.kFloat,
    str: _lib.kStr,
    String: _lib.kStr,
    bytes: _lib.kBytes,
    Bytes: _lib.kBytes,
    DataType: _lib.kDataType,
    Device: _lib.kDevice,
}


def _type_index(t, api: str) -> int:
    """The type index a callback for ``t`` is registered at (-1: any value)."""
    if t is typing.Any or t is object:
        return _ANY
    if t in _PLAIN_INDEX:
        return _PLAIN_INDEX[t]
    if t is Object:
        return _lib.kObject
    index = getattr(t, "__dict__", {}).get("__rffi_type_index__")
    if index is None and isinstance(t, type):
        index = next((i for i, c in CLASS_OF_INDEX.items() if c is t), None)
    if index is None:
        raise TypeError(
            f"{api}: a callback type must be int, float, bool, str, bytes, None, DataType, "
            f"Device, typing.Any/object or an rffi object class, not {t!r}"
        )
    return index


def _entries(callbacks, api: str):
    """``[(type, fn)]`` from one callable (any value), one ``(type, fn)`` entry (the type may be
    a tuple of types) or a sequence of entries."""
    out = []

    def add(entry):
        types, fn = entry
        for t in types if isinstance(types, tuple) else (types,):
            out.append((_type_index(t, api), fn))

    if callable(callbacks):
        out.append((_ANY, callbacks))
    elif isinstance(callbacks, tuple) and len(callbacks) == 2 and callable(callbacks[1]):
        add(callbacks)
    elif isinstance(callbacks, Sequence) and not isinstance(callbacks, (str, bytes)):
        for entry in callbacks:
            if not (isinstance(entry, tuple) and len(entry) == 2 and callable(entry[1])):
                raise TypeError(
                    f"{api}: each callback must be a (type, function) tuple, not {entry!r}"
                )
            add(entry)
    else:
        raise TypeError(
            f"{api}: callbacks must be a function, a (type, function) entry or a sequence of "
            f"them, not {type(callbacks).__name__}"
        )
    return out


def _order(order, api: str) -> int:
    if isinstance(order, WalkOrder):
        return int(order)
    if order in ("pre", "post"):
        return int(WalkOrder.PREORDER if order == "pre" else WalkOrder.POSTORDER)
    raise ValueError(f"{api}: order must be a WalkOrder, 'pre' or 'post', not {order!r}")


def _with_kind(fn):
    return lambda value, kind: fn(value, DefRegionKind(kind))


def structural_walk(root, callbacks=(), with_def_region_kind=(), order="post"):
    """Walks ``root``: at each value met (containers' items, maps' values, objects' fields but
    those ``structural_eq="ignore"``), the first matching callback is called with the value,
    after its children (``order="post"``, the default) or before (``"pre"``). Callbacks in
    ``with_def_region_kind`` get ``(value, DefRegionKind)``. A callback returns None, or in
    pre-order ``WalkResult.SKIP`` to leave the children out, or a ``VisitInterrupt``, which stops
    the walk and is returned (else None)."""
    api = "structural_walk"
    plain = _entries(callbacks, api)
    kinded = [(t, _with_kind(fn)) for t, fn in _entries(with_def_region_kind, api)]
    return _ffi("ffi.StructuralWalk")(root, plain, kinded, _order(order, api))


def structural_visit(root, callbacks=()):
    """Visits ``root``: the first matching callback is called with ``(value, visitor)`` and
    visits the children it wants (``visitor.visit(child)``, ``visitor.default_visit(value)``);
    values without a callback have their children visited. Returns None or the
    ``VisitInterrupt`` a callback returned."""
    return _ffi("ffi.StructuralVisit")(root, _entries(callbacks, "structural_visit"))


def structural_map(root, callbacks=(), with_def_region_kind=(), order="post"):
    """``root`` with each value replaced by what its callback returns (called after the value's
    children are mapped, or before with ``order="pre"``; never on map keys). Containers and
    objects with changed parts are copied, the rest shared; ``root._move()`` hands the root over,
    and what only it reaches is then changed in place. A variable's uses get what its
    definition was mapped to."""
    api = "structural_map"
    plain = _entries(callbacks, api)
    kinded = [(t, _with_kind(fn)) for t, fn in _entries(with_def_region_kind, api)]
    return _ffi("ffi.StructuralMap")(root, plain, kinded, _order(order, api))


def _takes_mode(fn) -> bool:
    """Whether a mutate callback takes the in-place mode as a third argument."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    try:
        sig.bind(None, None, 0)
        return True
    except TypeError:
        pass
    try:
        sig.bind(None, None)
    except TypeError:
        raise TypeError(
            "structural_mutate: a callback takes (value, mutator) or (value, mutator, "
            f"inplace_mode); {fn!r} takes neither"
        ) from None
    return False


def structural_mutate(root, callbacks=()):
    """``root`` mutated by callbacks ``(value, mutator[, inplace_mode])`` whose result is final:
    a callback maps the children it wants with ``mutator.mutate(child)`` or
    ``mutator.default_mutate(value)``. Values without a callback have their children mutated."""
    entries = [(t, fn, _takes_mode(fn)) for t, fn in _entries(callbacks, "structural_mutate")]
    return _ffi("ffi.StructuralMutate")(root, entries)
