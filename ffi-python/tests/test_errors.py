"""Errors: kinds, the Error object, tracebacks stitched across the boundary, identity through
callbacks."""

import gc
import traceback

import pytest

import rffi

KINDS = [
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "RuntimeError",
    "NotImplementedError",
    "MemoryError",
    "AssertionError",
    "RecursionError",
]


@pytest.mark.parametrize("kind", KINDS)
def test_kind_maps_to_builtin_exception(testing, kind):
    cls = (
        getattr(__builtins__, kind) if isinstance(__builtins__, type(rffi)) else __builtins__[kind]
    )
    with pytest.raises(cls) as info:
        testing.raise_error(kind, "error XYZ")
    assert type(info.value) is cls
    err = info.value.__rffi_error__
    assert isinstance(err, rffi.Error)
    assert err.kind == kind and err.message == "error XYZ"


def test_unknown_kind_is_runtime_error(testing):
    with pytest.raises(RuntimeError, match="custom failure") as info:
        testing.raise_error("SomethingUnusual", "custom failure")
    assert info.value.__rffi_error__.kind == "SomethingUnusual"


def test_registered_kind(testing):
    class PluginError(Exception):
        pass

    rffi.register_error("PytestPluginError", PluginError)
    with pytest.raises(PluginError, match="registered"):
        testing.raise_error("PytestPluginError", "registered")

    def cb():
        raise PluginError("from python")

    err = rffi.convert(PluginError("as value"))
    assert err.kind == "PytestPluginError"
    with pytest.raises(PluginError):
        testing.apply(cb)


def test_native_frame_follows_python_frames(testing):
    with pytest.raises(ValueError) as info:
        testing.raise_error("ValueError", "where")
    frames = traceback.extract_tb(info.value.__traceback__)
    names = [f.name for f in frames]
    # Python frames first (this test), the native raise site last.
    assert names[0] == "test_native_frame_follows_python_frames"
    assert frames[-1].name == "testing.raise_error"
    assert frames[-1].filename.endswith("testing.rs") and frames[-1].lineno > 0
    backtrace = info.value.__rffi_error__.backtrace
    assert 'testing.rs", line' in backtrace and "in testing.raise_error" in backtrace


def test_panic_becomes_runtime_error(testing):
    with pytest.raises(RuntimeError, match="panic: boom"):
        testing.panic("boom")


def test_python_exception_comes_back_as_the_same_object(testing):
    raised = []

    def callback(x):
        exc = LookupError(f"bad {x}")
        raised.append(exc)
        raise exc

    with pytest.raises(LookupError) as info:
        testing.apply(callback, 7)
    assert info.value is raised[0]
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert names[0] == "test_python_exception_comes_back_as_the_same_object"
    assert names[-1] == "callback"
    # Native code sees it as an Error with the Python frames in its traceback.
    err = info.value.__rffi_error__
    assert err.kind == "LookupError" and err.message == "bad 7"
    assert "in callback" in err.backtrace


def test_nested_exception_keeps_identity_and_frames(testing):
    # Python -> Rust -> Python -> Rust -> Python; the innermost raises.
    def innermost():
        raise KeyError("deep")

    def middle():
        return testing.apply(innermost)

    with pytest.raises(KeyError) as info:
        testing.apply(middle)
    exc = info.value
    names = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    assert names[0] == "test_nested_exception_keeps_identity_and_frames"
    assert "middle" in names and names[-1] == "innermost"
    assert names.index("middle") < names.index("innermost")
    bt = exc.__rffi_error__.backtrace
    # Most recent first: innermost, then middle.
    assert bt.index("in innermost") < bt.index("in middle")


def test_error_from_nested_callback_is_the_same_error_object(testing):
    errors = []

    def inner():
        raise ValueError("inner")

    def outer():
        try:
            testing.apply(inner)
        except ValueError as e:
            errors.append(e.__rffi_error__)
            raise

    with pytest.raises(ValueError) as info:
        testing.apply(outer)
    assert info.value.__rffi_error__.same_as(errors[0])


def test_native_error_through_callback(testing):
    # A native error raised inside a callback crosses two boundaries as the same exception.
    def cb():
        testing.raise_error("IndexError", "native inside python")

    with pytest.raises(IndexError, match="native inside python") as info:
        testing.apply(cb)
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "cb" in names and names[-1] == "testing.raise_error"


def test_keyboard_interrupt_crosses_too(testing):
    def cb():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        testing.apply(cb)


def test_error_object_and_py_error(testing):
    err = rffi.Error("ValueError", "made here", '  File "x.rs", line 3, in f\n')
    assert err.kind == "ValueError" and err.message == "made here"
    assert "x.rs" in err.backtrace
    assert repr(err) == "rffi.Error(kind='ValueError', message='made here')"
    exc = err.py_error()
    assert type(exc) is ValueError and exc.__rffi_error__.same_as(err)


def test_no_reference_cycles(testing):
    def cb():
        raise ValueError("cycle check")

    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            try:
                testing.raise_error("ValueError", "x")
            except ValueError:
                pass
            try:
                testing.apply(cb)
            except ValueError:
                pass
            try:
                rffi.Map({"a": 1})["missing"]
            except KeyError:
                pass
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_bad_input_is_a_clear_error(testing):
    with pytest.raises(TypeError, match="argument #0"):
        testing.add_one("not an int")
    with pytest.raises(TypeError, match="expects 1 argument"):
        testing.add_one(1, 2)


# ---- Deep recursion keeps its RecursionError ----


def _recurse_through_native(testing, depth):
    def f(n):
        return 0 if n == 0 else testing.apply(f, n - 1)

    return f(depth)


@pytest.mark.parametrize("depth", [5_000, 50_000])
def test_deep_round_trips_raise_recursion_error(testing, depth):
    # Python -> native -> Python ... past the interpreter's limit: the RecursionError the
    # interpreter raised comes back to the caller as a RecursionError, not a RuntimeError.
    with pytest.raises(RecursionError):
        _recurse_through_native(testing, depth)
    assert _recurse_through_native(testing, 50) == 0  # and the process is still fine


def test_recursion_error_from_a_callback_is_the_same_object(testing):
    # native -> Python raising RecursionError -> native -> Python: the same exception.
    err = RecursionError("deep")

    def cb():
        raise err

    with pytest.raises(RecursionError) as info:
        testing.apply(cb)
    assert info.value is err


def test_python_recursion_inside_a_callback(testing):
    def runaway(n):
        return runaway(n + 1)

    with pytest.raises(RecursionError):
        testing.apply(runaway, 0)


def test_register_refuses_a_non_callable():
    with pytest.raises(TypeError, match=r"register_global_func\('py.five'\).*got int"):
        rffi.register_global_func("py.five", 5)
    assert rffi.get_global_func("py.five", allow_missing=True) is None
