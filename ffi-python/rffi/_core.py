"""The conversion rules between Python values and rffi values, and the ctypes call path.

Every rule lives here, in both directions, so that other call paths (the later native fast path)
share them and the tests exercise one set of rules:

* Python -> rffi (arguments, callback results, ``convert``): one *setter* per Python type, found
  by exact ``type(value)`` in ``_SETTERS`` and resolved once per new type by ``_resolve_setter``
  (the order there is the precedence of the rules). A setter writes a borrowed value (16 bytes)
  into a call frame and returns whatever must stay alive until the call returns.
* rffi -> Python (results, callback arguments, container items): ``_decode_*`` by type index.

The call path avoids building ctypes structures per call (each costs ~0.5-1 us): a Function keeps
a small pool of preallocated *frames* (an ``RFFICallFrame`` header, the argument slots, scratch
slots), with its handle already written, and fills them through int64/float64 memoryviews. The call
is one ctypes call with one pointer, ``RFFIFunctionCallFrame(frame)``; ctypes' CDLL releases the
GIL around it. A frame is taken out of the pool for the duration of a call, so calls from several
threads, and calls made from inside callbacks, each get their own.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import struct
import sys
import threading
import types
from collections.abc import Mapping, Sequence

from . import _lib, _native
from ._dtype import DataType, Device
from ._error import _TRAMPOLINE_CODE, Error, set_raised_from_python, take_raised_exception
from ._object import CLASS_OF_INDEX, Object, header_type_index, type_key, wrap_new

# ctypes.string_at is a Python wrapper around this foreign function; calling it directly saves a
# Python call on every read of native memory.
_string_at = getattr(ctypes, "_string_at", ctypes.string_at)
_byref = ctypes.byref
_c_void_p = ctypes.c_void_p
_DecRef = _lib.ObjectDecRef
_IncRef = _lib.ObjectIncRef
_CallFrame = _lib.CallFrame
_ToOwned = _lib.AnyViewToOwnedAny
_unpack_iIq = struct.Struct("<iIq").unpack_from
_unpack_QQ = struct.Struct("<QQ").unpack_from
_unpack_d = struct.Struct("<d").unpack_from
_pack_q = struct.Struct("<q").pack
_read_i64 = ctypes.c_int64.from_address

_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1
_U64 = 2**64
_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF

# ---------------------------------------------------------------------------------------------
# Frames

# A frame: (ctypes buffer, int64 view, float64 view, address, capacity, byte view; struct packs
# into the byte view, which exports its buffer faster than the ctypes array). In int64 units:
# [0] the function, [1] num_args, [2:4] the result, then `capacity` argument slots of 2 words
# each, then as many scratch slots (a bytes argument keeps its RFFIByteArray there).
_CAP = 6


# ctypes caches array types only weakly, so a type whose last buffer dies becomes cyclic garbage:
# keep the frame types alive (capacities are _CAP and, rarely, larger counts).
_FRAME_TYPES: dict = {}


def _new_frame(handle: int, cap: int):
    size = 32 + 32 * cap
    array_type = _FRAME_TYPES.get(size)
    if array_type is None:
        array_type = _FRAME_TYPES[size] = ctypes.c_char * size
    buf = array_type()
    raw = memoryview(buf).cast("B")
    q = raw.cast("q")
    q[0] = handle
    return (buf, q, raw.cast("d"), ctypes.addressof(buf), cap, raw)


# Frames without a function, for conversions outside calls (callback results, `convert`).
_SCRATCH: list = []


def _scratch():
    try:
        return _SCRATCH.pop()
    except IndexError:
        return _new_frame(0, 1)


# ---------------------------------------------------------------------------------------------
# Python -> rffi: setters


def _bytes_address_probe():
    """The offset of a bytes object's data from its id() on this interpreter, if that holds.

    CPython keeps a bytes object's contents inline at a fixed offset (``ob_sval``), so its address
    costs one addition; passing a long str or bytes then copies nothing. Verified here on a probe
    value; other interpreters use ctypes' c_char_p, which is slower but always right.
    """
    if sys.implementation.name != "cpython":
        return None
    offset = bytes.__basicsize__ - 1
    probe = b"rffi: probing the bytes layout\x00!"
    try:
        if ctypes.string_at(id(probe) + offset, len(probe)) == probe:
            return offset
    except Exception:  # pragma: no cover - an unexpected layout
        pass
    return None  # pragma: no cover


_BYTES_OFFSET = _bytes_address_probe()


def _bytes_address(b: bytes) -> int:
    if _BYTES_OFFSET is not None:
        return id(b) + _BYTES_OFFSET
    return ctypes.cast(ctypes.c_char_p(b), _c_void_p).value or 0  # pragma: no cover


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
    if not _I64_MIN <= v <= _I64_MAX:
        raise OverflowError(f"int {v} does not fit in int64")
    q = fr[1]
    q[i] = _lib.kInt
    q[i + 1] = v


def _set_float(v, fr, i):
    fr[1][i] = _lib.kFloat
    fr[2][i + 1] = float(v)


def _owned_slot(ti: int, fr, i):
    """After a conversion wrote an owned object into slot ``i``: its reference, released after the
    call by the returned wrapper."""
    return wrap_new(Object, fr[1][i + 1], ti)


def _set_heap_bytes(b: bytes, fr, i, make, ti):
    """A Str/Bytes object made from ``b`` by ``make`` (RFFIStringFromByteArray or
    RFFIBytesFromByteArray) into slot ``i``."""
    q, addr = fr[1], fr[3]
    s = i + 2 * fr[4]
    q[s] = _bytes_address(b)
    q[s + 1] = len(b)
    if make(addr + 8 * s, addr + 8 * i) != 0:
        raise take_raised_exception()
    return _owned_slot(ti, fr, i)


def _set_str(v, fr, i, _from_bytes=int.from_bytes):
    b = v.encode()
    n = len(b)
    q = fr[1]
    if n <= 7:
        q[i] = 11 | (n << 32)  # kSmallStr, length in the upper half
        q[i + 1] = _from_bytes(b, "little")
        return None
    if "\x00" not in v:
        # Borrowed C string, zero copy: CPython bytes are NUL-terminated.
        q[i] = 8  # kRawStr
        q[i + 1] = _bytes_address(b)
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
    q[s] = _bytes_address(b)
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


def _set_void_p(v, fr, i):
    p = v.value or 0
    q = fr[1]
    q[i] = _lib.kOpaquePtr
    q[i + 1] = p - _U64 if p > _I64_MAX else p


def _set_sequence(v, fr, i):
    arr = _FFI_ARRAY(*v)
    q = fr[1]
    q[i] = _lib.kArray
    q[i + 1] = arr._h
    return arr


def _set_mapping(v, fr, i):
    flat = []
    for k, val in v.items():
        flat.append(k)
        flat.append(val)
    m = _FFI_MAP(*flat)
    q = fr[1]
    q[i] = _lib.kMap
    q[i + 1] = m._h
    return m


def _set_shape(v, fr, i):
    ti, h = _FFI_SHAPE._call_keep(*v)
    q = fr[1]
    q[i] = ti
    q[i + 1] = h
    return wrap_new(Object, h, ti)


def _set_callable(v, fr, i):
    f = function_from_callable(v)
    q = fr[1]
    q[i] = _lib.kFunction
    q[i + 1] = f._h
    return f


def _set_exception(v, fr, i):
    err = error_from_exception(v)
    q = fr[1]
    q[i] = _lib.kError
    q[i + 1] = err._h
    return err


def _set_opaque(v, fr, i):
    o = make_opaque(v)
    q = fr[1]
    q[i] = _lib.kOpaquePyObject
    q[i + 1] = o._h
    return o


_SETTERS: dict = {
    type(None): _set_none,
    bool: _set_bool,
    int: _set_int,
    float: _set_float,
    str: _set_str,
    bytes: _set_bytes,
    bytearray: _set_bytes,
    memoryview: _set_bytes,
    list: _set_sequence,
    tuple: _set_sequence,
    dict: _set_mapping,
    # Callables, known up front so that the first call passing one converts it natively too.
    types.FunctionType: _set_callable,
    types.BuiltinFunctionType: _set_callable,
    types.MethodType: _set_callable,
    functools.partial: _set_callable,
    Device: _set_device,
    DataType: _set_dtype,
}

# Set by rffi._tensor: the setter for DLPack producers (numpy, torch, cupy, jax arrays).
_DLPACK_SETTER = [None]
_setters_lock = threading.Lock()


def _resolve_setter(t):
    """The setter for a type not seen before, by the rules' precedence; cached per type."""
    import numbers

    if issubclass(t, Object):
        s = _set_object
    elif issubclass(t, Shape):
        s = _set_shape
    elif issubclass(t, Device):
        s = _set_device
    elif issubclass(t, DataType):
        s = _set_dtype
    elif issubclass(t, bool) or (t.__module__ == "numpy" and t.__name__ in ("bool_", "bool")):
        s = _set_bool
    elif issubclass(t, (int, numbers.Integral)):
        s = _set_int
    elif issubclass(t, (float, numbers.Real)):
        s = _set_float
    elif issubclass(t, str):
        s = _set_str
    elif issubclass(t, (bytes, bytearray, memoryview)):
        s = _set_bytes
    elif _DLPACK_SETTER[0] is not None and (
        hasattr(t, "__dlpack__") or hasattr(t, "__dlpack_c_exchange_api__")
    ):
        s = _DLPACK_SETTER[0]
    elif issubclass(t, (list, tuple)):
        s = _set_sequence
    elif issubclass(t, (dict, Mapping)):
        s = _set_mapping
    elif issubclass(t, ctypes.c_void_p):
        s = _set_void_p
    elif issubclass(t, BaseException):
        s = _set_exception
    elif any("__call__" in c.__dict__ for c in t.__mro__ if c is not object):
        s = _set_callable  # functions, methods, classes (their type defines __call__), partials
    else:
        s = _set_opaque
    with _setters_lock:
        _SETTERS[t] = s
    return s


