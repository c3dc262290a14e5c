"""The CUDA kernels from Python, against PyTorch, on torch CUDA tensors passed directly (DLPack,
zero copy), on a non-default torch stream.

Needs a CUDA GPU, torch, the rffi package (``ffi-python``) and the kernels plugin:

    cargo build --release -p rffi-c -p rffi-kernels-plugin
    RFFI_LIBRARY_PATH=target/release PYTHONPATH=ffi-python \
        python -m pytest -q kernels/tests/gpu/test_kernels_cuda.py

``RFFI_KERNELS_PLUGIN`` points at another build of ``librffi_kernels_plugin.so``.
"""

from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import rffi  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLUGIN = os.environ.get(
    "RFFI_KERNELS_PLUGIN", os.path.join(ROOT, "target", "release", "librffi_kernels_plugin.so")
)

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int32, torch.int64]
TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-10, atol=1e-10),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
}


@pytest.fixture(scope="module")
def k():
    rffi.load_module(PLUGIN)

    class K:
        def __getattr__(self, name):
            return rffi.get_global_func("kernels." + name)

    return K()


@pytest.fixture()
def stream():
    """Every test runs on a fresh non-default stream."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        yield s
    s.synchronize()


def as_torch(x):
    return x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)


def rand(shape, dtype, lo=-4.0, hi=4.0, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if dtype in INTS:
        return torch.randint(-1000, 1000, shape, device="cuda", dtype=dtype, generator=g)
    x = torch.rand(shape, device="cuda", dtype=torch.float64, generator=g) * (hi - lo) + lo
    return x.to(dtype)


def close(got, want, dtype):
    got = as_torch(got)
    assert got.device == want.device
    if dtype in INTS:
        assert torch.equal(got, want)
    else:
        torch.testing.assert_close(got, want, **TOL[dtype])


BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary(k, stream, op, dtype):
    if op == "div" and dtype in INTS:
        pytest.skip("div is float-only")
    a = rand((37, 129), dtype, seed=1)
    b = rand((37, 129), dtype, lo=0.5, hi=3.0, seed=2)
    f = getattr(k, op)
    close(f(a, b), BINARY[op](a, b), dtype)
    close(f(a, 3), BINARY[op](a, 3), dtype)
    # A number first, as numpy takes it (`sub(3, b)` is 3 - b).
    close(f(3, b), BINARY[op](torch.full_like(b, 3), b), dtype)
    # Destination-passing writes into the torch tensor itself (zero copy): same storage.
    out = torch.empty_like(a)
    ptr = out.data_ptr()
    assert f(a, b, out) is None
    assert out.data_ptr() == ptr
    close(out, BINARY[op](a, b), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_reductions_softmax(k, stream, dtype):
    a = rand((37, 129), dtype, seed=3)
    close(k.relu(a), torch.relu(a), dtype)
    close(k.gelu(a), torch.nn.functional.gelu(a), dtype)
    close(k.exp(a), torch.exp(a), dtype)
    acc = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    close(k.sum(a), a.to(acc).sum().to(dtype), dtype)
    close(k.sum(a, -1), a.to(acc).sum(-1).to(dtype), dtype)
    # Rows that fit in registers (whole 16-byte packs, up to 4 per thread at 1024 threads) and
    # rows that do not (odd lengths, longer rows).
    shapes = [(37, 129), (3, 5000), (1000, 3), (2, 8197), (4, 2, 64), (16, 4096), (3, 16384)]
    shapes += [(2, 32768), (2, 40000)]
    for shape in shapes:
        x = rand(shape, dtype, lo=-8, hi=8, seed=4)
        close(k.softmax(x), torch.softmax(x, -1), dtype)
        close(k.softmax(x, -1), torch.softmax(x, -1), dtype)
    # Masked entries (-inf) count as zero; a fully masked row is NaN, as in torch.
    x = rand((8, 4096), dtype, lo=-8, hi=8, seed=5)
    x[:, ::3] = float("-inf")
    x[5] = float("-inf")
    got = as_torch(k.softmax(x))
    assert got[5].isnan().all()
    torch.testing.assert_close(got, torch.softmax(x, -1), equal_nan=True, **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_matmul(k, stream, dtype):
    a = rand((33, 65), dtype, -1, 1, seed=5)
    b = rand((65, 17), dtype, -1, 1, seed=6)
    tol = (
        dict(rtol=5e-2, atol=5e-2)
        if dtype in (torch.float16, torch.bfloat16)
        else dict(rtol=1e-4, atol=1e-4)
    )
    torch.testing.assert_close(as_torch(k.matmul(a, b)), a @ b, **tol)
    ab = rand((3, 2, 33, 65), dtype, -1, 1, seed=7)
    bb = rand((3, 2, 65, 17), dtype, -1, 1, seed=8)
    torch.testing.assert_close(as_torch(k.matmul(ab, bb)), ab @ bb, **tol)
    torch.testing.assert_close(as_torch(k.matmul(ab, b)), ab @ b, **tol)
    # Transposed operands are read in place (cuBLAS transposes), sliced ones are copied first.
    bt = rand((17, 65), dtype, -1, 1, seed=9).t()
    torch.testing.assert_close(as_torch(k.matmul(a, bt)), a @ bt, **tol)
    sl = rand((33, 130), dtype, -1, 1, seed=10)[:, ::2]
    torch.testing.assert_close(as_torch(k.matmul(sl, b)), sl @ b, **tol)
    out = torch.empty(33, 17, device="cuda", dtype=dtype)
    k.matmul(a, b, out)
    torch.testing.assert_close(out, a @ b, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_strided_and_in_place(k, stream, dtype):
    base = rand((40, 24), dtype, seed=11)
    t = base.t()
    s = base[:, 3::2]
    for x in (t, s):
        close(k.exp(x), torch.exp(x), dtype)
        close(k.softmax(x), torch.softmax(x, -1), dtype)
        close(k.mul(x, x), x * x, dtype)
        close(k.sub(2.0, x), 2.0 - x, dtype)
        close(k.sum(x, -1), x.float().sum(-1).to(dtype), dtype)
    # Into a transposed destination, and in place.
    out = torch.empty(24, 40, device="cuda", dtype=dtype).t()
    k.exp(base, out)
    close(out, torch.exp(base), dtype)
    want = base + base
    k.add(base, base, base)
    close(base, want, dtype)


def test_runs_on_the_current_torch_stream(k):
    """The kernel is queued behind work already on the caller's stream: if it ran on another
    stream it would read `x` before the fill and produce exp(0) = 1."""
    s = torch.cuda.Stream()
    x = torch.zeros(1 << 20, device="cuda")
    out = torch.empty_like(x)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)
        x.fill_(1.0)
        k.exp(x, out)
    s.synchronize()
    torch.testing.assert_close(out, torch.full_like(x, 2.718281828459045))


def test_zero_size_and_0d(k, stream):
    e = torch.empty(0, 4, device="cuda")
    assert as_torch(k.add(e, e)).shape == (0, 4)
    assert as_torch(k.sum(e)).item() == 0.0
    z = as_torch(k.matmul(torch.empty(3, 0, device="cuda"), torch.empty(0, 2, device="cuda")))
    assert torch.equal(z, torch.zeros(3, 2, device="cuda"))
    s = torch.tensor(2.5, device="cuda")
    assert as_torch(k.mul(s, s)).item() == 6.25
    assert as_torch(k.softmax(s)).item() == 1.0


def test_errors(k, stream):
    a = torch.ones(4, device="cuda")
    with pytest.raises(ValueError, match="is on cuda:0 but b .argument #1. is on cpu:0"):
        k.add(a, torch.ones(4))
    with pytest.raises(ValueError, match="shapes do not broadcast"):
        k.add(a, torch.ones(5, device="cuda"))
    with pytest.raises(TypeError, match="no implementation for int8"):
        k.add(a.to(torch.int8), a.to(torch.int8))
    with pytest.raises(ValueError, match="overlaps"):
        big = torch.ones(8, device="cuda")
        k.add(big[:6], big[:6], big[2:])


def test_describe_names_the_gpu(k):
    d = json.loads(k.describe())
    assert d["selection"]["cuda"]["chosen"] == "cuda"
    cuda = next(b for b in d["backends"] if b["name"] == "cuda")
    assert cuda["available"] and cuda["devices"][0]["arch"].startswith("sm_")
    ops = json.loads(k.list_ops())
    assert {o["op"] for o in ops} >= {"add", "softmax", "matmul"}
