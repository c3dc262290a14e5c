"""``dataclasses``' module functions for c_class / py_class types: ``is_dataclass``,
``asdict``, ``astuple`` and ``replace`` (``fields`` is in ``rffi.dataclasses``)."""

from __future__ import annotations

import copy


def is_dataclass(obj) -> bool:
    """Whether ``obj`` is a c_class / py_class type or an instance of one."""
    cls = obj if isinstance(obj, type) else type(obj)
    return hasattr(cls, "__rffi_fields__")


def _instance_check(obj, fn: str) -> None:
    if isinstance(obj, type) or not is_dataclass(obj):
        raise TypeError(f"{fn}() should be called on c_class / py_class instances")


def asdict(obj, *, dict_factory=dict):
    """The fields of a c_class / py_class instance as a dict, recursively: fields holding such
    instances become dicts, Arrays and Lists lists, Maps and Dicts dicts (fresh Python values)."""
    _instance_check(obj, "asdict")
    return _convert(obj, dict_factory, None)


def astuple(obj, *, tuple_factory=tuple):
    """The field values of a c_class / py_class instance as a tuple, recursively (as
    ``asdict``)."""
    _instance_check(obj, "astuple")
    return _convert(obj, None, tuple_factory)


def _convert(value, dict_factory, tuple_factory):
    from ._container import Array, Map
    from ._containers_mut import Dict, List

    def inner(v):
        return _convert(v, dict_factory, tuple_factory)

    if is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in type(value).__rffi_fields__]
        if dict_factory is not None:
            return dict_factory([(n, inner(getattr(value, n))) for n in names])
        return tuple_factory([inner(getattr(value, n)) for n in names])
    if isinstance(value, (Array, List, list)):
        return [inner(v) for v in value]
    if isinstance(value, tuple):
        return type(value)(inner(v) for v in value) if type(value) is tuple else value
    if isinstance(value, (Map, Dict, dict)):
        return {inner(k): inner(v) for k, v in value.items()}
    return copy.deepcopy(value) if isinstance(value, (set, bytearray)) else value


def replace(obj, /, **changes):
    """A new object like ``obj`` with the fields ``changes`` (frozen ones too), as
    ``dataclasses.replace``."""
    _instance_check(obj, "replace")
    return obj.__replace__(**changes)