def register_arg_setter(t, setter) -> None:
    """Installs a conversion rule for type ``t`` (exact type): ``setter(value, frame, slot)``."""
    with _setters_lock:
        _SETTERS[t] = setter


def _argument_error(func, args, e):
    """Says which argument could not be converted (the hot path converts without checks and
    comes here when a memoryview refused a value)."""
    name = func._name or "<function>"
    for k, a in enumerate(args):
        if isinstance(a, int) and not _I64_MIN <= a <= _I64_MAX:
            return OverflowError(
                f"argument #{k} of `{name}`: int {a} does not fit in int64 "
                f"(range {_I64_MIN}..{_I64_MAX})"
            )
    return e


def _fill(fr, args, n):
    """Writes ``n`` arguments into a frame through the per-type setters; returns what must stay
    alive until the call returns (or None)."""
    q = fr[1]
    q[1] = n
    q[2] = 0
    d = fr[2]
    temps = None
    i = 4
    for a in args:
        t = type(a)
        if t is int:
            q[i] = 1
            q[i + 1] = a
        elif t is float:
            q[i] = 3
            d[i + 1] = a
        elif t is str and len(a) <= 7 and a.isascii():  # short text: inline, as _set_str does
            q[i] = 11 | (len(a) << 32)
            q[i + 1] = _from_bytes(a.encode(), "little")
        else:
            setter = _SETTERS.get(t) or _resolve_setter(t)
            if setter is _set_object and a._h:  # runtime objects: borrowed as they are
                q[i] = a._ti
                q[i + 1] = a._h
            else:
                k = setter(a, fr, i)
                if k is not None:
                    if temps is None:
                        temps = [k]
                    else:
                        temps.append(k)
        i += 2
    return temps


