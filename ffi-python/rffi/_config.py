"""Where this installation keeps what C and C++ builds need, as ``tvm-ffi-config`` reports it:

    python -m rffi --includedir     # the folder holding rffi/c_api.h and rffi/rffi.hpp
    python -m rffi --libdir         # the folder holding librffi.so
    python -m rffi --cmakedir       # for find_package(rffi): -Drffi_DIR=... (target rffi::rffi)
    python -m rffi --pkgconfigdir   # for PKG_CONFIG_PATH (package rffi)
    python -m rffi --cflags         # -I<includedir>
    python -m rffi --ldflags        # -L<libdir> -Wl,-rpath,<libdir> -lrffi

Nothing here loads the library: the paths are those of the installed package's files (the wheel
carries the headers, the CMake package and rffi.pc beside ``librffi.so``).
"""

from __future__ import annotations

import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_LIB_NAME = "librffi.dylib" if sys.platform == "darwin" else "librffi.so"

OPTIONS = (
    "--includedir",
    "--libdir",
    "--libfiles",
    "--cmakedir",
    "--pkgconfigdir",
    "--cflags",
    "--cxxflags",
    "--ldflags",
    "--libs",
)


def _existing(path: str, what: str) -> str:
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"rffi: {what} not found at {path}; this installation lacks the files for C/C++ "
            "builds (install the package from a wheel or with `pip install ./ffi-python`)"
        )
    return path


def includedir() -> str:
    return _existing(os.path.join(_PKG_DIR, "include"), "the C/C++ headers")


def libdir() -> str:
    env = os.environ.get("RFFI_LIBRARY_PATH")
    if env:  # the same library the package itself loads
        return os.path.dirname(env) if os.path.isfile(env) else env
    _existing(os.path.join(_PKG_DIR, _LIB_NAME), _LIB_NAME)
    return _PKG_DIR


def libfiles() -> str:
    return os.path.join(libdir(), _LIB_NAME)


def cmakedir() -> str:
    return _existing(os.path.join(_PKG_DIR, "share", "cmake", "rffi"), "the CMake package")


def pkgconfigdir() -> str:
    return _existing(os.path.join(_PKG_DIR, "share", "pkgconfig"), "rffi.pc")


def cflags() -> str:
    return f"-I{includedir()}"


def ldflags() -> str:
    lib = libdir()
    return f"-L{lib} -Wl,-rpath,{lib} -lrffi"


_ANSWERS = {
    "--includedir": includedir,
    "--libdir": libdir,
    "--libfiles": libfiles,
    "--cmakedir": cmakedir,
    "--pkgconfigdir": pkgconfigdir,
    "--cflags": cflags,
    "--cxxflags": cflags,
    "--ldflags": ldflags,
    "--libs": ldflags,
}


def main(argv: list) -> int:
    """Prints one line per option, in order; an unknown option or a missing file is an error."""
    for opt in argv:
        if opt not in _ANSWERS:
            print(
                f"python -m rffi: unknown option {opt}; options: {', '.join(OPTIONS)}",
                file=sys.stderr,
            )
            return 2
    try:
        for opt in argv:
            print(_ANSWERS[opt]())
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    return 0
