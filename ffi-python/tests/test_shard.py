"""Loading parameters sharded at load time, from Python: ``rffi.shard.load_local`` and
``sess.load_params`` on safetensors files this test writes, compared with numpy slicing."""

import json

import numpy as np
import pytest
from session_support import KINDS, session_test_plugin

import rffi

safetensors_numpy = pytest.importorskip("safetensors.numpy")

W = np.arange(48, dtype=np.float32).reshape(4, 12)
B = np.arange(6, dtype=np.float32)
# q_heads 4, kv_heads 4, head_dim 1: rows 0-3 query, 4-7 key, 8-11 value.
QKV = np.arange(36, dtype=np.float32).reshape(12, 3)


def plan(n):
    return {
        "w": [["rffi.shard.split", [[n, 4, 12 // n], "float32"], n, 1]],
        "qkv": [["rffi.shard.qkv", [[n, 12 // n, 3], "float32"], n, 4, 4]],
    }


def qkv_ref(n):
    """TVM's shard_qkv_0 in numpy."""
    parts = [QKV[i : i + 4].reshape(n, 4 // n, 1, 3) for i in (0, 4, 8)]
    return np.concatenate(parts, axis=1).reshape(n, 12 // n, 3)


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    d = tmp_path_factory.mktemp("weights")
    path = d / "model.safetensors"
    safetensors_numpy.save_file({"w": W, "b": B, "qkv": QKV}, str(path))
    return path


@pytest.mark.parametrize("n", [2, 4])
def test_load_local_round_trip(weights, n):
    shards = [rffi.shard.load_local(weights, plan(n), r, n, progress=False) for r in range(n)]
    assert sorted(shards[0]) == ["b", "qkv", "w"]
    w = np.concatenate([np.from_dlpack(s["w"]) for s in shards], axis=1)
    np.testing.assert_array_equal(w, W)
    ref = qkv_ref(n)
    for r, s in enumerate(shards):
        np.testing.assert_array_equal(np.from_dlpack(s["qkv"]), ref[r])
        np.testing.assert_array_equal(np.from_dlpack(s["b"]), B)


def test_shard_info_from_a_file_and_a_user_step(weights, tmp_path):
    # A chain: split, then a Python-registered step that negates.
    @rffi.register_global_func("test_shard.negate", override=True)
    def negate(src, dst):
        np.from_dlpack(dst)[...] = -np.from_dlpack(src)

    info = tmp_path / "shard_info.json"
    steps = plan(2)["w"] + [["test_shard.negate", [[2, 4, 6], "float32"]]]
    info.write_text(json.dumps({"w": steps}))
    p = rffi.shard.load_local(weights, info, 1, 2, progress=False)
    np.testing.assert_array_equal(np.from_dlpack(p["w"]), -W[:, 6:])


@pytest.mark.parametrize(
    "info, world, kind, msg",
    [
        ({"w": [["no.such", [[2], "float32"]]]}, 2, KeyError, "parameter `w`, step 0 (`no.such`)"),
        (
            {"w": [["rffi.shard.split", [[2, 4, 5], "float32"], 2, 1]]},
            2,
            ValueError,
            "output shape [2, 4, 5] should be [2, 4, 6]",
        ),
        (
            {"w": [["rffi.shard.split", [[2, 4, 6], "int32"], 2, 1]]},
            2,
            ValueError,
            "output dtype int32 differs",
        ),
        (
            {"w": [["rffi.shard.split", [[2, 4, 6], "float32"], 2, 1]]},
            4,
            ValueError,
            "must lead with the worker count 4",
        ),
        ({"nope": []}, 2, KeyError, "parameter `nope`: named in shard_info but not in the weights"),
    ],
)
def test_errors_name_parameter_and_step(weights, info, world, kind, msg):
    with pytest.raises(kind, match=msg.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        rffi.shard.load_local(weights, info, 0, world, progress=False)


def test_bad_files(weights, tmp_path):
    with pytest.raises(ValueError, match="missing.safetensors"):
        rffi.shard.load_local(tmp_path / "missing.safetensors", None, 0, 1)
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(weights.read_bytes()[:-4])
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        rffi.shard.load_local(cut, None, 0, 1)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match="malformed JSON"):
        rffi.shard.load_local(weights, bad, 0, 1)


@pytest.mark.parametrize("kind", ["thread", "process"])
def test_session_load_params(weights, kind):
    with KINDS[kind](2) as sess:
        total = sess.load_module(session_test_plugin()).get_function("session_test.sum")
        params = sess.load_params(weights, shard_info=plan(2), progress=False)
        assert sorted(params) == ["b", "qkv", "w"]
        ref = qkv_ref(2)
        for r in range(2):
            assert total(params["w"]).fetch(r) == W[:, 6 * r : 6 * r + 6].sum()
            assert total(params["qkv"]).fetch(r) == ref[r].sum()
            assert total(params["b"]).fetch(r) == B.sum()
        out = np.empty((4, 6), np.float32)
        sess.copy_from_worker_0(out, params["w"])
        np.testing.assert_array_equal(out, W[:, :6])
        with pytest.raises(KeyError, match="parameter `w`, step 0") as e:
            sess.load_params(weights, shard_info={"w": [["no.such", [[2], "float32"]]]})
        assert e.value.rank in (0, 1)
        assert len(sess.load_params(weights, shard_info=plan(2), progress=False)) == 3


def test_no_progress_bar_off_a_terminal(weights, capfd):
    rffi.shard.load_local(weights, plan(2), 0, 2, progress=True)
    assert capfd.readouterr().err == ""


def _stderr_on_a_terminal(code: str) -> str:
    """What a Python child writes to stderr when stderr is a terminal (a pseudo-terminal here)."""
    import os
    import pty
    import select
    import subprocess
    import sys

    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([sys.executable, "-c", code], stderr=slave, stdout=subprocess.DEVNULL)
        os.close(slave)
        slave = None
        out = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert p.wait(timeout=60) == 0, out
        return out.decode(errors="replace")
    finally:
        os.close(master)
        if slave is not None:
            os.close(slave)


@pytest.mark.parametrize("progress", [True, False])
def test_progress_bar_on_a_terminal_unless_turned_off(weights, progress):
    err = _stderr_on_a_terminal(
        "import rffi\n"
        f"rffi.shard.load_local({str(weights)!r}, {plan(2)!r}, 0, 2, progress={progress})\n"
    )
    if progress:
        assert "loading parameters: 3/3" in err and " MB)" in err, err
    else:
        assert err == "", err