_from_bytes = int.from_bytes
_PACK1 = struct.Struct("<qqq" + "qq").pack_into
_PACK2 = struct.Struct("<qqq" + "qq" * 2).pack_into
_PACK3 = struct.Struct("<qqq" + "qq" * 3).pack_into


# Types of keep-alive objects that also act when the call returns (the CUDA stream guard of
# rffi._tensor): their `_rffi_after_call()` runs then.
AFTER_CALL_TYPES: set = set()


def _release_temps(temps):
    # Last set, first undone: each one restores what was in effect when it was made.
    for k in reversed(temps):
        if type(k) in AFTER_CALL_TYPES:
            k._rffi_after_call()


# ---------------------------------------------------------------------------------------------
# rffi -> Python: decoders


def _read_str_cell(h: int) -> bytes:
    data, size = _unpack_QQ(_string_at(h + 24, 16))
    return _string_at(data, size) if size else b""


def _read_shape(h: int) -> tuple:
    data, size = _unpack_QQ(_string_at(h + 24, 16))
    if not size:
        return ()
    return struct.unpack(f"<{size}q", _string_at(data, 8 * size))


def _py_object_at(addr: int):
    return ctypes.py_object.from_address(addr).value


def _obj_owned(ti: int, h: int):
    """The Python value for an object handle whose reference we own (it is taken over)."""
    if ti == _lib.kStr:
        try:
            return _read_str_cell(h).decode("utf-8")
        finally:
            _DecRef(h)
    dec = _OBJ_DECODERS.get(ti)
    if dec is not None:
        return dec(h)
    cls = CLASS_OF_INDEX.get(ti)
    if cls is not None:
        return wrap_new(cls, h, ti)
    return wrap_new(Object, h, ti)


def _obj_borrowed(ti: int, h: int):
    """The Python value for an object we only borrow (callback arguments, container items)."""
    if ti == _lib.kStr:
        return _read_str_cell(h).decode("utf-8")
    if ti == _lib.kBytes:
        return _read_str_cell(h)
    if ti == _lib.kShape:
        return Shape(_read_shape(h))
    if ti == _lib.kOpaquePyObject:
        return _py_object_at(h + 24)
    _IncRef(h)
    return _obj_owned(ti, h)


