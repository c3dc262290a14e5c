"""Enum types whose members are runtime objects: the ``@rffi.dataclasses.enum("key")``
decorator, and the class-style ``Enum`` / ``IntEnum`` / ``StrEnum`` bases (tvm-ffi's), whose
members are declared with ``auto()`` or ``entry(...)`` (values of declared fields) or a plain
value.

Every member is one shared object of the enum's type (fields ``name``, ``value`` and any the class
declares); the type's ``__ffi_enum__`` attribute is the Map of its members by name, so Rust and C
find them too, and copies (``copy.deepcopy``, ``ffi.DeepCopy``) keep members as they are.
"""

from __future__ import annotations

import json

from ._dataclass_dunders import frozen_setter
from ._object import Object
from ._object_model import _ffi, _register_type_attr, install_members, type_info
from ._schema import TypeSchema

#: The type attribute naming an enum's members (a Map, name -> member).
ENUM_ATTR = "__ffi_enum__"

_NAME_FIELD = {
    "name": "name",
    "doc": "The member's name.",
    "flags": 0,
    "type_schema": '{"type":"ffi.String"}',
}
_VALUE_FIELD = {"name": "value", "doc": "The member's value.", "flags": 0}


def _register(key: str, extra: dict) -> int:
    """The runtime type of an enum: ``name``, ``value``, then the ``extra`` fields (name ->
    annotation)."""
    spec = [_NAME_FIELD, _VALUE_FIELD]
    for name, annotation in extra.items():
        f = {"name": name, "doc": "", "flags": 0}
        try:
            f["type_schema"] = TypeSchema.from_annotation(annotation).to_json()
        except TypeError:
            pass  # an annotation the runtime cannot check: any value
        spec.append(f)
    return _ffi("ffi.TypeRegisterValueType")(key, None, json.dumps(spec))


def _bind(cls, index: int) -> None:
    """Puts the type's fields on ``cls``, read-only (members are constants)."""
    install_members(cls, type_info(index))
    for f in type_info(index)["fields"]:
        p = cls.__dict__[f["name"]]
        setattr(cls, f["name"], property(p.fget, frozen_setter(f["name"]), doc=p.__doc__))


def _member(cls, index: int, values: dict):
    """A new member of ``cls`` with the given field values."""
    made = _ffi("ffi.ObjectCreate")(index)
    m = Object.__new__(cls)
    m._h, m._ti = made._h, made._ti
    made._h = 0
    put = _ffi("ffi.ObjectSetField")
    for name, value in values.items():
        put(m, name, value)
    return m


def _publish(cls, index: int, members: dict) -> None:
    cls.__members__ = members
    for name, m in members.items():
        type.__setattr__(cls, name, m)
    _register_type_attr(index, ENUM_ATTR, dict(members))


def _member_copy(self, memo=None):
    return self  # members are singletons


class _EnumMeta(type(Object)):
    """Iteration, ``len`` and lookup by value (or name) on an enum class."""

    def __iter__(cls):
        return iter(cls.__dict__.get("__members__", {}).values())

    def __len__(cls):
        return len(cls.__dict__.get("__members__", {}))

    def __call__(cls, value):
        if isinstance(value, cls):
            return value
        for m in cls.__dict__.get("__members__", {}).values():
            if m.value == value and type(m.value) is type(value):
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
        index = _register(key, {})
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
        _bind(new, index)
        _publish(
            new,
            index,
            {n: _member(new, index, {"name": n, "value": v}) for n, v in members.items()},
        )

        def __repr__(self):
            return f"<{type(self).__qualname__}.{self.name}: {self.value!r}>"

        new.__repr__ = __repr__
        # Members are singletons: the same object is the same member.
        new.__eq__ = lambda self, other: isinstance(other, Object) and self.same_as(other)
        new.__hash__ = lambda self: hash(self._h)
        new.__copy__ = new.__deepcopy__ = _member_copy
        return new

    if isinstance(type_key, type):  # used bare: @enum
        cls, type_key = type_key, None
        return define(cls)
    return define


# ---- Class-style enums ----


class _Entry:
    """A member declared in an enum's class body: ``auto()`` or ``entry(value, field=...)``."""

    __slots__ = ("args", "kwargs")

    def __init__(self, *args, **kwargs) -> None:
        self.args = args
        self.kwargs = kwargs

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"entry({', '.join(parts)})"


def entry(*args, **kwargs):
    """Declares a member: its value (``IntEnum``: an int; ``StrEnum``: a str; omitted: as
    ``auto()``) and the values of the fields the enum class declares (positional after the
    value, or by name)."""
    return _Entry(*args, **kwargs)


