"""``Device`` and ``DataType``: plain values (no native object behind them).

Device names follow the runtime's (and tvm-ffi's) spelling, so ``str(device)`` round-trips through
C and Rust. Data types are parsed and printed by the runtime itself (``RFFIDataTypeFromString`` /
``RFFIDataTypeToString``), so the grammar is the runtime's; results are cached per string.
"""

from __future__ import annotations

import ctypes
import struct

from . import _layout as L
from . import _lib

# DLPack device types and their canonical names, in DLPack order (as the runtime prints them).
_DEVICE_NAMES = {
    1: "cpu",
    2: "cuda",
    3: "cuda_host",
    4: "opencl",
    7: "vulkan",
    8: "metal",
    9: "vpi",
    10: "rocm",
    11: "rocm_host",
    12: "ext_dev",
    13: "cuda_managed",
    14: "oneapi",
    15: "webgpu",
    16: "hexagon",
    17: "maia",
    18: "trn",
}
# Other spellings accepted when parsing (never printed).
_DEVICE_ALIASES = {"gpu": 2, "cl": 4, "llvm": 1, "hip": 10, "mtl": 8}
_DEVICE_TYPES = {name: ty for ty, name in _DEVICE_NAMES.items()}
_DEVICE_TYPES.update(_DEVICE_ALIASES)

_I32_MAX = 2**31 - 1


class Device:
    """Where data lives: a DLPack device type and an index (``rffi.device("cuda", 1)``)."""

    __slots__ = ("_device_type", "_index")

    def __init__(self, device_type: int, index: int = 0):
        if device_type not in _DEVICE_NAMES:
            raise ValueError(f"unknown DLPack device type {device_type!r}")
        if not isinstance(index, int) or not 0 <= index <= _I32_MAX:
            raise ValueError(f"device index must be an int in 0..{_I32_MAX}, got {index!r}")
        self._device_type = int(device_type)
        self._index = int(index)

    @property
    def type(self) -> str:
        """The device type's name: ``"cpu"``, ``"cuda"``, ..."""
        return _DEVICE_NAMES[self._device_type]

    @property
    def index(self) -> int:
        return self._index

    def dlpack_device_type(self) -> int:
        """The DLPack device type code (``kDLCUDA == 2``)."""
        return self._device_type

    def __dlpack_device__(self) -> tuple:
        return (self._device_type, self._index)

    def __str__(self) -> str:
        return f"{self.type}:{self._index}"

    def __repr__(self) -> str:
        return f"device(type={self.type!r}, index={self._index})"

    def __eq__(self, other) -> bool:
        if isinstance(other, Device):
            return self._device_type == other._device_type and self._index == other._index
        if isinstance(other, str):
            try:
                other = device(other)
            except ValueError:
                return False
            return self == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((Device, self._device_type, self._index))

    def __reduce__(self):
        return (Device, (self._device_type, self._index))


def device(device_type, index=None) -> Device:
    """Makes a ``Device``: ``device("cuda:1")``, ``device("cuda", 1)``, ``device(2, 1)``, or from a
    torch device or anything with ``__dlpack_device__``."""
    if isinstance(device_type, Device):
        if index is not None and index != device_type.index:
            return Device(device_type.dlpack_device_type(), index)
        return device_type
    if isinstance(device_type, str):
        text = device_type
        name, sep, rest = text.partition(":")
        if sep:
            if index is not None:
                raise ValueError(f"device {text!r} already has an index; do not pass index={index}")
            if not rest.isdigit() or not rest.isascii():
                raise ValueError(f"invalid device {text!r}: the index must be a non-negative int")
            index = int(rest)
        ty = _DEVICE_TYPES.get(name)
        if ty is None:
            raise ValueError(
                f"unknown device name {name!r} in {text!r}; expected one of "
                f"{', '.join(_DEVICE_NAMES.values())} (or alias {', '.join(_DEVICE_ALIASES)})"
            )
        return Device(ty, 0 if index is None else index)
    if isinstance(device_type, int) and not isinstance(device_type, bool):
        return Device(device_type, 0 if index is None else index)
    # torch.device: its str() is "cuda:1" or "cpu".
    if type(device_type).__module__ == "torch" and type(device_type).__name__ == "device":
        d = device(device_type.type, device_type.index if index is None else index)
        return d
    dl = getattr(device_type, "__dlpack_device__", None)
    if dl is not None:
        ty, idx = dl()
        return Device(int(ty), int(idx) if index is None else index)
    raise TypeError(f"cannot make a device from {type(device_type).__name__} {device_type!r}")