def _decode_pod(ti: int, ln: int, p: int):
    """A non-object value from its type index, small-string length and int64 payload (floats are
    handled by the callers, which have the payload as a float already)."""
    if ti == _lib.kNone:
        return None
    if ti == _lib.kInt:
        return p
    if ti == _lib.kBool:
        return p != 0
    if ti == _lib.kSmallStr:
        return (p & _M64).to_bytes(8, "little")[:ln].decode("utf-8")
    if ti == _lib.kSmallBytes:
        return (p & _M64).to_bytes(8, "little")[:ln]
    if ti == _lib.kFloat:
        return _unpack_d(_pack_q(p))[0]
    if ti == _lib.kOpaquePtr:
        return _c_void_p(p & _M64 or None)
    if ti == _lib.kDataType:
        return DataType._from_fields(p & 0xFF, (p >> 8) & 0xFF, (p >> 16) & 0xFFFF)
    if ti == _lib.kDevice:
        dev_type, dev_id = p & _M32, (p >> 32) & _M32
        return Device(dev_type, dev_id)
    if ti == _lib.kRawStr:
        return _string_at(p, -1).decode("utf-8") if p else None
    if ti == _lib.kByteArrayPtr:
        data, size = _unpack_QQ(_string_at(p, 16))
        return _string_at(data, size) if size else b""
    if ti == _lib.kDLTensorPtr:
        dec = _OBJ_DECODERS.get(_lib.kDLTensorPtr)
        return dec(p) if dec is not None else _c_void_p(p or None)
    if ti == _lib.kObjectRValueRef:
        h = _c_void_p.from_address(p).value
        return None if not h else _obj_borrowed(header_type_index(h), h)
    raise TypeError(f"rffi: cannot convert a value of type index {ti} to Python")


def _decode_view(raw: bytes, off: int):
    """A borrowed 16-byte value at ``raw[off:]`` as a Python value."""
    ti, ln, p = _unpack_iIq(raw, off)
    if ti == 1:  # kInt, the common case, without a call
        return p
    if ti >= 64:
        return _obj_borrowed(ti, p)
    if ti == _lib.kFloat:
        return _unpack_d(raw, off + 8)[0]
    return _decode_pod(ti, ln, p)


def _decode_frame_result(fr, w: int):
    """The owned result in a frame, taken over (an object result leaves the slot None again, as
    the next call requires)."""
    q = fr[1]
    ti = w & 0xFFFFFFFF
    if ti == 11:  # kSmallStr
        return q[3].to_bytes(8, "little")[: w >> 32].decode()
    if ti >= 64:
        h = q[3]
        q[2] = 0
        return _obj_owned(ti, h)
    if ti == 3:  # kFloat
        return fr[2][3]
    return _decode_pod(ti, w >> 32, q[3])


# ---------------------------------------------------------------------------------------------
# Functions


class Function(Object):
    """A callable runtime function: a global, a module's function, a result, or made from a Python
    callable (``rffi.Function(f)``). Positional arguments only."""

    __slots__ = ("_frames", "_name")

    def __init__(self, func):
        if isinstance(func, Function):
            handle = func._h
            _IncRef(handle)
            self._h, self._ti = handle, _lib.kFunction
            self._frames, self._name = [], func._name
            return
        if not callable(func):
            raise TypeError(f"rffi.Function expects a callable, got {type(func).__name__}")
        made = function_from_callable(func)
        self._h, self._ti, self._frames, self._name = (
            made._h,
            made._ti,
            [],
            made._name,
        )
        made._h = 0

    def __call__(self, *args):
        frames = self._frames
        try:
            fr = frames.pop()
        except IndexError:
            fr = _new_frame(self._h, _CAP)
        if not args:
            q = fr[1]
            q[1] = 0
            if _CallFrame(fr[0]):
                frames.append(fr)
                raise take_raised_exception()
            w = q[2]
            if w == 0:
                frames.append(fr)
                return None
            r = q[3] if w == 1 else _decode_frame_result(fr, w)
            frames.append(fr)
            return r
        # The common shapes (up to three ints, one object, one short str) are written with one
        # pack_into that also sets the count and resets the result slot; they need nothing kept
        # alive, so they skip the try/finally of the general path.
        n = len(args)
        packed = True
        try:
            if n == 1:
                a = args[0]
                t = type(a)
                if t is int:
                    # Three stores beat one pack_into here. The result slot needs no reset: it
                    # only ever holds an object while a result is being taken over.
                    q = fr[1]
                    q[1] = 1
                    q[4] = 1
                    q[5] = a
                elif _SETTERS.get(t) is _set_object and a._h:  # a Tensor, a Function...
                    _PACK1(fr[5], 8, 1, 0, 0, a._ti, a._h)
                elif t is str and len(a) <= 7 and a.isascii():
                    _PACK1(
                        fr[5], 8, 1, 0, 0, 11 | (len(a) << 32), _from_bytes(a.encode(), "little")
                    )
                else:
                    packed = False
            elif n == 2:
                a, b = args
                if type(a) is int and type(b) is int:
                    _PACK2(fr[5], 8, 2, 0, 0, 1, a, 1, b)
                else:
                    packed = False
            elif n == 3:
                a, b, c = args
                if type(a) is int and type(b) is int and type(c) is int:
                    _PACK3(fr[5], 8, 3, 0, 0, 1, a, 1, b, 1, c)
                else:
                    packed = False
            else:
                packed = False
        except (struct.error, ValueError) as e:  # an int outside int64
            frames.append(fr)
            raise _argument_error(self, args, e) from None
        if packed:
            if _CallFrame(fr[0]):
                frames.append(fr)
                raise take_raised_exception()
            q = fr[1]
            w = q[2]
            if w == 1:
                r = q[3]
            elif w == 0:
                r = None
            elif w & 0xFFFFFFFF == 11:  # kSmallStr: the text is in the payload
                r = q[3].to_bytes(8, "little")[: w >> 32].decode()
            else:
                r = _decode_frame_result(fr, w)
            frames.append(fr)
            return r
        return self._call_general(frames, fr, args, n)

    def _call_general(self, frames, fr, args, n):
        """Any arguments: through the per-type setters, keeping temporaries alive for the call."""
        if n > _CAP:
            frames.append(fr)
            frames = None
            fr = _new_frame(self._h, n)
        temps = None
        try:
            try:
                temps = _fill(fr, args, n)
            except (ValueError, struct.error) as e:
                raise _argument_error(self, args, e) from None
            if _CallFrame(fr[0]):
                raise take_raised_exception()
            q = fr[1]
            w = q[2]
            if w == 1:
                return q[3]
            if w == 0:
                return None
            return _decode_frame_result(fr, w)
        finally:
            if frames is not None:
                frames.append(fr)
            if temps is not None:
                _release_temps(temps)

    @property
    def release_gil(self) -> bool:
        """Whether a call releases the GIL while the native function runs (default True, so a
        long call lets other threads run). With the fast path, setting it to False on a Function
        saves ~40 ns per call for short functions that never block; the ctypes path always
        releases the GIL and ignores the setting."""
        return True

    @release_gil.setter
    def release_gil(self, value) -> None:
        pass

    def _call_keep(self, *args):
        """Calls and returns ``(type_index, payload)`` of the result without converting it: for an
        object result, the caller takes over the reference."""
        fr = _new_frame(self._h, max(len(args), _CAP))
        q = fr[1]
        q[1] = len(args)
        temps = [
            (_SETTERS.get(type(a)) or _resolve_setter(type(a)))(a, fr, 4 + 2 * k)
            for k, a in enumerate(args)
        ]
        try:
            if _CallFrame(fr[0]):
                raise take_raised_exception()
            return q[2] & _M32, q[3]
        finally:
            _release_temps([k for k in temps if k is not None])

    def _init_copy(self, new) -> None:
        new._frames = []
        new._name = self._name

    def __repr__(self) -> str:
        name = self._name or "<anonymous>"
        return f"<rffi.Function {name} at {self._h:#x}>"


