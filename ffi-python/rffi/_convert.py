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

A *setter* ``setter(value, frame, slot)`` writes a borrowed value (16 bytes) into a frame
(``_frame``) and returns whatever must stay alive until the call returns (or None).
"""

from __future__ import annotations

import ctypes
import functools
import numbers
import operator
import struct
import threading
import types
from collections.abc import Mapping

from . import _layout as L
from . import _lib
from ._decode import decode_frame_result
from ._device import Device, device
from ._dtype import DataType
from ._error import error_from_exception, take_raised_exception
from ._frame import ARGS, SCRATCH, bytes_address, scratch
from ._object import Object, wrap_new
from ._opaque import make_opaque
from ._shape import I64_MAX, I64_MIN, Shape
from ._string import Bytes, String

_U64 = 2**64


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

# ---- Setters ----


def _set_none(v, fr, i):
    q = fr[1]
    q[i] = 0
    q[i + 1] = 0


def _set_bool(v, fr, i):
    q = fr[1]
    q[i] = _lib.kBool
    q[i + 1] = 1 if v else 0


def _set_int(v, fr, i):
    v = int(v)
    if not I64_MIN <= v <= I64_MAX:
        raise OverflowError(f"int {v} does not fit in int64")
    q = fr[1]
    q[i] = _lib.kInt
    q[i + 1] = v


def _set_float(v, fr, i):
    fr[1][i] = _lib.kFloat
    fr[2][i + 1] = float(v)


def _set_heap_bytes(b: bytes, fr, i, make, ti):
    """A Str/Bytes object made from ``b`` by ``make`` into slot ``i``; its wrapper (returned)
    releases it after the call."""
    q, addr = fr[1], fr[3]
    s = i + 2 * fr[4]
    q[s] = bytes_address(b)
    q[s + 1] = len(b)
    if make(addr + 8 * s, addr + 8 * i) != 0:
        raise take_raised_exception()
    return wrap_new(Object, q[i + 1], ti)


def _set_str(v, fr, i, _from_bytes=int.from_bytes):
    b = v.encode()
    n = len(b)
    q = fr[1]
    if n <= 7:
        q[i] = _lib.kSmallStr | (n << 32)  # the length in the upper half
        q[i + 1] = _from_bytes(b, "little")
        return None
    if "\x00" not in v:
        # Borrowed C string, zero copy: CPython bytes are NUL-terminated.
        q[i] = _lib.kRawStr
        q[i + 1] = bytes_address(b)
        return b
    return _set_heap_bytes(b, fr, i, _lib.StringFromByteArray, _lib.kStr)


def _set_bytes(v, fr, i):
    b = v if type(v) is bytes else bytes(v)
    n = len(b)
    q = fr[1]
    if n <= 7:
        q[i] = _lib.kSmallBytes | (n << 32)
        q[i + 1] = int.from_bytes(b, "little")
        return None
    # Borrowed RFFIByteArray in the scratch slot, pointing at the bytes' own data.
    s = i + 2 * fr[4]
    q[s] = bytes_address(b)
    q[s + 1] = n
    q[i] = _lib.kByteArrayPtr
    q[i + 1] = fr[3] + 8 * s
    return b


def _set_object(v, fr, i):
    h = v._h
    if not h:
        raise ValueError(f"{type(v).__name__} object has been released")
    q = fr[1]
    q[i] = v._ti
    q[i + 1] = h


def _set_device(v, fr, i):
    q = fr[1]
    q[i] = _lib.kDevice
    q[i + 1] = v._device_type | (v._index << 32)


def _set_dtype(v, fr, i):
    q = fr[1]
    q[i] = _lib.kDataType
    q[i + 1] = v._code | (v._bits << 8) | (v._lanes << 16)


def _set_dtype_like(v, fr, i):
    _set_dtype(DataType(v), fr, i)


def _set_device_like(v, fr, i):
    _set_device(device(v), fr, i)


def _set_void_p(v, fr, i):
    _set_address(v.value or 0, fr, i)


def _set_made(obj, fr, i):
    """Passes ``obj``, a wrapper made for this call (returned: it is released after it)."""
    q = fr[1]
    q[i] = obj._ti
    q[i + 1] = obj._h
    return obj


def _set_sequence(v, fr, i):
    return _set_made(_container.make_array(v), fr, i)


def _set_mapping(v, fr, i):
    return _set_made(_container.make_map(v), fr, i)


def _set_shape(v, fr, i):
    return _set_made(_container.make_shape(v), fr, i)


def _set_callable(v, fr, i):
    return _set_made(_callback.function_from_callable(v), fr, i)


def _set_exception(v, fr, i):
    return _set_made(error_from_exception(v), fr, i)


def _set_opaque(v, fr, i):
    return _set_made(make_opaque(v), fr, i)


def _set_dlpack(v, fr, i):
    return _tensor.set_dlpack(v, fr, i)


# ---- Protocols ----


def _protocol(name: str):
    """The two spellings of a protocol method: rffi's ``__rffi_<name>__`` and tvm-ffi's."""
    return (f"__rffi_{name}__", f"__tvm_ffi_{name}__")


_P_OBJECT, _P_VALUE, _P_INT, _P_FLOAT, _P_OPAQUE_PTR = (
    _protocol(n) for n in ("object", "value", "int", "float", "opaque_ptr")
)
# A value protocol whose values keep offering it is a cycle past this many steps.
_MAX_VALUE_STEPS = 64


def _offers(names):
    return lambda t: hasattr(t, names[0]) or hasattr(t, names[1])


def _call(v, names):
    """Calls ``v``'s method of a protocol, under whichever spelling it has."""
    method = getattr(v, names[0], None)
    return method() if method is not None else getattr(v, names[1])()


