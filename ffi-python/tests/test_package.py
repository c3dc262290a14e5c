"""The package as installed: import cost, no eager numpy/torch, the CLI, typing files, devices and
dtypes, library selection."""

import os
import pathlib
import shutil
import subprocess
import sys

import rffi

PKG = pathlib.Path(rffi.__file__).parent


def _python(code, **env):
    full = dict(os.environ, **env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full, check=False
    )


def _third_party(module):
    """Whether ``module`` is neither rffi's nor the standard library's (CPython 3.9 has no list of
    the latter: there, whether it is one of the optional dependencies)."""
    top = module.partition(".")[0]
    if top == "rffi":
        return False
    stdlib = getattr(sys, "stdlib_module_names", None)
    return top not in stdlib if stdlib is not None else top in ("numpy", "torch", "ray")


def test_import_is_fast_and_lazy():
    # What `import rffi` loads, and the CPU time it takes: wall time on a shared machine is
    # mostly waiting for a core, which says nothing about the import. Best of five fresh
    # processes.
    code = (
        "import sys, time\n"
        "before = set(sys.modules)\n"
        "c, t = time.process_time(), time.perf_counter()\n"
        "import rffi\n"
        "cpu, wall = (time.process_time() - c) * 1e3, (time.perf_counter() - t) * 1e3\n"
        "print(cpu, wall, *sorted(set(sys.modules) - before))\n"
    )
    # Loaded on first use only (rffi.__getattr__): they pull in typing and inspect, or ray.
    lazy = {
        "rffi._enums",
        "rffi._ray",
        "rffi._schema",
        "rffi.access_path",
        "rffi.dataclasses",
        "rffi.serialization",
        "rffi.shard",
        "rffi.structural",
        "rffi.testing",
    }
    assert lazy <= {module for module, _ in rffi._LAZY.values()}
    cpu_times, wall_times = [], []
    for _ in range(5):
        out = _python(code)
        assert out.returncode == 0, out.stderr
        cpu, wall, *loaded = out.stdout.split()
        cpu_times.append(float(cpu))
        wall_times.append(float(wall))
        # Nothing outside the package and the standard library: no numpy, torch or ray.
        foreign = [m for m in loaded if _third_party(m)]
        assert not foreign, f"import rffi loaded {foreign}"
        eager = sorted(lazy.intersection(loaded) | {"typing", "inspect"}.intersection(loaded))
        assert not eager, f"import rffi loaded {eager}, which it loads on first use only"
    assert min(cpu_times) <= 50.0, (
        f"import rffi took {min(cpu_times):.1f} ms of CPU at best ({min(wall_times):.1f} ms wall)"
    )


def test_cli_info():
    out = subprocess.run(
        [sys.executable, "-m", "rffi", "info"], capture_output=True, text=True, check=True
    )
    assert f"rffi {rffi.__version__}" in out.stdout
    assert rffi.LIB_PATH in out.stdout
    # This process has loaded plugins and registered functions; count in a fresh one.
    fresh = _python("import rffi; print(len(rffi.list_global_func_names()))")
    assert f"global functions: {fresh.stdout.strip()}" in out.stdout
    names = subprocess.run(
        [sys.executable, "-m", "rffi", "info", "--names"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "  testing.echo" in names.stdout


def test_typing_files_are_installed():
    assert (PKG / "py.typed").exists()
    assert (PKG / "__init__.pyi").exists()


def test_library_is_inside_the_package_or_chosen_by_env():
    if os.environ.get("RFFI_LIBRARY_PATH"):
        assert rffi.LIB_PATH.startswith(os.path.abspath(os.environ["RFFI_LIBRARY_PATH"]))
    else:
        assert pathlib.Path(rffi.LIB_PATH).parent == PKG
    out = _python("import rffi; print(rffi.LIB_PATH)", RFFI_LIBRARY_PATH=rffi.LIB_PATH)
    assert out.stdout.strip() == rffi.LIB_PATH
    bad = _python("import rffi", RFFI_LIBRARY_PATH="/nonexistent/librffi.so")
    assert bad.returncode != 0 and "RFFI_LIBRARY_PATH" in bad.stderr


def test_version():
    assert rffi.__version__ == "0.1.0"
    assert rffi.ABI_VERSION[0] == 0


def test_object_reprs(testing):
    assert repr(rffi.Array([1])) == "[1]"
    assert repr(rffi.Map({"a": 1})) == "{'a': 1}"
    err = rffi.Error("KeyError", "k")
    assert str(err) == "KeyError: k"
    assert rffi.Array([]).type_key == "ffi.Array"


def test_native_code_lives_beside_the_package():
    """The Python-specific native code is the package's own library (ffi-python/native), loaded
    as a plugin of the runtime; librffi.so and its header export nothing Python-specific."""
    from rffi import _core, _native

    header = pathlib.Path(__file__).resolve().parents[2] / "include" / "rffi" / "c_api.h"
    if header.exists():
        assert "RFFIPy" not in header.read_text()
    if shutil.which("nm"):
        out = subprocess.run(
            ["nm", "-D", "--defined-only", rffi.LIB_PATH], capture_output=True, text=True
        )
        exported = [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]
        assert "RFFIFunctionCall" in exported
        assert not [s for s in exported if s.startswith("RFFIPy") or "python" in s.lower()]
    if not _core.FASTPATH:
        return
    assert os.path.dirname(_native.PATH) == os.path.dirname(rffi.LIB_PATH)
    # Loaded through the runtime's plugin loader: loading it again gives that same module, which
    # registers no functions of its own.
    mod = rffi.load_module(_native.PATH)
    assert mod.list_functions() == []
    assert mod.path == _native.PATH