# The fast path (rffi/_native.py): the native library makes `Function` a vectorcall subclass of
# the class above, which converts common arguments and results in Rust and hands everything else
# to the class above's `__call__` (the rules stay here). Without it, the class above is `Function`.
_CtypesFunction = Function


def _fast_decode(w: int, p: int):
    """A call result the fast path leaves to Python: type word (index | small length << 32) and
    payload; an object result's reference is taken over."""
    ti = w & _M32
    if ti >= 64:
        return _obj_owned(ti, p)
    return _decode_pod(ti, w >> 32, p)


_memmove = ctypes.memmove
_pack_any = struct.Struct("<qq").pack
_pack_float_any = struct.Struct("<qd").pack


def _write_owned(value, result_ptr: int) -> None:
    """Stores ``value`` as an owned rffi value at ``result_ptr`` (a callback's result slot)."""
    t = type(value)
    if t is int and _I64_MIN <= value <= _I64_MAX:  # plain values: one copy, no conversion call
        _memmove(result_ptr, _pack_any(1, value), 16)
        return
    if t is float:
        _memmove(result_ptr, _pack_float_any(3, value), 16)
        return
    fr = _scratch()
    try:
        keep = (_SETTERS.get(type(value)) or _resolve_setter(type(value)))(value, fr, 4)
        if _ToOwned(fr[3] + 32, result_ptr) != 0:
            raise take_raised_exception()
        if keep is not None:
            _release_temps((keep,))
    finally:
        _SCRATCH.append(fr)


def _decode_arg(w: int, p: int):
    """A callback's borrowed argument, given as (type word, payload), as a Python value."""
    return _decode_view(_pack_any(w, p), 0)


def _callback_failed(exc: BaseException) -> None:
    """Raises a callback's exception in the runtime as an Error (native callback path)."""
    try:
        set_raised_from_python(exc)
    except BaseException:  # pragma: no cover - conversion of the exception itself failed
        _lib.ErrorSetRaisedFromCStr(b"RuntimeError", b"rffi: a Python callback failed")


