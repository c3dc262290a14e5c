"""Calls from many Python threads at once, and native calls that leave the GIL free."""

import threading
import time

import pytest

import rffi


def test_eight_threads(testing):
    errors = []
    results = {}

    def worker(k):
        try:
            cb = rffi.convert(lambda x: x * 2 + k)
            total = 0
            for i in range(3000):
                assert testing.add_one(i) == i + 1
                assert testing.echo(f"thread {k} call {i}") == f"thread {k} call {i}"
                assert testing.apply(cb, i) == i * 2 + k
                assert list(testing.echo([k, i])) == [k, i]
                try:
                    testing.raise_error("KeyError", f"t{k}")
                except KeyError as e:
                    assert e.__rffi_error__.message == f"t{k}"
                total += 1
            results[k] = total
        except BaseException as e:  # report in the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == {k: 3000 for k in range(8)}


def test_same_function_object_from_threads(testing):
    # One Function wrapper shared by all threads: each call takes its own frame.
    f = rffi.get_global_func("testing.echo")
    errors = []

    def worker(k):
        try:
            for i in range(5000):
                assert f(k, i) == k
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_long_native_call_does_not_hold_the_gil(test_plugin):
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
        start = time.perf_counter()
        test_plugin.sleep_ms(300)
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    during = [x for x in ticks if start < x < end]
    assert end - start >= 0.29
    # With the GIL held the ticker could not run at all during the call.
    assert len(during) > 20, f"only {len(during)} ticks during a 300 ms native call"


def test_native_calls_run_in_parallel(test_plugin):
    start = time.perf_counter()
    threads = [threading.Thread(target=test_plugin.sleep_ms, args=(200,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.perf_counter() - start < 0.6  # 4 x 200 ms, overlapped


def test_python_callbacks_from_a_native_thread(test_plugin):
    # The callback runs on a thread Python has never seen: it must take the GIL itself.
    seen = []

    def triple(x):
        seen.append(threading.get_ident())
        return x * 3

    def fails(x):
        raise ValueError(f"no {x}")

    for _ in range(3):
        assert test_plugin.call_in_thread(triple, 14) == 42
        with pytest.raises(ValueError, match="no 7"):
            test_plugin.call_in_thread(fails, 7)
    assert len(seen) == 3 and threading.get_ident() not in seen


def test_callbacks_on_the_calling_thread_then_on_a_native_thread(test_plugin):
    # The first callback runs on the thread whose call released the GIL (it takes the GIL back
    # with that thread's state), the second on a native thread the call then waits for: the
    # first must have given the GIL back, or this deadlocks.
    threads = []

    def f(x):
        threads.append(threading.get_ident())
        return x + 1

    for _ in range(50):
        assert test_plugin.call_here_then_in_thread(f, 1) == 3
    me = threading.get_ident()
    assert threads[0::2] == [me] * 50 and me not in threads[1::2]


def test_nested_calls_and_callbacks(testing, test_plugin):
    # Calls made by callbacks, made by calls: each level takes and gives the GIL on its own
    # thread, whether the call around it released the GIL or kept it.
    apply = testing.apply
    kept = rffi.Function(apply)
    kept.release_gil = False

    def double(y):
        return y * 2

    assert apply(lambda x: apply(double, x) + 1, 5) == 11
    assert kept(lambda x: apply(double, x), 4) == 8
    assert apply(lambda x: kept(double, x), 4) == 8
    assert test_plugin.call_in_thread(lambda x: apply(lambda y: apply(double, y), x), 3) == 6
    assert test_plugin.call_in_thread(lambda x: kept(double, x), 3) == 6
    assert apply(lambda x: test_plugin.call_in_thread(double, x), 7) == 14


def test_python_functions_called_from_threads():
    # A Function made from a Python callable keeps the GIL when called from Python (its body is
    # Python code); calls from many threads at once stay correct.
    f = rffi.convert(lambda x, k: x + k)
    errors = []

    def worker(k):
        try:
            for i in range(2000):
                assert f(i, k) == i + k
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
