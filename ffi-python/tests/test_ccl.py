"""Collectives from Python through the shared-memory backend (2 and 4 workers, threads and native
worker processes), their errors, and NCCL's clear error where CUDA or NCCL is missing."""

import numpy as np
import pytest
from session_support import KINDS

import rffi


def fill_value(rank, i, seed):
    # The values testing.ccl_fill writes (1 to 4, exact in every collective dtype).
    return 1 + (rank + i + seed) % 4


def src(rank, n, seed):
    return np.array([fill_value(rank, i, seed) for i in range(n)], dtype=np.float64)


@pytest.fixture(
    params=[(k, n) for k in ("thread", "process") for n in (2, 4)], ids=str, scope="module"
)
def sess(request):
    kind, n = request.param
    s = KINDS[kind](n)
    s.init_ccl("shm")
    yield s
    s.shutdown()


def values(sess, t, rank):
    return np.array(list(sess.get_global_func("testing.ccl_values")(t).fetch(rank)))


def filled(sess, shape, dtype, seed):
    t = sess.empty(shape, dtype)
    sess.get_global_func("testing.ccl_fill")(t, seed)
    return t


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int64", "uint8"])
def test_allreduce_every_dtype(sess, dtype):
    w, n = sess.num_workers, 9
    a = filled(sess, (n,), dtype, 1)
    b = sess.empty((n,), dtype)
    every = np.stack([src(r, n, 1) for r in range(w)])
    for op, want in [
        ("sum", every.sum(0)),
        ("prod", every.prod(0)),
        ("min", every.min(0)),
        ("max", every.max(0)),
        ("avg", every.sum(0) / w),
    ]:
        sess.allreduce(a, b, op)
        if dtype == "uint8":
            want = want % 256
        if dtype.startswith(("int", "uint")) and op == "avg":
            want = np.floor(want)
        for r in range(w):
            np.testing.assert_array_equal(values(sess, b, r), want, err_msg=f"{op} rank {r}")


def test_every_other_collective(sess):
    w, n = sess.num_workers, 6
    a = filled(sess, (n,), "float32", 2)
    big = sess.empty((w, n), "float32")
    out = sess.empty((n,), "float32")
    concat = np.concatenate([src(r, n, 2) for r in range(w)])

    sess.allgather(a, big)
    for r in range(w):
        np.testing.assert_array_equal(values(sess, big, r), concat)

    sess.reduce_scatter(big, out, "max")  # every worker's big is `concat` now
    for r in range(w):
        np.testing.assert_array_equal(values(sess, out, r), concat[r * n : (r + 1) * n])

    host = np.arange(w * n, dtype=np.float32).reshape(w, n)
    sess.copy_to_worker_0(host, big)
    sess.scatter_from_worker_0(big, out)
    for r in range(w):
        np.testing.assert_array_equal(values(sess, out, r), host[r])

    sess.broadcast_from_worker_0(a, out)
    for r in range(w):
        np.testing.assert_array_equal(values(sess, out, r), src(0, n, 2))

    sess.gather_to_worker_0(out, big)  # every worker's out is worker 0's a
    back = np.zeros((w, n), dtype=np.float32)
    sess.copy_from_worker_0(back, big)
    np.testing.assert_array_equal(back, np.tile(src(0, n, 2), (w, 1)))

    # Worker 0 sends to the last worker, which then sends it back into worker 0's `out`.
    b = filled(sess, (n,), "float32", 3)
    sess.send(b, [w - 1] + [-1] * (w - 1))
    sess.recv(b, [-1] * (w - 1) + [0])
    sess.send(b, [-1] * (w - 1) + [0])
    sess.recv(out, [w - 1] + [-1] * (w - 1))
    np.testing.assert_array_equal(values(sess, out, 0), src(0, n, 3))
    sess.sync()


def test_mismatches_raise_at_sync_and_the_session_goes_on(sess):
    a = sess.empty((4,), "float32")
    b = sess.empty((2, 2), "float32")
    sess.allreduce(a, b, "sum")
    with pytest.raises(ValueError, match="same shape") as e:
        sess.sync()
    assert e.value.rank == 0
    sess.allgather(a, b)
    with pytest.raises(ValueError, match="world size"):
        sess.sync()
    sess.allreduce(a, a, "sum")
    sess.sync()


def test_peers_are_checked_before_any_worker_sees_them(sess):
    w = sess.num_workers
    a = sess.empty((4,), "float32")
    for call in (sess.send, sess.recv):
        # One int is that peer for every worker, so worker 0 would name itself.
        with pytest.raises(ValueError, match="worker 0 cannot exchange with worker 0"):
            call(a, 0)
        with pytest.raises(ValueError, match=f"worker 1 cannot exchange with worker {w}"):
            call(a, [1, w] + [-1] * (w - 2))
        with pytest.raises(ValueError, match=f"one entry per worker \\({w}\\), got 1"):
            call(a, [1])
        with pytest.raises(TypeError, match="expected a session.DRef"):
            call(np.zeros(4), [-1] * w)
    sess.allreduce(a, a, "sum")  # nothing reached the workers: still usable
    sess.sync()


def nccl_missing():
    try:
        rffi.get_global_func("ccl.unique_id")()
        return False
    except RuntimeError:
        return True


@pytest.mark.skipif(not nccl_missing(), reason="CUDA and NCCL are installed here")
def test_nccl_without_its_library_is_a_clear_error():
    with rffi.ThreadSession(2) as s:
        with pytest.raises(RuntimeError, match=r"could not be loaded \(looked for lib"):
            s.init_ccl("nccl", 0, 1)
        s.init_ccl("shm")  # the session is fine
    with pytest.raises(RuntimeError, match="CUDA driver library could not be loaded"):
        rffi.ProcessSession(2, device="cuda")
