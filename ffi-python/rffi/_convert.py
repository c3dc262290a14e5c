"""Python -> rffi: the one conversion table, used by every path.

``TABLE`` maps a Python type (exact type) to a ``Kind``: the rule that turns its values into rffi
values. A type not in the table is resolved once by ``kind_of``, which walks ``RULES`` in order
(the subclasses of the known value types first, then the protocols, sequences, mappings,
callables) and caches the answer in ``TABLE``.

The protocols an object may offer to stand for an rffi value (each also under tvm-ffi's spelling,
``__tvm_ffi_<name>__``, so classes written for tvm-ffi convert unchanged):

* ``__rffi_object__()``: an rffi ``Object`` (a ``Tensor``, a ``Function``, ...) it wraps;
* ``__dlpack__``: a DLPack producer, passed as a ``Tensor`` without a copy;
* ``__cuda_stream__()``: a CUDA stream ``(version, handle)``, passed as the handle (a pointer);
* ``__rffi_value__()``: any convertible value (itself possibly offering a protocol);
* ``__rffi_int__()``, ``__rffi_float__()``: an int or a float;
* ``__rffi_opaque_ptr__()``: an address (int or ``ctypes.c_void_p``), passed as a pointer;
* ``__dlpack_data_type__()`` (and numpy's and torch's dtypes): a dtype;
* ``__dlpack_device__()`` (and ``torch.device``): a device.

Every path reads this table: the ctypes call path (``_fill``), the native call path (which reads
``TABLE`` from Rust and converts the kinds with a native code itself, handing the others to the
kind's setter), callback results (``write_owned``), container items (they are call arguments of
``ffi.Array``/``ffi.Map``) and ``convert``. Adding a value kind is one setter and one entry here.

A *setter* ``setter(value, frame, slot)`` writes a borrowed value (one ``RFFIAny``) into a frame
(``_frame``) and returns whatever must stay alive until the call returns (or None). The plain
kinds' setters are in ``_setters``, the protocols' in ``_protocols``; those that make an object
for the call (a container, a Function, an Error, a Tensor) are below.
"""

from __future__ import annotations

import ctypes
import functools
import numbers
import struct
import threading
import types
from collections.abc import Mapping

from . import _layout as L
from . import _lib
from ._decode import decode_frame_result
from ._device import Device
from ._dtype import DataType
from ._error import error_from_exception, take_raised_exception
from ._frame import ARGS, SCRATCH, scratch
from ._object import Object, ObjectRValueRef
from ._opaque import make_opaque
from ._protocols import (
    P_FLOAT,
    P_INT,
    P_OBJECT,
    P_OPAQUE_PTR,
    P_VALUE,
    offers,
    set_cuda_stream,
    set_float_protocol,
    set_int_protocol,
    set_object_protocol,
    set_opaque_ptr_protocol,
    set_value,
)
from ._setters import (
    set_bool,
    set_bytes,
    set_device,
    set_device_like,
    set_dtype,
    set_dtype_like,
    set_float,
    set_int,
    set_made,
    set_none,
    set_object,
    set_rvalue,
    set_str,
    set_void_p,
)
from ._shape import I64_MAX, I64_MIN, Shape
from ._string import Bytes, String


class Kind(int):
    """A conversion rule. Its int value is the native code: what the native call path does with
    values of a type of this kind itself (0: it hands them to ``setter``, the Python rule)."""

    def __new__(cls, name: str, native: int, setter):
        k = int.__new__(cls, native)
        k.name = name
        k.setter = setter
        return k

    def __bool__(self) -> bool:  # a kind is found, whatever its code (`TABLE.get(t) or ...`)
        return True

    def __repr__(self) -> str:
        return f"<rffi conversion {self.name} (native code {int(self)})>"


# Native codes; the same numbers are in ffi-python/native/src/call.rs (`Native`).
PYTHON, NONE, BOOL, INT, FLOAT, STR, BYTES, OBJECT, DLPACK, CALLABLE = range(10)

# ---- The kinds whose setters make an object for the call ----


def _set_sequence(v, fr, i):
    return set_made(_container.make_array(v), fr, i)


def _set_mapping(v, fr, i):
    return set_made(_container.make_map(v), fr, i)


def _set_shape(v, fr, i):
    return set_made(_container.make_shape(v), fr, i)


def _set_callable(v, fr, i):
    return set_made(_callback.function_from_callable(v), fr, i)


def _set_exception(v, fr, i):
    return set_made(error_from_exception(v), fr, i)


def _set_opaque(v, fr, i):
    return set_made(make_opaque(v), fr, i)


