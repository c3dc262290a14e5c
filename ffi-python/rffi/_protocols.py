"""The protocols an object may offer to stand for an rffi value, and their setters (see
``_setters`` for what a setter is). Each protocol method is also looked up under tvm-ffi's
spelling, ``__tvm_ffi_<name>__``, so classes written for tvm-ffi convert unchanged.
"""

from __future__ import annotations

import operator

from . import _convert
from ._object import Object
from ._setters import address, set_address, set_float, set_int, set_object


def _protocol(name: str):
    """The two spellings of a protocol method: rffi's ``__rffi_<name>__`` and tvm-ffi's."""
    return (f"__rffi_{name}__", f"__tvm_ffi_{name}__")


P_OBJECT, P_VALUE, P_INT, P_FLOAT, P_OPAQUE_PTR = (
    _protocol(n) for n in ("object", "value", "int", "float", "opaque_ptr")
)
# A value protocol whose values keep offering it is a cycle past this many steps.
_MAX_VALUE_STEPS = 64


def offers(names):
    """Whether a type offers a protocol, under either spelling."""
    return lambda t: hasattr(t, names[0]) or hasattr(t, names[1])


def _call(v, names):
    """Calls ``v``'s method of a protocol, under whichever spelling it has."""
    method = getattr(v, names[0], None)
    return method() if method is not None else getattr(v, names[1])()


def set_object_protocol(v, fr, i):
    """``__rffi_object__()``: the object stands for the rffi Object it returns."""
    x = _call(v, P_OBJECT)
    if not isinstance(x, Object):
        raise TypeError(
            f"{type(v).__name__}.{P_OBJECT[0]}() must return an rffi Object, got {type(x).__name__}"
        )
    set_object(x, fr, i)
    return x  # alive until the call returns


def set_value(v, fr, i):
    """``__rffi_value__()``: the object stands for the value it returns (which may offer the
    protocol again: it is followed to a value of another kind)."""
    x = v
    for _ in range(_MAX_VALUE_STEPS):
        x = _call(x, P_VALUE)
        kind = _convert.TABLE.get(type(x)) or _convert.kind_of(type(x))
        if kind is not _convert.VALUE:
            return (kind.setter(x, fr, i), x)  # `x` too: the slot may borrow from it
    raise TypeError(
        f"{type(v).__name__}.{P_VALUE[0]}() still gives a value with that method after "
        f"{_MAX_VALUE_STEPS} steps (a cycle?)"
    )


def set_int_protocol(v, fr, i):
    set_int(operator.index(_call(v, P_INT)), fr, i)


def set_float_protocol(v, fr, i):
    set_float(float(_call(v, P_FLOAT)), fr, i)


def set_opaque_ptr_protocol(v, fr, i):
    x = _call(v, P_OPAQUE_PTR)
    set_address(address(x, f"{type(v).__name__}.{P_OPAQUE_PTR[0]}()"), fr, i)


def set_cuda_stream(v, fr, i):
    """``__cuda_stream__()`` (the CUDA array interface's): ``(version, handle)``."""
    x = v.__cuda_stream__()
    if not isinstance(x, tuple) or len(x) != 2:
        raise TypeError(
            f"{type(v).__name__}.__cuda_stream__() must return (version, handle), got {x!r}"
        )
    set_address(address(x[1], f"{type(v).__name__}.__cuda_stream__()"), fr, i)
