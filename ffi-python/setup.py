"""Builds the two Rust libraries of the pure-Python package `rffi` with cargo and ships them inside
it: `rffi/librffi.so` (the runtime and its C ABI, crate rffi-c) and `rffi/librffi_python_native.so`
(the package's native call path, crate rffi-python-native in ./native, loaded as a plugin of the
runtime). No Python extension module is built: one build serves every CPython, hence the
`py3-none-<platform>` wheel tag.

From a checkout the crates are `../ffi-c` and `./native`; an sdist carries the workspace in `rust/`
(see `Sdist`). Set CARGO_TARGET_DIR to reuse a warm cargo cache (`cargo build --release` warms it).
"""

import importlib
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.sdist import sdist as _sdist
from setuptools_rust import Binding, RustExtension
from setuptools_rust.build import build_rust as _build_rust

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1 keeps it in the wheel package
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
VENDORED = os.path.join(HERE, "rust")
if os.path.isdir(VENDORED):
    RUNTIME_MANIFEST = "rust/ffi-c/Cargo.toml"
    NATIVE_MANIFEST = "rust/ffi-python/native/Cargo.toml"
else:
    RUNTIME_MANIFEST = os.path.join("..", "ffi-c", "Cargo.toml")
    NATIVE_MANIFEST = os.path.join("native", "Cargo.toml")
# Extension name -> the file the package loads.
LIB_NAMES = {"rffi.librffi": "librffi.so", "rffi.librffi_python_native": "librffi_python_native.so"}
# The native session worker (`rffi-worker`, Rust, no Python), shipped inside the package.
WORKER_MANIFEST = RUNTIME_MANIFEST.replace("ffi-c", "sessions")


def _workspace():
    # The Cargo workspace: the checkout around ffi-python/, or rust/ in an sdist.
    return os.path.dirname(os.path.abspath(os.path.join(HERE, RUNTIME_MANIFEST, "..")))


def _packaging(name):
    # A module of the workspace's packaging/ folder (shared with `make install`).
    sys.path.insert(0, os.path.join(_workspace(), "packaging"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def _native_files(pkg_dir):
    names = (*LIB_NAMES.values(), "rffi-worker", os.path.join("examples", "libc_plugin.so"))
    return [p for p in (os.path.join(pkg_dir, n) for n in names) if os.path.isfile(p)]


class BuildRust(_build_rust):
    # The loader looks for exactly these names next to rffi/__init__.py; setuptools-rust would
    # otherwise name it like an extension module (librffi.cpython-311-x86_64-linux-gnu.so).
    def get_dylib_ext_path(self, ext, target_fname):
        build_ext = self.get_finalized_command("build_ext")
        folder = os.path.dirname(build_ext.get_ext_fullpath(target_fname))
        return os.path.join(folder, LIB_NAMES[target_fname])

    # Beside the library: the headers, rffi.pc and the CMake package, for C/C++ builds against
    # the installed package (`python -m rffi --cmakedir`; packaging/install_files.py).
    def run(self):
        super().run()
        root = _workspace()
        install_files = _packaging("install_files")
        pkg_dir = os.path.dirname(self.get_dylib_ext_path(None, "rffi.librffi"))
        install_files.write_layout(pkg_dir, install_files.WHEEL_LAYOUT, lib=None, root=root)
        # The C example plugin (examples/c-plugin), so that the README's tour runs anywhere.
        example = os.path.join(pkg_dir, "examples", "libc_plugin.so")
        os.makedirs(os.path.dirname(example), exist_ok=True)
        subprocess.run(
            [os.environ.get("CC", "cc"), "-std=c99", "-O2", "-shared", "-fPIC"]
            + [
                "-I" + os.path.join(root, "include"),
                os.path.join(root, "examples", "c-plugin", "plugin.c"),
            ]
            + ["-o", example],
            check=True,
        )
        if not self.inplace:  # editable installs keep debug info for local debugging
            _packaging("wheel_tools").strip(_native_files(pkg_dir))


class BdistWheel(_bdist_wheel):
    # Pure Python over a plain shared library: any CPython 3 on this platform.
    # The platform is the manylinux one the built binaries allow (packaging/wheel_tools.py).
    def get_tag(self):
        _, _, plat = super().get_tag()
        native = _native_files(os.path.join(self.bdist_dir, "rffi"))
        if native:
            plat = _packaging("wheel_tools").platform_tag(native, plat)
        return "py3", "none", plat


class Sdist(_sdist):
    # An sdist must build without the checkout around it: carry the Cargo workspace (every member,
    # or cargo refuses the workspace) in rust/.
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        root = os.path.dirname(HERE)
        dest = os.path.join(base_dir, "rust")
        skip = shutil.ignore_patterns("target", ".git", "ffi-python", ".venv*", "__pycache__")
        for name in os.listdir(root):
            src = os.path.join(root, name)
            if name in ("Cargo.toml", "Cargo.lock"):
                os.makedirs(dest, exist_ok=True)
                shutil.copy2(src, os.path.join(dest, name))
            elif os.path.isdir(src) and name not in (
                "target",
                ".git",
                "ffi-python",
                "docs",
                "bench",
            ):
                if name.startswith(".") or name == "tests":
                    continue
                shutil.copytree(src, os.path.join(dest, name), ignore=skip)
        # The package's own crate is a workspace member too.
        shutil.copytree(
            os.path.join(HERE, "native"), os.path.join(dest, "ffi-python", "native"), ignore=skip
        )


setup(
    rust_extensions=[
        RustExtension(name, path=manifest, binding=Binding.NoBinding, debug=False)
        for name, manifest in (
            ("rffi.librffi", RUNTIME_MANIFEST),
            ("rffi.librffi_python_native", NATIVE_MANIFEST),
        )
    ]
    + [
        RustExtension(
            {"rffi-worker": "rffi.rffi-worker"},
            path=WORKER_MANIFEST,
            binding=Binding.Exec,
            debug=False,
        ),
    ],
    cmdclass={"build_rust": BuildRust, "bdist_wheel": BdistWheel, "sdist": Sdist},
    zip_safe=False,
)
