"""Global functions and Python callbacks."""

import gc
import sys
import types
import weakref

import pytest

import rffi
from rffi import _core


def test_get_global_func_missing():
    with pytest.raises(ValueError, match="no global function named 'no.such.function'"):
        rffi.get_global_func("no.such.function")
    assert rffi.get_global_func("no.such.function", allow_missing=True) is None
    with pytest.raises(TypeError):
        rffi.get_global_func(42)


def test_register_call_list_remove(testing):
    @rffi.register_global_func("pytest.square")
    def square(x):
        return x * x

    try:
        assert square(3) == 9
        f = rffi.get_global_func("pytest.square")
        assert isinstance(f, rffi.Function) and square.same_as(f)  # the decorator gives it
        assert f(7) == 49
        assert testing.apply(f, 5) == 25
        assert "pytest.square" in rffi.list_global_func_names()
        assert rffi.get_global_func("pytest.square").same_as(f)
        with pytest.raises(KeyError, match="already registered"):
            rffi.register_global_func("pytest.square", lambda x: x)
        rffi.register_global_func("pytest.square", lambda x: -x, override=True)
        assert rffi.get_global_func("pytest.square")(2) == -2
    finally:
        rffi.remove_global_func("pytest.square")
    assert "pytest.square" not in rffi.list_global_func_names()
    with pytest.raises(KeyError):
        rffi.remove_global_func("pytest.square")


def test_register_forms():
    def named(x):
        return x + 100

    add_one = rffi.get_global_func("testing.add_one")
    made = [
        rffi.register_global_func(named),  # bare function: registered under its __name__
        rffi.register_global_func("pytest.plain", lambda: "plain"),
        rffi.register_global_func("pytest.fn", add_one),
    ]
    try:
        # Every form gives back the registered Function (a Function given is itself).
        for name, f in zip(("named", "pytest.plain", "pytest.fn"), made):
            assert isinstance(f, rffi.Function) and f.same_as(rffi.get_global_func(name))
        assert made[2] is add_one
        assert rffi.get_global_func("named")(1) == 101
        assert rffi.get_global_func("pytest.plain")() == "plain"
        assert rffi.get_global_func("pytest.fn")(1) == 2
    finally:
        for name in ("named", "pytest.plain", "pytest.fn"):
            rffi.remove_global_func(name)


def test_decorator_forms(testing):
    @rffi.register_global_func
    def pytest_bare(x):
        return x * 2

    @rffi.register_global_func("pytest.deco")
    def deco(x):
        return x + 1

    try:
        cases = (("pytest_bare", pytest_bare, 4, 8), ("pytest.deco", deco, 1, 2))
        for name, f, arg, result in cases:
            assert isinstance(f, rffi.Function) and f.same_as(rffi.get_global_func(name))
            assert f(arg) == result and testing.apply(f, arg) == result

        with pytest.raises(KeyError, match="already registered"):

            @rffi.register_global_func("pytest.deco")
            def clash(x):
                return x

        @rffi.register_global_func("pytest.deco", override=True)
        def deco2(x):
            return x + 2

        assert deco2.same_as(rffi.get_global_func("pytest.deco")) and deco(1) == 2

        # override= without a name: the function's own name, the decorator reusable.
        again = rffi.register_global_func(override=True)

        @again
        def pytest_bare(x):  # noqa: F811
            return x * 3

        assert rffi.get_global_func("pytest_bare")(4) == 12
        # tvm-ffi's module name for the function registry's functions.
        assert "pytest.deco" in rffi.registry.list_global_func_names()
    finally:
        for name in ("pytest_bare", "pytest.deco"):
            rffi.remove_global_func(name)


