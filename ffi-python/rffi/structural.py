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
"""

from __future__ import annotations

from . import access_path as _access_path  # noqa: F401  (binds the path classes)
from ._object_model import _ffi

__all__ = [
    "deep_copy",
    "get_first_structural_mismatch",
    "repr_print",
    "structural_equal",
    "structural_hash",
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
