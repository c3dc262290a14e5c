"""Type schemas and function signatures.

``TypeSchema`` describes a value's type as the runtime does (tvm-ffi's JSON form,
``{"type": "ffi.Array", "args": [{"type": "int"}]}``); ``TypeSchema.from_annotation`` builds one
from Python typing annotations, and ``convert`` checks a value against it in the runtime (an int
widens to a float, list elements are converted, a mismatch names the path to it).
``get_global_func_metadata(name)`` returns a registered function's schema, docstring and argument
names; registering a Python function with annotations records them.
"""

from __future__ import annotations

import inspect
import json
import typing

from ._function_registry import get_global_func as _get_global_func

_ORIGINS = {
    type(None): "None",
    bool: "bool",
    int: "int",
    float: "float",
    str: "ffi.String",
    bytes: "ffi.Bytes",
    object: "Any",
}

_RENDER_FN = None


def _ffi(name):
    return _get_global_func(name)


class TypeSchema:
    """A type: ``origin`` (``"int"``, ``"Optional"``, ``"ffi.Array"``, ``"my.Point"``, ...) and its
    ``args``."""

    __slots__ = ("origin", "args")

    def __init__(self, origin: str, args=()):
        self.origin = origin
        self.args = tuple(args)

    # ---- building ----

    @classmethod
    def from_json(cls, text) -> TypeSchema:
        """From the JSON form (a string or the parsed dict)."""
        d = json.loads(text) if isinstance(text, str) else text
        return cls(d["type"], [cls.from_json(a) for a in d.get("args", ())])

    @classmethod
    def from_json_str(cls, text: str) -> TypeSchema:
        """tvm-ffi's name for ``from_json``."""
        return cls.from_json(text)

    @classmethod
    def from_annotation(cls, annotation) -> TypeSchema:
        """From a Python annotation: ``int``, ``Optional[str]``, ``list[float]``,
        ``Dict[str, int]``, ``Tuple[int, str]``, ``Union[...]``, ``Callable``, ``Any``, rffi
        classes (``rffi.Tensor``, ``rffi.Device``, registered object classes)."""
        from ._device import Device
        from ._dtype import DataType
        from ._tensor import Tensor

        if annotation is inspect.Parameter.empty or annotation is typing.Any:
            return cls("Any")
        if annotation is None:
            return cls("None")
        if isinstance(annotation, str):
            raise TypeError(f"cannot build a TypeSchema from the string annotation {annotation!r}")
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Union or _is_union_type(origin):
            members = [a for a in args if a is not type(None)]
            inner = (
                cls.from_annotation(members[0])
                if len(members) == 1
                else cls("Union", [cls.from_annotation(a) for a in members])
            )
            return cls("Optional", [inner]) if len(members) < len(args) else inner
        if origin in (list, typing.List) or annotation is list:
            return cls("ffi.Array", [cls.from_annotation(args[0]) if args else cls("Any")])
        if origin in (dict, typing.Dict) or annotation is dict:
            k, v = args if args else (typing.Any, typing.Any)
            return cls("ffi.Map", [cls.from_annotation(k), cls.from_annotation(v)])
        if origin is tuple or annotation is tuple:
            return cls("Tuple", [cls.from_annotation(a) for a in args if a is not Ellipsis])
        if origin is not None and getattr(origin, "__name__", "") == "Callable":
            return cls("ffi.Function")
        if annotation in _ORIGINS:
            return cls(_ORIGINS[annotation])
        if annotation is Tensor:
            return cls("ffi.Tensor")
        if annotation is Device:
            return cls("Device")
        if annotation is DataType:
            return cls("DataType")
        key = getattr(annotation, "__rffi_type_key__", None)
        if key is not None:
            return cls(key)
        from ._object import CLASS_OF_INDEX, type_key

        for index, klass in CLASS_OF_INDEX.items():
            if klass is annotation:
                return cls(_norm_key(type_key(index)))
        if callable(annotation) and annotation.__module__ == "collections.abc":
            return cls("ffi.Function")
        raise TypeError(f"no TypeSchema for the annotation {annotation!r}")

    # ---- using ----

    def to_json(self) -> str:
        d = {"type": self.origin}
        if self.args:
            d["args"] = [json.loads(a.to_json()) for a in self.args]
        return json.dumps(d, separators=(",", ":"))

    def __repr__(self) -> str:
        return _ffi("ffi.TypeSchemaRender")(self.to_json())

    def __eq__(self, other):
        return isinstance(other, TypeSchema) and (self.origin, self.args) == (
            other.origin,
            other.args,
        )

    def __hash__(self):
        return hash((self.origin, self.args))

    def convert(self, value):
        """``value`` checked and converted to this type (TypeError naming the path otherwise)."""
        return _ffi("ffi.TypeSchemaConvert")(self.to_json(), value)


