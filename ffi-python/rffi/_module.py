"""``Module``: a plugin library loaded into the runtime (``rffi.load_module(path)``)."""

from __future__ import annotations

import ctypes
import os

from . import _lib
from ._container import Array
from ._error import take_raised_exception
from ._function import Function, wrap_function
from ._function_registry import get_global_func
from ._object import CLASS_OF_INDEX, Object, wrap_new


def _byte_array(b: bytes):
    return _lib.ByteArray(ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value, len(b))


class Module(Object):
    """A loaded plugin. Its functions: ``mod.name``, ``mod["name"]``, ``mod.get_function("name")``;
    ``mod.list_functions()`` lists them. Loading the same file again gives the same module."""

    __slots__ = ("_functions",)

    def get_function(self, name: str, allow_missing: bool = False):
        """The function ``name`` of this module (a name its plugin registered, or the last dotted
        part of one, or an exported ``__rffi_<name>`` symbol). Missing: AttributeError, or None
        with ``allow_missing=True``."""
        cache = self._cache()
        f = cache.get(name)
        if f is not None:
            return f
        if not isinstance(name, str):
            raise TypeError(f"a function name must be a str, got {type(name).__name__}")
        b = name.encode("utf-8")
        out = ctypes.c_void_p()
        if _lib.ModuleGetFunction(self._h, ctypes.byref(_byte_array(b)), ctypes.byref(out)):
            raise take_raised_exception()
        if not out.value:
            if allow_missing:
                return None
            raise AttributeError(f"module {self.path!r} has no function {name!r}")
        f = wrap_function(out.value, name)
        cache[name] = f
        return f

    def _cache(self) -> dict:
        try:
            return self._functions
        except AttributeError:
            self._functions = {}
            return self._functions

    def __getitem__(self, name: str) -> Function:
        f = self.get_function(name, allow_missing=True)
        if f is None:
            raise KeyError(name)
        return f

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_"):  # private and special names (use get_function for those)
            raise AttributeError(name)
        return self.get_function(name)

    def __contains__(self, name: str) -> bool:
        return self.get_function(name, allow_missing=True) is not None

    def list_functions(self) -> list:
        """The module's function names: those its plugin registered, then the exported symbols
        looked up so far."""
        out = ctypes.c_void_p()
        if _lib.ModuleListFunctions(self._h, ctypes.byref(out)) != 0:
            raise take_raised_exception()
        return list(wrap_new(Array, out.value, _lib.kArray))

    @property
    def path(self) -> str:
        """The file the module was loaded from."""
        f = get_global_func("ffi.ModulePath", allow_missing=True)
        return f(self) if f is not None else "<module>"

    def __repr__(self) -> str:
        return f"rffi.Module({self.path!r})"


CLASS_OF_INDEX[_lib.kModule] = Module


def load_module(path) -> Module:
    """Loads a plugin library (a Rust or C plugin built for this runtime's ABI) and returns its
    Module; its functions also join the global function registry. A library built for another ABI
    major version is refused with both versions named."""
    if _lib.ModuleLoadFromFile is None:  # pragma: no cover - library without modules
        raise NotImplementedError("this librffi.so has no module loading (RFFIModuleLoadFromFile)")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"rffi.load_module: no such file: {path!r}")
    b = os.path.abspath(path).encode("utf-8")
    out = ctypes.c_void_p()
    if _lib.ModuleLoadFromFile(ctypes.byref(_byte_array(b)), ctypes.byref(out)) != 0:
        raise take_raised_exception()
    return wrap_new(Module, out.value, _lib.kModule)
