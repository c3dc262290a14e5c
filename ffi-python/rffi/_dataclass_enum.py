"""``rffi.dataclasses.enum``: enum types whose members are runtime objects."""

from __future__ import annotations

import json

from ._dataclass_dunders import frozen_setter
from ._object import Object
from ._object_model import _ffi, install_members, type_info


class _EnumMeta(type(Object)):
    """Iteration, ``len`` and lookup by value on an enum class."""

    def __iter__(cls):
        return iter(cls.__members__.values())

    def __len__(cls):
        return len(cls.__members__)

    def __call__(cls, value):
        for m in cls.__members__.values():
            if m.value == value:
                return m
        raise ValueError(f"{value!r} is not a valid {cls.__qualname__}")


def enum(type_key: str | None = None):
    """Defines an enum type whose members are runtime objects (fields ``name`` and ``value``),
    so Rust and C code receive and read them like any object::

        @rffi.dataclasses.enum("my.Color")
        class Color:
            RED = 1
            GREEN = 2

    ``Color.RED`` is one shared object; ``Color(1) is Color.RED``; ``list(Color)`` in order.
    """

    def define(cls):
        key = type_key or f"{cls.__module__}.{cls.__qualname__}"
        spec = [
            {
                "name": "name",
                "doc": "The member's name.",
                "flags": 0,
                "type_schema": '{"type":"ffi.String"}',
            },
            {"name": "value", "doc": "The member's value.", "flags": 0},
        ]
        index = _ffi("ffi.TypeRegisterValueType")(key, None, json.dumps(spec))
        members = {
            k: v for k, v in cls.__dict__.items() if not k.startswith("_") and not callable(v)
        }
        ns = {
            k: v
            for k, v in cls.__dict__.items()
            if k not in members and k not in ("__dict__", "__weakref__")
        }
        new = _EnumMeta(cls.__name__, (Object,), ns)
        new.__qualname__ = cls.__qualname__
        install_members(new, type_info(index))
        for prop in ("name", "value"):  # members are constants
            p = new.__dict__[prop]
            setattr(new, prop, property(p.fget, frozen_setter(prop), doc=p.__doc__))
        create = _ffi("ffi.ObjectCreate")
        put = _ffi("ffi.ObjectSetField")
        new.__members__ = {}
        for name, value in members.items():
            made = create(index)
            m = Object.__new__(new)
            m._h, m._ti = made._h, made._ti
            made._h = 0
            put(m, "name", name)
            put(m, "value", value)
            new.__members__[name] = m
            type.__setattr__(new, name, m)

        def __repr__(self):
            return f"<{type(self).__qualname__}.{self.name}: {self.value!r}>"

        new.__repr__ = __repr__
        # Members are singletons: the same object is the same member.
        new.__eq__ = lambda self, other: isinstance(other, Object) and self.same_as(other)
        new.__hash__ = lambda self: hash(self._h)
        return new

    if isinstance(type_key, type):  # used bare: @enum
        cls, type_key = type_key, None
        return define(cls)
    return define
