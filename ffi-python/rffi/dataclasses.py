"""Dataclasses over runtime object types.

``c_class("my.Point")`` binds a class to a type registered in Rust or C (like
``register_object``) and adds dataclass behaviour: a generated ``__init__`` when the type has no
``__ffi_init__``, ``__repr__``, ``__eq__`` and ``__hash__``. ``py_class`` defines a new type from a
Python class's annotations; its fields are stored in the runtime object (each checked against its
annotation's type schema when written), so Rust and C code read them by name like any other
object's. Both take the options of Python's ``dataclasses.dataclass`` that apply (``init``,
``repr``, ``eq``, ``frozen``, ``unsafe_hash``) and ``field(default=..., default_factory=...,
init=..., repr=..., compare=..., hash=..., kw_only=...)`` and ``KW_ONLY``.

Structural equality (``rffi.structural_equal``) compares objects by their fields; a type's role is
``structural_eq="tree"`` (the default), ``"var"`` (a variable: equal to itself, or to the one it
is bound to at a definition), ``"dag"`` (sharing counts), ``"const-tree"`` or ``"singleton"``
(identity only), and a field's is ``field(structural_eq="ignore" | "def" | "identity")``.
"""

from __future__ import annotations

import json
import sys
import typing

from ._dataclass_methods import method, register_methods
from ._object import Object
from ._object_model import (
    FLAG_COMPARE_OFF,
    FLAG_HAS_DEFAULT,
    FLAG_HASH_OFF,
    FLAG_INIT_OFF,
    FLAG_KW_ONLY,
    FLAG_REPR_OFF,
    FLAG_WRITABLE,
    STRUCTURAL_FIELD_FLAGS,
    STRUCTURAL_KINDS,
    _ffi,
    install_members,
    type_info,
)

__all__ = [
    "KW_ONLY",
    "MISSING",
    "Field",
    "FrozenInstanceError",
    "c_class",
    "enum",
    "field",
    "fields",
    "method",
    "py_class",
]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


if sys.version_info >= (3, 10):
    # The standard library's sentinel, so type checkers (and code shared with `dataclasses`)
    # recognise it.
    from dataclasses import KW_ONLY
else:

    class KW_ONLY:
        """Annotate a pseudo-field with ``KW_ONLY``: the fields after it are keyword-only."""


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen dataclass."""


class Field:
    """One field of a c_class / py_class."""

    __slots__ = (
        "name",
        "default",
        "default_factory",
        "init",
        "repr",
        "compare",
        "hash",
        "kw_only",
        "doc",
        "annotation",
        "schema",
        "frozen",
        "structural_eq",
    )

    def __init__(
        self,
        default=MISSING,
        default_factory=MISSING,
        init=True,
        repr=True,
        compare=True,
        hash=None,
        kw_only=MISSING,
        doc="",
        frozen=False,
        structural_eq=None,
    ):
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        if structural_eq not in STRUCTURAL_FIELD_FLAGS:
            raise ValueError(
                f"field(structural_eq={structural_eq!r}): expected one of "
                f"{sorted(k for k in STRUCTURAL_FIELD_FLAGS if k)} or None"
            )
        self.name = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.hash = hash
        self.kw_only = kw_only
        self.doc = doc
        self.annotation = typing.Any
        self.schema = None
        self.frozen = frozen
        self.structural_eq = structural_eq

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, kw_only={self.kw_only!r})"

    def has_default(self) -> bool:
        return self.default is not MISSING or self.default_factory is not MISSING

    def make_default(self):
        if self.default_factory is not MISSING:
            return self.default_factory()
        return self.default


def field(
    *,
    default=MISSING,
    default_factory=MISSING,
    init=True,
    repr=True,
    compare=True,
    hash=None,
    kw_only=MISSING,
    doc="",
    frozen=False,
    structural_eq=None,
) -> Field:
    """Options of one field, as ``dataclasses.field``; ``frozen=True`` makes this one field
    read-only in every language (``frozen=True`` on the class makes them all so);
    ``structural_eq`` is ``"ignore"`` (left out of structural equality and hashing), ``"def"``
    (variables are bound here) or ``"identity"`` (compared by identity)."""
    return Field(
        default,
        default_factory,
        init,
        repr,
        compare,
        hash,
        kw_only,
        doc,
        frozen=frozen,
        structural_eq=structural_eq,
    )


def fields(cls_or_obj) -> tuple:
    """The fields of a c_class / py_class (or of an instance), root type's first."""
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    return tuple(getattr(cls, "__rffi_fields__", ()))


