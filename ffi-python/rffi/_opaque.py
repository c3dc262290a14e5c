"""Any Python object as a runtime object: ``ffi.OpaquePyObject`` (type 74), holding a reference.

The cell's handle is the ``PyObject*`` (as in tvm-ffi), so the object converts back to the same
Python object, and native code can hand it around without knowing what it is.
"""

from __future__ import annotations

import ctypes

from . import _lib
from ._error import take_raised_exception
from ._object import Object, wrap_new

if hasattr(ctypes, "pythonapi"):
    _Py_IncRef = ctypes.pythonapi.Py_IncRef
    _Py_IncRef.argtypes = [ctypes.py_object]
    _Py_IncRef.restype = None
    _Py_DecRef = ctypes.pythonapi.Py_DecRef
    _Py_DecRef.argtypes = [ctypes.c_void_p]
    _Py_DecRef.restype = None
else:  # pragma: no cover - interpreters without the C API
    _Py_IncRef = _Py_DecRef = None


def _release_opaque(ptr):
    # A ctypes callback, so it holds the GIL whichever thread drops the object.
    _Py_DecRef(ptr)


_OPAQUE_DELETER_FN = _lib.DELETER(_release_opaque)
_OPAQUE_DELETER_ADDR = ctypes.cast(_OPAQUE_DELETER_FN, ctypes.c_void_p).value


def make_opaque(value) -> Object:
    """Wraps any Python object as an ``ffi.OpaquePyObject`` holding a reference to it."""
    if _Py_IncRef is None:  # pragma: no cover
        raise TypeError(f"rffi: cannot pass a {type(value).__name__} on this interpreter")
    _Py_IncRef(value)
    out = ctypes.c_void_p()
    rc = _lib.ObjectCreateOpaque(
        id(value), _lib.kOpaquePyObject, _OPAQUE_DELETER_ADDR, ctypes.byref(out)
    )
    if rc != 0:
        _Py_DecRef(id(value))
        raise take_raised_exception()
    return wrap_new(Object, out.value, _lib.kOpaquePyObject)
