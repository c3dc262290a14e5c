"""``Device``: where data lives, a DLPack device type and an index (a plain value).

Device names follow the runtime's (and tvm-ffi's) spelling, so ``str(device)`` round-trips through
C and Rust. The DLPack device types as an enum (``DLDeviceType``) live in ``rffi._enums``, which
``import rffi`` loads only when that name is used; ``Device`` itself works with plain ints.
"""

from __future__ import annotations

import operator

# Every DLPack device type and its canonical name, in DLPack order (as the runtime prints them).
DEVICE_NAMES = {
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
# Only the canonical names parse (as in tvm-ffi): a name is read back as what it prints as, and
# target names such as `llvm` or `nvptx` are not devices.
_DEVICE_TYPES = {name: ty for ty, name in DEVICE_NAMES.items()}

_I32_MAX = 2**31 - 1


def _device_type(value) -> int:
    """A DLPack device type code from a code (int, ``DLDeviceType``) or a name (``"cuda"``)."""
    if isinstance(value, str):
        ty = _DEVICE_TYPES.get(value)
        if ty is None:
            # tvm-ffi's message; what is expected goes in a note (a line of the traceback).
            err = ValueError(f"Unknown device: {value}")
            expected = f"expected a device name: {', '.join(DEVICE_NAMES.values())}"
            if hasattr(err, "add_note"):
                err.add_note(expected)
            else:  # Python < 3.11: no notes
                err.args = (f"{err.args[0]} ({expected})",)
            raise err
        return ty
    if isinstance(value, bool):
        raise TypeError(f"a device type must be an int or a name, got {value!r}")
    try:
        ty = operator.index(value)
    except TypeError:
        raise TypeError(
            f"a device type must be an int or a name, got {type(value).__name__}"
        ) from None
    if ty not in DEVICE_NAMES:
        raise ValueError(f"unknown DLPack device type {value!r}")
    return ty


def _device_index(value) -> int:
    """A device index: an int (numpy and torch integers included) in 0..2**31-1."""
    if isinstance(value, bool):
        raise TypeError(f"a device index must be an int, got {value!r}")
    try:
        index = operator.index(value)
    except TypeError:
        raise TypeError(f"a device index must be an int, got {type(value).__name__}") from None
    if not 0 <= index <= _I32_MAX:
        raise ValueError(f"device index must be in 0..{_I32_MAX}, got {index}")
    return index


class Device:
    """Where data lives: a DLPack device type and an index.

    ``Device("cuda", 1)``, ``Device(2, 1)`` and ``Device(DLDeviceType.kDLCUDA, 1)`` are the same
    device; ``rffi.device`` also parses ``"cuda:1"``. Devices compare equal to devices with the
    same type and index and to the strings that name them, and hash as their canonical string.
    """

    __slots__ = ("_device_type", "_index")

    def __init__(self, device_type, index=0):
        self._device_type = _device_type(device_type)
        self._index = _device_index(index)

    @classmethod
    def _from_fields(cls, device_type: int, index: int) -> Device:
        """A device from fields already checked (a runtime value's)."""
        self = cls.__new__(cls)
        self._device_type, self._index = device_type, index
        return self

    @property
    def type(self) -> str:
        """The device type's name: ``"cpu"``, ``"cuda"``, ..."""
        return DEVICE_NAMES.get(self._device_type) or f"device_type_{self._device_type}"

    @property
    def index(self) -> int:
        return self._index

    def dlpack_device_type(self) -> int:
        """The DLPack device type code (``DLDeviceType.kDLCUDA == 2``)."""
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

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        # As its canonical string, which compares equal to it.
        return hash(str(self))

    def __reduce__(self):
        return (Device, (self._device_type, self._index))


def device(device_type, index=None) -> Device:
    """Makes a ``Device``: ``device("cuda:1")``, ``device("cuda", 1)``, ``device(2, 1)``,
    ``device(DLDeviceType.kDLCUDA, 1)``, or from a torch device or anything with
    ``__dlpack_device__``. The index defaults to 0."""
    if isinstance(device_type, Device):
        if index is not None and _device_index(index) != device_type.index:
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
        try:
            ty = _device_type(name)
        except ValueError as e:
            if sep:  # say which text held the name (the note, if any, stays)
                e.args = (f"{e.args[0]} (in {text!r})",)
            raise
        return Device(ty, 0 if index is None else index)
    if isinstance(device_type, int) and not isinstance(device_type, bool):
        return Device(device_type, 0 if index is None else index)
    # torch.device: its type name and index (None for "cpu").
    if type(device_type).__module__ == "torch" and type(device_type).__name__ == "device":
        return device(device_type.type, device_type.index if index is None else index)
    dl = getattr(device_type, "__dlpack_device__", None)
    if dl is not None:
        ty, idx = dl()
        return Device(ty, idx if index is None else index)
    raise TypeError(f"cannot make a device from {type(device_type).__name__} {device_type!r}")
