"""JSON graphs of values: ``to_json_graph_str(value)`` writes any value (containers, objects of
registered types, CPU tensors) as a list of nodes that refer to each other, so shared parts stay
shared and cycles survive; ``from_json_graph_str(text)`` reads it back, equal under
``rffi.structural_equal``. The format is tvm-ffi's, with a ``version`` field::

    from rffi.serialization import from_json_graph_str, to_json_graph_str

    text = to_json_graph_str({"a": [1, 2]}, metadata={"note": "x"})
    assert rffi.structural_equal(from_json_graph_str(text), {"a": [1, 2]})

A value that cannot be written (a function, a module, an opaque Python object, device memory)
raises a TypeError naming its type and where it is; malformed text raises a ValueError.
"""

from __future__ import annotations

from ._object_model import _ffi

__all__ = ["from_json_graph_str", "to_json_graph_str"]


def to_json_graph_str(value, metadata=None) -> str:
    """The JSON graph of ``value``; ``metadata`` (plain values) is stored under ``"metadata"``."""
    if metadata is None:
        return _ffi("ffi.ToJSONGraphString")(value)
    return _ffi("ffi.ToJSONGraphString")(value, metadata)


def from_json_graph_str(text: str):
    """The value of a JSON graph written by ``to_json_graph_str`` (or by tvm-ffi)."""
    if not isinstance(text, str):
        raise TypeError(f"from_json_graph_str() expects a str, not {type(text).__name__}")
    return _ffi("ffi.FromJSONGraphString")(text)
