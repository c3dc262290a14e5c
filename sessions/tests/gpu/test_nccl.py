"""NCCL collectives through a session, checked against torch on the GPU machine:
`sessions/tests/gpu/run.sh` (see docs/CCL.md for a recorded run).

- A 1-rank communicator (one GPU is enough) runs every collective for every dtype and reduction.
- The same with one rank per GPU when there are 2 or more; skipped, saying so, otherwise.
- `load_params` with NCCL up: worker 0 reads, copies its shards to its GPU and scatters them;
  every worker's parameters are on its GPU and equal numpy's slices (1 rank, and one per GPU).

With CCL_TEST_DEVICE=cpu the same tests run on CPU tensors through the shared-memory backend
(no torch or GPU needed), which is how they are tried out away from the GPU machine.
"""

import json
import os
import struct

import ccl_helpers  # noqa: F401  (registers ccltest.* in this process, for worker 0)
import numpy as np
import pytest

import rffi

DEVICE = ccl_helpers.DEVICE
BACKEND = "nccl" if DEVICE == "cuda" else "shm"
DTYPES = ["float32", "float16", "bfloat16", "int32", "int64", "uint8"]
if DEVICE != "cuda":
    DTYPES.remove("bfloat16")  # numpy has none
OPS = ["sum", "prod", "min", "max", "avg"]


def gpu_count() -> int:
    if DEVICE != "cuda":
        return int(os.environ.get("CCL_TEST_WORLD", "2"))
    import torch

    return torch.cuda.device_count()


def session(n: int, python: bool):
    kw = {"device": "cuda"} if DEVICE == "cuda" else {}
    return rffi.ProcessSession(n, python=python, **kw)


def every_collective(sess):
    """Runs each collective for each dtype; returns (what, [per-rank max abs error])."""
    w = sess.num_workers
    inp = sess.get_global_func("ccltest.input")
    empty = sess.get_global_func("ccltest.empty")
    check = sess.get_global_func("ccltest.check")
    checks = []

    def record(what, kind, op, out, shape, dtype, seed):
        checks.append((what, dtype, check(kind, op, out, shape, dtype, seed)))

    for dtype in DTYPES:
        x = inp([3, 5], dtype, 1)
        for op in OPS:
            y = empty([3, 5], dtype)
            sess.allreduce(x, y, op)
            record(f"allreduce {op}", "allreduce", op, y, [3, 5], dtype, 1)
        x6 = inp([6], dtype, 2)
        big = empty([6 * w], dtype)
        sess.allgather(x6, big)
        record("allgather", "allgather", "", big, [6], dtype, 2)
        src = inp([4 * w], dtype, 3)
        out = empty([4], dtype)
        sess.reduce_scatter(src, out, "max")
        record("reduce_scatter max", "reduce_scatter", "max", out, [4 * w], dtype, 3)
        out = empty([4], dtype)
        sess.scatter_from_worker_0(src, out)
        record("scatter_from_worker_0", "scatter_from_worker_0", "", out, [4 * w], dtype, 3)
        y6 = empty([6], dtype)
        sess.broadcast_from_worker_0(x6, y6)
        record("broadcast_from_worker_0", "broadcast_from_worker_0", "", y6, [6], dtype, 2)
        big = empty([6 * w], dtype)
        sess.gather_to_worker_0(x6, big)
        record("gather_to_worker_0", "gather_to_worker_0", "", big, [6], dtype, 2)
        if w > 1:
            # Even ranks send to the next (odd) rank.
            y6 = empty([6], dtype)
            sess.send(x6, [r + 1 if r % 2 == 0 and r + 1 < w else -1 for r in range(w)])
            sess.recv(y6, [r - 1 if r % 2 == 1 else -1 for r in range(w)])
            record("send/recv", "recv", "", y6, [6], dtype, 2)
    sess.sync()
    return [(f"{what} {dtype}", [c.fetch(r) for r in range(w)]) for what, dtype, c in checks]


def assert_all_right(results):
    bad = []
    for what, errs in results:
        tol = 1e-2 if what.split()[-1].startswith(("float", "bfloat")) else 0.0
        if any(e > tol for e in errs):
            bad.append((what, errs))
    print(f"{len(results)} checks, {len(bad)} wrong")
    assert not bad, bad


def test_one_rank_runs_every_collective():
    with session(1, python=False) as sess:
        sess.init_ccl(BACKEND)
        assert_all_right(every_collective(sess))


