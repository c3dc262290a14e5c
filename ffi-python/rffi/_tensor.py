"""``Tensor``, ``rffi.from_dlpack`` and DLPack producers as call arguments, zero copy.

The capsules themselves are handled in ``_dlpack``. numpy and torch are never imported here: a
value of theirs is recognised by its ``__dlpack__`` method, and torch is consulted (for the
current CUDA stream) only when a CUDA torch tensor is passed, at which point torch is loaded.
"""

from __future__ import annotations

import ctypes
import itertools
import operator
import struct
import sys

from . import _convert, _dlpack, _lib, _native
from . import _layout as L
from ._device import Device
from ._dtype import DataType
from ._dtype import dtype as _dtype
from ._error import take_raised_exception
from ._function import FASTPATH
from ._object import CLASS_OF_INDEX, Object, wrap_new
from ._shape import Shape

_DLTENSOR_FMT = struct.Struct("<QiiiBBHQQQ")  # DLTensor: 48 bytes


class Tensor(Object):
    """An n-dimensional array held by the runtime (``ffi.Tensor``), shared without copies with any
    DLPack producer or consumer (numpy, torch, cupy, jax)."""

    __slots__ = ()

    def _dl(self):
        # Every property reads the tensor's memory: a released wrapper (address 0) must not.
        if not self._h:
            self._check_live("read")
        return _DLTENSOR_FMT.unpack(ctypes.string_at(self._h + L.TENSOR_DL, L.DLTENSOR_SIZE))

    @property
    def shape(self) -> Shape:
        data, dev_type, dev_id, ndim, code, bits, lanes, shape, strides, off = self._dl()
        if not ndim:
            return Shape(())
        return Shape(struct.unpack(f"<{ndim}q", ctypes.string_at(shape, L.WORD * ndim)))

    @property
    def strides(self) -> tuple:
        """Strides in elements (always filled by the runtime)."""
        data, dev_type, dev_id, ndim, code, bits, lanes, shape, strides, off = self._dl()
        if not ndim:
            return ()
        return struct.unpack(f"<{ndim}q", ctypes.string_at(strides, L.WORD * ndim))

    @property
    def ndim(self) -> int:
        return self._dl()[3]

    @property
    def dtype(self) -> DataType:
        d = self._dl()
        return DataType._from_fields(d[4], d[5], d[6])

    @property
    def device(self) -> Device:
        d = self._dl()
        return Device._from_fields(d[1], d[2])

    def numel(self) -> int:
        """The number of elements (1 for a 0-d tensor)."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    def size(self, dim=None):
        """The shape, or with ``dim`` the size of that dimension (negative counts from the end)."""
        shape = self.shape
        if dim is None:
            return shape
        try:
            return shape[operator.index(dim)]
        except IndexError:
            raise IndexError(
                f"dimension {dim} is out of range for a tensor of {len(shape)} dimensions"
            ) from None

    def data_ptr(self) -> int:
        """The address of the first element (``data + byte_offset``)."""
        d = self._dl()
        return d[0] + d[9]

    def is_contiguous(self) -> bool:
        """Whether the elements are dense in row-major order. Dimensions of size 1 may have any
        stride, and a tensor without elements is contiguous whatever its strides."""
        shape = self.shape
        if 0 in shape:
            return True
        expected = 1
        for size, stride in reversed(list(zip(shape, self.strides))):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def __dlpack_device__(self) -> tuple:
        d = self._dl()
        return (d[1], d[2])

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this tensor, as the array API standard specifies.

        - ``max_version``: a versioned capsule (``dltensor_versioned``, DLPack 1.x) when the
          consumer's ``(major, minor)`` is at least ``(1, 0)``, else the legacy ``dltensor``.
        - ``copy``: None or False share the memory (False promises never to copy); True exports
          a new host copy (host tensors only), flagged ``IS_COPIED`` in a versioned capsule.
        - ``dl_device``: the device the consumer wants, as ``__dlpack_device__`` gives it: this
          tensor's own, or the CPU for a tensor in host-readable memory (CUDA/ROCm host memory)
          when a copy is allowed.
        - ``stream``: the consumer's stream on CUDA and ROCm (an int; -1: do not synchronize); on
          devices without streams only None (or -1). rffi keeps no work queue of its own: work on
          the tensor was ordered on the stream its producer used, so nothing is synchronized here.

        A request this cannot meet is a BufferError, per the standard.
        """
        here = self.__dlpack_device__()
        _dlpack.check_stream(stream, here)
        source = self
        copied = False
        if dl_device is not None:
            want = _dlpack.device_pair(dl_device)
            if want != here:
                if want != (_dlpack.CPU, 0) or here[0] not in _dlpack.HOST_DEVICE_TYPES:
                    raise BufferError(
                        f"rffi.Tensor on {self.device} cannot be exported to device {want}: only "
                        "host memory can be copied, to the CPU"
                    )
                if copy is False:
                    raise BufferError(
                        f"rffi.Tensor on {self.device} needs a copy to be on the CPU, and "
                        "copy=False forbids one"
                    )
                copy = True
        if copy:
            if here[0] not in _dlpack.HOST_DEVICE_TYPES:
                raise BufferError(f"rffi.Tensor cannot copy memory on {self.device}")
            source, copied = self._host_copy(), True
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _dlpack.export(source, versioned, copied)

    def _host_copy(self) -> Tensor:
        """A new CPU tensor holding this host tensor's elements (dense, row-major)."""
        return tensor_from_bytes(self._host_bytes(), self.dtype, self.shape)

    def __array__(self, dtype=None, copy=None):
        """The numpy view of a host tensor (numpy's ``__array__`` protocol): shares the memory
        unless ``copy=True``, or a ``dtype`` other than the tensor's makes numpy convert (which
        ``copy=False`` forbids: a ValueError, as numpy raises)."""
        import numpy as np

        if self.__dlpack_device__()[0] not in _dlpack.HOST_DEVICE_TYPES:
            raise TypeError(
                f"cannot make a numpy array of rffi.Tensor on {self.device}: device memory "
                "(copy it to the host first)"
            )
        a = np.from_dlpack(self)
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError(
                    f"converting rffi.Tensor of {self.dtype} to {np.dtype(dtype)} needs a copy, "
                    "and copy=False forbids one"
                )
            return a.astype(dtype)
        return a.copy() if copy else a

    def _value_form(self, what: str):
        """A host tensor's value: its elements' bytes (in row-major order, whatever its strides),
        dtype and shape; memory on a device has no value form here."""
        if self.__dlpack_device__()[0] not in _dlpack.HOST_DEVICE_TYPES:
            raise TypeError(
                f"cannot {what} rffi.Tensor on {self.device}: device memory has no value form "
                "(copy it to the host first; copy.copy shares it)"
            )
        return tensor_from_bytes, (self._host_bytes(), str(self.dtype), tuple(self.shape))

    def _host_bytes(self) -> bytes:
        """The elements of a host tensor, row-major and packed."""
        shape, strides = self.shape, self.strides
        dt = self.dtype
        nbits = dt.bits * dt.lanes
        numel = self.numel()
        if numel == 0:
            return b""
        base = self.data_ptr()
        if self.is_contiguous():
            return ctypes.string_at(base, (numel * nbits + 7) // 8)
        if nbits % 8:
            raise TypeError(f"cannot copy a strided tensor of {dt} (elements smaller than a byte)")
        item = nbits // 8
        # Rows along the last axis are read in one piece when they are dense.
        row_dims = shape[:-1] if strides[-1] == 1 else shape
        row = shape[-1] * item if strides[-1] == 1 else item
        parts = []
        for index in itertools.product(*(range(n) for n in row_dims)):
            offset = sum(i * s for i, s in zip(index, strides)) * item
            parts.append(ctypes.string_at(base + offset, row))
        return b"".join(parts)

    def __repr__(self) -> str:
        return f"rffi.Tensor(shape={tuple(self.shape)}, dtype={self.dtype}, device={self.device})"


def tensor_from_bytes(data: bytes, dtype, shape) -> Tensor:
    """A new CPU tensor of ``dtype`` and ``shape`` holding a copy of ``data`` (its elements,
    row-major): the value form that pickling and ``copy.deepcopy`` of a Tensor use."""
    dt = _dtype(dtype)
    dims = tuple(operator.index(d) for d in shape)
    numel = 1
    for d in dims:
        numel *= d
    size = (numel * dt.bits * dt.lanes + 7) // 8
    data = bytes(data)
    if len(data) != size:
        raise ValueError(
            f"tensor_from_bytes: {len(data)} bytes given for a {dt} tensor of shape {dims}, "
            f"which has {size}"
        )
    out = ctypes.c_void_p()
    shape_arr = (ctypes.c_int64 * max(len(dims), 1))(*dims)
    rc = _lib.TensorAlloc(
        shape_arr,
        len(dims),
        _lib.DLDataType(dt.type_code, dt.bits, dt.lanes),
        _lib.DLDevice(1, 0),
        ctypes.byref(out),
    )
    if rc != 0:
        raise take_raised_exception()
    t = wrap_new(Tensor, out.value, _lib.kTensor)
    if size:
        ctypes.memmove(t.data_ptr(), data, size)
    return t


CLASS_OF_INDEX[_lib.kTensor] = Tensor


def from_dlpack(obj, *, require_alignment: int = 0, require_contiguous: bool = False) -> Tensor:
    """A Tensor sharing the memory of ``obj``: anything with ``__dlpack__`` (numpy, torch, cupy,
    jax arrays, rffi Tensors) or a DLPack capsule. No copy is made."""
    if not require_alignment and not require_contiguous and isinstance(obj, Tensor):
        return obj
    if type(obj).__name__ == "PyCapsule":
        capsule = obj
    else:
        dlpack = getattr(obj, "__dlpack__", None)
        if dlpack is None:
            raise TypeError(
                f"rffi.from_dlpack: {type(obj).__name__} is not a DLPack producer (no __dlpack__)"
            )
        try:
            capsule = dlpack(max_version=(1, 1))
        except TypeError:  # a producer older than DLPack 1.0 takes no max_version
            capsule = dlpack()
    h = _dlpack.consume_capsule(capsule, require_alignment, require_contiguous)
    if capsule is not obj:
        _convert.kind_of(type(obj))  # learns the type's rule: next time, natively
    return wrap_new(Tensor, h, _lib.kTensor)


# With the fast path, `from_dlpack` is the native library's builtin: a Tensor as it is, and the
# producers the call path imports natively (exchange API, host-memory producers whose rule is
# known) wrapped in one native call, with no Python frame; it hands everything else (keywords,
# capsules, types seen for the first time, errors) to the function above.
python_from_dlpack = from_dlpack
if FASTPATH:
    from_dlpack = _native.builtin("from_dlpack", (Tensor, python_from_dlpack))


# ---- Tensors as call arguments ----


class _CallEnv:
    """What a tensor argument's framework lends one call: its current CUDA stream as rffi's
    current stream for the device (torch), and its DLPack allocator as this thread's environment
    allocator (types with a DLPack exchange API), so tensors the call makes are its memory."""

    __slots__ = ("_alloc", "_dev", "_prev_alloc", "_prev_stream", "_tensor")

    def __init__(self, tensor, dev_id, stream, alloc):
        self._tensor = tensor
        self._dev = dev_id
        self._alloc = alloc
        prev = ctypes.c_void_p()
        if dev_id is not None:
            if _lib.EnvSetStream(2, dev_id, stream, ctypes.byref(prev)) != 0:
                raise take_raised_exception()
            self._prev_stream = prev.value
        if alloc:
            if _lib.EnvSetDLPackManagedTensorAllocator(alloc, 0, ctypes.byref(prev)) != 0:
                if dev_id is not None:
                    _lib.EnvSetStream(2, dev_id, self._prev_stream, None)
                raise take_raised_exception()
            self._prev_alloc = prev.value

    def _rffi_after_call(self):
        if self._alloc:
            _lib.EnvSetDLPackManagedTensorAllocator(self._prev_alloc, 0, None)
        if self._dev is not None:
            _lib.EnvSetStream(2, self._dev, self._prev_stream, None)


def set_dlpack(value, fr, i):
    """The setter of DLPack producers passed directly as arguments (zero copy)."""
    t = from_dlpack(value)
    q = fr[1]
    q[i] = _lib.kTensor
    q[i + 1] = t._h
    vt = type(value)
    alloc = _dlpack.allocator_of(vt) if _lib.EnvSetDLPackManagedTensorAllocator is not None else 0
    dev_id = stream = None
    if vt.__module__ == "torch" and _lib.EnvSetStream is not None and value.is_cuda:
        torch = sys.modules["torch"]
        dev_id = value.device.index or 0
        stream = torch.cuda.current_stream(dev_id).cuda_stream
    if alloc or dev_id is not None:
        return _CallEnv(t, dev_id, stream, alloc)
    return t


_convert.AFTER_CALL_TYPES.add(_CallEnv)