# Functions made from Python callables, natively (rffi_python_function_from_callable): no ctypes
# callback thunk per call. None on the ctypes path.
_NATIVE_CALLBACK = None
FASTPATH = _native.ENABLED
FASTPATH_REASON = _native.REASON
if FASTPATH:
    try:
        Function = _native.make_function_type(
            _CtypesFunction,
            _CtypesFunction.__call__,
            take_raised_exception,
            _fast_decode,
            _SETTERS,
            _set_object,
            Object,
            _DLPACK_SETTER,
            (_decode_arg, _write_owned, _callback_failed, _set_callable),
        )
        _NATIVE_CALLBACK = _native.object_entry("rffi_python_function_from_callable")
        Function.__doc__ = _CtypesFunction.__doc__
    except Exception as e:  # pragma: no cover - a library that cannot build the type
        FASTPATH, FASTPATH_REASON = False, f"building the Function type failed: {e}"


def _wrap_function(h: int, name=None) -> Function:
    f = Function.__new__(Function)
    f._h = h
    f._ti = _lib.kFunction
    f._frames = []
    f._name = name
    return f


CLASS_OF_INDEX[_lib.kFunction] = Function

# ---- Python callables as functions ----

# token -> callable: the context of every function made from a Python callable. The token (not the
# PyObject address) is the context because it maps back to the callable with one dict lookup,
# where a ctypes cast of an address to an object costs ~1 us. The deleter removes the entry when
# the runtime drops the function, which releases the callable.
_CALLBACKS: dict = {}
_next_token = itertools.count(1).__next__


def _trampoline(token, args_ptr, nargs, result_ptr):
    try:
        f = _CALLBACKS[token]
        if nargs == 1:
            r = f(_decode_view(_string_at(args_ptr, 16), 0))
        elif nargs:
            raw = _string_at(args_ptr, 16 * nargs)
            r = f(*[_decode_view(raw, 16 * k) for k in range(nargs)])
        else:
            r = f()
        if r is not None:
            _write_owned(r, result_ptr)
        return 0
    except BaseException as exc:  # everything, KeyboardInterrupt included, goes back as an Error
        # A few frames of headroom: a RecursionError at the limit must itself be converted.
        limit = _get_recursion_limit()
        _set_recursion_limit(limit + 50)
        try:
            if type(exc) is ctypes.ArgumentError and "RecursionError" in str(exc):
                # ctypes reports a RecursionError met while converting an argument of one of
                # its calls as an ArgumentError: it is the caller's recursion, say so.
                exc = RecursionError(f"maximum recursion depth exceeded ({exc})")
            set_raised_from_python(exc)
        except BaseException:  # pragma: no cover - conversion of the exception itself failed
            _lib.ErrorSetRaisedFromCStr(b"RuntimeError", b"rffi: a Python callback failed")
        finally:
            _set_recursion_limit(limit)
        return -1


_get_recursion_limit = sys.getrecursionlimit
_set_recursion_limit = sys.setrecursionlimit


_TRAMPOLINE_CODE[0] = _trampoline.__code__


def _release_callback(token):
    # Runs with the GIL (ctypes takes it for callbacks), on whatever thread dropped the function.
    _CALLBACKS.pop(token, None)


# Module-wide so they live as long as any function made from them may be called.
_TRAMPOLINE_FN = _lib.SAFE_CALL(_trampoline)
_DELETER_FN = _lib.DELETER(_release_callback)
_TRAMPOLINE_ADDR = ctypes.cast(_TRAMPOLINE_FN, _c_void_p).value
_DELETER_ADDR = ctypes.cast(_DELETER_FN, _c_void_p).value


def function_from_callable(f) -> Function:
    """A runtime Function that calls the Python callable ``f``."""
    if isinstance(f, Function):
        return f
    name = getattr(f, "__qualname__", None) or repr(f)
    if _NATIVE_CALLBACK is not None:
        h = _NATIVE_CALLBACK(f)
        if not h:
            raise take_raised_exception()
        return _wrap_function(h, name)
    token = _next_token()
    _CALLBACKS[token] = f
    # Plain addresses, no ctypes pointer objects: their argument checks would turn a
    # RecursionError at the limit into a ctypes ArgumentError.
    fr = _scratch()
    try:
        if _FunctionCreateAt(token, _TRAMPOLINE_ADDR, _DELETER_ADDR, fr[3] + 16) != 0:
            _CALLBACKS.pop(token, None)
            raise take_raised_exception()
        h = fr[1][2]
        fr[1][2] = 0
    finally:
        _SCRATCH.append(fr)
    return _wrap_function(h, name)


_FunctionCreateAt = _lib.FunctionCreateAt


def convert(value):
    """Converts a Python value to its rffi form and back: lists and tuples become ``Array``, dicts
    ``Map``, callables ``Function``; plain values come back as themselves."""
    fr = _scratch()
    try:
        keep = (_SETTERS.get(type(value)) or _resolve_setter(type(value)))(value, fr, 4)
        addr = fr[3]
        if _ToOwned(addr + 32, addr + 16) != 0:
            raise take_raised_exception()
        if keep is not None:
            _release_temps((keep,))
        w = fr[1][2]
        return _decode_frame_result(fr, w) if w else None
    finally:
        fr[1][2] = 0
        _SCRATCH.append(fr)


# ---- Opaque Python objects ----

