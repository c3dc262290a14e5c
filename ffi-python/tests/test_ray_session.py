"""RaySession: the session interface on Ray actors, against a local Ray instance this module
starts (2 CPUs, 2 workers). Skipped when ray is not installed; `make test` installs it. The
import tests run without Ray."""

import subprocess
import sys

import numpy as np
import pytest
from session_support import session_test_plugin

import rffi

pytestmark = pytest.mark.ray


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_rffi_never_imports_ray():
    r = _python(
        "import sys, rffi\n"
        "s = rffi.ProcessSession\n"
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if 'ray' in m)\n"
        "print('ok')"
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_without_ray_raysession_is_an_import_error_naming_the_extra():
    # `sys.modules["ray"] = None` makes `import ray` fail as if it were not installed.
    r = _python(
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "import rffi\n"
        "try:\n"
        "    rffi.RaySession\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    assert r.returncode == 0, r.stderr
    assert "pip install 'rffi[ray]'" in r.stdout, r.stdout


# Imported on the actors by `import_python_module` (the job's PYTHONPATH points at it).
FUNCS = """
import os
import rffi

@rffi.register_global_func("ray_test.triple", override=True)
def triple(x):
    return 3 * x

@rffi.register_global_func("ray_test.exit_on", override=True)
def exit_on(rank, code):
    if rffi.get_global_func("session.worker_rank")() == rank:
        os._exit(code)
"""


@pytest.fixture(scope="module")
def ray_instance(tmp_path_factory):
    ray = pytest.importorskip("ray")
    helpers = tmp_path_factory.mktemp("ray_funcs")
    (helpers / "rffi_ray_test_funcs.py").write_text(FUNCS)
    env = {"env_vars": {"PYTHONPATH": str(helpers)}}
    ray.init(num_cpus=2, include_dashboard=False, runtime_env=env)
    yield ray
    ray.shutdown()


# Half a CPU per worker: the module's session and one more fit in the 2 CPUs at once.
HALF = {"CPU": 0.5}


@pytest.fixture(scope="module")
def sess(ray_instance):
    s = rffi.RaySession(2, resources_per_worker=HALF)
    yield s
    s.shutdown()


def test_calls_by_name_with_several_argument_kinds(sess):
    assert sess.num_workers == 2
    echo = sess.get_global_func("testing.echo")
    for arg in [None, True, -7, 2.5, "text", b"\x00\x01", rffi.Shape((2, 3)), [1, "x"]]:
        r = echo(arg)
        for rank in range(2):
            got = r.fetch(rank)
            assert (list(got) if isinstance(arg, list) else got) == arg
    ranks = sess.get_global_func("session.worker_rank")()
    assert [ranks.fetch(0), ranks.fetch(1)] == [0, 1]
    # Every worker is an actor of its own process.
    pids = sess.worker_pids
    assert len(set(pids)) == 2 and all(p != __import__("os").getpid() for p in pids)
    assert len(sess.actors) == 2


def test_drefs_chain_and_host_tensors_travel_inline(sess):
    add_one = sess.get_global_func("testing.add_one")
    r = add_one(1)
    for _ in range(3):
        r = add_one(r)
    assert r.fetch(0) == 5 and r.fetch(1) == 5
    sess.load_module(session_test_plugin())
    scale = sess.get_global_func("session_test.scale")
    # Each actor gets its own copy of a host array passed to a call.
    total = sess.get_global_func("session_test.sum")(scale(np.arange(6, dtype="float32"), 2.0))
    assert total.fetch(0) == 30.0 and total.fetch(1) == 30.0


def test_tensors_both_ways_through_worker_0(sess):
    t = sess.empty((3, 4), "float32")
    host = np.arange(12, dtype="float32").reshape(3, 4)
    sess.copy_to_worker_0(host, t)
    doubled = sess.get_global_func("session_test.scale")(t, 2.0)
    out = np.zeros((3, 4), dtype="float32")
    sess.copy_from_worker_0(out, doubled)
    np.testing.assert_array_equal(out, host * 2)
    # A fetched tensor comes back over the connection as a host copy, from any actor.
    np.testing.assert_array_equal(np.from_dlpack(doubled.fetch(0)), host * 2)
    assert not np.from_dlpack(t.fetch(1)).any()
    with pytest.raises(ValueError, match="has 12 bytes but .* has 48") as e:
        sess.copy_to_worker_0(np.zeros(3, dtype="float32"), t)
    assert e.value.rank == 0
    with pytest.raises(ValueError, match="has 8 bytes but .* has 48"):
        sess.copy_from_worker_0(np.zeros(2, dtype="float32"), t)
    # Neither failure left the connection out of step.
    sess.copy_from_worker_0(out, t)
    np.testing.assert_array_equal(out, host * 2)
    sess.sync()


def test_load_params_shards_across_actors_and_gathers_back(sess, tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    w = np.arange(4 * 6, dtype="float32").reshape(4, 6)
    b = np.arange(5, dtype="float32")
    path = tmp_path / "model.safetensors"
    safetensors_numpy.save_file({"w": w, "b": b}, str(path))
    info = {"w": [["rffi.shard.split", [[2, 4, 3], "float32"], 2, 1]]}
    params = sess.load_params(path, shard_info=info, progress=False)
    assert sorted(params) == ["b", "w"]
    # Gathered back by a collective between the actors (shared memory: one host here).
    sess.init_ccl("shm")
    full = sess.empty((2, 4, 3), "float32")
    sess.gather_to_worker_0(params["w"], full)
    got = np.zeros((2, 4, 3), dtype="float32")
    sess.copy_from_worker_0(got, full)
    np.testing.assert_array_equal(got, np.stack([w[:, :3], w[:, 3:]]))
    # Unsharded parameters are replicated.
    total = sess.get_global_func("session_test.sum")(params["b"])
    assert total.fetch(0) == total.fetch(1) == b.sum()


def test_worker_errors_keep_the_contract_and_the_session_survives(sess):
    sess.get_global_func("testing.raise_error")("IndexError", "only here")
    with pytest.raises(IndexError) as e:
        sess.sync()
    msg = str(e.value)
    assert "worker 0: call `testing.raise_error` failed: only here" in msg, msg
    assert e.value.rank == 0
    assert "rffi session worker 0" in "".join(
        __import__("traceback").format_tb(e.value.__traceback__)
    )
    sess.get_global_func("no.such.function")
    with pytest.raises(KeyError, match="no.such.function"):
        sess.sync()
    assert sess.get_global_func("testing.add_one")(1).fetch(1) == 2


def test_python_functions_run_on_the_actors(sess):
    sess.import_python_module("rffi_ray_test_funcs")
    r = sess.get_global_func("ray_test.triple")(5)
    assert [r.fetch(0), r.fetch(1)] == [15, 15]


@pytest.mark.parametrize("how", ["ray.kill", "os._exit"])
def test_a_dead_actor_is_reported_by_rank_and_shutdown_is_idempotent(ray_instance, how):
    import time

    s = rffi.RaySession(2, resources_per_worker=HALF)
    assert s.get_global_func("testing.add_one")(1).fetch(1) == 2
    if how == "ray.kill":
        ray_instance.kill(s.actors[1])
    else:
        s.import_python_module("rffi_ray_test_funcs")
        s.get_global_func("ray_test.exit_on")(1, 3)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 1 \(Ray actor .*closed its connection") as e:
        for _ in range(100):  # a ray.kill lands within a moment; no call waits for it
            s.get_global_func("testing.nop")
            s.sync()
            time.sleep(0.05)
    assert e.value.rank == 1
    assert time.monotonic() - start < 30
    with pytest.raises(RuntimeError, match="worker 1"):
        s.sync()
    s.shutdown()
    s.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        s.get_global_func("testing.nop")


def test_resources_ray_cannot_place_are_an_error_not_a_hang(ray_instance):
    with pytest.raises(RuntimeError, match=r"could not place 2 workers with \{'GPU': 1\}"):
        rffi.RaySession(2, resources_per_worker={"GPU": 1}, start_timeout=1)
    with pytest.raises(ValueError, match="not a Ray resource name"):
        rffi.RaySession(2, resources_per_worker={"num_gpus": 1})


def test_a_session_left_open_at_exit_ends_quietly(ray_instance):
    # Another driver on this module's Ray instance, exiting with its session still open.
    address = ray_instance.get_runtime_context().gcs_address
    r = _python(
        "import ray, rffi\n"
        f"ray.init(address={address!r})\n"
        f"s = rffi.RaySession(2, resources_per_worker={HALF!r})\n"
        "print(s.get_global_func('testing.add_one')(1).fetch(1))\n"
    )
    assert r.returncode == 0 and r.stdout == "2\n", r.stderr
    for noise in ("Traceback", "Exception", "rffi", "Error"):
        assert noise not in r.stderr, r.stderr
