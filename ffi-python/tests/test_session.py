"""Sessions from Python: calls by name, DRefs, tensors, plugins and worker errors, on every
session kind (threads, native worker processes, Python worker processes)."""

import os

import numpy as np
import pytest
from session_support import KINDS, session_test_plugin

import rffi


@pytest.fixture(params=list(KINDS), scope="module")
def sess(request):
    s = KINDS[request.param](2)
    s.kind = request.param
    yield s
    s.shutdown()


@pytest.fixture(scope="module")
def plugin():
    return session_test_plugin()


ARGS = [
    None,
    True,
    -7,
    2.5,
    "text",
    "a longer string than seven bytes",
    b"\x00\x01",
    rffi.Shape((2, 3)),
    rffi.dtype("float16"),
    rffi.device("cpu"),
    [1, "x", [2.0]],
    {"k": 1, "n": None},
]


@pytest.mark.parametrize("arg", ARGS, ids=[repr(a)[:20] for a in ARGS])
def test_every_argument_kind_reaches_every_worker(sess, arg):
    r = sess.get_global_func("testing.echo")(arg)
    for rank in range(sess.num_workers):
        got = r.fetch(rank)
        if isinstance(arg, dict):
            assert dict(got.items()) == arg
        elif isinstance(arg, list):
            assert got[0] == 1 and got[1] == "x" and list(got[2]) == [2.0]
        else:
            assert got == arg


def test_num_workers_and_ranks(sess):
    assert sess.num_workers == 2
    r = sess.get_global_func("session.worker_rank")()
    assert [r.fetch(i) for i in range(2)] == [0, 1]
    assert sess.get_global_func("session.world_size")().fetch(1) == 2


def test_values_that_cannot_cross_are_type_errors_naming_the_position(sess):
    echo = sess.get_global_func("testing.echo")
    with pytest.raises(TypeError, match="argument #1"):
        echo(1, object())
    with pytest.raises(TypeError, match="argument #0"):
        echo(lambda: 1)
    # Inside a list or dict, the path to the value.
    with pytest.raises(TypeError, match=r"argument #1\[2\]\[\"w\"\]: a value of type"):
        echo(1, [1, 2, {"w": object()}])
    sess.sync()


def test_drefs_chain(sess):
    add_one = sess.get_global_func("testing.add_one")
    r = add_one(1)
    for _ in range(4):
        r = add_one(r)
    assert r.fetch(0) == 6 and r.fetch(1) == 6
    # Inside containers too.
    lst = sess.get_global_func("testing.echo")([r, 1])
    assert list(lst.fetch(1)) == [6, 1]
    with pytest.raises(IndexError):
        r.fetch(2)


def test_plugins_and_tensors_both_ways(sess, plugin):
    mod = sess.load_module(plugin)
    assert mod.get_function("session_test.add")(2, 40).fetch(1) == 42
    t = sess.empty((256, 4), "float32")
    host = np.arange(1024, dtype="float32").reshape(256, 4)
    sess.copy_to_worker_0(host, t)
    scaled = mod["session_test.scale"](t, 2.0)
    total = sess.get_global_func("session_test.sum")(scaled)
    assert total.fetch(0) == float(host.sum() * 2)
    assert total.fetch(1) == 0.0  # worker 1's tensor was never written
    out = np.empty_like(host)
    sess.copy_from_worker_0(out, t)
    np.testing.assert_array_equal(out, host * 2)
    with pytest.raises(ValueError, match="bytes"):
        sess.copy_to_worker_0(np.zeros(3, "float32"), t)
    # Fetching a tensor brings a copy to the controller (any DLPack consumer reads it).
    np.testing.assert_array_equal(np.from_dlpack(t.fetch(0)), host * 2)
    np.testing.assert_array_equal(np.from_dlpack(t.fetch(1)), np.zeros_like(host))
    sess.sync_worker_0()
    sess.sync()