def _set_object_protocol(v, fr, i):
    """``__rffi_object__()``: the object stands for the rffi Object it returns."""
    x = _call(v, _P_OBJECT)
    if not isinstance(x, Object):
        raise TypeError(
            f"{type(v).__name__}.{_P_OBJECT[0]}() must return an rffi Object, "
            f"got {type(x).__name__}"
        )
    _set_object(x, fr, i)
    return x  # alive until the call returns


def _set_value(v, fr, i):
    """``__rffi_value__()``: the object stands for the value it returns (which may offer the
    protocol again: it is followed to a value of another kind)."""
    x = v
    for _ in range(_MAX_VALUE_STEPS):
        x = _call(x, _P_VALUE)
        kind = TABLE.get(type(x)) or kind_of(type(x))
        if kind is not VALUE:
            return (kind.setter(x, fr, i), x)  # `x` too: the slot may borrow from it
    raise TypeError(
        f"{type(v).__name__}.{_P_VALUE[0]}() still gives a value with that method after "
        f"{_MAX_VALUE_STEPS} steps (a cycle?)"
    )


def _set_int_protocol(v, fr, i):
    _set_int(operator.index(_call(v, _P_INT)), fr, i)


def _set_float_protocol(v, fr, i):
    _set_float(float(_call(v, _P_FLOAT)), fr, i)


def _set_address(p, fr, i):
    q = fr[1]
    q[i] = _lib.kOpaquePtr
    q[i + 1] = p - _U64 if p > I64_MAX else p


def _address(x, what) -> int:
    """An address given as an int or a ``ctypes.c_void_p``."""
    if isinstance(x, ctypes.c_void_p):
        return x.value or 0
    p = operator.index(x)
    if not 0 <= p < _U64:
        raise ValueError(f"{what} gave {p}, which is not an address")
    return p


def _set_opaque_ptr_protocol(v, fr, i):
    x = _call(v, _P_OPAQUE_PTR)
    _set_address(_address(x, f"{type(v).__name__}.{_P_OPAQUE_PTR[0]}()"), fr, i)


