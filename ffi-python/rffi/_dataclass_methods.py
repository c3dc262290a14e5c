"""Methods of ``py_class`` types in the runtime: ``@rffi.dataclasses.method`` marks a method (or a
``staticmethod``) to register as a method of the runtime type, so Rust, C and other Python code
call it by name (``call_method(obj, "name", ...)``). Its annotations become its signature: every
call, from any language, is checked against them in the runtime (a TypeError names the method,
the argument's position and name, the expected and actual types, and prints the signature), and
its metadata carries the type schema as a Rust method's does.

Python code calls a registered method through the same runtime function, so it gets the same
checks and conversions (an ``int`` for a ``float`` parameter arrives as a float; a ``list[int]``
argument as an ``rffi.Array``). Methods not marked stay plain Python methods.
"""

from __future__ import annotations

import inspect
import json
import typing

from ._object_model import _ffi

_MARK = "__rffi_method__"


def method(fn):
    """Marks a method of a ``py_class`` (a plain function or a ``staticmethod``) to be registered
    as a method of the runtime type, checked against its annotations at every call."""
    if isinstance(fn, classmethod):
        raise TypeError(
            "rffi.dataclasses.method: a classmethod cannot be a runtime method (its first "
            "argument is the class, not an object); use a staticmethod or an instance method"
        )
    target = fn.__func__ if isinstance(fn, staticmethod) else fn
    if not callable(target):
        raise TypeError(f"rffi.dataclasses.method: expected a function, got {type(fn).__name__}")
    setattr(target, _MARK, True)
    return fn


def _marked(value) -> bool:
    target = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    return callable(target) and getattr(target, _MARK, False) is True


def _schema_of(annotation, cls, key: str):
    from ._schema import TypeSchema

    if annotation is cls:
        return TypeSchema(key)
    try:
        return TypeSchema.from_annotation(annotation)
    except TypeError:  # a Python type the runtime does not know: any value
        return TypeSchema("Any")


def _signature_metadata(cls, key: str, func, is_static: bool):
    """The method's metadata (``type_schema``, ``arg_names``, ``doc``) and how many arguments a
    call needs at least; None when it takes ``*args``, ``**kwargs`` or keyword-only arguments,
    which the runtime's positional calls cannot check."""
    from ._schema import TypeSchema

    sig = inspect.signature(func)
    params = list(sig.parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return None, 0
    try:
        hints = typing.get_type_hints(func, localns={cls.__name__: cls})
    except Exception:  # unresolvable forward references: the raw annotations
        hints = {}
    schemas = []
    for k, p in enumerate(params):
        if k == 0 and not is_static:
            schemas.append(TypeSchema(key))  # self
        else:
            schemas.append(_schema_of(hints.get(p.name, p.annotation), cls, key))
    ret = _schema_of(hints.get("return", sig.return_annotation), cls, key)
    meta = {
        "type_schema": TypeSchema("ffi.Function", [ret, *schemas]).to_json(),
        "arg_names": [p.name for p in params],
        "doc": inspect.getdoc(func) or "",
    }
    required = sum(1 for p in params if p.default is p.empty)
    return meta, required


def _python_side(fn, func, is_static: bool):
    """The attribute Python code calls: the runtime function, with keyword arguments bound to
    positions by the Python signature first."""
    sig = inspect.signature(func)

    def call(*args, **kwargs):
        if kwargs:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        return fn(*args)

    call.__name__ = func.__name__
    call.__qualname__ = func.__qualname__
    call.__doc__ = func.__doc__
    call.__wrapped__ = func  # inspect.signature / help show the Python signature
    return staticmethod(call) if is_static else call


#: Methods of a ``py_class`` registered as type attributes (hooks of the recursive comparisons
#: and of ``repr``).
HOOKS = ("__ffi_eq__", "__ffi_compare__", "__ffi_hash__", "__ffi_repr__")


def register_methods(cls, key: str, index: int) -> None:
    """Registers the marked methods of ``cls`` (a new ``py_class``) in the runtime type ``index``
    and puts their runtime functions on the class."""
    from ._callback import function_from_callable

    register = _ffi("ffi.TypeRegisterMethod")
    checked = _ffi("ffi.FunctionWithSignature")
    # The hooks of the recursive comparisons and of repr are type attributes the runtime looks
    # up, not methods: `__ffi_eq__(self, other, fn_eq)`, `__ffi_compare__(self, other, fn_cmp)`,
    # `__ffi_hash__(self, fn_hash)`, `__ffi_repr__(self, fn_repr)`.
    for name in HOOKS:
        value = cls.__dict__.get(name)
        if callable(value):
            _ffi("ffi.TypeRegisterAttr")(index, name, function_from_callable(value))
    for name, value in list(cls.__dict__.items()):
        if not _marked(value):
            continue
        is_static = isinstance(value, staticmethod)
        func = value.__func__ if is_static else value
        meta, required = _signature_metadata(cls, key, func, is_static)
        fn = function_from_callable(func)
        if meta is not None:
            fn = checked(fn, f"{key}.{name}", json.dumps(meta), required)
        register(index, name, fn, inspect.getdoc(func) or "", is_static, json.dumps(meta or {}))
        setattr(cls, name, _python_side(fn, func, is_static))
