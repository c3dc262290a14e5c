"""The fields of ``rffi.dataclasses`` classes: ``Field`` and ``field()``, the ``MISSING`` and
``KW_ONLY`` sentinels, and how a class's fields are found: from the runtime type's reflection
(``c_class``) merged with the class's annotations, or from the annotations alone (``py_class``).
"""

from __future__ import annotations

import json
import sys
import typing

from ._dataclass_common import is_dataclass
from ._dataclass_dunders import RuntimeDefault
from ._object_model import (
    FLAG_COMPARE_OFF,
    FLAG_DEFAULT_FROM_FACTORY,
    FLAG_HAS_DEFAULT,
    FLAG_HASH_OFF,
    FLAG_INIT_OFF,
    FLAG_KW_ONLY,
    FLAG_REPR_OFF,
    FLAG_WRITABLE,
    STRUCTURAL_FIELD_FLAGS,
    _ffi,
    type_info,
)

# The classes here belong to the public module that exports them (their repr, pickling, and the
# type stubs in dataclasses.pyi name them there).
_PUBLIC = "rffi.dataclasses"


class _Missing:
    __module__ = _PUBLIC

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

        __module__ = _PUBLIC


class Field:
    """One field of a c_class / py_class."""

    __module__ = _PUBLIC

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


def runtime_fields(info: dict) -> list:
    out = []
    for key in [*info["ancestors"], info["type_key"]]:
        if key == "ffi.Object":
            continue
        t = info if key == info["type_key"] else type_info(key)
        for f in t["fields"]:
            flags = f["flags"]
            # A runtime default value is read once (as `fields()` shows it); a factory is called
            # per object by the runtime.
            has_default = bool(flags & FLAG_HAS_DEFAULT)
            from_factory = has_default and bool(flags & FLAG_DEFAULT_FROM_FACTORY)
            fd = Field(
                default=(
                    _ffi("ffi.TypeFieldDefault")(t["type_index"], f["name"])
                    if has_default and not from_factory
                    else MISSING
                ),
                default_factory=(
                    RuntimeDefault(t["type_index"], f["name"]) if from_factory else MISSING
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


def c_class_fields(cls, info: dict, class_kw_only: bool) -> list:
    """The fields of a c_class: the runtime's, with what the class's annotations say about them."""
    runtime = runtime_fields(info)
    annotated = own_fields(cls, class_kw_only)
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


def own_fields(cls, class_kw_only: bool = False) -> list:
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