# ---- runtime fields as Field objects ----


class _RuntimeDefault:
    """A default held by the runtime (computed there, a factory called per object)."""

    __slots__ = ("index", "name")

    def __init__(self, index, name):
        self.index, self.name = index, name

    def __call__(self):
        return _ffi("ffi.TypeFieldDefault")(self.index, self.name)


def _runtime_fields(info: dict) -> list:
    out = []
    for key in [*info["ancestors"], info["type_key"]]:
        if key == "ffi.Object":
            continue
        t = info if key == info["type_key"] else type_info(key)
        for f in t["fields"]:
            flags = f["flags"]
            fd = Field(
                default_factory=(
                    _RuntimeDefault(t["type_index"], f["name"])
                    if flags & FLAG_HAS_DEFAULT
                    else MISSING
                ),
                init=not flags & FLAG_INIT_OFF,
                repr=not flags & FLAG_REPR_OFF,
                compare=not flags & FLAG_COMPARE_OFF,
                hash=False if flags & FLAG_HASH_OFF else None,
                kw_only=bool(flags & FLAG_KW_ONLY),
                doc=f["doc"],
                frozen=not flags & FLAG_WRITABLE,
                structural_eq=next(
                    (k for k, bit in STRUCTURAL_FIELD_FLAGS.items() if bit and flags & bit), None
                ),
            )
            fd.name = f["name"]
            out.append(fd)
    return out


# ---- generated methods ----


