"""Tensors and DLPack: numpy always (the test set-up installs it), torch where installed."""

import ctypes
import gc
import sys

import pytest

import rffi

np = pytest.importorskip("numpy")


def test_from_numpy_shares_memory(testing):
    a = np.arange(10, dtype=np.int32)
    t = rffi.from_dlpack(a)
    assert isinstance(t, rffi.Tensor)
    assert t.shape == (10,) and t.strides == (1,) and t.ndim == 1
    assert t.dtype == rffi.dtype("int32") and t.device == rffi.device("cpu", 0)
    assert t.data_ptr() == a.ctypes.data
    assert t.__dlpack_device__() == (1, 0)
    back = np.from_dlpack(testing.echo(t))
    back[3] = 42
    assert a[3] == 42
    assert repr(t) == "rffi.Tensor(shape=(10,), dtype=int32, device=cpu:0)"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint16", "int64", "bool"])
def test_dtypes_and_shapes(dtype):
    a = np.zeros((2, 3, 4), dtype=dtype)
    t = rffi.from_dlpack(a)
    assert t.shape == (2, 3, 4) and t.strides == (12, 4, 1)
    assert str(t.dtype) == dtype
    assert rffi.dtype(a.dtype) == t.dtype


def test_numpy_array_passed_directly(testing):
    a = np.ones((3, 2), dtype=np.float32)
    assert testing.tensor_shape(a) == (3, 2)
    out = testing.echo(a)
    assert isinstance(out, rffi.Tensor) and out.data_ptr() == a.ctypes.data
    testing.tensor_zero_(a)  # writes through the shared memory
    assert not a.any()


def test_strided_and_contiguity():
    a = np.arange(20, dtype=np.float64)[::2]
    t = rffi.from_dlpack(a)
    assert t.shape == (10,) and t.strides == (2,)
    assert not t.is_contiguous()
    with pytest.raises(ValueError):
        rffi.from_dlpack(a, require_contiguous=True)


def test_zero_dim():
    t = rffi.from_dlpack(np.array(3.5))
    assert t.shape == () and t.ndim == 0
    assert float(np.from_dlpack(t)) == 3.5


def test_capsules_legacy_and_versioned(testing):
    a = np.arange(6, dtype=np.int16)
    legacy = a.__dlpack__()
    t = rffi.from_dlpack(legacy)
    assert t.shape == (6,)
    with pytest.raises(ValueError, match="consumed only once"):
        rffi.from_dlpack(legacy)
    versioned = a.__dlpack__(max_version=(1, 1))
    assert rffi.from_dlpack(versioned).data_ptr() == a.ctypes.data
    # Export both ways; an unconsumed capsule releases the tensor when it dies.
    before = testing.object_use_count(t)
    cap = t.__dlpack__()
    cap2 = t.__dlpack__(max_version=(1, 0))
    assert testing.object_use_count(t) == before + 2
    del cap, cap2
    gc.collect()
    assert testing.object_use_count(t) == before


def test_numpy_view_of_rffi_tensor_keeps_it_alive(testing):
    t = testing.tensor_empty([4], rffi.dtype("float32"), rffi.device("cpu"))
    view = np.from_dlpack(t)
    before = testing.object_use_count(t)
    del t
    view[:] = 7.0
    assert view.sum() == 28.0
    assert before >= 1


def test_attributes():
    a = np.zeros((10, 8, 4, 2), dtype="int16")
    t = rffi.from_dlpack(a)
    assert isinstance(t.shape, rffi.Shape) and t.shape == (10, 8, 4, 2) and t.ndim == 4
    assert t.numel() == 640 and t.size() == t.shape and t.size(0) == 10 and t.size(-1) == 2
    with pytest.raises(IndexError, match="out of range"):
        t.size(4)
    assert t.strides == (64, 8, 2, 1) and t.is_contiguous()
    assert t.dtype == rffi.dtype("int16") and t.device == rffi.device("cpu", 0)
    assert rffi.from_dlpack(np.array(2.0)).numel() == 1


def test_zero_size_tensors_are_contiguous():
    for a in (np.zeros((4, 0, 4), dtype="int16"), np.zeros((5, 6))[::2, 3:3], np.zeros(0)):
        t = rffi.from_dlpack(a)
        assert t.numel() == 0 and t.is_contiguous(), a.shape
    assert not rffi.from_dlpack(np.zeros((4, 4))[:, :2]).is_contiguous()


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
VERSIONED = b"dltensor_versioned"