def _set_cuda_stream(v, fr, i):
    """``__cuda_stream__()`` (the CUDA array interface's): ``(version, handle)``."""
    x = v.__cuda_stream__()
    if not isinstance(x, tuple) or len(x) != 2:
        raise TypeError(
            f"{type(v).__name__}.__cuda_stream__() must return (version, handle), got {x!r}"
        )
    _set_address(_address(x[1], f"{type(v).__name__}.__cuda_stream__()"), fr, i)


# ---- The table ----

KINDS = {
    k.name: k
    for k in (
        Kind("none", NONE, _set_none),
        Kind("bool", BOOL, _set_bool),
        Kind("int", INT, _set_int),
        Kind("float", FLOAT, _set_float),
        Kind("str", STR, _set_str),
        Kind("bytes", BYTES, _set_bytes),
        Kind("buffer", PYTHON, _set_bytes),
        Kind("object", OBJECT, _set_object),
        Kind("shape", PYTHON, _set_shape),
        Kind("device", PYTHON, _set_device),
        Kind("dtype", PYTHON, _set_dtype),
        Kind("truth", PYTHON, _set_bool),
        Kind("index", PYTHON, _set_int),
        Kind("real", PYTHON, _set_float),
        Kind("object_protocol", PYTHON, _set_object_protocol),
        Kind("dlpack", DLPACK, _set_dlpack),
        Kind("cuda_stream", PYTHON, _set_cuda_stream),
        Kind("value", PYTHON, _set_value),
        Kind("int_protocol", PYTHON, _set_int_protocol),
        Kind("float_protocol", PYTHON, _set_float_protocol),
        Kind("opaque_ptr_protocol", PYTHON, _set_opaque_ptr_protocol),
        Kind("sequence", PYTHON, _set_sequence),
        Kind("mapping", PYTHON, _set_mapping),
        Kind("pointer", PYTHON, _set_void_p),
        Kind("exception", PYTHON, _set_exception),
        Kind("dtype_like", PYTHON, _set_dtype_like),
        Kind("device_like", PYTHON, _set_device_like),
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
    ("object_protocol", _offers(_P_OBJECT)),
    ("dlpack", lambda t: hasattr(t, "__dlpack__") or hasattr(t, "__dlpack_c_exchange_api__")),
    ("cuda_stream", lambda t: hasattr(t, "__cuda_stream__")),
    ("value", _offers(_P_VALUE)),
    ("int_protocol", _offers(_P_INT)),
    ("float_protocol", _offers(_P_FLOAT)),
    ("opaque_ptr_protocol", _offers(_P_OPAQUE_PTR)),
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
AFTER_CALL_TYPES: set = set()


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
        _memmove(result_ptr, _pack_int_any(_lib.kInt, value), 16)
        return
    if t is float:
        _memmove(result_ptr, _pack_float_any(_lib.kFloat, value), 16)
        return
    fr = scratch()
    try:
        i = ARGS
        keep = (TABLE.get(t) or kind_of(t)).setter(value, fr, i)
        if _ToOwned(fr[3] + 8 * i, result_ptr) != 0:
            raise take_raised_exception()
        if keep is not None:
            release_temps((keep,))
    finally:
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
    try:
        i = ARGS
        t = type(value)
        keep = (TABLE.get(t) or kind_of(t)).setter(value, fr, i)
        addr = fr[3]
        if _ToOwned(addr + 8 * i, addr + L.FRAME_RESULT) != 0:
            raise take_raised_exception()
        if keep is not None:
            release_temps((keep,))
        w = fr[1][2]
        result = decode_frame_result(fr, w) if w else None
    finally:
        fr[1][2] = 0
        SCRATCH.append(fr)
    t = type(result)
    return String(result) if t is str else Bytes(result) if t is bytes else result


# The modules whose objects some setters make; imported last (they import this module).
from . import _callback, _container, _tensor  # noqa: E402
