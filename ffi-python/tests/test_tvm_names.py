"""The names and behaviours rffi keeps from tvm-ffi's Python API for code written against it:
`rffi.testing`, `rffi.container`, `convert_func`, `__chandle__`, `__tvm_ffi_error__`, typed
Device and optional tensor parameters, and `+` between sequences and an Array."""

import numpy as np
import pytest

import rffi
import rffi.testing


def test_testing_module_exposes_the_testing_functions():
    assert isinstance(rffi.testing.add_one, rffi.Function)
    assert rffi.testing.add_one(41) == 42
    assert rffi.testing.echo("x") == "x"
    assert rffi.testing.echo.same_as(rffi.get_global_func("testing.echo"))


def test_run_with_gpu_lock_calls_and_returns(tmp_path, monkeypatch):
    monkeypatch.setenv("RFFI_GPU_LOCK", str(tmp_path / "gpu.lock"))
    assert rffi.testing.run_with_gpu_lock(lambda a, b=0: a + b, 2, b=3) == 5
    assert (tmp_path / "gpu.lock").exists()
    with pytest.raises(ZeroDivisionError):  # the lock is released on an exception too
        rffi.testing.run_with_gpu_lock(lambda: 1 / 0)
    assert rffi.testing.run_with_gpu_lock(lambda: "again") == "again"


def test_test_raise_error_is_raise_error():
    with pytest.raises(IndexError, match="out of range") as e:
        rffi.get_global_func("testing.test_raise_error")("IndexError", "out of range")
    assert e.value.__rffi_error__.kind == "IndexError"


def test_exceptions_carry_the_error_under_both_names():
    with pytest.raises(ValueError) as e:
        rffi.testing.raise_error("ValueError", "bad")
    err = e.value.__tvm_ffi_error__
    assert isinstance(err, rffi.Error) and err is e.value.__rffi_error__
    assert (err.kind, err.message) == ("ValueError", "bad")
    # A Python exception converted to an Error records it under both names as well.
    exc = KeyError("k")
    assert rffi.convert(exc).same_as(exc.__tvm_ffi_error__)
    assert exc.__tvm_ffi_error__ is exc.__rffi_error__


def test_tvm_ffi_error_hook_is_honoured():
    class Custom(Exception):
        def __tvm_ffi_error__(self):
            return rffi.convert(ValueError(f"custom: {self.args[0]}"))

    err = rffi.convert(Custom("why"))
    assert (err.kind, err.message) == ("ValueError", "custom: why")


def test_typed_device_parameter_takes_a_device_or_its_name():
    f = rffi.get_global_func("testing.schema_id_device")
    assert f(rffi.device("cuda", 1)) == rffi.device("cuda", 1)
    assert f("cuda:1") == rffi.device("cuda", 1)
    assert f("cpu") == rffi.device("cpu", 0)
    assert isinstance(f("rocm:2"), rffi.Device)
    with pytest.raises(TypeError, match=r"argument #0.*Device"):
        f("not_a_device:0")
    with pytest.raises(TypeError, match=r"argument #0.*Device"):
        f(3)


def test_optional_tensor_parameter():
    f = rffi.get_global_func("testing.optional_tensor_view_has_value")
    assert f(None) is False
    assert f(np.zeros(4, dtype="float32")) is True
    assert f(rffi.from_dlpack(np.zeros(2))) is True
    with pytest.raises(TypeError, match="argument #0"):
        f("not a tensor")


def test_convert_func_makes_a_function():
    f = rffi.convert_func(lambda a, b: a * b)
    assert isinstance(f, rffi.Function)
    assert f(6, 7) == 42
    assert rffi.testing.apply(f, 2, 3) == 6

    def boom(x):
        raise ValueError(f"boom {x}")

    with pytest.raises(ValueError, match="boom 1"):
        rffi.convert_func(boom)(1)
    with pytest.raises(TypeError, match="expected a callable, got int"):
        rffi.convert_func(3)


def test_convert_func_tensor_cls_imports_tensor_arguments():
    seen = []

    def callback(t, n):
        seen.append((type(t), n))
        return t * 2

    f = rffi.convert_func(callback, tensor_cls=np.ndarray)
    x = np.arange(3, dtype="int64")
    out = rffi.testing.apply(f, rffi.from_dlpack(x), 5)
    assert seen == [(np.ndarray, 5)]
    np.testing.assert_array_equal(np.from_dlpack(out), [0, 2, 4])
    with pytest.raises(TypeError, match="tensor_cls 'object' has no DLPack importer"):
        rffi.convert_func(callback, tensor_cls=object)


