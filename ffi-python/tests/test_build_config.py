"""What the installed package offers C and C++ builds (`python -m rffi --cflags`, ...), and a
C++ plugin built against those installed headers, loaded and called from Python."""

import os
import pathlib
import shutil
import subprocess
import sys
import traceback

import pytest

import rffi

REPO = pathlib.Path(__file__).resolve().parents[2]


def _config(*options):
    out = subprocess.run(
        [sys.executable, "-m", "rffi", *options], capture_output=True, text=True, check=False
    )
    return out.returncode, out.stdout.splitlines(), out.stderr


def test_build_paths_point_at_the_installed_files():
    rc, lines, err = _config("--includedir", "--libdir", "--cmakedir", "--pkgconfigdir")
    assert rc == 0, err
    include, lib, cmake, pkgconfig = map(pathlib.Path, lines)
    assert (include / "rffi" / "c_api.h").is_file()
    assert (include / "rffi" / "rffi.hpp").is_file()
    assert (include / "rffi" / "cpp" / "function.hpp").is_file()
    assert (lib / "librffi.so").is_file()
    if "RFFI_LIBRARY_PATH" not in os.environ:
        assert lib == pathlib.Path(rffi.LIB_PATH).parent
    assert (cmake / "rffiConfig.cmake").is_file()
    version_file = (cmake / "rffiConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{rffi.__version__}")' in version_file
    pc = (pkgconfig / "rffi.pc").read_text()
    assert f"Version: {rffi.__version__}" in pc and "-lrffi" in pc


def test_flags():
    rc, (cflags, ldflags), _ = _config("--cflags", "--ldflags")
    assert rc == 0
    assert cflags.startswith("-I") and pathlib.Path(cflags[2:], "rffi", "c_api.h").is_file()
    assert ldflags.split()[-1] == "-lrffi" and "-Wl,-rpath," in ldflags


def test_unknown_option_is_an_error_naming_the_options():
    rc, lines, err = _config("--nope")
    assert rc == 2 and not lines
    assert "unknown option --nope" in err and "--cmakedir" in err


@pytest.fixture(scope="module")
def cpp_plugin(tmp_path_factory):
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        pytest.skip(f"no C++ compiler ({cxx}) to build the C++ plugin")
    rc, (cflags,), _ = _config("--cflags")
    assert rc == 0
    out = tmp_path_factory.mktemp("cpp") / "libcpp_plugin.so"
    src = REPO / "examples" / "cpp-plugin" / "plugin.cc"
    subprocess.run(
        [cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-Wall", "-Werror", cflags, str(src)]
        + ["-o", str(out)],
        check=True,
    )
    return rffi.load_module(out)


def test_cpp_plugin_from_python(cpp_plugin):
    assert rffi.get_global_func("cpp_plugin.add")(40, 2) == 42
    assert rffi.get_global_func("cpp_plugin.describe")([1, 2]) == "a value of type ffi.Array"
    assert cpp_plugin.shout("hi") == "HI!"
    with pytest.raises(TypeError, match=r"argument #0 when calling `cpp_plugin.add`.*got str"):
        rffi.get_global_func("cpp_plugin.add")("40", 2)


def test_cpp_exception_becomes_a_python_exception_with_the_cpp_frame(cpp_plugin):
    with pytest.raises(ValueError, match="shout needs some text") as info:
        cpp_plugin.shout("")
    assert "plugin.cc" in info.value.__rffi_error__.backtrace
    frames = [(f.filename, f.name) for f in traceback.extract_tb(info.tb)]
    assert any(name == "shout" and file.endswith("plugin.cc") for file, name in frames)


def test_cpp_plugin_writes_into_a_numpy_array(cpp_plugin):
    np = pytest.importorskip("numpy")
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, dtype=np.float32)
    rffi.get_global_func("cpp_plugin.axpy")(2.0, x, y)
    assert y.tolist() == [1.0, 3.0, 5.0, 7.0]
    with pytest.raises(TypeError, match="contiguous float32"):
        rffi.get_global_func("cpp_plugin.axpy")(1.0, x.astype(np.float64), y.astype(np.float64))