def _set_dlpack(v, fr, i):
    return _tensor.set_dlpack(v, fr, i)


# ---- The table ----

KINDS = {
    k.name: k
    for k in (
        Kind("none", NONE, set_none),
        Kind("bool", BOOL, set_bool),
        Kind("int", INT, set_int),
        Kind("float", FLOAT, set_float),
        Kind("str", STR, set_str),
        Kind("bytes", BYTES, set_bytes),
        Kind("buffer", PYTHON, set_bytes),
        Kind("object", OBJECT, set_object),
        Kind("rvalue", PYTHON, set_rvalue),
        Kind("shape", PYTHON, _set_shape),
        Kind("device", PYTHON, set_device),
        Kind("dtype", PYTHON, set_dtype),
        Kind("truth", PYTHON, set_bool),
        Kind("index", PYTHON, set_int),
        Kind("real", PYTHON, set_float),
        Kind("object_protocol", PYTHON, set_object_protocol),
        Kind("dlpack", DLPACK, _set_dlpack),
        Kind("cuda_stream", PYTHON, set_cuda_stream),
        Kind("value", PYTHON, set_value),
        Kind("int_protocol", PYTHON, set_int_protocol),
        Kind("float_protocol", PYTHON, set_float_protocol),
        Kind("opaque_ptr_protocol", PYTHON, set_opaque_ptr_protocol),
        Kind("sequence", PYTHON, _set_sequence),
        Kind("mapping", PYTHON, _set_mapping),
        Kind("pointer", PYTHON, set_void_p),
        Kind("exception", PYTHON, _set_exception),
        Kind("dtype_like", PYTHON, set_dtype_like),
        Kind("device_like", PYTHON, set_device_like),
        Kind("callable", CALLABLE, _set_callable),
        Kind("opaque", PYTHON, _set_opaque),
    )
}
VALUE = KINDS["value"]


def _is_numpy_bool(t) -> bool:
    return t.__module__ == "numpy" and t.__name__ in ("bool_", "bool")


def _is_foreign_dtype(t) -> bool:
    """numpy's and torch's dtype classes (checked by name: neither is imported for this)."""
    root = t.__module__.partition(".")[0]
    if root == "torch":
        return t.__name__ == "dtype"
    return root == "numpy" and any(
        c.__name__ == "dtype" and c.__module__ == "numpy" for c in t.__mro__
    )


def _is_torch_device(t) -> bool:
    return t.__module__ == "torch" and t.__name__ == "device"


def _defines_call(t) -> bool:
    # Functions, methods, classes (their type defines __call__), partials, callable instances.
    return any("__call__" in c.__dict__ for c in t.__mro__ if c is not object)


#: For types not in TABLE, in order of precedence: (kind, whether a type is of it).
RULES = (
    ("object", lambda t: issubclass(t, Object)),
    ("shape", lambda t: issubclass(t, Shape)),
    ("device", lambda t: issubclass(t, Device)),
    ("dtype", lambda t: issubclass(t, DataType)),
    ("bool", lambda t: issubclass(t, bool)),
    ("truth", _is_numpy_bool),
    ("int", lambda t: issubclass(t, int)),
    ("index", lambda t: issubclass(t, numbers.Integral)),
    ("float", lambda t: issubclass(t, float)),
    ("real", lambda t: issubclass(t, numbers.Real)),
    ("str", lambda t: issubclass(t, str)),
    ("bytes", lambda t: issubclass(t, bytes)),
    ("buffer", lambda t: issubclass(t, (bytearray, memoryview))),
    ("object_protocol", offers(P_OBJECT)),
    ("dlpack", lambda t: hasattr(t, "__dlpack__") or hasattr(t, "__dlpack_c_exchange_api__")),
    ("cuda_stream", lambda t: hasattr(t, "__cuda_stream__")),
    ("value", offers(P_VALUE)),
    ("int_protocol", offers(P_INT)),
    ("float_protocol", offers(P_FLOAT)),
    ("opaque_ptr_protocol", offers(P_OPAQUE_PTR)),
    ("sequence", lambda t: issubclass(t, (list, tuple))),
    ("mapping", lambda t: issubclass(t, (dict, Mapping))),
    ("pointer", lambda t: issubclass(t, ctypes.c_void_p)),
    ("exception", lambda t: issubclass(t, BaseException)),
    ("dtype_like", lambda t: _is_foreign_dtype(t) or hasattr(t, "__dlpack_data_type__")),
    ("device_like", lambda t: _is_torch_device(t) or hasattr(t, "__dlpack_device__")),
    ("callable", _defines_call),
    ("opaque", lambda t: True),
)

