"""The call path behind ``rffi.Function``: the native fast path (``rffi/_native.py``) where the
interpreter allows it, the ctypes path otherwise or with ``RFFI_PYTHON_FASTPATH=0``. The whole suite
runs on both (scripts/test.sh); these tests pin what differs in how each path gets there:
argument kinds handed between them, reference counts, keywords, subclasses, the GIL flag."""

import enum
import gc
import os
import subprocess
import sys
import sysconfig
import threading
import time

import pytest

import rffi
from rffi import _core

FORCED_OFF = os.environ.get("RFFI_PYTHON_FASTPATH") == "0"
EXPECT_FAST = (
    not FORCED_OFF
    and sys.implementation.name == "cpython"
    and sys.version_info >= (3, 10)
    and not sysconfig.get_config_var("Py_GIL_DISABLED")
)


def test_path_is_chosen_as_documented():
    assert _core.FASTPATH == EXPECT_FAST, _core.FASTPATH_REASON
    if FORCED_OFF:
        assert _core.FASTPATH_REASON == "RFFI_PYTHON_FASTPATH=0"
    out = subprocess.run(
        [sys.executable, "-m", "rffi", "info"], capture_output=True, text=True, check=True
    ).stdout
    assert ("call path: native fast path" in out) == EXPECT_FAST
    # It says why when the native path is not in use.
    if FORCED_OFF:
        assert "call path: ctypes, because: RFFI_PYTHON_FASTPATH=0" in out
    if EXPECT_FAST:
        assert "native library: " in out and "librffi_python_native" in out


def test_forcing_the_ctypes_path():
    code = (
        "import rffi, rffi._core as c; "
        "print(c.FASTPATH, rffi.get_global_func('testing.add_one')(1))"
    )
    env = dict(os.environ, RFFI_PYTHON_FASTPATH="0")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["False", "2"]


class Color(enum.IntEnum):
    RED = 3


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -(2**63),
        2**63 - 1,
        1.25,
        float("inf"),
        "",
        "short",
        "seven!!",
        "eight!!!",
        "ünïcödé text longer than seven bytes",
        "nul\x00inside a long string",
        b"",
        b"bytes",
        b"longer bytes \x00 with a nul",
        bytearray(b"ba"),
    ],
)
def test_echo_each_kind(testing, value):
    out = testing.echo(value)
    expected = bytes(value) if isinstance(value, bytearray) else value
    assert out == expected and type(out) is type(expected)


def test_kinds_left_to_the_python_rules(testing):
    assert testing.echo(Color.RED) == 3  # an int subclass
    assert list(testing.echo([1, "a"])) == [1, "a"]
    assert testing.echo(rffi.device("cuda:1")) == rffi.device("cuda:1")
    with pytest.raises(OverflowError, match="does not fit in int64"):
        testing.echo(2**63)
    with pytest.raises(UnicodeEncodeError):
        testing.echo("lone \ud800 surrogate")
    # More arguments than the native path converts on the stack.
    assert testing.echo(*range(12)) == 0


def test_objects_pass_as_themselves(testing):
    f = rffi.get_global_func("testing.add_one")
    assert testing.echo(f).same_as(f)
    arr = rffi.Array([1, 2, 3])
    assert testing.echo(arr).same_as(arr)
    assert testing.apply(f, 41) == 42


def test_keyword_arguments_are_refused(testing):
    with pytest.raises(TypeError, match="keyword"):
        testing.add_one(x=1)


def test_released_function_raises(testing):
    g = rffi.Function(rffi.get_global_func("testing.add_one"))
    g.__del__()  # drops its reference now, as a released wrapper
    with pytest.raises(ValueError):
        g(1)
    with pytest.raises(ValueError, match="released"):
        testing.echo(g)


def test_function_subclass():
    class Named(rffi.Function):
        pass

    f = Named(rffi.get_global_func("testing.add_one"))
    assert isinstance(f, rffi.Function) and isinstance(f, rffi.Object)
    assert f(1) == 2
    assert Named(lambda a: a * 3)(5) == 15


def test_reference_counts_are_exact(testing):
    ints = [10**9 + i for i in range(4)]  # not cached small ints
    fl, text, long_text, data = 2.5, "abc", "a longer text argument", b"some bytes here"
    arr = rffi.Array([1])
    values = (*ints, fl, text, long_text, data, arr, testing.echo)
    echo, nop = testing.echo, testing.nop
    gc.collect()
    before = [sys.getrefcount(v) for v in values]
    for _ in range(100_000):
        nop(*ints)
        echo(fl)
        echo(text)
        echo(long_text)
        echo(data)
        echo(arr)
        echo(testing.echo)
        try:
            testing.raise_error("ValueError", "x")
        except ValueError:
            pass
    gc.collect()
    assert [sys.getrefcount(v) for v in values] == before
    # Results are new objects owned only by the caller.
    r = echo(10**12)
    assert sys.getrefcount(r) == 2
    s = echo("a result string longer than seven bytes")
    assert sys.getrefcount(s) == 2
    assert arr._use_count() == 1


