"""The native fast path: ``librffi_python_native.so`` builds ``rffi.Function`` as a vectorcall type.

The native library is the package's own (crate ``rffi-python-native`` in ``ffi-python/native``,
built by ``pip install ./ffi-python``). It is loaded as a plugin of the runtime, so it reaches the
one runtime of the process through the loader's table. At import this module hands it the CPython
stable-ABI entry points it needs (their addresses, resolved from ``ctypes.pythonapi``; it never
links libpython), then the library makes the Function class (see ``make_function_type``). A call
then converts the common arguments (None, bool, int, float, str, bytes, runtime objects) and
results (None, int, bool, float, str) in Rust, and reads the conversion table (``_convert``) for
every other argument: kinds with a native code (subclasses of those types, runtime objects, DLPack
producers, callables) are converted in Rust too, the others by the table's Python setters (the
*fallback*), so the rules and their errors stay in one place.

Used on CPython >= 3.10 with the GIL (not free-threaded builds, not PyPy), when every symbol is
found and the native library is installed; otherwise, or with ``RFFI_PYTHON_FASTPATH=0`` in the
environment, the package uses its ctypes call path only. ``ENABLED`` says which; ``REASON`` says
why not.
"""

from __future__ import annotations

import ctypes
import os
import sys

from . import _lib

#: The native library's file name (built by `pip install ./ffi-python` from ffi-python/native).
NATIVE_NAME = "librffi_python_native." + ("dylib" if sys.platform == "darwin" else "so")
_HERE = os.path.dirname(os.path.abspath(__file__))

ENABLED = False
REASON = ""
#: The native library in use, or None.
PATH = None
_PYDLL = None
_MODULE = 0


# Entries the native library names by their current name, exported under an older one before.
_OLDER_NAMES = {"PyThreadState_GetUnchecked": "_PyThreadState_UncheckedGet"}  # before 3.13


def _resolve(entry: str) -> int | None:
    kind, _, name = entry.partition(":")
    api = ctypes.pythonapi
    if not hasattr(api, name):
        name = _OLDER_NAMES.get(name, name)
    try:
        if kind == "f":
            return ctypes.cast(getattr(api, name), ctypes.c_void_p).value
        if kind == "o":
            return ctypes.addressof(ctypes.c_char.in_dll(api, name))
        if kind == "p":
            return ctypes.c_void_p.in_dll(api, name).value
    except (AttributeError, ValueError):
        return None
    return None


def _find_native():
    """The native library: inside the package (where ``pip install ./ffi-python`` puts it), else
    next to ``librffi.so`` (a source checkout's ``target/release``, through RFFI_LIBRARY_PATH)."""
    for folder in (_HERE, os.path.dirname(_lib.LIB_PATH)):
        path = os.path.join(folder, NATIVE_NAME)
        if os.path.isfile(path):
            return path
    return None