def auto():
    """Declares a member whose value follows from its place: ``Enum`` and ``IntEnum`` number
    members from 0 (after the last int given), ``StrEnum`` uses the member's name."""
    return _Entry()


class Enum(Object, metaclass=_EnumMeta):
    """Base of enum classes whose members are runtime objects::

        class Status(rffi.dataclasses.Enum, type_key="my.Status"):
            ready = auto()
            done = auto()

        class Op(rffi.dataclasses.StrEnum, type_key="my.Op"):
            add = "+"
            mul = entry("*", arity=2)  # with a declared field
            arity: int = 0

    ``Status.ready`` is one shared object (fields ``name`` and ``value``, plus declared ones);
    ``Status(0)``, ``Status.get("ready")`` and ``list(Status)`` find members. A class without a
    ``type_key`` is an abstract base for others."""

    __slots__ = ()
    #: What a member's value must be (None: any; ``auto()`` numbers them).
    _payload: type | None = None

    def __init_subclass__(cls, *, type_key: str | None = None, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if type_key is None:
            return
        annotations = {
            k: v
            for k, v in cls.__dict__.get("__annotations__", {}).items()
            if not k.startswith("_")
        }
        declared = {
            k: v
            for k, v in cls.__dict__.items()
            if not k.startswith("_")
            and k not in annotations
            and (
                isinstance(v, _Entry)
                or not callable(v)
                and not isinstance(v, (property, classmethod, staticmethod))
            )
        }
        defaults = {k: cls.__dict__[k] for k in annotations if k in cls.__dict__}
        index = _register(type_key, annotations)
        for k in annotations:
            if k in cls.__dict__:
                type.__delattr__(cls, k)
        _bind(cls, index)
        members = {}
        next_int = 0
        for name, decl in declared.items():
            args, kwargs = (decl.args, decl.kwargs) if isinstance(decl, _Entry) else ((decl,), {})
            if args:
                value, rest = args[0], args[1:]
            elif cls._payload is str:
                value, rest = name, ()
            else:
                value, rest = next_int, ()
            if cls._payload is not None and not isinstance(value, cls._payload):
                raise TypeError(
                    f"{cls.__qualname__}.{name}: the value must be {cls._payload.__name__}, "
                    f"not {type(value).__name__}"
                )
            if isinstance(value, int) and not isinstance(value, bool):
                next_int = value + 1
            fields = dict(defaults)
            if len(rest) > len(annotations):
                raise TypeError(f"{cls.__qualname__}.{name}: too many field values")
            fields.update(zip(annotations, rest))
            unknown = set(kwargs) - set(annotations)
            if unknown:
                raise TypeError(f"{cls.__qualname__}.{name}: no field {sorted(unknown)[0]!r}")
            fields.update(kwargs)
            missing = [k for k in annotations if k not in fields]
            if missing:
                raise TypeError(f"{cls.__qualname__}.{name}: no value for field {missing[0]!r}")
            members[name] = _member(cls, index, {"name": name, "value": value, **fields})
        _publish(cls, index, members)

    @property
    def name(self) -> str:
        """The member's name (each enum class has the property of its own type)."""
        return _ffi("ffi.ObjectGetField")(self, "name")

    @property
    def value(self):
        """The member's value."""
        return _ffi("ffi.ObjectGetField")(self, "value")

    @classmethod
    def get(cls, index):
        """The member named ``index`` (a str) or of value ``index``; a KeyError otherwise."""
        members = cls.__dict__.get("__members__", {})
        if isinstance(index, str) and index in members:
            return members[index]
        for m in members.values():
            if m.value == index and type(m.value) is type(index):
                return m
        raise KeyError(index)

    @classmethod
    def all_entries(cls):
        """The members, in declaration order."""
        return iter(cls)

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__}.{self.name}: {self.value!r}>"

    def __eq__(self, other):
        if isinstance(other, Object):
            return self.same_as(other)
        if self._payload is not None and isinstance(other, self._payload):
            return self.value == other
        return NotImplemented

    def __hash__(self):
        return hash(self.value) if self._payload is not None else hash(self._h)

    __copy__ = __deepcopy__ = _member_copy


class IntEnum(Enum):
    """An ``Enum`` whose values are ints (``auto()`` counts on from the last); a member equals
    its value."""

    __slots__ = ()
    _payload = int


class StrEnum(Enum):
    """An ``Enum`` whose values are strs (``auto()`` gives the member's name); a member equals
    its value."""

    __slots__ = ()
    _payload = str