if hasattr(ctypes, "pythonapi"):
    _Py_IncRef = ctypes.pythonapi.Py_IncRef
    _Py_IncRef.argtypes = [ctypes.py_object]
    _Py_IncRef.restype = None
    _Py_DecRef = ctypes.pythonapi.Py_DecRef
    _Py_DecRef.argtypes = [_c_void_p]
    _Py_DecRef.restype = None
else:  # pragma: no cover - interpreters without the C API
    _Py_IncRef = _Py_DecRef = None


def _release_opaque(ptr):
    # A ctypes callback, so it holds the GIL whichever thread drops the object.
    _Py_DecRef(ptr)


_OPAQUE_DELETER_FN = _lib.DELETER(_release_opaque)
_OPAQUE_DELETER_ADDR = ctypes.cast(_OPAQUE_DELETER_FN, _c_void_p).value


def make_opaque(value) -> Object:
    """Wraps any Python object as an ``ffi.OpaquePyObject`` (type 74) holding a reference to it
    (the cell's handle is the ``PyObject*``, as in tvm-ffi); it converts back to the same object."""
    if _Py_IncRef is None:  # pragma: no cover
        raise TypeError(f"rffi: cannot pass a {type(value).__name__} on this interpreter")
    _Py_IncRef(value)
    out = _c_void_p()
    if (
        _lib.ObjectCreateOpaque(id(value), _lib.kOpaquePyObject, _OPAQUE_DELETER_ADDR, _byref(out))
        != 0
    ):
        _Py_DecRef(id(value))
        raise take_raised_exception()
    return wrap_new(Object, out.value, _lib.kOpaquePyObject)


def _decode_opaque(h: int):
    try:
        return _py_object_at(h + 24)
    finally:
        _DecRef(h)


def error_from_exception(exc: BaseException) -> Error:
    """The Error object for a Python exception (the one it came from, if any)."""
    err = getattr(exc, "__rffi_error__", None)
    if isinstance(err, Error) and err._h:
        return err
    from ._error import _CLASS_TO_KIND, _format_frames

    kind = _CLASS_TO_KIND.get(type(exc)) or type(exc).__name__
    err = Error(kind, str(exc), _format_frames(exc.__traceback__, None))
    exc.__rffi_error__ = err
    return err


# ---------------------------------------------------------------------------------------------
# Containers


class Shape(tuple):
    """An immutable tuple of int64 dimensions (``ffi.Shape``)."""

    __slots__ = ()

    def __new__(cls, dims=()):
        dims = tuple(dims)
        for k, d in enumerate(dims):
            if type(d) is not int:
                try:
                    import operator

                    d = operator.index(d)
                except TypeError:
                    raise TypeError(
                        f"Shape dimension #{k} must be an int, got {type(d).__name__}"
                    ) from None
            if not _I64_MIN <= d <= _I64_MAX:
                raise OverflowError(f"Shape dimension #{k} ({d}) does not fit in int64")
        return super().__new__(cls, (int(d) for d in dims))

    def __repr__(self) -> str:
        return f"Shape({tuple(self)!r})"


def _decode_shape(h: int) -> Shape:
    try:
        return Shape(_read_shape(h))
    finally:
        _DecRef(h)


def _decode_bytes(h: int) -> bytes:
    try:
        return _read_str_cell(h)
    finally:
        _DecRef(h)


class Array(Object, Sequence):
    """An immutable sequence of values (``ffi.Array``): ``len``, indexing (negative too), slicing
    (to a list), iteration. ``rffi.Array([1, 2])`` makes one."""

    __slots__ = ()

    def __init__(self, items=()):
        ti, h = _FFI_ARRAY._call_keep(*items)
        self._h, self._ti = h, ti

    def __len__(self) -> int:
        return _read_i64(self._h + 32).value

    def __getitem__(self, index):
        data, size = _unpack_QQ(_string_at(self._h + 24, 16))
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(size))]
        try:
            i = index.__index__()
        except AttributeError:
            raise TypeError(
                f"Array indices must be integers or slices, not {type(index).__name__}"
            ) from None
        if i < 0:
            i += size
        if not 0 <= i < size:
            raise IndexError(f"Array index {index} out of range for length {size}")
        return _decode_view(_string_at(data + 16 * i, 16), 0)

    def __iter__(self):
        data, size = _unpack_QQ(_string_at(self._h + 24, 16))
        if not size:
            return iter(())
        raw = _string_at(data, 16 * size)
        # Items are decoded up front: a lazy iterator would read memory owned by the array.
        return iter([_decode_view(raw, 16 * k) for k in range(size)])

    def _value_form(self, what: str):
        return Array, (list(self),)

    def __repr__(self) -> str:
        return f"Array({list(self)!r})"


