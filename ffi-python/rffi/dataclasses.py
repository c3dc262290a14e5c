"""Dataclasses over runtime object types.

``c_class("my.Point")`` binds a class to a type registered in Rust or C (like
``register_object``) and adds dataclass behaviour: a generated ``__init__`` when the type has no
``__ffi_init__``, ``__repr__``, ``__eq__`` and ``__hash__``. ``py_class`` defines a new type from a
Python class's annotations; its fields are stored in the runtime object (each checked against its
annotation's type schema when written), so Rust and C code read them by name like any other
object's. Both take the options of Python's ``dataclasses.dataclass`` that apply (``init``,
``repr``, ``eq``, ``order``, ``frozen``, ``unsafe_hash``, ``kw_only``, ``match_args``; ``slots``
for ``py_class``) and ``field(default=..., default_factory=..., init=..., repr=...,
compare=..., hash=..., kw_only=...)`` and ``KW_ONLY``.

Structural equality (``rffi.structural_equal``) compares objects by their fields; a type's role is
``structural_eq="tree"`` (the default), ``"var"`` (a variable: equal to itself, or to the one it
is bound to at a definition), ``"dag"`` (sharing counts), ``"const-tree"`` or ``"singleton"``
(identity only), and a field's is ``field(structural_eq="ignore" | "def" | "identity")``.
"""

from __future__ import annotations

import json

from ._dataclass_common import asdict, astuple, is_dataclass, replace
from ._dataclass_dunders import (
    FrozenInstanceError,
    add_dataclass_methods,
    make_init,
    with_allocation,
)
from ._dataclass_fields import (
    KW_ONLY,
    MISSING,
    Field,
    c_class_fields,
    field,
    fields,
    own_fields,
    runtime_fields,
)
from ._dataclass_fields import _Missing as _Missing  # the stubs' type of MISSING
from ._dataclass_methods import method, register_methods
from ._object import Object
from ._object_model import (
    FLAG_COMPARE_OFF,
    FLAG_INIT_OFF,
    FLAG_KW_ONLY,
    FLAG_REPR_OFF,
    STRUCTURAL_FIELD_FLAGS,
    STRUCTURAL_KINDS,
    _ffi,
    install_members,
    type_info,
)

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


def _structural_kind(structural_eq) -> int:
    if structural_eq not in STRUCTURAL_KINDS:
        raise ValueError(
            f"structural_eq={structural_eq!r}: expected one of "
            f"{sorted(k for k in STRUCTURAL_KINDS if k)} or None"
        )
    return STRUCTURAL_KINDS[structural_eq]


def c_class(
    type_key: str,
    *,
    init=True,
    repr=True,
    eq=False,
    order=False,
    frozen=False,
    unsafe_hash=False,
    kw_only=False,
    match_args=True,
    structural_eq=None,
):
    """Binds a class to the Rust/C type ``type_key`` with dataclass behaviour; ``structural_eq``
    sets the type's role in structural equality (see the module docs).

    The class may annotate the type's fields (as tvm-ffi's ``c_class`` expects), each then with a
    Python default (``x: float = 0.0``, ``field(default_factory=...)``), ``KW_ONLY`` and field
    options, in the order of the generated ``__init__``; a field the type lacks, or one of the
    type's own fields left out, is a ValueError. Without annotations, every field of the type is
    taken in the type's order."""
    kind = _structural_kind(structural_eq)

    def bind(cls):
        info = type_info(type_key)
        all_fields = c_class_fields(cls, info, kw_only)
        for f in all_fields:  # class-body defaults give way to the fields' properties
            if f.name in cls.__dict__ and not isinstance(cls.__dict__[f.name], property):
                delattr(cls, f.name)
        if not issubclass(cls, Object):
            cls = type(
                cls.__name__,
                (cls, Object),
                {"__module__": cls.__module__, "__qualname__": cls.__qualname__},
            )
        if kind:
            _ffi("ffi.TypeSetStructuralEqHashKind")(info["type_index"], kind)
        # The generated `__init__` (keywords, defaults) replaces the type's `__ffi_init__`.
        install_members(cls, info, ffi_init=not init)
        if init and "__init__" not in cls.__dict__:
            cls.__init__ = make_init(cls, all_fields, info["type_index"])
        add_dataclass_methods(
            cls,
            all_fields,
            repr=repr,
            eq=eq,
            frozen=frozen,
            unsafe_hash=unsafe_hash,
            order=order,
            match_args=match_args,
        )
        return cls

    return bind


