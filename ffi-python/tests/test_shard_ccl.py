"""``sess.load_params(..., via="ccl")`` through a communicator (``init_ccl("shm")``): worker 0
reads and shards, the others receive their slices by scatter (replicated parameters by broadcast)
and never open the weights. Compared with the per-worker read path and with numpy. ``via="auto"``
reads on every worker with shared memory (faster on one host) and scatters only with NCCL."""

import json

import numpy as np
import pytest
from session_support import KINDS

safetensors_numpy = pytest.importorskip("safetensors.numpy")

RNG = np.random.default_rng(7)
# Dtypes collectives take (float32, float16, int64, uint8) and ones they do not (float64, int16,
# bool, int8): the loader moves bytes, so all go through.
PARAMS = {
    "w32": RNG.standard_normal((8, 12)).astype(np.float32),
    "w16": RNG.standard_normal((4, 8)).astype(np.float16),
    "i64": np.arange(96, dtype=np.int64).reshape(24, 4),
    "u8": np.arange(48, dtype=np.uint8).reshape(4, 12),
    "f64": RNG.standard_normal((4, 24)),
    "i16": np.arange(-24, 24, dtype=np.int16).reshape(4, 12),
    "flag": (np.arange(24) % 3 == 0).reshape(2, 12),
    "bias": RNG.standard_normal(6).astype(np.float32),
    "i8": np.arange(-6, 6, dtype=np.int8),
}
QKV = np.arange(36, dtype=np.float32).reshape(12, 3)


