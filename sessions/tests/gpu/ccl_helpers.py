"""Worker-side helpers of the NCCL tests: each worker makes its own input tensors on its GPU and
checks a collective's output against the same reduction computed with torch from every rank's
input (the inputs are deterministic, so each worker can rebuild its peers').

Imported on every worker (``sess.import_python_module("ccl_helpers")``). Without torch or a GPU
(``CCL_TEST_DEVICE=cpu``, for trying the tests out with the shared-memory backend) it uses numpy
on the CPU instead.
"""

import os

import numpy as np

import rffi

DEVICE = os.environ.get("CCL_TEST_DEVICE", "cuda")
if DEVICE == "cuda":
    import torch

    DTYPES = {
        "float32": torch.float32,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "int32": torch.int32,
        "int64": torch.int64,
        "uint8": torch.uint8,
    }


def rank() -> int:
    return rffi.get_global_func("session.worker_rank")()


def world() -> int:
    return rffi.get_global_func("session.world_size")()


def values(r: int, numel: int, seed: int) -> np.ndarray:
    # Small whole numbers, exact in every dtype even as products of a few ranks.
    return (np.arange(numel) + 3 * r + seed) % 4 + 1.0


def make(r: int, shape, dtype: str, seed: int):
    v = values(r, int(np.prod(shape)), seed).reshape(shape)
    if DEVICE == "cuda":
        t = torch.tensor(v, dtype=torch.float64).to(DTYPES[dtype])
        return t.to(f"cuda:{gpu_of(r)}")
    return v.astype(dtype if dtype != "bfloat16" else "float32")


def gpu_of(r: int) -> int:
    ids = os.environ.get("CCL_TEST_DEVICE_IDS")
    return int(ids.split(",")[r]) if ids else r


@rffi.register_global_func("ccltest.input")
def _input(shape, dtype, seed):
    """This worker's input: `values(rank)` as a tensor of `shape` and `dtype`."""
    return make(rank(), list(shape), dtype, seed)


@rffi.register_global_func("ccltest.empty")
def _empty(shape, dtype):
    shape = list(shape)
    if DEVICE == "cuda":
        return torch.full(shape, 99, dtype=DTYPES[dtype], device=f"cuda:{gpu_of(rank())}")
    return np.full(shape, 99, dtype=dtype)


def _stack(xs):
    if DEVICE == "cuda":
        return torch.stack([x.double() for x in xs])
    return np.stack([x.astype(np.float64) for x in xs])


def _reduce(stacked, op, dtype):
    if DEVICE == "cuda":
        out = {
            "sum": lambda s: s.sum(0),
            "prod": lambda s: s.prod(0),
            "min": lambda s: s.amin(0),
            "max": lambda s: s.amax(0),
            "avg": lambda s: s.sum(0) / s.shape[0],
        }[op](stacked)
        # What the collective's own dtype makes of it (integer avg truncates, uint8 wraps).
        if dtype.startswith(("int", "uint")):
            out = out.trunc()
        return out.remainder(256) if dtype == "uint8" else out
    out = {
        "sum": lambda s: s.sum(0),
        "prod": lambda s: s.prod(0),
        "min": lambda s: s.min(0),
        "max": lambda s: s.max(0),
        "avg": lambda s: s.sum(0) / s.shape[0],
    }[op](stacked)
    if dtype.startswith(("int", "uint")):
        out = np.trunc(out)
    return out % 256 if dtype == "uint8" else out


@rffi.register_global_func("ccltest.check")
def _check(kind, op, out, shape, dtype, seed):
    """Max abs difference between this worker's `out` and what `kind` should have made of every
    rank's `ccltest.input(shape, dtype, seed)`; -1 when this worker's `out` is not meant to be
    written."""
    if DEVICE == "cuda":
        torch.cuda.synchronize(gpu_of(rank()))
        got = torch.from_dlpack(out).double().cpu().flatten()
    else:
        got = np.from_dlpack(out).astype(np.float64).ravel()
    r, w = rank(), world()
    shape = list(shape)
    xs = [make(k, shape, dtype, seed) for k in range(w)]
    flat = [x.flatten() if DEVICE == "cuda" else x.ravel() for x in xs]
    if kind == "allreduce":
        want = _reduce(_stack(flat), op, dtype)
    elif kind in ("allgather", "gather_to_worker_0"):
        if kind == "gather_to_worker_0" and r != 0:
            return -1.0
        want = _stack(flat).flatten() if DEVICE == "cuda" else _stack(flat).ravel()
    elif kind == "reduce_scatter":
        full = _reduce(_stack(flat), op, dtype)
        n = full.shape[0] // w
        want = full[r * n : (r + 1) * n]
    elif kind == "broadcast_from_worker_0":
        want = _stack(flat[:1])[0]
    elif kind == "scatter_from_worker_0":
        n = flat[0].shape[0] // w
        want = _stack(flat[:1])[0][r * n : (r + 1) * n]
    elif kind == "recv":  # odd ranks, from the even rank before them
        if r % 2 == 0:
            return -1.0
        want = _stack(flat[(r - 1) % w : (r - 1) % w + 1])[0]
    else:
        raise ValueError(f"unknown collective {kind}")
    want = want.cpu() if DEVICE == "cuda" else want
    if got.shape != want.shape:
        raise ValueError(f"{kind}: got {tuple(got.shape)} elements, want {tuple(want.shape)}")
    return float(abs(got - want).max()) if got.shape[0] else 0.0


@rffi.register_global_func("ccltest.device_of")
def _device_of(t):
    """Where a loaded parameter lives, as "cuda:0" or "cpu"."""
    if DEVICE == "cuda" and t.device.type != "cpu":
        return str(torch.from_dlpack(t).device)
    return "cpu"


@rffi.register_global_func("ccltest.to_host")
def _to_host(t):
    """A host (numpy) copy of a tensor on this worker, wherever it lives."""
    if DEVICE == "cuda" and t.device.type != "cpu":
        return torch.from_dlpack(t).cpu().numpy()
    return np.from_dlpack(t).copy()