def py_class(
    type_key: str | None = None,
    *,
    init=True,
    repr=True,
    eq=False,
    order=False,
    frozen=False,
    unsafe_hash=False,
    kw_only=False,
    match_args=True,
    slots=False,
    structural_eq=None,
):
    """Defines the runtime type ``type_key`` (default: module.qualname) from a class's annotated
    fields; instances store them in the runtime object. The options are ``dataclasses``'
    (``slots=True``: instances have no ``__dict__`` for other attributes); ``structural_eq`` sets
    the type's role in structural equality (see the module docs)."""
    kind = _structural_kind(structural_eq)

    def define(cls):
        key = type_key or f"{cls.__module__}.{cls.__qualname__}"
        parent = next((b for b in cls.__mro__[1:] if "__rffi_type_index__" in b.__dict__), None)
        parent_frozen = getattr(parent, "__rffi_frozen__", None)
        if parent_frozen is not None and parent_frozen != frozen:
            raise TypeError(
                "cannot inherit non-frozen dataclass from a frozen one"
                if parent_frozen
                else "cannot inherit frozen dataclass from a non-frozen one"
            )
        own = own_fields(cls, kw_only)
        spec = [
            {
                "name": f.name,
                "doc": f.doc,
                "flags": (FLAG_KW_ONLY if f.kw_only else 0)
                | (0 if f.init else FLAG_INIT_OFF)
                | (0 if f.repr else FLAG_REPR_OFF)
                | (0 if f.compare else FLAG_COMPARE_OFF)
                | STRUCTURAL_FIELD_FLAGS[f.structural_eq],
                "type_schema": f.schema.to_json(),
                "frozen": bool(frozen or f.frozen),
            }
            for f in own
        ]
        parent_index = parent.__rffi_type_index__ if parent is not None else None
        index = _ffi("ffi.TypeRegisterValueType")(key, parent_index, json.dumps(spec))
        if kind:
            _ffi("ffi.TypeSetStructuralEqHashKind")(index, kind)
        if cls.__doc__:
            _ffi("ffi.TypeRegisterDoc")(index, cls.__doc__)
        ns = {
            k: v
            for k, v in cls.__dict__.items()
            if k not in ("__dict__", "__weakref__")
            and not isinstance(v, Field)
            and k not in {f.name for f in own}
        }
        if slots:
            ns["__slots__"] = ()
        bases = (
            cls.__bases__
            if parent is not None or issubclass(cls, Object)
            else (*[b for b in cls.__bases__ if b is not object], Object)
        )
        new = type(cls.__name__, bases, ns)
        new.__qualname__ = cls.__qualname__
        new.__rffi_frozen__ = frozen
        register_methods(new, key, index)
        info = type_info(index)
        install_members(new, info)
        inherited = []
        if parent is not None:  # a register_object class has no dataclass fields: the type's
            inherited = list(
                getattr(parent, "__rffi_fields__", None) or runtime_fields(type_info(parent_index))
            )
        all_fields = inherited + own
        if init and "__init__" not in ns:
            new.__init__ = make_init(new, all_fields, index)
        elif "__init__" in ns:  # the class's own: it runs on an object with default fields
            new.__init__ = with_allocation(ns["__init__"], all_fields)
        add_dataclass_methods(
            new,
            all_fields,
            repr=repr,
            eq=eq,
            frozen=frozen,
            unsafe_hash=unsafe_hash,
            order=order,
            match_args=match_args,
        )
        return new

    if isinstance(type_key, type):  # used bare: @py_class
        cls, type_key = type_key, None
        return define(cls)
    return define


from ._dataclass_enum import (  # noqa: E402  (uses the helpers above)
    Enum,
    IntEnum,
    StrEnum,
    auto,
    entry,
    enum,
)
