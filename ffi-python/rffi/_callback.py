"""Python callables as runtime Functions: native code calls back into Python.

On the native fast path the native library makes the Function (``rffi_python_function_from_
callable``): its context is the callable itself, and a call converts arguments and results with
the same rules as here (``_decode``, the conversion table), without ctypes' callback thunk. On the
ctypes path, ``RFFIFunctionCreate`` gets one module-wide CFUNCTYPE trampoline and deleter, and the
context is a token mapping to the callable. Either way the callable is released when the runtime
drops the Function, and an exception goes back as an Error (``_error.set_raised_from_python``).
"""

from __future__ import annotations

import ctypes
import itertools
import sys

from . import _function, _lib, _native
from . import _layout as L
from ._convert import write_owned
from ._decode import decode_view
from ._error import (
    _TRAMPOLINE_CODE,
    _recursion_error,
    conversion_failed,
    set_raised_from_python,
    take_raised_exception,
)
from ._frame import SCRATCH, scratch

_string_at = getattr(ctypes, "_string_at", ctypes.string_at)
_ANY = L.ANY

# token -> callable: the context of every function made from a Python callable on the ctypes
# path. The token (not the PyObject address) is the context because it maps back to the callable
# with one dict lookup, where a ctypes cast of an address to an object costs ~1 us. The deleter
# removes the entry when the runtime drops the function, which releases the callable.
CALLBACKS: dict = {}
_next_token = itertools.count(1).__next__
_get_recursion_limit = sys.getrecursionlimit
_set_recursion_limit = sys.setrecursionlimit


def _trampoline(token, args_ptr, nargs, result_ptr):
    try:
        f = CALLBACKS[token]
        if nargs == 1:
            r = f(decode_view(_string_at(args_ptr, _ANY), 0))
        elif nargs:
            raw = _string_at(args_ptr, _ANY * nargs)
            r = f(*[decode_view(raw, _ANY * k) for k in range(nargs)])
        else:
            r = f()
        if r is not None:
            write_owned(r, result_ptr)
        return 0
    except BaseException as exc:  # everything, KeyboardInterrupt included, goes back as an Error
        # A few frames of headroom: a RecursionError at the limit must itself be converted.
        limit = _get_recursion_limit()
        _set_recursion_limit(limit + 50)
        try:
            # ctypes reports a RecursionError met while converting an argument of one of its
            # calls as an ArgumentError: it is the caller's recursion, say so.
            set_raised_from_python(_recursion_error(exc) or exc)
        except BaseException as e:  # the conversion itself failed
            conversion_failed(e)
        finally:
            _set_recursion_limit(limit)
        return -1


_TRAMPOLINE_CODE[0] = _trampoline.__code__


def _release_callback(token):
    # Runs with the GIL (ctypes takes it for callbacks), on whatever thread dropped the function;
    # at interpreter exit the module's globals may be gone already (None).
    if CALLBACKS is not None:
        CALLBACKS.pop(token, None)


# Module-wide so they live as long as any function made from them may be called.
_TRAMPOLINE_FN = _lib.SAFE_CALL(_trampoline)
_DELETER_FN = _lib.DELETER(_release_callback)
_TRAMPOLINE_ADDR = ctypes.cast(_TRAMPOLINE_FN, ctypes.c_void_p).value
_DELETER_ADDR = ctypes.cast(_DELETER_FN, ctypes.c_void_p).value
_FunctionCreateAt = _lib.FunctionCreateAt

# Functions made from Python callables natively; None on the ctypes path.
_NATIVE_CALLBACK = (
    _native.object_entry("rffi_python_function_from_callable") if _function.FASTPATH else None
)


def function_from_callable(f):
    """A runtime Function that calls the Python callable ``f``."""
    if isinstance(f, _function._CtypesFunction):
        return f
    name = getattr(f, "__qualname__", None) or repr(f)
    if _NATIVE_CALLBACK is not None:
        h = _NATIVE_CALLBACK(f)
        if not h:
            raise take_raised_exception()
        made = _function.wrap_function(h, name)
        # Its body is Python code, which takes the GIL at once and gives it up where Python
        # would: calls from Python keep the GIL, and so do calls of functions it is given to.
        made.release_gil = False
        return made
    token = _next_token()
    CALLBACKS[token] = f
    # Plain addresses, no ctypes pointer objects: their argument checks would turn a
    # RecursionError at the limit into a ctypes ArgumentError.
    fr = scratch()
    try:
        if _FunctionCreateAt(token, _TRAMPOLINE_ADDR, _DELETER_ADDR, fr[3] + L.FRAME_RESULT) != 0:
            CALLBACKS.pop(token, None)
            raise take_raised_exception()
        h = fr[1][2]
        fr[1][2] = 0
    finally:
        SCRATCH.append(fr)
    return _function.wrap_function(h, name)


def convert_func(func, tensor_cls=None):
    """The runtime Function that calls the Python callable ``func`` (what ``convert(func)``
    gives). With ``tensor_cls`` (``torch.Tensor``, ``numpy.ndarray``, ...), tensor arguments reach
    ``func`` as that class, imported without a copy by the ``from_dlpack`` of its package."""
    if not callable(func):
        raise TypeError(f"convert_func: expected a callable, got {type(func).__name__}")
    if tensor_cls is None:
        return function_from_callable(func)
    package = sys.modules.get(getattr(tensor_cls, "__module__", "").partition(".")[0])
    importer = getattr(package, "from_dlpack", None)
    if not callable(importer):
        raise TypeError(
            f"convert_func: tensor_cls {getattr(tensor_cls, '__name__', tensor_cls)!r} has no "
            "DLPack importer: rffi imports tensors with its package's `from_dlpack` (tvm-ffi's "
            "`__dlpack_c_exchange_api__` is not used)"
        )
    from ._tensor import Tensor

    def call(*args):
        return func(*[importer(a) if isinstance(a, Tensor) else a for a in args])

    call.__qualname__ = getattr(func, "__qualname__", "convert_func")
    return function_from_callable(call)


def function_from_c_symbol(c_symbol, keep_alive_object=None):
    """A runtime Function calling the C function at address ``c_symbol`` (an int or a
    ``ctypes.c_void_p``) of the runtime's safe-call signature, ``int(void* resource, const
    RFFIAny* args, int32_t num_args, RFFIAny* result)``; ``keep_alive_object`` (a library
    handle, say) is kept alive as long as the Function."""
    addr = c_symbol.value if isinstance(c_symbol, ctypes.c_void_p) else c_symbol
    if not isinstance(addr, int) or isinstance(addr, bool) or not addr:
        raise TypeError(
            f"expected the address of a C function (an int or ctypes.c_void_p), got {c_symbol!r}"
        )
    token, deleter = 0, None
    if keep_alive_object is not None:
        token, deleter = _next_token(), _DELETER_ADDR
        CALLBACKS[token] = keep_alive_object
    out = ctypes.c_void_p()
    if _lib.FunctionCreate(token or None, addr, deleter, ctypes.byref(out)) != 0:
        CALLBACKS.pop(token, None)
        raise take_raised_exception()
    return _function.wrap_function(out.value, f"<C function at {addr:#x}>")
