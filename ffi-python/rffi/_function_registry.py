"""The function registry: global functions by name (``get_global_func``,
``register_global_func``, ``remove_global_func``, ``list_global_func_names``, ``init_ffi_api``)."""

from __future__ import annotations

import ctypes
import sys

from . import _lib
from ._callback import function_from_callable
from ._error import take_raised_exception
from ._frame import byte_array
from ._function import FASTPATH, _CtypesFunction, wrap_function
from ._object import wrap_new

_byref = ctypes.byref
_c_void_p = ctypes.c_void_p


def _name_bytes(name) -> bytes:
    if not isinstance(name, str):
        raise TypeError(f"a function name must be a str, got {type(name).__name__}")
    return name.encode("utf-8")


def _lookup(name: str) -> int:
    """The address of a new reference to the global function ``name``, or 0."""
    b = _name_bytes(name)  # kept alive: the byte array points into it
    out = _c_void_p()
    if _lib.FunctionGetGlobal(_byref(byte_array(b)), _byref(out)) != 0:
        raise take_raised_exception()
    return out.value or 0


def get_global_func(name: str, allow_missing: bool = False):
    """The global function ``name``; a missing name is a ValueError, or None with
    ``allow_missing=True``. With the fast path, a function declared non-blocking keeps the GIL
    during its calls (``release_gil`` is False; see ``declared_nonblocking``)."""
    h = _lookup(name)
    if not h:
        if allow_missing:
            return None
        raise ValueError(f"rffi: no global function named {name!r}")
    f = wrap_function(h, name)
    if FASTPATH:
        declared = declared_nonblocking(name)
        if declared is True:
            f.release_gil = False
        elif declared == "with_arguments":
            f._gil_with_arguments = True
    return f


_NONBLOCKING = []  # `ffi.GetGlobalFuncNonblocking`, once looked up
# Its answers: 0 may block, 1 non-blocking, 2 non-blocking with its arguments.
_DECLARED = (False, True, "with_arguments")


def declared_nonblocking(name: str):
    """What the metadata of the global function ``name`` declares under ``"nonblocking"``:
    ``True`` when it is non-blocking (it returns promptly, waits for no other thread and calls
    nothing it is given: its calls keep the GIL), ``"with_arguments"`` when it is so except that
    it calls the Functions passed as its arguments (its calls keep the GIL when those do, or are
    Python callables), else False."""
    if not _NONBLOCKING:
        _NONBLOCKING.append(wrap_function(_lookup("ffi.GetGlobalFuncNonblocking"), None))
    try:
        return _DECLARED[_NONBLOCKING[0](name)]
    except Exception:  # removed meanwhile: not declared
        return False


def register_global_func(func_name=None, f=None, override: bool = False):
    """Registers ``f`` (a Python callable or a Function) as the global ``func_name`` and returns
    the registered ``Function``. An existing name is a KeyError unless ``override``. As a
    decorator: ``@register_global_func("name")``, ``@register_global_func("name", override=True)``,
    or bare ``@register_global_func`` (the name is the function's ``__name__``); the decorated
    name is then the Function."""
    if callable(func_name) and f is None:
        f, func_name = func_name, func_name.__name__

    def register(fn):
        name = func_name if func_name is not None else getattr(fn, "__name__", None)
        if not callable(fn):
            raise TypeError(
                f"register_global_func({name!r}): expected a callable or an rffi.Function, "
                f"got {type(fn).__name__}"
            )
        meta = None
        if isinstance(fn, _CtypesFunction):
            func = fn
        else:
            from ._schema import checked_python_function

            # Annotations are checked at every call, whichever language calls.
            func, meta = checked_python_function(name, fn, function_from_callable(fn))
        b = _name_bytes(name)
        if _lib.FunctionSetGlobal(_byref(byte_array(b)), func._h, 1 if override else 0):
            raise take_raised_exception()
        if func._name is None or not isinstance(fn, _CtypesFunction):
            func._name = name
        if meta is not None:
            from ._schema import record_metadata

            record_metadata(name, meta)
        return func

    return register(f) if f is not None else register


def remove_global_func(name: str) -> None:
    """Removes the global function ``name`` (KeyError if there is none)."""
    b = _name_bytes(name)
    if _lib.FunctionRemoveGlobal(_byref(byte_array(b))) != 0:
        raise take_raised_exception()


def list_global_func_names() -> list:
    """Every registered global function name, sorted."""
    out = _c_void_p()
    if _lib.FunctionListGlobalNames(_byref(out)) != 0:
        raise take_raised_exception()
    from ._container import Array

    return list(wrap_new(Array, out.value, _lib.kArray))


def init_ffi_api(namespace: str, target_module_name: str | None = None) -> None:
    """Puts every global function ``<namespace>.<leaf>`` (one more dotted part only) on the module
    ``target_module_name`` (default: the module named ``namespace``) as attribute ``<leaf>``."""
    target_module_name = target_module_name or namespace
    module = sys.modules.get(target_module_name)
    if module is None:
        raise ValueError(f"init_ffi_api: module {target_module_name!r} is not imported")
    prefix = namespace + "."
    for name in list_global_func_names():
        if not name.startswith(prefix):
            continue
        leaf = name[len(prefix) :]
        if "." in leaf:
            continue
        setattr(module, leaf, get_global_func(name))


def get_registered_type_keys() -> list:
    """The keys of every object type registered at run time (``rffi.get_registered_type_keys``;
    here too, where tvm-ffi's ``registry`` module has it)."""
    from ._object_model import get_registered_type_keys as keys  # imports this module

    return keys()