class Map(Object, Mapping):
    """An immutable mapping in insertion order (``ffi.Map``): ``m[key]`` (KeyError when missing),
    ``in``, ``len``, iteration over keys, ``keys()``, ``values()``, ``items()``, ``get()``.
    ``rffi.Map({"a": 1})`` makes one."""

    __slots__ = ()

    def __init__(self, items=()):
        if isinstance(items, Mapping):
            items = items.items()
        flat = []
        for k, v in items:
            flat.append(k)
            flat.append(v)
        ti, h = _FFI_MAP._call_keep(*flat)
        self._h, self._ti = h, ti

    def __len__(self) -> int:
        return _FFI_MAP_SIZE(self)

    def __getitem__(self, key):
        return _FFI_MAP_GET(self, key)

    def __contains__(self, key) -> bool:
        try:
            return _FFI_MAP_COUNT(self, key) != 0
        except TypeError:  # an unhashable key is not in the map
            return False

    def get(self, key, default=None):
        if key in self:
            return self[key]
        return default

    def items(self) -> list:
        flat = _FFI_MAP_ITEMS(self)
        return list(zip(flat[0::2], flat[1::2]))

    def keys(self) -> list:
        return _FFI_MAP_ITEMS(self)[0::2]

    def values(self) -> list:
        return _FFI_MAP_ITEMS(self)[1::2]

    def __iter__(self):
        return iter(self.keys())

    def _value_form(self, what: str):
        return Map, (self.items(),)

    def __repr__(self) -> str:
        return f"Map({dict(self.items())!r})"


CLASS_OF_INDEX[_lib.kArray] = Array
CLASS_OF_INDEX[_lib.kMap] = Map

# Object types that convert to plain Python values (their handle is released).
_OBJ_DECODERS: dict = {
    _lib.kBytes: _decode_bytes,
    _lib.kShape: _decode_shape,
    _lib.kOpaquePyObject: _decode_opaque,
    _lib.kFunction: _wrap_function,
}


def register_object_decoder(type_index: int, decoder) -> None:
    """Installs the Python value for an object type: ``decoder(owned_handle)``."""
    _OBJ_DECODERS[type_index] = decoder


# ---------------------------------------------------------------------------------------------
# The function registry


def _name_bytes(name) -> bytes:
    if not isinstance(name, str):
        raise TypeError(f"a function name must be a str, got {type(name).__name__}")
    return name.encode("utf-8")


def _byte_array(b: bytes):
    return _lib.ByteArray(_bytes_address(b), len(b))


def get_global_func(name: str, allow_missing: bool = False):
    """The global function ``name``; a missing name is a ValueError, or None with
    ``allow_missing=True``."""
    b = _name_bytes(name)
    out = _c_void_p()
    if _lib.FunctionGetGlobal(_byref(_byte_array(b)), _byref(out)) != 0:
        raise take_raised_exception()
    if not out.value:
        if allow_missing:
            return None
        raise ValueError(f"rffi: no global function named {name!r}")
    return _wrap_function(out.value, name)


def register_global_func(func_name, f=None, override: bool = False):
    """Registers ``f`` (a Python callable or a Function) as the global ``func_name``; with no ``f``,
    a decorator. Returns ``f``. An existing name is a KeyError unless ``override``."""
    if callable(func_name) and f is None:
        f, func_name = func_name, func_name.__name__

    def register(fn):
        if not callable(fn):
            raise TypeError(
                f"register_global_func({func_name!r}): expected a callable or an rffi.Function, "
                f"got {type(fn).__name__}"
            )
        func = fn if isinstance(fn, Function) else function_from_callable(fn)
        b = _name_bytes(func_name)
        if _lib.FunctionSetGlobal(_byref(_byte_array(b)), func._h, 1 if override else 0):
            raise take_raised_exception()
        if func._name is None or not isinstance(fn, Function):
            func._name = func_name
        return fn

    return register(f) if f is not None else register


def remove_global_func(name: str) -> None:
    """Removes the global function ``name`` (KeyError if there is none)."""
    b = _name_bytes(name)
    if _lib.FunctionRemoveGlobal(_byref(_byte_array(b))) != 0:
        raise take_raised_exception()


def list_global_func_names() -> list:
    """Every registered global function name, sorted."""
    out = _c_void_p()
    if _lib.FunctionListGlobalNames(_byref(out)) != 0:
        raise take_raised_exception()
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


_FFI_ARRAY = get_global_func("ffi.Array")
_FFI_MAP = get_global_func("ffi.Map")
_FFI_MAP_SIZE = get_global_func("ffi.MapSize")
_FFI_MAP_GET = get_global_func("ffi.MapGetItem")
_FFI_MAP_COUNT = get_global_func("ffi.MapCount")
_FFI_MAP_ITEMS = get_global_func("ffi.MapItems")
_FFI_SHAPE = get_global_func("ffi.Shape")
_SETTERS[Shape] = _set_shape
__all__ = [
    "Array",
    "Function",
    "Map",
    "Shape",
    "convert",
    "get_global_func",
    "init_ffi_api",
    "list_global_func_names",
    "register_global_func",
    "remove_global_func",
    "type_key",
]
