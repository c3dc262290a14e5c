"""``dtype`` (also ``DataType``): an element type, a ``str`` that knows its DLPack fields.

A dtype is the string the user wrote (``str(rffi.dtype("f32")) == "f32"``, as numpy-style code
expects a dtype to print), carrying the DLPack type code, bits and lanes it names. Strings are
parsed by the runtime itself (``RFFIDataTypeFromString``), after the short aliases below are
spelled out, and fields are printed by it (``RFFIDataTypeToString``): the grammar is the runtime's.
Parses and prints are cached.

Equality and hashing go by the fields: ``dtype("f32") == dtype("float32") == "float32"``, and a
dtype hashes as its canonical name, so it finds the entries of dicts keyed by canonical strings.
"""

from __future__ import annotations

import ctypes
import re
import struct

from . import _layout as L
from . import _lib

# Short names: a letter (or two) and the bits, `x<lanes>` allowed after them (`f32x4`).
_SHORT_PREFIXES = {"f": "float", "bf": "bfloat", "i": "int", "u": "uint", "c": "complex"}
# Whole-word names of other libraries (torch's, C's) for the runtime's.
_WORD_ALIASES = {
    "half": "float16",
    "double": "float64",
    "short": "int16",
    "long": "int64",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "bool_": "bool",
}

# `f8_e4m3fn`, `fp6_e2m3fn`, `float4_e2m1fn_x2` (torch's spelling of lanes): the runtime's
# `float<bits>_<format>[x<lanes>]`. No format name holds an `x`, so it starts the lanes.
_LOW_FLOAT = re.compile(r"(?:fp?|float)([864])_([a-wyz0-9]+?)(?:_?x([0-9]+))?")

# DLPack type codes (the enum with names is rffi._enums.DLDataTypeCode).
_INT, _UINT, _FLOAT, _HANDLE, _BFLOAT, _COMPLEX, _BOOL = range(7)
_FIRST_LOW_PRECISION_FLOAT, _LAST_LOW_PRECISION_FLOAT = 7, 17


def _spell_out(text: str) -> str:
    """The runtime's spelling of a short or foreign name (``i32`` -> ``int32``), else ``text``."""
    word = _WORD_ALIASES.get(text)
    if word is not None:
        return word
    low = _LOW_FLOAT.fullmatch(text)
    if low is not None:
        bits, fmt, lanes = low.groups()
        return f"float{bits}_{fmt}" + (f"x{lanes}" if lanes else "")
    head = text[:2] if text[:2] == "bf" else text[:1]
    name = _SHORT_PREFIXES.get(head)
    if name is None:
        return text
    bits, sep, lanes = text[len(head) :].partition("x")
    if bits.isdigit() and bits.isascii() and (not sep or (lanes.isdigit() and lanes.isascii())):
        return f"{name}{bits}{sep}{lanes}"
    return text


_PARSED: dict = {}
_PRINTED: dict = {}
_CACHE_MAX = 4096
_Any16 = ctypes.c_char * 16  # held here: ctypes caches array types only weakly
_unpack_any = struct.Struct("<iIq").unpack_from
_unpack_ba = struct.Struct("<QQ").unpack_from


def _parse(text: str) -> tuple:
    """(code, bits, lanes) of a dtype string; a ValueError names what is wrong."""
    cached = _PARSED.get(text)
    if cached is not None:
        return cached
    spelled = _spell_out(text)
    raw = spelled.encode("utf-8")
    ba = _lib.ByteArray(ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p).value, len(raw))
    out = _lib.DLDataType()
    if _lib.DataTypeFromString(ctypes.byref(ba), ctypes.byref(out)) != 0:
        from ._error import take_raised_exception

        if spelled == text:
            raise take_raised_exception()
        try:
            raise take_raised_exception()
        except ValueError as e:
            raise ValueError(f"invalid dtype {text!r} (short for {spelled!r}): {e}") from None
    value = (out.code, out.bits, out.lanes)
    if len(_PARSED) < _CACHE_MAX:
        _PARSED[text] = value
    return value