def _managed(capsule):
    """(data pointer, flags) of a versioned capsule's DLManagedTensorVersioned."""
    p = _api.PyCapsule_GetPointer(capsule, VERSIONED)
    L = rffi._layout
    data = ctypes.c_void_p.from_address(p + L.VERSIONED_DL_TENSOR).value
    return data, ctypes.c_uint64.from_address(p + L.VERSIONED_FLAGS).value


def _on_device(a, device_type):
    """A Tensor over ``a``'s memory whose DLPack device says ``device_type`` (no GPU needed:
    exporting never reads the data unless it copies)."""
    capsule = a.__dlpack__(max_version=(1, 0))
    p = _api.PyCapsule_GetPointer(capsule, VERSIONED)
    ctypes.c_int32.from_address(p + rffi._layout.VERSIONED_DL_TENSOR + 8).value = device_type
    return rffi.from_dlpack(capsule)


def test_dlpack_versions():
    t = rffi.from_dlpack(np.arange(4, dtype=np.int32))
    assert t.__dlpack_device__() == (1, 0)
    for max_version, name in ((None, b"dltensor"), ((0, 8), b"dltensor"), ((1, 0), VERSIONED)):
        capsule = t.__dlpack__(max_version=max_version)
        assert _api.PyCapsule_IsValid(capsule, name) == 1
    data, flags = _managed(t.__dlpack__(max_version=(1, 2)))
    assert data == t.data_ptr() and flags == 0


def test_dlpack_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:3]  # strided
    t = rffi.from_dlpack(a)
    for copy in (None, False):
        assert np.from_dlpack(t, copy=copy).ctypes.data == a.ctypes.data
    data, flags = _managed(t.__dlpack__(max_version=(1, 0), copy=True))
    assert data != t.data_ptr() and flags & 2  # IS_COPIED
    c = np.from_dlpack(t, copy=True)
    assert c.ctypes.data != a.ctypes.data and (c == a).all() and c.flags.c_contiguous
    c[0, 0] = -1
    assert a[0, 0] == 1


def test_dlpack_device_and_stream_requests():
    t = rffi.from_dlpack(np.arange(4, dtype=np.int32))
    assert np.from_dlpack(t, device="cpu").ctypes.data == t.data_ptr()
    assert _managed(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))[0] == t.data_ptr()
    with pytest.raises(BufferError, match="cannot be exported to device"):
        t.__dlpack__(dl_device=(2, 0))
    for stream in (None, -1):
        t.__dlpack__(stream=stream)
    with pytest.raises(BufferError, match="without streams"):
        t.__dlpack__(stream=5)
    with pytest.raises(TypeError, match="stream must be an int"):
        t.__dlpack__(stream="default")
    with pytest.raises(TypeError, match="dl_device must be"):
        t.__dlpack__(dl_device="cpu")

    cuda = _on_device(np.arange(4, dtype=np.int32), 2)
    assert cuda.__dlpack_device__() == (2, 0)
    assert _api.PyCapsule_IsValid(cuda.__dlpack__(stream=7), b"dltensor") == 1
    with pytest.raises(BufferError, match="not a valid stream"):
        cuda.__dlpack__(stream=0)
    with pytest.raises(BufferError, match="cannot copy"):
        cuda.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="only host memory"):
        cuda.__dlpack__(dl_device=(1, 0))

    pinned = _on_device(np.arange(4, dtype=np.int32), 3)  # CUDA host memory: readable here
    data, flags = _managed(pinned.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))
    assert data != pinned.data_ptr() and flags & 2
    with pytest.raises(BufferError, match="copy=False forbids"):
        pinned.__dlpack__(dl_device=(1, 0), copy=False)


def test_numpy_array_protocol():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = rffi.from_dlpack(a)
    view = np.asarray(t)
    assert view.ctypes.data == a.ctypes.data and view.shape == (2, 3)
    assert np.array(t, copy=False).ctypes.data == a.ctypes.data
    copied = np.array(t)
    assert copied.ctypes.data != a.ctypes.data and (copied == a).all()
    as_float = np.asarray(t, dtype=np.float64)
    assert as_float.dtype == np.float64 and (as_float == a).all()
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(t, dtype=np.float64, copy=False)
    with pytest.raises(TypeError, match="device memory"):
        np.asarray(_on_device(a, 2))


