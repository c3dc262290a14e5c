"""Tensor arguments: DLPack producers passed directly, with and without the DLPack C exchange
API (`__dlpack_c_exchange_api__`).

The native call path imports them with the producer's C entry points instead of `__dlpack__`,
and makes the producer's current stream rffi's for the call; both call paths install the
producer's allocator for the call. The producer here is built in the test: numpy arrays behind a
class whose exchange API is made of ctypes callbacks, counting what the runtime asks of it.
"""

import ctypes
import gc
import sys

import pytest

import rffi
from rffi import _core, _lib

np = pytest.importorskip("numpy")

fast_only = pytest.mark.skipif(not _core.FASTPATH, reason="the ctypes call path uses __dlpack__")

_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_GetPointer.restype = ctypes.c_void_p
_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_SetName = ctypes.pythonapi.PyCapsule_SetName
_SetName.restype = ctypes.c_int
_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_NewCapsule = ctypes.pythonapi.PyCapsule_New
_NewCapsule.restype = ctypes.py_object
_NewCapsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# Capsule names must outlive the capsules (CPython keeps the pointer).
_API_NAME = b"dlpack_exchange_api"
_VERSIONED = b"dltensor_versioned"
_USED_VERSIONED = b"used_dltensor_versioned"

_EXPORT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_STREAM = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)
)
_ALLOC = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p
)


class _ExchangeAPI(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("prev_api", ctypes.c_void_p),
        ("managed_tensor_allocator", _ALLOC),
        ("managed_tensor_from_py_object_no_sync", _EXPORT),
        ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
        ("dltensor_from_py_object_no_sync", ctypes.c_void_p),
        ("current_work_stream", _STREAM),
    ]


class Stats:
    exports = 0
    streams = 0
    allocations = []  # the arrays the allocator made


def _export(obj_address, out):
    obj = ctypes.cast(obj_address, ctypes.py_object).value
    Stats.exports += 1
    if obj.fail:
        return -1  # and no Python error set: the runtime must say what happened
    capsule = obj.array.__dlpack__(max_version=(1, 1))
    managed = _GetPointer(capsule, _VERSIONED)
    _SetName(capsule, _USED_VERSIONED)
    if obj.device is not None:
        # DLManagedTensorVersioned: dl_tensor at 32, its device (type, id) at 8 within it.
        ctypes.c_int32.from_address(managed + 40).value = obj.device[0]
        ctypes.c_int32.from_address(managed + 44).value = obj.device[1]
    out[0] = managed
    return 0


def _current_stream(device_type, device_id, out):
    Stats.streams += 1
    out[0] = 0x5000 + 16 * device_type + device_id
    return 0


def _allocate(prototype, out, error_ctx, set_error):
    # Float32 CPU tensors only: what the tests ask for. DLTensor: ndim at 16, shape at 24.
    ndim = ctypes.c_int32.from_address(prototype + 16).value
    shape_ptr = ctypes.c_void_p.from_address(prototype + 24).value
    shape = tuple((ctypes.c_int64 * ndim).from_address(shape_ptr)) if ndim else ()
    array = np.full(shape, 7.0, dtype=np.float32)
    Stats.allocations.append(array)
    capsule = array.__dlpack__(max_version=(1, 1))
    out[0] = _GetPointer(capsule, _VERSIONED)
    _SetName(capsule, _USED_VERSIONED)
    return 0


def _api(major=1):
    api = _ExchangeAPI(
        major, 3, None, _ALLOC(_allocate), _EXPORT(_export), None, None, _STREAM(_current_stream)
    )
    return api, _NewCapsule(ctypes.addressof(api), _API_NAME, None)


_API, _CAPSULE = _api()
_API_V2, _CAPSULE_V2 = _api(major=2)


class Exchangeable:
    """A numpy array published through the exchange API; `device` relabels where it lives (the
    memory is never read as device memory by the functions used here)."""

    __dlpack_c_exchange_api__ = _CAPSULE

    def __init__(self, array, device=None, fail=False):
        self.array, self.device, self.fail = array, device, fail

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class FutureExchangeable(Exchangeable):
    """An exchange API of a major version the runtime does not know: `__dlpack__` is used."""

    __dlpack_c_exchange_api__ = _CAPSULE_V2


def test_tensor_argument_shares_memory(testing):
    a = np.arange(6, dtype=np.float32)
    before = Stats.exports
    t = testing.echo(Exchangeable(a))
    assert isinstance(t, rffi.Tensor)
    assert t.data_ptr() == a.ctypes.data and t.shape == (6,)
    np.from_dlpack(t)[2] = 42
    assert a[2] == 42
    assert Stats.exports - before == (1 if _core.FASTPATH else 0)


def test_imported_tensors_are_released(testing):
    a = np.zeros(8, dtype=np.int64)
    x = Exchangeable(a)
    base = sys.getrefcount(a)
    callback = rffi.convert(lambda t: None)
    for _ in range(200):
        testing.nop(x, x, 1)
        testing.apply(callback, x)
    gc.collect()
    assert sys.getrefcount(a) == base


@fast_only
def test_producer_stream_is_current_during_the_call(testing):
    x = Exchangeable(np.zeros(4, dtype=np.float32), device=(2, 1))
    y = Exchangeable(np.zeros(4, dtype=np.float32), device=(2, 1))
    seen = []
    prev = ctypes.c_void_p()
    assert _lib.EnvSetStream(2, 1, 0x77, ctypes.byref(prev)) == 0
    try:
        callback = rffi.convert(lambda s, t: seen.append(_lib.EnvGetStream(2, 1)))
        queries = Stats.streams
        testing.apply(callback, x, y)
        assert seen == [0x5000 + 32 + 1]
        assert Stats.streams - queries == 1  # one query per device per call
        assert _lib.EnvGetStream(2, 1) == 0x77  # restored
    finally:
        _lib.EnvSetStream(2, 1, prev, None)


