"""The CUDA kernels against a float64 reference computed by torch, on torch CUDA tensors passed
directly: float32 within 1e-5 relative, float16 / bfloat16 within one unit in the last place of
the reference (plus 1/256 of an ulp of the largest magnitude, for results that cancel to near
zero).
Every shape class: odd sizes, misaligned base pointers (a view one element into a buffer),
strided and transposed inputs, broadcasting, zero-size inputs.

    RFFI_LIBRARY_PATH=target/release PYTHONPATH=ffi-python:kernels/python \\
        python -m pytest -q kernels/tests/gpu/test_shapes_torch.py
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import rffi_kernels as K  # noqa: E402

F = torch.nn.functional
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
MANT = {torch.float16: (10, -14), torch.bfloat16: (7, -126)}


@pytest.fixture(scope="module", autouse=True)
def plugin():
    K.load(os.environ.get("RFFI_KERNELS_PLUGIN"))


@pytest.fixture(autouse=True)
def stream():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        yield s
    s.synchronize()


def T(x):
    return x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)


def ulp(ref, dtype):
    """One unit in the last place of `ref` (float64) in a 16-bit dtype."""
    mant, emin = MANT[dtype]
    e = torch.floor(torch.log2(ref.abs().clamp_min(2.0**emin))).clamp_min(emin)
    return torch.exp2(e - mant)


def check(got, ref, dtype, what, rtol=1e-5):
    """`got` (dtype) against `ref` (float64, from the same rounded inputs)."""
    got = T(got).double()
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)} vs {tuple(ref.shape)}"
    nan = ref.isnan()
    assert torch.equal(got.isnan(), nan), f"{what}: NaN positions differ"
    g, r = got[~nan], ref[~nan]
    if r.numel() == 0:
        return
    scale = r.abs().max()
    if dtype == torch.float32:
        slack = rtol * r.abs() + 1e-6 * scale
    else:
        slack = ulp(r, dtype) + 2.0**-8 * ulp(scale, dtype)
    bad = ((g - r).abs() > slack) & (g != r)
    if bad.any():
        i = bad.nonzero()[0].item()
        pytest.fail(
            f"{what} [{dtype}]: {bad.sum().item()} of {r.numel()} off, e.g. got {g[i].item()!r}"
            f" want {r[i].item()!r} (slack {slack[i].item():.3g})"
        )


def rand(shape, dtype, lo=-4.0, hi=4.0, offset=0, seed=0):
    """Random values of `dtype` in a view `offset` elements into a fresh buffer."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    n = 1
    for d in shape:
        n *= d
    flat = torch.rand(n + offset, device="cuda", dtype=torch.float64, generator=g) * (hi - lo) + lo
    return flat.to(dtype)[offset:].view(shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("offset", [0, 1])
def test_elementwise_and_broadcasting(dtype, offset):
    a = rand((37, 1029), dtype, offset=offset, seed=1)
    b = rand((1029,), dtype, 0.5, 2.0, seed=2)
    c = rand((37, 1), dtype, 0.5, 2.0, offset=offset, seed=3)
    ad, bd, cd = a.double(), b.double(), c.double()
    check(K.add(a, b), ad + bd, dtype, "a + row")
    check(K.mul(c, b), cd * bd, dtype, "col * row")
    check(K.div(a, c), ad / cd, dtype, "a / col")
    check(K.sub(a, torch.tensor(1.5, device="cuda", dtype=dtype)), ad - 1.5, dtype, "a - 0-d")
    # A number first (as numpy): packed where aligned, element by element where not.
    check(K.sub(1.5, a), 1.5 - ad, dtype, "1.5 - a")
    check(K.div(1.0, c), 1.0 / cd, dtype, "1 / col")
    check(K.div(2.0, a.t()), 2.0 / ad.t(), dtype, "2 / transposed")
    check(K.add(a.t(), a.t()), (ad + ad).t(), dtype, "transposed")
    # Rows of whole packs: the vectorized broadcast kernel.
    m = rand((37, 1024), dtype, seed=14)
    r = rand((1024,), dtype, offset=offset, seed=15)
    md, rd = m.double(), r.double()
    check(K.add(m, r), md + rd, dtype, "rows + row")
    check(K.mul(c, m), cd * md, dtype, "col * rows")
    check(K.sub(c, r), cd - rd, dtype, "col - row")
    x = rand((1_000_003,), dtype, -10, 10, offset=offset, seed=4)
    xd = x.double()
    check(K.exp(x), xd.exp(), dtype, "exp")
    # x Phi(x) through erfc: torch's own 0.5 x (1 + erf) loses every digit below x = -7.
    check(K.gelu(x), 0.5 * xd * torch.special.erfc(-xd / 2**0.5), dtype, "gelu erf")
    # The tanh form in float64 without cancellation: x sigmoid(2u).
    u = (2 / torch.pi) ** 0.5 * (xd + 0.044715 * xd**3)
    check(K.gelu(x, "tanh"), xd * torch.sigmoid(2 * u), dtype, "gelu tanh")
    check(K.relu(x), xd.clamp_min(0), dtype, "relu")
    out = torch.empty_like(a)
    assert K.add(a, b, out) is None
    check(out, ad + bd, dtype, "add into out")
    # Every other column (the 32-bit strided kernels; rounds of four elements a thread where
    # the tuning's strided_rounds asks, with a remainder of fewer than four).
    w = rand((1201, 2 * 1001), dtype, offset=offset, seed=16)
    wd = w.double()
    check(K.mul(w[:, ::2], 2.0), wd[:, ::2] * 2.0, dtype, "a[:, ::2] * 2")
    check(K.add(w[:, ::2], w[:, 1::2]), wd[:, ::2] + wd[:, 1::2], dtype, "a[:, ::2] + a[:, 1::2]")
    check(K.exp(w[:, 1::2]), wd[:, 1::2].exp(), dtype, "exp a[:, 1::2]")
    # Rows of whole packs read every second element or sliced (the halves kernels where the
    # tuning's halves asks: a pack's first or second element on, by the offset; other phases,
    # 4-byte-aligned slices and the transposed output take the strided kernels).
    h = rand((301, 2 * 1024), dtype, offset=offset, seed=17)
    hd = h.double()
    ev, od = h[:, ::2], h[:, 1::2]
    evd, odd = hd[:, ::2], hd[:, 1::2]
    check(K.mul(ev, 2.0), evd * 2.0, dtype, "rows[:, ::2] * 2")
    check(K.sub(od, 0.5), odd - 0.5, dtype, "rows[:, 1::2] - 0.5")
    check(K.sub(0.5, ev), 0.5 - evd, dtype, "0.5 - rows[:, ::2]")
    check(K.add(ev, od), evd + odd, dtype, "rows[:, ::2] + rows[:, 1::2]")
    check(K.mul(od, h[:, :1024]), odd * hd[:, :1024], dtype, "rows[:, 1::2] * rows[:, :1024]")
    check(K.gelu(od), 0.5 * odd * torch.special.erfc(-odd / 2**0.5), dtype, "gelu rows[:, 1::2]")
    check(K.exp(h[:, 8:1008]), hd[:, 8:1008].exp(), dtype, "exp rows[:, 8:1008]")
    check(K.sub(h[5, 1::2], h[7, ::2]), hd[5, 1::2] - hd[7, ::2], dtype, "row[1::2] - row[::2]")
    out = torch.empty(1024, 301, device="cuda", dtype=dtype).t()
    assert K.add(ev, od, out) is None
    check(out, evd + odd, dtype, "rows[:, ::2] + rows[:, 1::2] into a transposed out")
    # A row count and length that leave a partial tile and a last unit per thread.
    q = rand((7, 2 * 36), dtype, offset=offset, seed=18)
    check(K.mul(q[:, 1::2], -3.0), q.double()[:, 1::2] * -3.0, dtype, "7 x 36 [:, 1::2] * -3")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_reductions_on_any_axes(dtype):
    pos = rand((37, 129, 5), dtype, 0.5, 3.0, offset=1, seed=5)
    mixed = rand((37, 129, 5), dtype, -4.0, 4.0, seed=6)
    pd, md = pos.double(), mixed.double()
    for axis in [None, 0, 1, -1, (0, 2), (1, 2)]:
        for keepdims in [False, True]:
            what = f"axis {axis} keepdims {keepdims}"
            dims = axis if axis is not None else (0, 1, 2)
            check(K.sum(pos, axis, keepdims), pd.sum(dims, keepdims), dtype, "sum " + what)
            check(K.mean(pos, axis, keepdims), pd.mean(dims, keepdims), dtype, "mean " + what)
            check(K.max(mixed, axis, keepdims), md.amax(dims, keepdims), dtype, "max " + what)
            check(K.min(mixed, axis, keepdims), md.amin(dims, keepdims), dtype, "min " + what)
            if not isinstance(axis, tuple):
                want = md.argmax(axis, keepdims) if axis is not None else md.argmax()
                if axis is None and keepdims:
                    want = want.view(1, 1, 1)
                got = T(K.argmax(mixed, axis, keepdims))
                assert got.dtype == torch.int64 and torch.equal(got, want), "argmax " + what
    # Long: one output, few long rows, few long columns; transposed.
    # (float16 sums of 4M values of 1 would overflow: smaller values there.)
    lo = 1e-3 if dtype == torch.float16 else 0.5
    v = rand((1 << 22,), dtype, lo, 3 * lo, offset=1, seed=7)
    check(K.sum(v), v.double().sum(), dtype, "sum 4M")
    # Chunked too: the combine divides the mean once, and keeps the maximum's NaN rules.
    check(K.mean(v), v.double().mean(), dtype, "mean 4M")
    check(K.max(v), v.double().max(), dtype, "max 4M")
    r = rand((3, 300_007), dtype, -3, 3, seed=8)
    assert torch.equal(T(K.argmax(r, -1)), r.double().argmax(-1)), "argmax long rows"
    # Chunked reductions one after another on the stream, outputs and chunks growing and
    # shrinking (a single pass's counters, in memory kept for the next call where a config asks).
    for rows, n in [(1, 1 << 22), (5, 1 << 20), (1, 1 << 18), (12, 1 << 19), (2, 1 << 21)]:
        y = rand((rows, n), dtype, lo, 3 * lo, seed=rows)
        check(K.sum(y, -1), y.double().sum(-1), dtype, f"sum {rows} x {n}")
        m = rand((rows, n), dtype, -3, 3, seed=rows + 1)
        check(K.max(m, -1), m.double().amax(-1), dtype, f"max {rows} x {n}")
        assert torch.equal(T(K.argmax(m, -1)), m.double().argmax(-1)), f"argmax {rows} x {n}"
    cl = rand((100_003, 7), dtype, 0.5, 1.5, seed=9)
    check(K.mean(cl, 0), cl.double().mean(0), dtype, "mean long columns")
    t = rand((129, 37), dtype, 0.5, 1.5, seed=10).t()
    check(K.sum(t, -1), t.double().sum(-1), dtype, "sum transposed")
    # Ties and NaN: the first index; NaN is the largest.
    x = torch.tensor([[1.0, 3.0, 3.0, float("nan")], [2.0, 5.0, 5.0, 1.0]], device="cuda")
    assert T(K.argmax(x.to(dtype), 1)).tolist() == [3, 1]
    assert T(K.max(x.to(dtype), 1)).isnan().tolist() == [True, False]
    # Many rows, a warp each (the 16-bit key and running-maximum kernels where the configs
    # choose them): ties, a NaN, -0 beside +0, ascending rows, rows of -inf; odd lengths, a
    # misaligned start.
    for length, offset in [(1001, 1), (4096, 0), (4099, 3)]:
        g = torch.Generator(device="cuda").manual_seed(length)
        x = torch.randint(-3, 3, (2048, length + offset), device="cuda", generator=g)
        x = x.to(dtype)[:, offset:]
        x[::7, length // 2] = float("nan")
        x[1::7] = 0.0
        x[1::7, 3] = -0.0
        x[2::7] = torch.arange(length, device="cuda").to(dtype)
        x[3::7] = float("-inf")
        x[4::7, -1] = 7.0
        got = T(K.argmax(x, -1))
        assert torch.equal(got, x.argmax(-1)), f"argmax of 2048 rows of {length} +{offset}"


ROWS = [1, 7, 32, 100, 256, 1000, 1024, 4096, 32000, 50257, 128256, 262144]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("length", ROWS)
def test_softmax_every_row_length(dtype, length):
    rows = max(2, min(300, (1 << 21) // length))
    for offset in [0, 1]:
        x = rand((rows, length), dtype, -8, 8, offset=offset, seed=length)
        check(K.softmax(x), x.double().softmax(-1), dtype, f"softmax {rows}x{length} +{offset}")
    if length >= 16384:
        # More rows than SMs (block or online variants) as well as few (split).
        x = rand((140, length), dtype, -8, 8, offset=length % 2, seed=11)
        check(K.softmax(x), x.double().softmax(-1), dtype, f"softmax 140x{length}")
    if length == 262144:
        # Rows whose chunks over a cluster of 8 outgrow what two blocks an SM stage (float32
        # 262147, 16-bit 524291: staged in part where a config sets cluster_part), x at either
        # phase against out.
        n = length + 3 if dtype == torch.float32 else 2 * length + 3
        for offset in [0, 1]:
            x = rand((140, n), dtype, -8, 8, offset=offset, seed=13)
            check(K.softmax(x), x.double().softmax(-1), dtype, f"softmax 140x{n} +{offset}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_softmax_long_rows_many_rounds(dtype):
    # More rows than the device holds blocks (a persistent grid takes several rounds, where a
    # config pipelines rows through registers: softmax_pipe_CN), rows at every alignment with
    # out at the same phase as x (an odd length, both views one element into their buffers),
    # in place, and masks, a row of -inf and a NaN in every round.
    for n in [16384, 32000, 50257, 128256, 262144]:
        rows = 300 if n <= 128256 else 200
        x = rand((rows, n), dtype, -8, 8, offset=1, seed=n)
        x[:, ::3][5::17] = float("-inf")
        x[6::17] = float("-inf")
        x[7::17, n // 2] = float("nan")
        want = x.double().softmax(-1)
        out = torch.empty(rows * n + 1, device="cuda", dtype=dtype)[1:].view(rows, n)
        K.softmax(x, out=out)
        check(out, want, dtype, f"softmax {rows}x{n} +1 into +1")
        K.softmax(x, out=x)
        check(x, want, dtype, f"softmax {rows}x{n} in place")


def test_softmax_other_axes_and_masks():
    x = rand((300, 7, 5), torch.float32, -8, 8, seed=12)
    for axis in [0, 1]:
        check(K.softmax(x, axis), x.double().softmax(axis), torch.float32, f"axis {axis}")
    # Rows of one element: 1, or NaN where x is infinite or NaN (as torch).
    special = [[1.5], [float("inf")], [float("-inf")], [float("nan")], [-3.0]]
    one = torch.tensor(special, device="cuda")
    got, want = T(K.softmax(one)), one.softmax(-1)
    assert torch.equal(got.isnan(), want.isnan()), got
    assert torch.equal(got[~got.isnan()], want[~want.isnan()]), got
    # Masks, a row of -inf (NaN, as torch) and a NaN in registers (4096), staged in shared
    # memory (50257, odd: rows at every alignment) and read twice (131072).
    # (131072 over a cluster's shared memory where a config asks: more rows than SMs.)
    for n in [4096, 50257, 131072]:
        m = rand((8 if n < 131072 else 140, n), torch.bfloat16, -8, 8, offset=n % 2, seed=13)
        m[:, ::3] = float("-inf")
        m[5] = float("-inf")
        m[6, n // 2] = float("nan")
        check(K.softmax(m), m.double().softmax(-1), torch.bfloat16, f"masked {n}")
    # A NaN in rows that blocks of fewer than 32 warps take (the register variant, 2048; the
    # online variant, strided rows of 5000): their (max, sum) merges meet the empty warps' pairs,
    # and the row is NaN in every column.
    for shape, axis in [((64, 2048), -1), ((5000, 64), 0)]:
        m = rand(shape, torch.float32, -8, 8, seed=15)
        m[(3, 1000) if axis == -1 else (1000, 3)] = float("nan")
        m[(4, 7) if axis == -1 else (7, 4)] = float("-inf")
        want = m.double().softmax(axis)
        check(K.softmax(m, axis), want, torch.float32, f"NaN in {shape} axis {axis}")
    # Short rows, several a warp where a config sets lane_packs: a row of -inf and a NaN beside
    # finite rows in the same warp, and a row count that leaves the last block part empty.
    for dtype, n in [(torch.float32, 32), (torch.bfloat16, 256), (torch.float16, 256)]:
        m = rand((301, n), dtype, -8, 8, seed=14)
        m[:, ::5] = float("-inf")
        m[5] = float("-inf")
        m[6, n // 2] = float("nan")
        m[7] = 0.0
        check(K.softmax(m), m.double().softmax(-1), dtype, f"masked {n} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("length", [7, 256, 1024, 4096, 4097, 16384, 32768, 65536, 131072])
def test_norms(dtype, length):
    rows = max(2, min(257, (1 << 20) // length))
    for offset in [0, 1]:
        x = rand((rows, length), dtype, -3, 5, offset=offset, seed=length)
        w = rand((length,), dtype, 0.5, 1.5, offset=offset, seed=1)
        b = rand((length,), dtype, -1, 1, seed=2)
        xd, wd, bd = x.double(), w.double(), b.double()
        what = f"{rows}x{length} +{offset}"
        want = F.layer_norm(xd, (length,), wd, bd, 1e-5)
        check(K.layer_norm(x, w, b), want, dtype, "layer_norm " + what)
        check(K.layer_norm(x), F.layer_norm(xd, (length,)), dtype, "layer_norm plain " + what)
        eps = torch.finfo(dtype).eps
        want = F.rms_norm(xd, (length,), wd, eps)
        check(K.rms_norm(x, w), want, dtype, "rms_norm " + what)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_norms_long_rows_many_rounds(dtype):
    # More rows than the device holds blocks (several rounds of a persistent grid where a config
    # pipelines rows through registers, NAME_pipe_CN, or stages them in tiles, NAME_tile:
    # aligned rows of whole packs), with weight and bias, without, in place; and rows one
    # element into their buffers (other variants).
    cases = [(1024, 6000, 0), (4096, 3000, 0), (8192, 1500, 0), (16384, 300, 0)]
    cases += [(32768, 300, 0), (65536, 300, 0), (131072, 150, 0), (32768, 300, 1)]
    for n, rows, offset in cases:
        x = rand((rows, n), dtype, -3, 5, offset=offset, seed=n)
        w = rand((n,), dtype, 0.5, 1.5, seed=1)
        b = rand((n,), dtype, -1, 1, seed=2)
        xd, wd, bd = x.double(), w.double(), b.double()
        what = f"{rows}x{n} +{offset}"
        out = torch.empty(rows * n + offset, device="cuda", dtype=dtype)[offset:].view(rows, n)
        K.layer_norm(x, w, b, out=out)
        check(out, F.layer_norm(xd, (n,), wd, bd, 1e-5), dtype, "layer_norm " + what)
        eps = torch.finfo(dtype).eps
        K.rms_norm(x, w, eps, out=out)
        check(out, F.rms_norm(xd, (n,), wd, eps), dtype, "rms_norm " + what)
        K.layer_norm(x, out=x)
        check(x, F.layer_norm(xd, (n,)), dtype, "layer_norm in place " + what)


def test_zero_size():
    e = torch.empty(0, 5, device="cuda")
    assert T(K.sum(e, 0)).tolist() == [0.0] * 5
    assert T(K.mean(e, 0)).isnan().all()
    assert T(K.softmax(e)).shape == (0, 5)
    assert T(K.layer_norm(e)).shape == (0, 5)
    assert T(K.add(e, torch.ones(5, device="cuda"))).shape == (0, 5)
    with pytest.raises(ValueError, match="cannot reduce over zero elements"):
        K.max(e, 0)


def test_explain_names_the_variant():
    x = torch.empty(8192, 50257, device="cuda", dtype=torch.bfloat16)
    e = K.explain("softmax", x)
    assert e["backend"] == "cuda" and e["variant"]["kernel"] == "softmax_smem", e
    assert "shared memory" in e["variant"]["why"], e
    # A row of 256 KiB is more than a block's shared memory on any current device: staged over
    # a cluster of 4 blocks on Hopper (sm_90.json), else read twice.
    e = K.explain("softmax", torch.empty(1024, 131072, device="cuda", dtype=torch.bfloat16))
    hopper = torch.cuda.get_device_capability() == (9, 0)
    assert e["variant"]["kernel"] == ("softmax_cluster_4" if hopper else "softmax_online"), e
    # A float32 row of 1 MiB: pipelined on Hopper, a cluster of 8 blocks each holding its chunk
    # in registers while the next row's arrives, on a persistent grid; else read twice. Not
    # back to back (a slice of longer rows): 8 blocks of 128 KiB do not fit two an SM, staged
    # in part.
    e = K.explain("softmax", torch.empty(256, 262144, device="cuda"))
    assert e["variant"]["kernel"] == ("softmax_pipe_8" if hopper else "softmax_online"), e
    assert not hopper or "persistent grid" in e["variant"]["why"], e
    sliced = torch.empty(256, 262148, device="cuda")[:, :262144]
    e = K.explain("softmax", sliced)
    assert e["variant"]["kernel"] == ("softmax_cluster_part_8" if hopper else "softmax_online"), e
    # A bfloat16 normalization row of 128 KiB: pipelined on Hopper (a block of 1024 threads).
    x = torch.empty(4096, 65536, device="cuda", dtype=torch.bfloat16)
    e = K.explain("rms_norm", x, torch.empty(65536, device="cuda", dtype=torch.bfloat16))
    assert (e["variant"]["kernel"] == "rms_norm_pipe_1") == hopper, e
    assert "sm_90.json" in (e["variant"]["config"] or "") or e["variant"]["config"] is None
    # A full sum: chunks over the SMs, combined by the last block of each (Hopper) or by a
    # second kernel.
    e = K.explain("sum", torch.empty(1 << 20, device="cuda"))
    want = "sum_rows_block" if hopper else "sum_rows_block + sum_combine"
    assert e["variant"]["kernel"] == want, e