def _print(code: int, bits: int, lanes: int) -> str:
    """The runtime's name for the fields (a ValueError for fields that name no type)."""
    key = (code, bits, lanes)
    cached = _PRINTED.get(key)
    if cached is not None:
        return cached
    dt = _lib.DLDataType(code, bits, lanes)
    out = _Any16()
    if _lib.DataTypeToString(ctypes.byref(dt), out) != 0:
        from ._error import raise_last_error

        raise_last_error()
    ti, length, payload = _unpack_any(out)
    if ti == _lib.kSmallStr:
        text = bytes(out)[8 : 8 + length].decode("utf-8")
    elif ti == _lib.kStr:
        data, size = _unpack_ba(ctypes.string_at(payload + L.STR_DATA, L.PAIR))
        text = ctypes.string_at(data, size).decode("utf-8")
        _lib.ObjectDecRef(payload)
    else:  # pragma: no cover - the runtime always returns a string here
        raise RuntimeError(f"RFFIDataTypeToString returned type index {ti}")
    if len(_PRINTED) < _CACHE_MAX:
        _PRINTED[key] = text
    return text


def _foreign_name(value):
    """The runtime's name of a numpy/ml_dtypes/torch dtype, or None for other values."""
    t = value if isinstance(value, type) else type(value)
    root = t.__module__.partition(".")[0]
    is_dtype = any(c.__name__ == "dtype" for c in type(value).__mro__)
    if root == "torch":  # torch.float32 -> "float32"
        return str(value).rpartition(".")[2] if is_dtype else None
    # numpy.dtype('float32'), numpy.float32, ml_dtypes.int4 (not arrays: they have a dtype).
    if root in ("numpy", "ml_dtypes") and (is_dtype or isinstance(value, type)):
        import numpy as np  # only reached with a numpy value in hand

        try:
            return np.dtype(value).name
        except TypeError:
            return None
    return None