def test_host_arrays_reach_every_worker_through_shared_memory(sess, plugin):
    sess.load_module(plugin)
    host = np.arange(12, dtype="float32").reshape(3, 4)
    # Each worker gets a private copy: scaling it there leaves the host array as it was.
    scaled = sess.get_global_func("session_test.scale")(host, 2.0)
    total = sess.get_global_func("session_test.sum")(scaled)
    assert [total.fetch(r) for r in range(2)] == [132.0, 132.0]
    np.testing.assert_array_equal(host, np.arange(12, dtype="float32").reshape(3, 4))
    with pytest.raises(ValueError, match="contiguous"):
        sess.get_global_func("testing.echo")(host[:, ::2])
    sess.sync()
    left = [f for f in os.listdir("/dev/shm") if f.startswith(f"rffi-session-{os.getpid()}-")]
    assert left == []


def test_worker_errors_are_raised_with_rank_function_and_traceback(sess, plugin):
    sess.load_module(plugin)
    sess.get_global_func("session_test.fail")("bad input")
    with pytest.raises(ValueError) as info:
        sess.sync()
    msg = str(info.value)
    assert "worker 0: call `session_test.fail` failed: bad input" in msg
    assert info.value.rank == 0
    assert "rffi session worker 0" in "".join(
        __import__("traceback").format_tb(info.value.__traceback__)
    ) or "session_test.fail" in msg
    # The session stays usable.
    assert sess.get_global_func("testing.add_one")(1).fetch(1) == 2


def test_a_panic_in_a_rust_plugin_is_an_error(sess, plugin):
    sess.load_module(plugin)
    sess.get_global_func("session_test.panic")("boom")
    with pytest.raises(Exception, match="boom") as info:
        sess.sync()
    assert "session_test.panic" in str(info.value)
    sess.sync()


def test_a_missing_function_is_a_key_error(sess):
    sess.get_global_func("no.such.function")
    with pytest.raises(KeyError, match="no.such.function"):
        sess.sync()
    f = sess.get_global_func("no.such.function")
    with pytest.raises(KeyError):
        f(1).fetch(1)
    with pytest.raises(KeyError):
        sess.sync()  # worker 0 kept its own failure (the first one: later ones add nothing)
    sess.sync()


def test_a_failure_on_one_worker_names_that_rank(sess):
    # Only worker 1 fails: the rank is attached.
    f = sess.get_global_func("testing.raise_error")
    r = f("IndexError", "here")
    with pytest.raises(IndexError) as info:
        r.fetch(1)
    assert info.value.rank == 1
    with pytest.raises(IndexError):
        sess.sync()  # worker 0's copy of the same failure
    sess.sync()


def test_python_functions_on_workers():
    with rffi.ProcessSession(2, python=True) as s:
        s.import_python_module("json")  # importable everywhere: no error
        with pytest.raises(Exception, match="No module named 'no_such_module_xyz'"):
            s.import_python_module("no_such_module_xyz")
        assert s.get_global_func("testing.add_one")(1).fetch(1) == 2
    with rffi.ProcessSession(2) as s:
        with pytest.raises(RuntimeError, match="python=True"):
            s.import_python_module("json")


def test_import_python_module_registers_functions(tmp_path, monkeypatch):
    (tmp_path / "rffi_session_mod.py").write_text(
        "import rffi\n"
        "@rffi.register_global_func('pytest_session.triple', override=True)\n"
        "def triple(x):\n"
        "    return 3 * x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with rffi.ProcessSession(2, python=True) as s:
        s.import_python_module("rffi_session_mod")
        r = s.get_global_func("pytest_session.triple")(5)
        assert [r.fetch(0), r.fetch(1)] == [15, 15]


def test_shutdown_twice_and_use_after(sess):
    s = KINDS[sess.kind](2)
    s.shutdown()
    s.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        s.get_global_func("testing.nop")


def test_bad_construction():
    with pytest.raises(ValueError, match="at least 1"):
        rffi.ThreadSession(0)


def test_a_dref_of_another_session_is_refused(sess):
    with rffi.ThreadSession(1) as other:
        r = other.get_global_func("testing.add_one")(1)
        with pytest.raises(ValueError, match="another session"):
            sess.get_global_func("testing.echo")(r)
    sess.sync()


def test_threads_share_a_session(sess):
    import threading

    add_one = sess.get_global_func("testing.add_one")
    errors = []

    def work(k):
        try:
            for i in range(50):
                r = add_one(k * 1000 + i)
                assert r.fetch(i % 2) == k * 1000 + i + 1
            sess.sync()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