def plan(n):
    p = {
        name: [["rffi.shard.split", [[n, *shard], str(a.dtype)], n, axis]]
        for name, a, axis in [
            (k, PARAMS[k], ax)
            for k, ax in [("w32", 1), ("w16", 1), ("i64", 0), ("u8", 1), ("f64", 1), ("i16", 1)]
        ]
        for shard in [tuple(d // n if i == axis else d for i, d in enumerate(a.shape))]
    }
    p["qkv"] = [["rffi.shard.qkv", [[n, 12 // n, 3], "float32"], n, 4, 4]]
    return p


def expected(name, rank, n):
    """Worker ``rank``'s slice of ``name`` in numpy."""
    if name == "qkv":
        parts = [QKV[i : i + 4].reshape(n, 4 // n, 1, 3) for i in (0, 4, 8)]
        return np.concatenate(parts, axis=1).reshape(n, 12 // n, 3)[rank]
    steps = plan(n).get(name)
    a = PARAMS[name]
    if steps is None:
        return a
    axis = steps[0][3]
    return np.split(a, n, axis=axis)[rank]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("weights") / "model.safetensors"
    safetensors_numpy.save_file({**PARAMS, "qkv": QKV}, str(path))
    return path


def files_opened(sess):
    """Weight files each worker has opened so far."""
    count = sess.get_global_func("rffi.shard.files_opened")()
    return [count.fetch(r) for r in range(sess.num_workers)]


def values(params, n):
    return {k: [np.from_dlpack(v.fetch(r)) for r in range(n)] for k, v in params.items()}


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("kind", ["thread", "process"])
def test_ccl_load_equals_read_and_numpy(weights, kind, n):
    with KINDS[kind](n) as sess:
        read = values(sess.load_params(weights, plan(n), progress=False), n)
        assert files_opened(sess) == [1] * n
        sess.init_ccl("shm")
        # With shared memory "auto" reads on every worker (faster on one host than a scatter).
        sess.load_params(weights, plan(n), progress=False)
        assert files_opened(sess) == [2] * n
        got = values(sess.load_params(weights, plan(n), progress=False, via="ccl"), n)
        # Only worker 0 opened the file again.
        assert files_opened(sess) == [3] + [2] * (n - 1)
        assert sorted(got) == sorted([*PARAMS, "qkv"])
        for name, per_rank in got.items():
            for r, v in enumerate(per_rank):
                want = expected(name, r, n)
                assert v.dtype == want.dtype and v.shape == want.shape, name
                np.testing.assert_array_equal(v, want, err_msg=f"{name} on worker {r}")
                np.testing.assert_array_equal(v, read[name][r])


@pytest.mark.parametrize("kind", ["thread", "process"])
def test_via_picks_the_path(weights, kind):
    with KINDS[kind](2) as sess:
        with pytest.raises(RuntimeError, match="no communicator on this worker"):
            sess.load_params(weights, plan(2), progress=False, via="ccl")
        with pytest.raises(ValueError, match='via must be "auto", "ccl" or "read"'):
            sess.load_params(weights, plan(2), progress=False, via="scatter")
        sess.init_ccl("shm")
        before = files_opened(sess)
        sess.load_params(weights, plan(2), progress=False, via="read")
        assert files_opened(sess) == [b + 1 for b in before]
        p = sess.load_params(weights, plan(2), progress=False, via="ccl")
        assert files_opened(sess) == [before[0] + 2, before[1] + 1]
        np.testing.assert_array_equal(np.from_dlpack(p["w32"].fetch(1)), expected("w32", 1, 2))


@pytest.mark.parametrize(
    "info, kind, msg",
    [
        ({"w32": [["no.such", [[2], "float32"]]]}, KeyError, "parameter `w32`, step 0 (`no.such`)"),
        (
            {"w32": [["rffi.shard.split", [[2, 8, 5], "float32"], 2, 1]]},
            ValueError,
            "output shape [2, 8, 5] should be [2, 8, 6]",
        ),
        (
            {"w32": [["rffi.shard.split", [[4, 8, 3], "float32"], 4, 1]]},
            ValueError,
            "must lead with the worker count 2",
        ),
        ({"nope": []}, KeyError, "parameter `nope`: named in shard_info but not in the weights"),
    ],
)
@pytest.mark.parametrize("sess_kind", ["thread", "process"])
def test_errors_reach_every_worker(weights, sess_kind, info, kind, msg):
    pattern = msg.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    with KINDS[sess_kind](2) as sess:
        sess.init_ccl("shm")
        with pytest.raises(kind, match=pattern) as e:
            sess.load_params(weights, info, progress=False, via="ccl")
        assert e.value.rank in (0, 1)
        # Every worker failed with the same error and kept nothing: each result is an error.
        load = sess.get_global_func("rffi.shard.load_worker")
        failed = load(str(weights), json.dumps(info), False, "ccl")
        for r in range(2):
            with pytest.raises(kind, match=pattern):
                failed.fetch(r)
        # The communicator is still usable, and a good load works after the failures.
        assert len(sess.load_params(weights, plan(2), progress=False)) == len(PARAMS) + 1


@pytest.mark.parametrize("kind", ["thread", "process"])
def test_a_missing_file_is_an_error_on_every_worker(weights, tmp_path, kind):
    with KINDS[kind](2) as sess:
        sess.init_ccl("shm")
        load = sess.get_global_func("rffi.shard.load_worker")
        failed = load(str(tmp_path / "missing.safetensors"), "", False, "ccl")
        for r in range(2):
            with pytest.raises(ValueError, match="missing.safetensors"):
                failed.fetch(r)
        assert files_opened(sess) == [0, 0]


@pytest.mark.parametrize("progress", [True, False])
def test_worker_0_draws_the_progress_bar(weights, progress):
    from test_shard import _stderr_on_a_terminal

    err = _stderr_on_a_terminal(
        "import rffi\n"
        "with rffi.ThreadSession(2) as sess:\n"
        "    sess.init_ccl('shm')\n"
        f"    sess.load_params({str(weights)!r}, {plan(2)!r}, progress={progress}, via='ccl')\n"
    )
    n = len(PARAMS) + 1
    if progress:
        assert err.count(f"loading parameters: {n}/{n}") == 1 and " MB)" in err, err
    else:
        assert err == "", err