class dtype(str):
    """An element type: ``rffi.dtype("float32")``, ``rffi.dtype("f32x4")``,
    ``rffi.dtype(numpy.float16)``, ``rffi.dtype(torch.bfloat16)``.

    Accepts the runtime's names (``int8``, ``float16x4``, ``bool``, ``float8_e4m3fn``, ...), the
    short names ``f16 f32 f64 bf16 i8 i16 i32 i64 u8 u16 u32 u64 c64 c128`` (any width the long
    name takes, lanes too: ``i4``, ``f32x4``), ``half``/``double``/``short``/``long``, numpy and
    torch dtypes, another dtype, and anything with ``__dlpack_data_type__``. ``str()`` gives the
    string as written (the canonical name for the non-string forms).
    """

    __slots__ = ("_code", "_bits", "_lanes")

    def __new__(cls, value):
        if isinstance(value, dtype):
            return value if type(value) is cls else cls._from_fields(*value.__dlpack_data_type__())
        if isinstance(value, str):
            fields = _parse(value)
            self = str.__new__(cls, value)
            self._code, self._bits, self._lanes = fields
            return self
        dl = getattr(value, "__dlpack_data_type__", None)
        if dl is not None:
            code, bits, lanes = dl()
            return cls.from_dlpack_data_type((code, bits, lanes))
        name = _foreign_name(value)
        if name is None:
            raise TypeError(
                f"cannot make a dtype from {type(value).__name__} {value!r}: expected a str "
                "such as 'float32', a numpy or torch dtype, or an object with "
                "__dlpack_data_type__"
            )
        return cls(name)

    @classmethod
    def _from_fields(cls, code: int, bits: int, lanes: int) -> dtype:
        """A dtype of runtime fields (already valid), spelled canonically."""
        self = str.__new__(cls, _print(code, bits, lanes))
        self._code, self._bits, self._lanes = code, bits, lanes
        return self

    @classmethod
    def from_dlpack_data_type(cls, fields) -> dtype:
        """The dtype of a DLPack ``(type code, bits, lanes)`` triple (a ValueError if it names
        no type)."""
        code, bits, lanes = (int(x) for x in fields)
        if not (0 <= code <= 0xFF and 0 <= bits <= 0xFF and 0 <= lanes <= 0xFFFF):
            raise ValueError(f"invalid DLPack data type {tuple(fields)!r}: a field out of range")
        try:
            _print(code, bits, lanes)  # the runtime checks the fields
        except ValueError as e:
            raise ValueError(f"invalid DLPack data type {(code, bits, lanes)!r}: {e}") from None
        return cls._from_fields(code, bits, lanes)

    def __dlpack_data_type__(self) -> tuple:
        """``(type code, bits, lanes)``, DLPack's ``DLDataType``."""
        return (self._code, self._bits, self._lanes)

    @property
    def type_code(self) -> int:
        """The DLPack type code (``DLDataTypeCode.kDLFloat == 2``)."""
        return self._code

    @property
    def bits(self) -> int:
        """Bits per lane."""
        return self._bits

    @property
    def lanes(self) -> int:
        """Number of lanes (1 for a scalar)."""
        return self._lanes

    @property
    def itemsize(self) -> int:
        """Bytes per element (all lanes), rounded up."""
        return (self._bits * self._lanes + 7) // 8

    @property
    def is_bool(self) -> bool:
        """Whether this is ``bool``."""
        return self._code == _BOOL

    @property
    def is_integer(self) -> bool:
        """Whether this is a signed or unsigned integer type (``int*``, ``uint*``)."""
        return self._code in (_INT, _UINT)

    @property
    def is_float(self) -> bool:
        """Whether this is a floating-point type: ``float*``, ``bfloat16`` and the 8/6/4-bit
        formats (``float8_e4m3fn``, ...)."""
        floating = self._code in (_FLOAT, _BFLOAT) or (
            _FIRST_LOW_PRECISION_FLOAT <= self._code <= _LAST_LOW_PRECISION_FLOAT
        )
        return floating

    @property
    def is_handle(self) -> bool:
        """Whether this is ``handle`` (an opaque pointer; ``void`` is not one)."""
        return self._code == _HANDLE and self._bits != 0

    def with_lanes(self, lanes: int) -> dtype:
        """The same element type with ``lanes`` lanes."""
        if isinstance(lanes, bool) or not isinstance(lanes, int) or not 1 <= lanes <= 0xFFFF:
            raise ValueError(f"lanes must be an int in 1..65535, got {lanes!r}")
        return type(self)._from_fields(self._code, self._bits, lanes)

    def to_numpy(self):
        """The ``numpy.dtype`` of this element type (``ml_dtypes`` supplies bfloat16, the 8/6/4-bit
        floats and int4/int2 when it is installed). A TypeError for a type numpy has no dtype of."""
        import numpy as np

        name = self._canonical()
        if self._lanes == 1:
            try:
                return np.dtype(name)
            except TypeError:
                pass
            try:
                import ml_dtypes
            except ImportError:
                ml_dtypes = None
            if ml_dtypes is not None and hasattr(ml_dtypes, name):
                return np.dtype(getattr(ml_dtypes, name))
        raise TypeError(f"numpy has no dtype for {name}")

    def to_torch(self):
        """The ``torch.dtype`` of this element type; a TypeError for a type torch has not."""
        import torch

        name = self._canonical()
        found = getattr(torch, name, None) if self._lanes == 1 else None
        if not isinstance(found, torch.dtype):
            raise TypeError(f"torch has no dtype for {name}")
        return found

    def _canonical(self) -> str:
        return _print(self._code, self._bits, self._lanes)

    def __repr__(self) -> str:
        return f"dtype({str.__str__(self)!r})"

    def __eq__(self, other) -> bool:
        if isinstance(other, dtype):
            return (self._code, self._bits, self._lanes) == (other._code, other._bits, other._lanes)
        if isinstance(other, str):
            try:
                return (self._code, self._bits, self._lanes) == _parse(other)
            except Exception:
                return False
        name = _foreign_name(other)
        if name is None:
            return NotImplemented
        try:
            return (self._code, self._bits, self._lanes) == _parse(name)
        except Exception:
            return False

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._canonical())

    def __reduce__(self):
        return (dtype, (str.__str__(self),))


#: The runtime's name for the same class (``rffi.DataType is rffi.dtype``).
DataType = dtype


#: Module-level dtypes of the common element types (``rffi.float32``, ``rffi.bool``, ...), as
#: tvm-ffi names them; ``float4_e2m1fn_x2`` is torch's spelling of ``float4_e2m1fnx2``.
NAMED = frozenset(
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 bfloat16 "
    "float8_e3m4 float8_e4m3 float8_e4m3b11fnuz float8_e4m3fn float8_e4m3fnuz float8_e5m2 "
    "float8_e5m2fnuz float8_e8m0fnu float6_e2m3fn float6_e3m2fn float4_e2m1fn float4_e2m1fnx2 "
    "float4_e2m1fn_x2".split()
)