def _is_union_type(origin) -> bool:
    return origin is not None and getattr(origin, "__name__", "") == "UnionType"


def _norm_key(key: str) -> str:
    return {"ffi.String": "ffi.String", "ffi.Object": "ffi.Object"}.get(key, key)


def get_global_func_metadata(name: str) -> dict:
    """The metadata of the global function ``name``: ``type_schema`` (a JSON string, as tvm-ffi),
    and ``doc`` and ``arg_names`` where known. KeyError if no such function."""
    return json.loads(_ffi("ffi.GetGlobalFuncMetadata")(name))


def registered_doc(name: str) -> str:
    """The docstring registered with the global function ``name`` ("" when none or removed)."""
    try:
        return get_global_func_metadata(name).get("doc", "")
    except Exception:  # removed meanwhile, or a name no longer registered
        return ""


def python_signature(fn):
    """The metadata of a Python callable (``type_schema`` from its annotations, unannotated
    parameters ``Any``; ``arg_names``; ``doc``), how many arguments a call needs at least, and
    whether any annotation says more than ``Any``; None for callables without a fixed positional
    signature (``*args``) or whose annotations name no runtime type."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        return None  # packed: no fixed signature
    hints = _hints(fn)
    try:
        ret = TypeSchema.from_annotation(hints.get("return", sig.return_annotation))
        args = [TypeSchema.from_annotation(hints.get(p.name, p.annotation)) for p in params]
    except TypeError:
        return None
    meta = {
        "type_schema": TypeSchema("ffi.Function", [ret, *args]).to_json(),
        "arg_names": [p.name for p in params],
        "doc": inspect.getdoc(fn) or "",
    }
    required = sum(1 for p in params if p.default is p.empty)
    typed = any(t.origin != "Any" for t in (ret, *args))
    return meta, required, typed


def checked_python_function(name: str, fn, func):
    """``func`` (the Function made of the Python callable ``fn``), behind a check of every call
    against ``fn``'s annotations when they say more than ``Any``: a wrong argument is a TypeError
    naming ``name``, the argument's position and name, both types and the signature, whichever
    language calls. Returns the Function to register and its metadata (or None)."""
    found = python_signature(fn)
    if found is None:
        return func, None
    meta, required, typed = found
    if typed:
        func = _ffi("ffi.FunctionWithSignature")(func, name, json.dumps(meta), required)
    return func, meta


def record_metadata(name: str, meta) -> None:
    """Attaches ``meta`` (from ``checked_python_function``) to the global function ``name``."""
    if meta is not None:
        _ffi("ffi.SetGlobalFuncMetadata")(name, json.dumps(meta))


def _hints(fn) -> dict:
    try:
        return typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: use the raw annotations
        return {}


def signature_of(func) -> inspect.Signature:
    """``inspect.Signature`` of a registered Function, from its metadata."""
    name = getattr(func, "_name", None)
    meta = get_global_func_metadata(name) if name else {}
    text = meta.get("type_schema")
    if not text:
        return inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)])
    schema = TypeSchema.from_json(text)
    if schema.origin != "ffi.Function" or not schema.args:
        return inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)])
    ret, *args = schema.args
    names = meta.get("arg_names") or [f"_{i}" for i in range(len(args))]
    params = [
        inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY, annotation=_Ann(a))
        for n, a in zip(names, args)
    ]
    return inspect.Signature(params, return_annotation=_Ann(ret))


class _Ann:
    """An annotation shown as the schema's Python spelling (``Optional[int]``)."""

    __slots__ = ("schema",)

    def __init__(self, schema: TypeSchema):
        self.schema = schema

    def __repr__(self) -> str:
        return repr(self.schema)
