"""Tensors that ``sess.empty`` makes in shared memory (the controller maps each worker's): host
copies, fetching tensors, and every mapping freed with the DRef and at shutdown, with nothing left
in /dev/shm."""

import os

import numpy as np
import pytest
from session_support import KINDS

import rffi


def _tensor_maps(pid: int, nbytes: int) -> int:
    """Mappings of session tensors of exactly ``nbytes`` bytes in process ``pid``."""
    count = 0
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            if "/memfd:rffi-tensor" in line:
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                count += hi - lo == nbytes
    return count


def _shm_files() -> list:
    pid = str(os.getpid())
    return [f for f in os.listdir("/dev/shm") if f.startswith("rffi-") and pid in f]


@pytest.mark.parametrize("kind", list(KINDS))
def test_empty_tensors_are_shared_and_freed_with_the_dref_and_at_shutdown(kind):
    n, elems = 3, 73 * 1024  # 73 pages of float32: a size nothing else uses
    nbytes = elems * 4
    s = KINDS[kind](n)
    try:
        t = s.empty((elems,), "float32")
        s.sync()
        pids = list(getattr(s, "worker_pids", []))
        here = 2 * n if kind == "thread" else n + 1  # the controller's n, and thread workers'
        assert _tensor_maps(os.getpid(), nbytes) == here
        assert [_tensor_maps(p, nbytes) for p in pids] == [1] * len(pids)

        host = np.arange(elems, dtype="float32")
        s.copy_to_worker_0(host, t)
        np.testing.assert_array_equal(np.from_dlpack(t.fetch(0)), host)
        assert not np.from_dlpack(t.fetch(2)).any()
        out = np.empty_like(host)
        s.copy_from_worker_0(out, t)
        np.testing.assert_array_equal(out, host)

        del t  # the controller's mappings go now, the workers' with the next command
        assert _tensor_maps(os.getpid(), nbytes) == here - n
        s.get_global_func("testing.nop")
        s.sync()
        assert _tensor_maps(os.getpid(), nbytes) == 0
        assert [_tensor_maps(p, nbytes) for p in pids] == [0] * len(pids)

        kept = s.empty((elems,), "float32")  # noqa: F841 (held through the shutdown)
        s.sync()
        assert _tensor_maps(os.getpid(), nbytes) == here
    finally:
        s.shutdown()
    assert _tensor_maps(os.getpid(), nbytes) == 0
    assert _shm_files() == []


@pytest.mark.parametrize("kind", list(KINDS))
def test_fetched_tensors_are_host_copies(kind):
    with KINDS[kind](2) as s:
        host = np.arange(12, dtype="float32").reshape(3, 4)
        r = s.get_global_func("testing.echo")(host)  # each worker's own copy of the array
        got = r.fetch(1)
        assert isinstance(got, rffi.Tensor) and got.shape == (3, 4)
        arr = np.from_dlpack(got)
        np.testing.assert_array_equal(arr, host)
        arr[0, 0] = 99  # a copy: the worker's tensor is unchanged
        assert np.from_dlpack(r.fetch(1))[0, 0] == 0
        pair = s.get_global_func("testing.echo")([host, "x"]).fetch(0)
        np.testing.assert_array_equal(np.from_dlpack(pair[0]), host)
        assert pair[1] == "x"
        s.sync()
    assert _shm_files() == []


def test_copies_check_sizes_and_raise_pending_failures():
    with rffi.ProcessSession(2) as s:
        t = s.empty((4,), "float32")
        s.get_global_func("testing.raise_error")("ValueError", "before the copy")
        with pytest.raises(ValueError, match="worker 0.*before the copy") as info:
            s.copy_to_worker_0(np.ones(4, "float32"), t)
        assert info.value.rank == 0
        with pytest.raises(ValueError, match="before the copy"):
            s.sync()  # worker 1's copy of the failure
        s.copy_to_worker_0(np.ones(4, "float32"), t)
        with pytest.raises(ValueError, match="12 bytes.*has 16"):
            s.copy_from_worker_0(np.empty(3, "float32"), t)
        with pytest.raises(ValueError, match="read-only"):
            ro = np.empty(4, "float32")
            ro.flags.writeable = False
            s.copy_from_worker_0(ro, t)
        with pytest.raises(TypeError, match=r"CopyToWorker0 argument #1: expected a host array"):
            s.copy_to_worker_0([1.0, 2.0, 3.0, 4.0], t)
        np.testing.assert_array_equal(np.from_dlpack(t.fetch(0)), np.ones(4, "float32"))
