"""NVRTC through ctypes, from the `nvidia-cuda-nvrtc-cu12` wheel: where its library is, and one
compile with its log (and its machine code). Shared by `registers.py`, `sass.py` and the CUDA
source tests (kernels/tests/python/test_cuda_sources.py)."""

from __future__ import annotations

import ctypes
import glob
import os
import sys


def load():
    """The wheel's libnvrtc.so, loaded; None when the wheel is not installed or holds none."""
    try:
        import nvidia.cuda_nvrtc as pkg
    except ImportError:
        return None
    root = os.path.dirname(pkg.__file__) if pkg.__file__ else list(pkg.__path__)[0]
    libs = sorted(glob.glob(os.path.join(root, "lib", "libnvrtc.so*")))
    libs = [p for p in libs if "alt" not in os.path.basename(p)]
    return ctypes.CDLL(libs[0]) if libs else None


def require():
    """The wheel's libnvrtc.so, loaded, or exit with how to install it (the scripts' start)."""
    lib = load()
    if lib is None:
        sys.exit("NVRTC not found: pip install nvidia-cuda-nvrtc-cu12")
    return lib


def compile_source(lib, src: bytes, name: bytes, opts: list[bytes]) -> tuple[bool, str]:
    """(ok, NVRTC's log) of compiling `src` (named `name` in messages) with `opts`."""
    ok, log, _ = compile_cubin(lib, src, name, opts, cubin=False)
    return ok, log


def compile_cubin(lib, src: bytes, name: bytes, opts: list[bytes], cubin=True):
    """(ok, NVRTC's log, machine code or None) of compiling `src` with `opts`; the machine code
    (a cubin) where `opts` name a real architecture (`--gpu-architecture=sm_90`)."""
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, name, 0, None, None) != 0:
        return False, "nvrtcCreateProgram failed", None
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    code = None
    if rc == 0 and cubin and lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)) == 0 and size.value:
        buf = ctypes.create_string_buffer(size.value)
        if lib.nvrtcGetCUBIN(prog, buf) == 0:
            code = buf.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc == 0, log.value.decode(errors="replace"), code