#: Exact type -> Kind; filled by `kind_of` as new types are seen.
TABLE: dict = {
    type(None): KINDS["none"],
    bool: KINDS["bool"],
    int: KINDS["int"],
    float: KINDS["float"],
    str: KINDS["str"],
    bytes: KINDS["bytes"],
    bytearray: KINDS["buffer"],
    memoryview: KINDS["buffer"],
    list: KINDS["sequence"],
    tuple: KINDS["sequence"],
    dict: KINDS["mapping"],
    Shape: KINDS["shape"],
    Device: KINDS["device"],
    DataType: KINDS["dtype"],
    ObjectRValueRef: KINDS["rvalue"],
    # Callables, known up front so that the first call passing one converts it natively too.
    types.FunctionType: KINDS["callable"],
    types.BuiltinFunctionType: KINDS["callable"],
    types.MethodType: KINDS["callable"],
    functools.partial: KINDS["callable"],
}
_table_lock = threading.Lock()


def kind_of(t) -> Kind:
    """The kind of values of exact type ``t``: from TABLE, else the first matching rule (cached)."""
    kind = TABLE.get(t)
    if kind is None:
        kind = next(KINDS[name] for name, matches in RULES if matches(t))
        with _table_lock:
            TABLE[t] = kind
    return kind


def register_kind(t, kind) -> None:
    """Makes values of exact type ``t`` convert by ``kind`` (a ``Kind``, or the name of one).
    Change kinds only through here: the native call path keeps the kinds it has looked up, and
    forgets them when a kind changes."""
    if not isinstance(kind, Kind):
        kind = KINDS[kind]
    with _table_lock:
        TABLE[t] = kind
        if _forget_native_kinds is not None:
            _forget_native_kinds()


_forget_native_kinds = None  # the native call path's, set once it is loaded (rffi._function)


# Types of keep-alive objects that also act when the call returns (the CUDA stream guard of
# rffi._tensor): their `_rffi_after_call()` runs then.
AFTER_CALL_TYPES: set = {ObjectRValueRef}


def release_temps(temps):
    # Last set, first undone: each one restores what was in effect when it was made.
    for k in reversed(temps):
        if type(k) in AFTER_CALL_TYPES:
            k._rffi_after_call()


_memmove = ctypes.memmove
_pack_int_any = struct.Struct("<qq").pack
_pack_float_any = struct.Struct("<qd").pack
_ToOwned = _lib.AnyViewToOwnedAny


def write_owned(value, result_ptr: int) -> None:
    """Stores ``value`` as an owned rffi value at ``result_ptr`` (a callback's result slot)."""
    t = type(value)
    if t is int and I64_MIN <= value <= I64_MAX:  # plain values: one copy, no conversion call
        _memmove(result_ptr, _pack_int_any(_lib.kInt, value), L.ANY)
        return
    if t is float:
        _memmove(result_ptr, _pack_float_any(_lib.kFloat, value), L.ANY)
        return
    fr = scratch()
    keep = None
    try:
        i = ARGS
        keep = (TABLE.get(t) or kind_of(t)).setter(value, fr, i)
        if _ToOwned(fr[3] + L.WORD * i, result_ptr) != 0:
            raise take_raised_exception()
    finally:
        if keep is not None:
            release_temps((keep,))
        SCRATCH.append(fr)


def convert(value):
    """Converts a Python value to its rffi form and back, by the table: lists and tuples become
    ``Array``, dicts ``Map``, callables ``Function``, exceptions ``Error``, DLPack producers
    ``Tensor``, text and bytes ``String`` and ``Bytes``, dtypes and devices (numpy's, torch's,
    the protocols') ``dtype`` and ``Device``; other plain values come back as themselves."""
    t = type(value)
    if (TABLE.get(t) or kind_of(t)) == CALLABLE:
        return _callback.function_from_callable(value)
    fr = scratch()
    keep = None
    try:
        i = ARGS
        t = type(value)
        keep = (TABLE.get(t) or kind_of(t)).setter(value, fr, i)
        addr = fr[3]
        if _ToOwned(addr + L.WORD * i, addr + L.FRAME_RESULT) != 0:
            raise take_raised_exception()
        w = fr[1][2]
        result = decode_frame_result(fr, w) if w else None
    finally:
        if keep is not None:
            release_temps((keep,))
        fr[1][2] = 0
        SCRATCH.append(fr)
    t = type(result)
    return String(result) if t is str else Bytes(result) if t is bytes else result


# The modules whose objects some setters make; imported last (they import this module).
from . import _callback, _container, _tensor  # noqa: E402
