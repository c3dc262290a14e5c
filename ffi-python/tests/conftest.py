"""Shared fixtures: the runtime's `testing.*` functions and the plugins the tests load.

The suite imports the *installed* `rffi` (scripts/test.sh installs it with pip), or the one that
RFFI_LIBRARY_PATH points a source checkout at. Nothing here depends on which call path runs.
"""

import os
import pathlib
import shutil
import subprocess

import pytest

import rffi

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def testing():
    class Testing:
        pass

    t = Testing()
    for name in rffi.list_global_func_names():
        if name.startswith("testing."):
            setattr(t, name[len("testing.") :], rffi.get_global_func(name))
    return t


def _cc():
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc}) to build the test plugin")
    return cc


@pytest.fixture(scope="session")
def test_plugin(tmp_path_factory):
    """tests/native/test_plugin.c built as a symbol-only plugin and loaded."""
    out = tmp_path_factory.mktemp("plugin") / "librffi_py_test_plugin.so"
    src = pathlib.Path(__file__).parent / "native" / "test_plugin.c"
    _build_shared(src, out)
    return rffi.load_module(out)


def _build_shared(src, out):
    """Compiles one C file into a shared library against the rffi header."""
    subprocess.run(
        [_cc(), "-std=c99", "-O2", "-shared", "-fPIC", f"-I{REPO / 'include'}", str(src)]
        + ["-o", str(out)],
        check=True,
    )


def _example(env, build):
    path = os.environ.get(env)
    if path and os.path.exists(path):
        return path
    return build()


@pytest.fixture(scope="session")
def c_plugin_path(tmp_path_factory):
    def build():
        out = tmp_path_factory.mktemp("cplugin") / "libc_plugin.so"
        src = REPO / "examples" / "c-plugin" / "plugin.c"
        _build_shared(src, out)
        return str(out)

    return _example("RFFI_EXAMPLE_C_PLUGIN", build)


@pytest.fixture(scope="session")
def rust_plugin_path():
    def build():
        target = os.environ.get("CARGO_TARGET_DIR", str(REPO / "target"))
        path = pathlib.Path(target) / "release" / "librffi_example_rust_plugin.so"
        if not path.exists():
            pytest.skip("the Rust example plugin is not built (scripts/test.sh builds it)")
        return str(path)

    return _example("RFFI_EXAMPLE_RUST_PLUGIN", build)
