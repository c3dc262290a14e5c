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
    with pytest.raises(ValueError, match="shapes do not broadcast"):
        K.add(a, np.ones((3, 2), dtype=np.float32))
    with pytest.raises(TypeError, match="dtypes differ"):
        K.add(a, a.astype(np.float64))
    ro = np.ones((2, 3), dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        K.exp(a, ro)


def test_broadcasting_follows_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3, 5)).astype(np.float32)
    b = rng.standard_normal((3, 1)).astype(np.float32)
    c = rng.standard_normal(5).astype(np.float32)
    np.testing.assert_allclose(np.from_dlpack(K.add(a, b)), a + b, rtol=1e-6)
    np.testing.assert_allclose(np.from_dlpack(K.mul(b, c)), b * c, rtol=1e-6)
    np.testing.assert_allclose(
        np.from_dlpack(K.sub(np.array(2.0, dtype=np.float32), c)), 2 - c, rtol=1e-6
    )
    t = rng.standard_normal((5, 3)).astype(np.float32).T
    np.testing.assert_allclose(np.from_dlpack(K.div(t, c)), t / c, rtol=1e-6)


def test_numbers_on_either_side():
    rng = np.random.default_rng(2)
    x = rng.uniform(0.5, 2.0, (3, 5)).astype(np.float32)
    for f, ref in [(K.add, np.add), (K.sub, np.subtract), (K.mul, np.multiply), (K.div, np.divide)]:
        for s in (3, 0.75):
            np.testing.assert_allclose(np.from_dlpack(f(x, s)), ref(x, np.float32(s)), rtol=1e-6)
            np.testing.assert_allclose(np.from_dlpack(f(s, x)), ref(np.float32(s), x), rtol=1e-6)
    # A strided tensor after the number, written in place.
    t = x.T.copy().T
    K.sub(1.0, t, t)
    np.testing.assert_allclose(t, 1.0 - x, rtol=1e-6)
    i = np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(np.from_dlpack(K.sub(10, i)), 10 - i)
    with pytest.raises(TypeError, match=r"a \(argument #0\) is a float but b is int32"):
        K.sub(1.5, i)
    with pytest.raises(TypeError, match="both numbers"):
        K.add(1, 2)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_reductions_match_numpy(name):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 7, 8)).astype(np.float64)
    ref = getattr(np, name)
    f = getattr(K, name)
    for axis in [None, 0, -1, (0, 2), [1, 2]]:
        for keepdims in [False, True]:
            want = ref(x, axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdims)
            got = np.from_dlpack(f(x, axis=axis, keepdims=keepdims))
            np.testing.assert_allclose(got, want, rtol=1e-12)
    # torch's name for the axis, and a transposed input.
    np.testing.assert_allclose(np.from_dlpack(f(x.T, dim=1)), ref(x.T, axis=1), rtol=1e-12)


def test_argmax_and_its_output():
    x = np.array([[1.0, np.nan, 3.0], [3.0, 2.0, 3.0]], dtype=np.float32)
    got = np.from_dlpack(K.argmax(x, axis=1))
    assert got.dtype == np.int64 and got.tolist() == [1, 0]
    assert np.from_dlpack(K.argmax(x)).tolist() == 1
    out = np.zeros((2, 1), dtype=np.int64)
    assert K.argmax(x, 1, True, out) is None
    assert out.tolist() == [[1], [0]]
    with pytest.raises(TypeError, match="the result is int64 but out"):
        K.argmax(x, 1, False, np.zeros(2, dtype=np.float32))


def test_norms_and_gelu_forms():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 64)).astype(np.float64) * 3 + 1
    w = rng.standard_normal(64)
    b = rng.standard_normal(64)
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * w + b
    np.testing.assert_allclose(np.from_dlpack(K.layer_norm(x, w, b)), want, rtol=1e-10)
    ms = (x * x).mean(-1, keepdims=True)
    want = x / np.sqrt(ms + 1e-6) * w
    np.testing.assert_allclose(np.from_dlpack(K.rms_norm(x, w, eps=1e-6)), want, rtol=1e-10)
    k = np.sqrt(2 / np.pi)
    # This reference cancels for negative x (1 + tanh -> 0): an absolute slack there.
    want = 0.5 * x * (1 + np.tanh(k * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(np.from_dlpack(K.gelu(x, "tanh")), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.from_dlpack(K.softmax(x, axis=0)).sum(0), np.ones(64))


def test_explain_says_which_walk():
    x = np.ones((300, 400), dtype=np.float32)
    e = K.explain("sum", x, 0)
    assert e["backend"] == "cpu" and e["variant"]["kernel"] == "reduce: columns"
    assert e["out_shape"] == [400]
    with pytest.raises(ValueError, match="unknown op `summ`"):
        K.explain("summ", x)