_DTYPE_CACHE: dict = {}
_Any16 = ctypes.c_char * 16  # held here: ctypes caches array types only weakly
_DTYPE_STR_CACHE: dict = {}
_unpack_any = struct.Struct("<iIq").unpack_from
_unpack_ba = struct.Struct("<QQ").unpack_from


def _parse_dtype(text: str) -> tuple:
    cached = _DTYPE_CACHE.get(text)
    if cached is not None:
        return cached
    raw = text.encode("utf-8")
    ba = _lib.ByteArray(ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p).value, len(raw))
    out = _lib.DLDataType()
    if _lib.DataTypeFromString(ctypes.byref(ba), ctypes.byref(out)) != 0:
        from ._error import raise_last_error

        raise_last_error()
    value = (out.code, out.bits, out.lanes)
    if len(_DTYPE_CACHE) < 4096:
        _DTYPE_CACHE[text] = value
    return value


def _print_dtype(code: int, bits: int, lanes: int) -> str:
    key = (code, bits, lanes)
    cached = _DTYPE_STR_CACHE.get(key)
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
        data, size = _unpack_ba(ctypes.string_at(payload + L.STR_DATA, 16))
        text = ctypes.string_at(data, size).decode("utf-8")
        _lib.ObjectDecRef(payload)
    else:  # pragma: no cover - the runtime always returns a string here
        raise RuntimeError(f"RFFIDataTypeToString returned type index {ti}")
    if len(_DTYPE_STR_CACHE) < 4096:
        _DTYPE_STR_CACHE[key] = text
    return text


class DataType:
    """An element type: DLPack type code, bits and lanes (``rffi.dtype("float32")``).

    Compares equal to another ``DataType`` with the same fields and to its string form.
    """

    __slots__ = ("_code", "_bits", "_lanes")

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"DataType expects a str such as 'float32', got {type(text).__name__}")
        self._code, self._bits, self._lanes = _parse_dtype(text)

    @classmethod
    def _from_fields(cls, code: int, bits: int, lanes: int) -> DataType:
        self = cls.__new__(cls)
        self._code, self._bits, self._lanes = code, bits, lanes
        return self

    @property
    def type_code(self) -> int:
        """The DLPack type code (``kDLFloat == 2``)."""
        return self._code

    @property
    def bits(self) -> int:
        return self._bits

    @property
    def lanes(self) -> int:
        return self._lanes

    @property
    def itemsize(self) -> int:
        """Bytes per element (all lanes), rounded up."""
        return (self._bits * self._lanes + 7) // 8

    def __str__(self) -> str:
        return _print_dtype(self._code, self._bits, self._lanes)

    def __repr__(self) -> str:
        return f"dtype({str(self)!r})"

    def __eq__(self, other) -> bool:
        if isinstance(other, DataType):
            return (self._code, self._bits, self._lanes) == (other._code, other._bits, other._lanes)
        if isinstance(other, str):
            try:
                return (self._code, self._bits, self._lanes) == _parse_dtype(other)
            except Exception:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash((DataType, self._code, self._bits, self._lanes))

    def __reduce__(self):
        return (DataType, (str(self),))


# numpy's and torch's names that differ from the runtime's.
_FOREIGN_DTYPE_NAMES = {"bool_": "bool", "half": "float16", "float": "float32", "double": "float64"}


def dtype(value) -> DataType:
    """Makes a ``DataType`` from a string (``"float32"``, ``"int8x4"``), a numpy or torch dtype, or
    anything with ``__dlpack_data_type__``."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, str):
        return DataType(value)
    dl = getattr(value, "__dlpack_data_type__", None)
    if dl is not None:
        code, bits, lanes = dl()
        return DataType._from_fields(int(code), int(bits), int(lanes))
    module = (value if isinstance(value, type) else type(value)).__module__
    if module == "torch":  # torch.float32 -> "float32"
        name = str(value).rsplit(".", 1)[-1]
        return DataType(_FOREIGN_DTYPE_NAMES.get(name, name))
    if module.startswith("numpy"):  # numpy.dtype('float32') or numpy.float32
        import numpy as np  # only reached with a numpy value in hand

        name = np.dtype(value).name
        return DataType(_FOREIGN_DTYPE_NAMES.get(name, name))
    raise TypeError(f"cannot make a dtype from {type(value).__name__} {value!r}")