def test_one_rank_per_gpu_runs_every_collective():
    n = gpu_count()
    if n < 2:
        pytest.skip(f"needs 2 or more GPUs (NCCL takes one rank per GPU); this machine has {n}")
    with session(n, python=True) as sess:
        sess.import_python_module("ccl_helpers")
        sess.init_ccl(BACKEND)
        assert_all_right(every_collective(sess))


def test_mismatched_tensors_are_errors_before_nccl():
    with session(1, python=False) as sess:
        sess.init_ccl(BACKEND)
        a = sess.get_global_func("ccltest.input")([4], "float32", 0)
        b = sess.get_global_func("ccltest.empty")([5], "float32")
        sess.allreduce(a, b, "sum")
        with pytest.raises(ValueError, match="same shape"):
            sess.sync()
        c = sess.get_global_func("ccltest.empty")([4], "int32")
        sess.allreduce(a, c, "sum")
        with pytest.raises(ValueError, match="same dtype"):
            sess.sync()
        sess.allreduce(a, a, "sum")
        sess.sync()


RNG = np.random.default_rng(5)
PARAMS = {  # name -> (array, split axis or None: replicated)
    "w32": (RNG.standard_normal((8, 12)).astype(np.float32), 1),
    "i64": (np.arange(96, dtype=np.int64).reshape(24, 4), 0),
    "u8": (np.arange(48, dtype=np.uint8).reshape(4, 12), 1),
    "bias": (RNG.standard_normal(6).astype(np.float16), None),
}
ST_DTYPES = {"float32": "F32", "int64": "I64", "uint8": "U8", "float16": "F16"}


def save_safetensors(path, arrays: dict) -> None:
    """The safetensors format by hand (the GPU machine's venv may lack the package)."""
    header, blobs, off = {}, [], 0
    for name, a in arrays.items():
        b = np.ascontiguousarray(a).tobytes()
        header[name] = {
            "dtype": ST_DTYPES[a.dtype.name],
            "shape": list(a.shape),
            "data_offsets": [off, off + len(b)],
        }
        off += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def shard_plan(n: int) -> dict:
    plan = {}
    for name, (a, axis) in PARAMS.items():
        if axis is not None:
            shard = [d // n if i == axis else d for i, d in enumerate(a.shape)]
            plan[name] = [["rffi.shard.split", [[n, *shard], a.dtype.name], n, axis]]
    return plan


def load_and_check(sess, tmp_path):
    """load_params through the communicator; every worker's parameters are on its GPU (CPU with
    shared memory) and equal numpy's slices; only worker 0 opened the weights."""
    n = sess.num_workers
    path = tmp_path / "model.safetensors"
    save_safetensors(path, {k: a for k, (a, _) in PARAMS.items()})
    opened = sess.get_global_func("rffi.shard.files_opened")
    before = [opened().fetch(r) for r in range(n)]
    # "auto" goes through NCCL when it is up; shared memory needs "ccl" (auto reads there).
    via = "auto" if BACKEND == "nccl" else "ccl"
    params = sess.load_params(path, shard_plan(n), progress=False, via=via)
    after = [opened().fetch(r) for r in range(n)]
    assert after == [before[0] + 1, *before[1:]], (before, after)
    device_of = sess.get_global_func("ccltest.device_of")
    to_host = sess.get_global_func("ccltest.to_host")
    checked = 0
    for name, (a, axis) in PARAMS.items():
        for r in range(n):
            want_dev = f"cuda:{ccl_helpers.gpu_of(r)}" if BACKEND == "nccl" else "cpu"
            assert device_of(params[name]).fetch(r) == want_dev, (name, r)
            got = np.from_dlpack(to_host(params[name]).fetch(r))
            want = a if axis is None else np.split(a, n, axis=axis)[r]
            assert got.dtype == want.dtype and got.shape == want.shape, (name, r)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} on worker {r}")
            checked += 1
    print(f"{checked} parameters checked on {n} workers")


def test_load_params_scatters_through_nccl_one_rank(tmp_path):
    with session(1, python=False) as sess:
        sess.init_ccl(BACKEND)
        load_and_check(sess, tmp_path)


def test_load_params_scatters_through_nccl_one_rank_per_gpu(tmp_path):
    n = gpu_count()
    if n < 2:
        pytest.skip(f"needs 2 or more GPUs (NCCL takes one rank per GPU); this machine has {n}")
    with session(n, python=True) as sess:
        sess.import_python_module("ccl_helpers")
        sess.init_ccl(BACKEND)
        load_and_check(sess, tmp_path)