@fast_only
def test_cpu_tensors_leave_streams_alone(testing):
    queries = Stats.streams
    testing.nop(Exchangeable(np.zeros(3)))
    assert Stats.streams == queries


@fast_only
def test_failing_producer_is_a_clear_error(testing):
    a = np.zeros(2)
    base = sys.getrefcount(a)
    with pytest.raises(RuntimeError, match=r"argument 1: .*DLPack exchange API failed exporting"):
        testing.nop(Exchangeable(a), Exchangeable(a, fail=True))
    gc.collect()
    assert sys.getrefcount(a) == base  # the first argument's import was released


def test_unknown_major_version_uses_dlpack(testing):
    a = np.arange(3, dtype=np.int32)
    before = Stats.exports
    t = testing.echo(FutureExchangeable(a))
    assert t.data_ptr() == a.ctypes.data
    assert Stats.exports == before


def test_the_producers_allocator_makes_tensors_during_the_call(testing):
    made = []
    shape = rffi.convert([2, 3])

    def inside(t):
        made.append(testing.tensor_empty(shape, rffi.dtype("float32"), rffi.device("cpu")))

    callback = rffi.convert(inside)
    before = len(Stats.allocations)
    testing.apply(callback, Exchangeable(np.zeros(4, dtype=np.float32)))
    assert len(Stats.allocations) == before + 1
    array = Stats.allocations[-1]
    assert made[0].shape == (2, 3) and made[0].data_ptr() == array.ctypes.data
    # Restored after the call: the runtime's own allocator again.
    outside = testing.tensor_empty(shape, rffi.dtype("float32"), rffi.device("cpu"))
    assert len(Stats.allocations) == before + 1
    assert outside.data_ptr() != array.ctypes.data


# ---- Producers without the exchange API (numpy): `__dlpack__` called natively (fast path) ----


class Producer:
    """Forwards `__dlpack__` to a numpy array and records who called it and how."""

    def __init__(self, array, device=None, error=None, legacy=False):
        self.array, self.device, self.error, self.legacy = array, device, error, legacy
        self.calls = []

    def __dlpack__(self, **kwargs):
        self.calls.append((sys._getframe(1).f_code.co_name, kwargs))
        if self.error is not None:
            raise self.error
        if self.legacy:
            return self.array.__dlpack__()
        capsule = self.array.__dlpack__(**kwargs)
        if self.device is not None:
            managed = _GetPointer(capsule, _VERSIONED)
            ctypes.c_int32.from_address(managed + 40).value = self.device[0]
            ctypes.c_int32.from_address(managed + 44).value = self.device[1]
        return capsule

    def __dlpack_device__(self):
        return self.device or self.array.__dlpack_device__()


def test_host_producers_are_exported_without_python_code_in_between(testing):
    a = np.arange(5, dtype=np.float64)
    p = Producer(a)
    base = sys.getrefcount(a)
    for _ in range(3):
        t = testing.echo(p)
        assert t.data_ptr() == a.ctypes.data and t.shape == (5,)
    del t
    gc.collect()
    assert sys.getrefcount(a) == base
    callers = [caller for caller, _ in p.calls]
    # The fast path calls it straight from this frame, from the first call on (the native code
    # resolves the new type through the conversion table); the ctypes path from
    # rffi.from_dlpack. Both ask for 1.1.
    here = sys._getframe().f_code.co_name
    assert callers == [here if _core.FASTPATH else "from_dlpack"] * 3
    assert all(kw == {"max_version": (1, 1)} for _, kw in p.calls)


def test_legacy_capsules_are_imported(testing):
    a = np.arange(4, dtype=np.int32)
    t = testing.echo(Producer(a, legacy=True))
    assert t.data_ptr() == a.ctypes.data and t.dtype == rffi.dtype("int32")


def test_device_producers_take_the_python_path(testing):
    p = Producer(np.zeros(3, dtype=np.float32), device=(2, 0))
    for _ in range(2):
        t = testing.echo(p)
        assert t.device == rffi.device("cuda", 0)
    # The native export of a device tensor is dropped unconsumed and not tried again.
    callers = [caller for caller, _ in p.calls]
    assert callers.count("from_dlpack") == 2
    assert len(callers) == (3 if _core.FASTPATH else 2)


def test_producer_errors_are_the_python_paths(testing):
    p = Producer(np.zeros(2), error=BufferError("cannot export this one"))
    with pytest.raises(BufferError, match="cannot export this one"):
        testing.nop(p)
    with pytest.raises(BufferError, match="cannot export this one"):
        testing.nop(1, p)


def test_from_dlpack_of_producers_with_and_without_python(testing):
    a = np.arange(6, dtype=np.float32)
    host = Producer(a)
    base = sys.getrefcount(a)
    device = Producer(np.zeros(2, dtype=np.float32), device=(2, 0))
    for _ in range(3):
        assert rffi.from_dlpack(host).data_ptr() == a.ctypes.data
        assert rffi.from_dlpack(device).device == rffi.device("cuda", 0)
    gc.collect()
    assert sys.getrefcount(a) == base
    assert all(kw == {"max_version": (1, 1)} for _, kw in host.calls + device.calls)
    failing = Producer(a, error=BufferError("not now"))
    for _ in range(2):
        with pytest.raises(BufferError, match="not now"):
            rffi.from_dlpack(failing)