def _make_init(cls, all_fields: list, index: int):
    create = _ffi("ffi.ObjectCreateInit")
    positional = [f for f in all_fields if f.init and not f.kw_only]
    keyword = [f for f in all_fields if f.init and f.kw_only]
    by_name = {f.name: f for f in positional + keyword}
    seen_default = False
    for f in positional:
        if f.has_default():
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    qual = cls.__qualname__
    caller = f"{qual}.__init__()"
    # Defaults the runtime holds are set by the runtime when it makes the object.
    given_by_runtime = {
        f.name for f in all_fields if isinstance(f.default_factory, _RuntimeDefault)
    }

    def __init__(self, *args, **kwargs):
        if len(args) > len(positional):
            raise TypeError(
                f"{qual}.__init__() takes {len(positional) + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        # (field name, argument position or -1 for a keyword, value): the runtime checks each
        # value against its field and names the argument when one does not fit.
        triples = []
        given = set()
        for k, (f, a) in enumerate(zip(positional, args)):
            triples += (f.name, k, a)
            given.add(f.name)
        for name, v in kwargs.items():
            if name in given:
                raise TypeError(f"{qual}.__init__() got multiple values for argument {name!r}")
            if name not in by_name:
                raise TypeError(f"{qual}.__init__() got an unexpected keyword argument {name!r}")
            triples += (name, -1, v)
            given.add(name)
        for f in all_fields:
            if f.name in given or f.name in given_by_runtime:
                continue
            if f.has_default():
                triples += (f.name, -2, f.make_default())
            elif f.init:
                raise TypeError(f"{qual}.__init__() missing required argument: {f.name!r}")
        made = create(index, caller, *triples)
        self._h, self._ti = made._h, made._ti
        made._h = 0
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    return __init__


def _add_dataclass_methods(cls, all_fields, *, repr, eq, frozen, unsafe_hash):
    cls.__rffi_fields__ = tuple(all_fields)
    if repr and "__repr__" not in cls.__dict__:
        shown = [f.name for f in all_fields if f.repr]

        def __repr__(self):
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
            return f"{type(self).__qualname__}({inner})"

        cls.__repr__ = __repr__
    compared = [f.name for f in all_fields if f.compare]
    if eq and "__eq__" not in cls.__dict__:

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return all(getattr(self, n) == getattr(other, n) for n in compared)

        cls.__eq__ = __eq__
    hashed = [f.name for f in all_fields if (f.compare if f.hash is None else f.hash)]
    if unsafe_hash or (eq and frozen):

        def __hash__(self):
            return hash(tuple(_hashable(getattr(self, n)) for n in hashed))

        cls.__hash__ = __hash__
    elif eq:
        cls.__hash__ = None
    for f in all_fields:
        if frozen or f.frozen:
            prop = cls.__dict__.get(f.name)
            if isinstance(prop, property):
                setattr(cls, f.name, property(prop.fget, _frozen_setter(f.name), doc=prop.__doc__))


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return id(v)


def _frozen_setter(name):
    def fset(self, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    return fset


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
    eq=True,
    frozen=False,
    unsafe_hash=False,
    structural_eq=None,
):
    """Binds a class to the Rust/C type ``type_key`` with dataclass behaviour; ``structural_eq``
    sets the type's role in structural equality (see the module docs)."""
    kind = _structural_kind(structural_eq)

    def bind(cls):
        if not issubclass(cls, Object):
            cls = type(
                cls.__name__,
                (cls, Object),
                {"__module__": cls.__module__, "__qualname__": cls.__qualname__},
            )
        info = type_info(type_key)
        if kind:
            _ffi("ffi.TypeSetStructuralEqHashKind")(info["type_index"], kind)
        install_members(cls, info)
        all_fields = _runtime_fields(info)
        if init and "__init__" not in cls.__dict__:
            cls.__init__ = _make_init(cls, all_fields, info["type_index"])
        _add_dataclass_methods(
            cls, all_fields, repr=repr, eq=eq, frozen=frozen, unsafe_hash=unsafe_hash
        )
        return cls

    return bind


def _own_fields(cls) -> list:
    from ._schema import TypeSchema

    out = []
    kw_only = False
    hints = cls.__dict__.get("__annotations__", {})
    # String annotations (`from __future__ import annotations`) are evaluated where they can be;
    # those that cannot stay strings, whose fields take any value.
    try:
        resolved = typing.get_type_hints(cls, localns={cls.__name__: cls})
    except Exception:
        resolved = {}
    for name, raw in hints.items():
        ann = resolved.get(name, raw)
        if ann is KW_ONLY or (isinstance(ann, str) and ann.rsplit(".", 1)[-1] == "KW_ONLY"):
            kw_only = True
            continue
        if typing.get_origin(ann) is typing.ClassVar:
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        if f.kw_only is MISSING:
            f.kw_only = kw_only
        f.annotation = ann
        try:
            f.schema = TypeSchema.from_annotation(ann)
        except TypeError:
            f.schema = TypeSchema("Any")
        out.append(f)
    return out


def py_class(
    type_key: str | None = None,
    *,
    init=True,
    repr=True,
    eq=True,
    frozen=False,
    unsafe_hash=False,
    structural_eq=None,
):
    """Defines the runtime type ``type_key`` (default: module.qualname) from a class's annotated
    fields; instances store them in the runtime object. ``structural_eq`` sets the type's role in
    structural equality (see the module docs)."""
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
        own = _own_fields(cls)
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
        inherited = list(getattr(parent, "__rffi_fields__", ())) if parent is not None else []
        all_fields = inherited + own
        if init and "__init__" not in ns:
            new.__init__ = _make_init(new, all_fields, index)
        _add_dataclass_methods(
            new, all_fields, repr=repr, eq=eq, frozen=frozen, unsafe_hash=unsafe_hash
        )
        return new

    if isinstance(type_key, type):  # used bare: @py_class
        cls, type_key = type_key, None
        return define(cls)
    return define


from ._dataclass_enum import enum  # noqa: E402  (uses the helpers above)