def _bootstrap() -> str:
    """Loads and initializes the native library; returns "" on success, else why not."""
    global _PYDLL, PATH, _MODULE
    if os.environ.get("RFFI_PYTHON_FASTPATH", "1") == "0":
        return "RFFI_PYTHON_FASTPATH=0"
    if sys.implementation.name != "cpython":
        return f"not CPython ({sys.implementation.name})"
    if sys.version_info < (3, 10):
        return "CPython < 3.10"
    if sys.version_info >= (3, 13):
        import sysconfig

        if sysconfig.get_config_var("Py_GIL_DISABLED"):
            return "free-threaded CPython"
    if not hasattr(ctypes, "pythonapi"):
        return "no ctypes.pythonapi"
    path = _find_native()
    if path is None:
        return f"{NATIVE_NAME} is not installed (next to the package or to {_lib.LIB_NAME})"
    # Loaded through the runtime's plugin loader: the library binds to this process's runtime
    # through the loader's table (one runtime, whichever image holds it). The module stays
    # loaded for the life of the process, so its handle is simply kept.
    b = path.encode()
    out = ctypes.c_void_p()
    ba = _lib.ByteArray(ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value, len(b))
    if _lib.ModuleLoadFromFile(ctypes.byref(ba), ctypes.byref(out)) != 0:
        from ._error import take_raised_exception

        return f"loading {path} as a plugin failed: {take_raised_exception()}"
    _MODULE = out.value
    # PyDLL (the same library, already loaded): the GIL stays held and a Python error set by the
    # callee is raised.
    lib = ctypes.PyDLL(path)
    names_fn = lib.rffi_python_symbol_names
    names_fn.restype = ctypes.c_char_p
    names_fn.argtypes = []
    entries = names_fn().decode().split()
    addresses = [_resolve(e) for e in entries]
    missing = [e for e, a in zip(entries, addresses) if not a]
    if missing:
        return "missing CPython symbols: " + ", ".join(missing)
    table = (ctypes.c_void_p * len(addresses))(*addresses)
    init = lib.rffi_python_init
    init.restype = ctypes.c_int32
    init.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64]
    rc = init(table, len(addresses), object.__basicsize__)
    if rc != 0:
        return f"{path} refused the interpreter's symbol table (code {rc})"
    _PYDLL, PATH = lib, path
    return ""


REASON = _bootstrap()
ENABLED = not REASON


def object_storage():
    """The native storage base of ``rffi.Object`` (the object's address and type index as machine
    words, released natively when a wrapper dies), or None where the fast path is off."""
    if _PYDLL is None:
        return None
    make = _PYDLL.rffi_python_make_object_storage
    make.restype = ctypes.py_object
    make.argtypes = []
    return make()


def make_function_type(base: type, hooks: dict) -> type:
    """The Function class of the fast path: a subclass of ``base`` (the ctypes-path class, whose
    methods it inherits) called through vectorcall. ``hooks`` names what the native code calls
    back into (``_function`` passes them):

    * ``fallback(self, *args, **kwargs)``: the full Python call path, for what Rust leaves alone;
    * ``take_raised()``: the exception to raise for this thread's raised Error;
    * ``decode(type_word, payload)``: a result Rust does not convert (takes over an object);
    * ``table`` and ``resolve(type)``: the conversion table (``_convert.TABLE``) and the
      resolution of a type not in it (``_convert.kind_of``);
    * ``decoders`` and ``classes``: the decoders of object types that become plain values and
      the wrapper class of each type index (object results of other types are wrapped natively);
    * ``decode_arg``, ``write_owned``, ``callback_failed``: for Functions made from Python
      callables (a borrowed argument as a Python value, a result stored at an address, an
      exception raised as the Error).
    """
    size = base.__basicsize__
    if size % 8:  # pragma: no cover - every CPython layout is pointer-aligned
        raise TypeError(f"rffi: unexpected {base.__name__}.__basicsize__ {size}")
    make = _PYDLL.rffi_python_make_function_type
    make.restype = ctypes.py_object
    make.argtypes = [ctypes.py_object, ctypes.c_int64, ctypes.py_object]
    return make((base,), size, hooks)


def builtin(name: str, context=None):
    """The native library's builtin function ``name`` bound to ``context`` (``dec_ref``;
    ``from_dlpack``, whose context is ``(Tensor, python_from_dlpack)``): a real CPython builtin,
    called without ctypes; None where the fast path is off."""
    if _PYDLL is None:
        return None
    make = _PYDLL.rffi_python_builtin
    make.restype = ctypes.py_object
    make.argtypes = [ctypes.c_char_p, ctypes.py_object]
    return make(name.encode(), context)


def object_entry(name: str):
    """The native library's entry ``name`` taking one Python object and returning an int64
    (``rffi_python_function_from_callable``), called with the GIL held; None where the fast path
    is off or the library lacks it."""
    if _PYDLL is None or not hasattr(_PYDLL, name):
        return None
    fn = getattr(_PYDLL, name)
    fn.restype = ctypes.c_int64
    fn.argtypes = [ctypes.py_object]
    return fn
