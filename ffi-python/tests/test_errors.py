"""Errors: kinds, the Error object, tracebacks stitched across the boundary, identity through
callbacks."""

import gc
import pickle
import subprocess
import sys
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
    # KeyError's own class, whose str() is the message (see test_key_error_message_is_shown_once).
    assert type(info.value) is cls or (kind == "KeyError" and type(info.value).__base__ is cls)
    assert str(info.value) == "error XYZ"
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


def test_caught_panics_print_nothing():
    # The runtime turns the panic into the RuntimeError: nothing reaches stderr (in a process of
    # its own, whose stderr is the evidence).
    code = (
        "import rffi\n"
        "for k in range(3):\n"
        "    try:\n"
        "        rffi.get_global_func('testing.panic')(f'boom {k}')\n"
        "    except RuntimeError as e:\n"
        "        assert f'boom {k}' in str(e)\n"
        "print('done')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout == "done\n", out.stderr
    assert out.stderr == ""


def test_key_error_message_is_shown_once(testing):
    # Python's KeyError shows the repr of its argument; the runtime's message is shown as is.
    with pytest.raises(KeyError) as info:
        testing.raise_error("KeyError", "no entry 'a' here")
    e = info.value
    assert str(e) == "no entry 'a' here" and e.__rffi_error__.message == "no entry 'a' here"
    assert traceback.format_exception_only(type(e), e) == ["KeyError: no entry 'a' here\n"]
    assert isinstance(e, KeyError) and type(pickle.loads(pickle.dumps(e))) is KeyError
    # A missing key names the key once, as a dict's KeyError does.
    for container in (rffi.Map({"a": 1}), rffi.Dict({"a": 1})):
        with pytest.raises(KeyError) as info:
            container["missing"]
        assert str(info.value) == "'missing'"
        with pytest.raises(KeyError) as info:
            container[7]
        assert str(info.value) == "7"
    with pytest.raises(KeyError) as info:
        rffi.remove_global_func("pytest.never.registered")
    assert not str(info.value).startswith(('"', "'")), str(info.value)
    # A Python KeyError crossing into the runtime carries its key, not the key's repr.
    assert rffi.convert(KeyError("k")).message == "k"


def test_converting_an_exception_appends_the_frames_it_crossed(testing):
    def raise_native():
        testing.raise_error("ValueError", "error XYZ")

    try:
        raise_native()
    except ValueError as e:
        err = e.__rffi_error__
        assert "raise_native" not in err.backtrace
        converted = rffi.convert(e)
        assert converted.same_as(err) and converted.backtrace.count("raise_native") == 1
        passed = testing.echo(e)  # as an argument: the same Error, no frame twice
        assert passed.same_as(err) and passed.backtrace.count("raise_native") == 1

    def raise_python():
        raise IndexError("from python")

    try:
        raise_python()
    except IndexError as e:
        err = rffi.convert(e)
        assert err.kind == "IndexError" and err.message == "from python"
        assert "raise_python" in err.backtrace and rffi.convert(e).same_as(err)


def test_register_error_maps_both_ways(testing):
    @rffi.register_error
    class PytestDecorated(Exception):
        pass

    @rffi.register_error("PytestNamedKind")
    class PytestNamed(ValueError):
        pass

    for cls, kind in ((PytestDecorated, "PytestDecorated"), (PytestNamed, "PytestNamedKind")):
        with pytest.raises(cls, match="native"):
            testing.raise_error(kind, "native")
        assert rffi.convert(cls("python")).kind == kind

        def callback(cls=cls):
            raise cls("from a callback")

        with pytest.raises(cls) as info:
            testing.apply(callback)
        assert info.value.__rffi_error__.kind == kind
        assert rffi.Error(kind, "made").py_error().__class__ is cls
    # The built-in kinds are in the same table.
    assert rffi.convert(ValueError("v")).kind == "ValueError"
    with pytest.raises(TypeError, match="exception class"):
        rffi.register_error("NotAClass", int)
    with pytest.raises(TypeError, match="the kind must be a str"):
        rffi.register_error(3, ValueError)
    assert rffi.error.register_error is rffi.register_error  # tvm-ffi's module name


def test_an_exception_class_can_make_its_error(testing):
    class QuotaExceeded(Exception):
        def __init__(self, used):
            super().__init__(f"used {used}")
            self.used = used

        def __rffi_error__(self):
            return rffi.Error("ValueError", f"quota exceeded: {self.used} units")

    err = rffi.convert(QuotaExceeded(5))
    assert (err.kind, err.message) == ("ValueError", "quota exceeded: 5 units")

    def over_quota():
        raise QuotaExceeded(7)

    with pytest.raises(QuotaExceeded) as info:  # the same exception comes back
        testing.apply(over_quota)
    err = info.value.__rffi_error__
    assert err.message == "quota exceeded: 7 units" and "over_quota" in err.backtrace

    class Broken(Exception):
        def __rffi_error__(self):
            return "not an Error"

    with pytest.raises(TypeError, match="must return an rffi.Error"):
        rffi.convert(Broken())


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