def test_release_gil_flag(test_plugin):
    f = test_plugin.sleep_ms
    assert f.release_gil is True
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.02)
        f.release_gil = False
        start = time.perf_counter()
        f(100)
        end = time.perf_counter()
    finally:
        f.release_gil = True
        done.set()
        t.join()
    assert f.release_gil is True
    during = [x for x in ticks if start < x < end]
    if _core.FASTPATH:
        # Free, the ticker would tick ~50 times in 100 ms; a switch right before or after the
        # native call may let one or two through.
        assert len(during) <= 3, f"{len(during)} ticks while the GIL was held"
    else:  # the ctypes path always releases it
        assert len(during) > 5


def test_functions_declared_nonblocking_keep_the_gil(test_plugin):
    # The runtime's functions that return promptly are declared non-blocking in their metadata;
    # get_global_func makes their calls keep the GIL (the fast path; ctypes always releases it).
    import copy

    fast = _core.FASTPATH
    for name in ("testing.nop", "testing.echo", "testing.add_one", "ffi.Array"):
        assert rffi.get_global_func_metadata(name).get("nonblocking") is True
        assert rffi.get_global_func(name).release_gil is not fast, name
    for name in ("testing.raise_error", "ffi.ListAppend", "ffi.GetGlobalFuncMetadata"):
        assert "nonblocking" not in rffi.get_global_func_metadata(name)
        assert rffi.get_global_func(name).release_gil is True, name
    assert test_plugin.sleep_ms.release_gil is True  # a plugin's function declares nothing
    # A wrapper made from another, or copied, keeps its setting.
    nop = rffi.get_global_func("testing.nop")
    assert rffi.Function(nop).release_gil is nop.release_gil
    assert copy.copy(nop).release_gil is nop.release_gil
    nop.release_gil = True
    assert nop.release_gil is True and nop() is None
    # Anyone may declare a function: the key in its metadata.
    name = "test_call_paths.add3"
    rffi.register_global_func(name, test_plugin.add3, override=True)
    try:
        assert rffi.get_global_func(name).release_gil is True
        rffi.get_global_func("ffi.SetGlobalFuncMetadata")(name, '{"nonblocking": true}')
        f = rffi.get_global_func(name)
        assert f.release_gil is not fast and f(1, 2, 3) == 6
    finally:
        rffi.remove_global_func(name)


def test_functions_nonblocking_with_their_arguments(testing, test_plugin):
    # `testing.apply` calls the function it is given: its calls keep the GIL when that function
    # keeps it or runs Python code, and release it otherwise. A wrong choice here deadlocks:
    # `call_in_thread` waits for a native thread that calls back into Python.
    apply = rffi.get_global_func("testing.apply")
    assert rffi.get_global_func_metadata("testing.apply")["nonblocking"] == "with_arguments"
    assert apply.release_gil is True
    if _core.FASTPATH:
        assert apply._gil_with_arguments is True
        assert rffi.Function(apply)._gil_with_arguments is True
    # Functions made from Python callables keep the GIL (their body is Python code).
    made = rffi.convert(lambda x: x * 2)
    assert made.release_gil is not _core.FASTPATH
    assert rffi.Function(lambda x: x).release_gil is not _core.FASTPATH
    assert apply(lambda x: x * 2, 21) == 42
    assert apply(made, 21) == 42
    assert apply(rffi.get_global_func("testing.add_one"), 41) == 42
    for _ in range(3):
        assert apply(test_plugin.call_in_thread, lambda x: x * 3, 14) == 42
        assert apply(apply, test_plugin.call_in_thread, lambda x: x * 3, 14) == 42


def test_python_callbacks_run_under_a_function_that_keeps_the_gil(testing, test_plugin):
    # A Function that keeps the GIL runs callbacks on the calling thread without a hand-off.
    apply = rffi.Function(testing.apply)
    apply.release_gil = False
    seen = []
    assert apply(lambda x: seen.append(threading.get_ident()) or x + 1, 1) == 2
    assert seen == [threading.get_ident()]


@pytest.mark.skipif(not EXPECT_FAST, reason="the native fast path is off")
def test_a_panic_in_the_native_library_says_what_and_where():
    # The native library catches panics at its entries: the RuntimeError carries the panic's
    # message and site, and nothing is printed (a process of its own, whose stderr is the evidence).
    code = (
        "from rffi import _native\n"
        "panic = _native.builtin('testing_panic')\n"
        "for k in range(3):\n"
        "    try:\n"
        "        panic(f'boom {k}')\n"
        "    except RuntimeError as e:\n"
        "        print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3, out.stdout
    for k, line in enumerate(lines):
        head = f"rffi: panic in a native builtin: boom {k} (at "
        assert line.startswith(head) and "native/src/builtins.rs:" in line, line
    assert out.stderr == ""
