"""The kernels plugin from Python on CPU (numpy arrays passed directly): results against numpy,
destination-passing into numpy memory, scopes, introspection, errors.

    cargo build --release -p rffi-c -p rffi-kernels-plugin
    RFFI_LIBRARY_PATH=target/release PYTHONPATH=ffi-python:kernels/python \
        python -m pytest -q kernels/tests/python
"""

import numpy as np
import pytest
import rffi_kernels as K


@pytest.fixture(scope="module", autouse=True)
def plugin():
    K.load()


def test_op_functions_are_looked_up_once():
    assert K.relu is K.relu
    with pytest.raises(AttributeError):
        K.not_an_op  # noqa: B018


def test_ops_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 33)).astype(np.float32)
    b = rng.standard_normal((64, 33)).astype(np.float32)
    np.testing.assert_allclose(np.from_dlpack(K.add(a, b)), a + b, rtol=1e-6)
    np.testing.assert_allclose(np.from_dlpack(K.mul(a, 2.0)), a * 2, rtol=1e-6)
    np.testing.assert_allclose(np.from_dlpack(K.exp(a)), np.exp(a), rtol=1e-6)
    e = np.exp(a - a.max(-1, keepdims=True))
    np.testing.assert_allclose(
        np.from_dlpack(K.softmax(a)), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(np.from_dlpack(K.sum(a, -1)), a.sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.from_dlpack(K.matmul(a, b.T)), a @ b.T, rtol=1e-4, atol=1e-4)
    # Strided numpy views are read in place.
    np.testing.assert_allclose(np.from_dlpack(K.relu(a.T)), np.maximum(a.T, 0))
    i = np.arange(10, dtype=np.int64)
    assert (np.from_dlpack(K.sub(i, 3)) == i - 3).all()


def test_destination_passing_writes_numpy_memory():
    a = np.ones(1000, dtype=np.float64)
    out = np.zeros_like(a)
    assert K.add(a, a, out) is None
    assert (out == 2).all()


def test_scope_and_introspection():
    a = np.ones(4, dtype=np.float32)
    with K.scope(disable=["add"]):
        with pytest.raises(RuntimeError, match="disabled by a kernels scope"):
            K.add(a, a)
        assert next(o for o in K.list_ops() if o["op"] == "add")["enabled"] is False
    K.add(a, a)
    d = K.describe()
    assert d["selection"]["cpu"]["chosen"] == "cpu"
    with pytest.raises(ValueError, match="valid backends"):
        K.set_backend("tpu")


def test_errors_cross_as_python_exceptions():
    a = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="shapes differ"):
        K.add(a, np.ones((3, 2), dtype=np.float32))
    with pytest.raises(TypeError, match="dtypes differ"):
        K.add(a, a.astype(np.float64))
    ro = np.ones((2, 3), dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        K.exp(a, ro)