def test_a_layout_reaching_past_2_63_bytes_is_refused():
    # One dimension of 4 whose (4 - 1) * stride is exactly 2^64 - 1: once accepted by the import's
    # fast path (its span, one more, wrapped to 0), whatever numpy says about the memory.
    base = np.zeros(1, dtype=np.int8)
    for stride in ((2**64 - 1) // 3, 2**62):
        a = np.lib.stride_tricks.as_strided(base, shape=(4,), strides=(stride,))
        with pytest.raises(ValueError, match=r"reaches more than 2\^63-1 bytes"):
            rffi.from_dlpack(a)


def test_not_a_dlpack_producer():
    with pytest.raises(TypeError, match="not a DLPack producer"):
        rffi.from_dlpack(3)


def test_from_dlpack_argument_forms():
    a = np.arange(6, dtype=np.int32)
    for t in (
        rffi.from_dlpack(a),
        rffi.from_dlpack(obj=a),
        rffi.from_dlpack(a, require_alignment=0, require_contiguous=False),
        rffi.from_dlpack(a.__dlpack__()),
    ):
        assert type(t) is rffi.Tensor and np.from_dlpack(t).tolist() == list(range(6))
    t = rffi.from_dlpack(a)
    assert rffi.from_dlpack(t) is t
    assert rffi.from_dlpack(t, require_contiguous=True).same_as(t) is False  # re-imported
    with pytest.raises(TypeError):
        rffi.from_dlpack()
    with pytest.raises(TypeError):
        rffi.from_dlpack(a, a)
    with pytest.raises(TypeError):
        rffi.from_dlpack(a, unknown=1)
    # A numpy array stays alive as long as a Tensor made from it.
    del t
    gc.collect()
    before = sys.getrefcount(a)
    ts = [rffi.from_dlpack(a) for _ in range(100)]
    assert sys.getrefcount(a) == before + 100
    del ts
    gc.collect()
    assert sys.getrefcount(a) == before


torch = None
try:  # torch is optional
    import torch  # noqa: F811
except ImportError:
    pass

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
needs_cuda = pytest.mark.skipif(
    torch is None or not torch.cuda.is_available(), reason="needs torch with CUDA"
)


@needs_torch
def test_torch_cpu_round_trip(testing):
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = rffi.from_dlpack(x)
    assert t.shape == (3, 4) and t.dtype == rffi.dtype(torch.float32)
    y = torch.from_dlpack(testing.echo(x))
    y[0, 0] = 100
    assert x[0, 0] == 100


@needs_cuda
def test_torch_cuda_tensor_and_stream(testing):
    from rffi import _lib

    x = torch.arange(8, device="cuda:0", dtype=torch.float32)
    t = rffi.from_dlpack(x)
    assert t.device == rffi.device("cuda", 0)
    y = torch.from_dlpack(testing.echo(t))
    assert y.data_ptr() == x.data_ptr()
    s = torch.cuda.Stream()
    seen = []
    with torch.cuda.stream(s):
        testing.apply(lambda arg: seen.append(_lib.EnvGetStream(2, 0)), x)
    assert seen == [s.cuda_stream]
    assert not _lib.EnvGetStream(2, 0)  # restored after the call


@needs_cuda
def test_torch_cuda_tensors_without_python_conversion(testing):
    # Only convertible arguments: the native path takes torch tensors through torch's DLPack
    # exchange API where torch publishes one, and the Python path otherwise; same results.
    from rffi import _lib

    x = torch.arange(8, device="cuda:0", dtype=torch.float32)
    s = torch.cuda.Stream()
    seen = []
    callback = rffi.convert(
        lambda a, b: seen.append((_lib.EnvGetStream(2, 0), a.data_ptr(), b.data_ptr(), b.shape))
    )
    base = sys.getrefcount(x)
    with torch.cuda.stream(s):
        for _ in range(3):
            testing.apply(callback, x, x[2:])
    assert seen == [(s.cuda_stream, x.data_ptr(), x.data_ptr() + 8, (6,))] * 3
    assert not _lib.EnvGetStream(2, 0)
    gc.collect()
    assert sys.getrefcount(x) == base
    y = torch.from_dlpack(testing.echo(x))
    assert y.data_ptr() == x.data_ptr()
