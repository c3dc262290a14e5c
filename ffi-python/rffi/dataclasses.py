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
import sys
import typing

from ._dataclass_common import asdict, astuple, is_dataclass, replace
from ._dataclass_dunders import (
    FrozenInstanceError,
    RuntimeDefault,
    add_dataclass_methods,
    make_init,
    with_allocation,
)
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
    "asdict",
    "astuple",
    "c_class",
    "enum",
    "field",
    "fields",
    "is_dataclass",
    "method",
    "py_class",
    "replace",
]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: "No value given" (a field without a default), as ``dataclasses.MISSING``; also ``rffi.MISSING``.
MISSING = _Missing()


if sys.version_info >= (3, 10):
    # The standard library's sentinel, so type checkers (and code shared with `dataclasses`)
    # recognise it.
    from dataclasses import KW_ONLY
else:

    class KW_ONLY:
        """Annotate a pseudo-field with ``KW_ONLY``: the fields after it are keyword-only."""


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
        "type",
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
        if default_factory is not MISSING and not callable(default_factory):
            raise TypeError(
                f"default_factory must be a callable, not {type(default_factory).__name__}"
            )
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
        self.annotation = self.type = typing.Any
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
    if not is_dataclass(cls_or_obj):
        raise TypeError(
            f"fields() should be called on a c_class or py_class type or instance, not "
            f"{type(cls_or_obj).__name__}"
        )
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    return tuple(cls.__rffi_fields__)


# ---- runtime fields as Field objects ----


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
                    RuntimeDefault(t["type_index"], f["name"])
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
            fd.annotation = fd.type = _python_type(f)
            out.append(fd)
    return out


#: The Python type of a runtime field whose schema names one of these.
_PY_TYPES = {"int": int, "float": float, "bool": bool, "ffi.String": str, "ffi.Bytes": bytes}


def _python_type(field_info: dict):
    schema = field_info["metadata"].get("type_schema") if field_info["metadata"] else None
    if isinstance(schema, str):
        schema = json.loads(schema)
    return _PY_TYPES.get((schema or {}).get("type"), typing.Any)


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
        all_fields = _c_class_fields(cls, info, kw_only)
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
        install_members(cls, info)
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


def _c_class_fields(cls, info: dict, class_kw_only: bool) -> list:
    """The fields of a c_class: the runtime's, with what the class's annotations say about them."""
    runtime = _runtime_fields(info)
    annotated = _own_fields(cls, class_kw_only)
    if not annotated:
        if class_kw_only:
            for f in runtime:
                f.kw_only = True
        return runtime
    by_name = {f.name: f for f in runtime}
    key = info["type_key"]
    extra = [f.name for f in annotated if f.name not in by_name]
    if extra:
        raise ValueError(
            f"Extraneous field `{cls.__qualname__}.{extra[0]}`: defined in Python but not in the "
            f"runtime type `{key}`"
        )
    names = {f.name for f in annotated}
    missing = [f["name"] for f in info["fields"] if f["name"] not in names]
    if missing:
        shown = ", ".join(f"`{n}`" for n in missing)
        raise ValueError(
            f"Missing fields in `{cls.__qualname__}`: {shown}: defined in the runtime type "
            f"`{key}` but not in Python"
        )
    merged = []
    for f in annotated:
        rt = by_name[f.name]
        if isinstance(cls.__dict__.get(f.name), Field):
            # The Python field's options; the runtime's doc, frozen-ness and default.
            f.doc = f.doc or rt.doc
            f.frozen = f.frozen or rt.frozen
            f.structural_eq = f.structural_eq or rt.structural_eq
            if not f.has_default():
                f.default_factory = rt.default_factory
            merged.append(f)
        else:  # an annotation, maybe with a default: the runtime's options
            rt.kw_only = bool(rt.kw_only or f.kw_only)
            if f.default is not MISSING:
                rt.default, rt.default_factory = f.default, MISSING
            merged.append(rt)
    # The ancestors' fields the class does not name come first, as in the runtime.
    return [f for f in runtime if f.name not in names] + merged


def _own_fields(cls, class_kw_only: bool = False) -> list:
    from ._schema import TypeSchema

    out = []
    kw_only = class_kw_only
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
        if typing.get_origin(ann) is typing.ClassVar or type(ann).__name__ == "InitVar":
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        if f.kw_only is MISSING:
            f.kw_only = kw_only
        f.annotation = f.type = ann
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
        own = _own_fields(cls, kw_only)
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
                getattr(parent, "__rffi_fields__", None) or _runtime_fields(type_info(parent_index))
            )
        all_fields = inherited + own
        if init and "__init__" not in ns:
            new.__init__ = make_init(new, all_fields, index)
        elif "__init__" in ns:  # the class's own: it runs on an object with default fields
            new.__init__ = with_allocation(ns["__init__"])
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


from ._dataclass_enum import enum  # noqa: E402  (uses the helpers above)
