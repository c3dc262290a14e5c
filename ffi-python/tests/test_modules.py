"""Loading the example plugins (C and Rust) and a symbol-only test plugin with load_module."""

import pytest

import rffi


def test_c_plugin(c_plugin_path):
    mod = rffi.load_module(c_plugin_path)
    assert isinstance(mod, rffi.Module)
    assert mod.mul(6, 7) == 42  # registered as c_plugin.mul, reached by its last dotted part
    assert mod["c_plugin.mul"](2, 3) == 6
    assert mod.get_function("square")(9) == 81  # exported __rffi_square symbol
    assert rffi.get_global_func("c_plugin.mul")(3, 3) == 9  # joined the function registry
    with pytest.raises(RuntimeError, match="c_plugin.fail was called"):
        mod.fail()
    with pytest.raises(TypeError, match="expects two ints"):
        mod.mul(1, "x")
    names = mod.list_functions()
    assert "c_plugin.mul" in names and "c_plugin.fail" in names
    assert rffi.load_module(c_plugin_path).same_as(mod)  # loading again gives the same module
    assert c_plugin_path in repr(mod) or "Module" in repr(mod)


def test_rust_plugin(rust_plugin_path):
    mod = rffi.load_module(rust_plugin_path)
    assert mod.add(2, 3) == 5
    assert mod.greet("python") == "hello, python, from Rust"
    assert list(mod.map(lambda x: x + 1, [1, 2, 3])) == [2, 3, 4]  # calls back into Python
    with pytest.raises(ValueError, match="cannot divide 1 by 0") as info:
        mod.checked_div(1, 0)
    assert info.traceback[-1].path.name == "lib.rs"
    assert "rust_plugin.add" in mod.list_functions()


def test_missing_functions(c_plugin_path, test_plugin):
    mod = rffi.load_module(c_plugin_path)
    with pytest.raises(AttributeError, match="no function 'nope'"):
        _ = mod.nope
    with pytest.raises(KeyError):
        mod["nope"]
    assert mod.get_function("nope", allow_missing=True) is None
    assert "nope" not in mod and "mul" in mod
    assert test_plugin.add3(1, 2, 3) == 6


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        rffi.load_module(tmp_path / "missing.so")
    bogus = tmp_path / "not_a_library.so"
    bogus.write_text("not a shared library")
    with pytest.raises(Exception) as info:
        rffi.load_module(bogus)
    assert "not_a_library.so" in str(info.value)