def test_chandle_is_the_object_address():
    a = rffi.convert([1, 2])
    assert isinstance(a.__chandle__(), int) and a.__chandle__() != 0
    assert rffi.testing.echo(a).__chandle__() == a.__chandle__()
    assert rffi.convert([1, 2]).__chandle__() != a.__chandle__()


def test_sequence_plus_array_is_an_array():
    a = rffi.Array([2, 3])
    for left in ([1], (1,)):
        out = left + a
        assert type(out) is rffi.Array and list(out) == [1, 2, 3]
    assert type(a + [4]) is rffi.Array and list(a + (4,)) == [2, 3, 4]
    assert type([] + rffi.Array([])) is rffi.Array


def test_testing_object_types_and_create_object():
    t = rffi.testing
    base = t.create_object("testing.TestObjectBase")
    assert isinstance(base, t.TestObjectBase)
    assert (base.v_i64, base.v_f64, base.v_str) == (10, 10.0, "hello")
    base = t.create_object("testing.TestObjectBase", v_i64=12, v_str="x")
    assert (base.v_i64, base.v_f64, base.v_str) == (12, 10.0, "x")
    assert base.add_i64(1) == 13
    assert type(base).add_i64.__doc__ == "add_i64 method"
    assert type(base).v_i64.__doc__ == "i64 field"
    base.v_i64 = 5
    assert base.v_i64 == 5
    with pytest.raises(TypeError):
        base.v_str = 1

    with pytest.raises(TypeError, match="field `v_map` has no default and was not given"):
        t.create_object("testing.TestObjectDerived")
    with pytest.raises(TypeError, match="no field named nope"):
        t.create_object("testing.TestObjectBase", nope=1)
    m, a = rffi.convert({"k": 1}), rffi.convert([1, 2])
    derived = t.create_object("testing.TestObjectDerived", v_i64=20, v_map=m, v_array=a)
    assert isinstance(derived, t.TestObjectDerived) and isinstance(derived, t.TestObjectBase)
    assert derived.v_map.same_as(m) and derived.v_array.same_as(a)
    assert (derived.v_i64, derived.v_f64, derived.v_str) == (20, 10.0, "hello")

    pair = t.TestIntPair(1, 2)
    assert (pair.a, pair.b, pair.sum()) == (1, 2, 3)
    assert t.create_object("testing.TestIntPair", a=3, b=4).sum() == 7


def test_function_from_a_c_symbol():
    import sys

    addr = rffi.get_global_func("testing.get_add_one_c_symbol")()
    f = rffi.Function.__from_extern_c__(addr)
    assert isinstance(f, rffi.Function)
    assert f(1) == 2 and rffi.testing.apply(f, 41) == 42
    with pytest.raises(TypeError, match="argument #0"):
        f(None)
    with pytest.raises(TypeError, match="expects 1 argument but 2 were given"):
        f(1, 2)

    keep = [1, 2, 3]
    base = sys.getrefcount(keep)
    f = rffi.Function.__from_extern_c__(addr, keep_alive_object=keep)
    assert f(2) == 3 and sys.getrefcount(keep) == base + 1
    f = None
    assert sys.getrefcount(keep) == base
    with pytest.raises(TypeError, match="address of a C function"):
        rffi.Function.__from_extern_c__(0)


def test_submodules_through_an_alias_of_the_package_are_rffi_s_own():
    # Run in a fresh interpreter: the alias goes into sys.modules.
    code = """
import sys, rffi
sys.modules["tvm_ffi"] = rffi
import tvm_ffi.serialization as ser
from tvm_ffi.access_path import AccessPath
from tvm_ffi.serialization import from_json_graph_str, to_json_graph_str
assert ser is rffi.serialization and ser.__spec__.name == "rffi.serialization"
assert AccessPath is rffi.access_path.AccessPath
# One set of classes: an Array made here is an Array to the serializer.
text = to_json_graph_str(rffi.convert([1, {"k": 2}]))
assert '"ffi.Array"' in text and '"ffi.Map"' in text, text
assert isinstance(from_json_graph_str(text), rffi.Array)
try:
    import tvm_ffi.no_such_module
except ModuleNotFoundError as e:
    assert e.name == "tvm_ffi.no_such_module", e.name
else:
    raise AssertionError("imported a module that does not exist")
print("ok")
"""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_container_module_holds_the_package_containers():
    import rffi.container as container

    assert container.Array is rffi.Array and container.List is rffi.List
    assert container.Map is rffi.Map and container.Dict is rffi.Dict
    assert container.MISSING is rffi.MISSING
    assert list(container.Array([1, 2])) == [1, 2]