def test_init_ffi_api():
    rffi.register_global_func("pytestns.leaf", lambda: "leaf")
    rffi.register_global_func("pytestns.deeper.leaf", lambda: "deeper")
    module = types.ModuleType("pytestns")
    sys.modules["pytestns"] = module
    try:
        rffi.init_ffi_api("pytestns")
        assert module.leaf() == "leaf"
        assert not hasattr(module, "deeper")
        target = types.ModuleType("pytest_target")
        sys.modules["pytest_target"] = target
        rffi.init_ffi_api("testing", "pytest_target")
        assert target.add_one(1) == 2
        with pytest.raises(ValueError, match="not imported"):
            rffi.init_ffi_api("testing", "no_such_module_here")
    finally:
        sys.modules.pop("pytestns", None)
        sys.modules.pop("pytest_target", None)
        rffi.remove_global_func("pytestns.leaf")
        rffi.remove_global_func("pytestns.deeper.leaf")


def test_native_calls_python(testing):
    assert testing.apply(lambda a, b: a + b, 1, 2) == 3
    assert testing.apply(lambda a, b: a * b, 2, 3.5) == 7.0
    seen = []

    def record(*args):
        seen.append(args)
        return "done"

    assert testing.apply(record, "s", b"b", [1, 2], {"k": 1}, None, True) == "done"
    (args,) = seen
    assert args[0] == "s" and args[1] == b"b" and args[4] is None and args[5] is True
    assert isinstance(args[2], rffi.Array) and list(args[2]) == [1, 2]
    assert isinstance(args[3], rffi.Map) and args[3]["k"] == 1


@pytest.mark.parametrize(
    "value", [None, 1, 2.5, True, "s", "long string " * 5, b"bytes", [1, [2]], {"a": 1}]
)
def test_callback_results(testing, value):
    out = testing.apply(lambda: value)
    if isinstance(value, list):
        assert list(out)[0] == 1
    elif isinstance(value, dict):
        assert out["a"] == 1
    else:
        assert out == value and type(out) is type(value)


def test_callback_returns_objects_it_was_given(testing):
    class Thing:
        pass

    x = Thing()
    assert testing.apply(lambda: x) is x
    f = rffi.get_global_func("testing.add_one")
    assert testing.apply(lambda: f).same_as(f)


def test_calling_back_into_rffi_from_a_callback(testing):
    def outer(n):
        # Python -> native -> Python -> native -> Python
        return testing.apply(lambda m: testing.add_one(m) * 10, n)

    assert testing.apply(outer, 4) == 50


def test_function_from_callable():
    f = rffi.Function(lambda a, b: a - b)
    assert f(10, 4) == 6
    with pytest.raises(TypeError):
        f(1)  # the lambda's own TypeError comes back
    with pytest.raises(TypeError, match="callable"):
        rffi.Function(5)
    g = rffi.Function(rffi.get_global_func("testing.add_one"))
    assert g(1) == 2


def test_callback_released_when_native_side_drops_it(testing):
    class Callback:
        def __call__(self, x):
            return x + 1

    cb = Callback()
    ref = weakref.ref(cb)
    before = len(_core._CALLBACKS)
    f = rffi.convert(cb)
    del cb
    assert ref() is not None  # the Function keeps it
    assert f(1) == 2
    rffi.register_global_func("pytest.held", f)
    del f
    gc.collect()
    assert ref() is not None  # the function registry keeps it
    assert rffi.get_global_func("pytest.held")(2) == 3
    rffi.remove_global_func("pytest.held")
    gc.collect()
    assert ref() is None
    assert len(_core._CALLBACKS) == before


def test_callback_argument_lifetimes(testing):
    kept = []
    testing.apply(lambda a: kept.append(a), [1, 2, 3])
    gc.collect()
    # The Array came from a temporary made for the call; the callback's wrapper still owns it.
    assert list(kept[0]) == [1, 2, 3]
    assert testing.object_use_count(kept[0]) == 1


def test_function_repr():
    f = rffi.get_global_func("testing.add_one")
    assert repr(f).startswith("<rffi.Function testing.add_one at 0x")


def test_reentrant_calls_of_one_function(testing):
    # Every level calls the same Function object while its outer calls are still in flight: each
    # call works in its own frame, so the arguments of the outer ones stay intact.
    def rec(n, tag):
        assert tag == f"level {n}"
        return 0 if n == 0 else testing.apply(rec, n - 1, f"level {n - 1}") + 1

    assert testing.apply(rec, 40, "level 40") == 40
