"""The CUDA backend's kernels compile with NVRTC, checked where there is no GPU: NVRTC is a plain
library (the `nvidia-cuda-nvrtc-cu12` wheel), so a CPU-only machine catches a source that the
GPU machine would reject at first use. Skipped when that library is not installed."""

import ctypes
import glob
import os

import pytest
import rffi_kernels as K

import rffi

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64"]


def _nvrtc():
    try:
        import nvidia.cuda_nvrtc as pkg
    except ImportError:
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    root = os.path.dirname(pkg.__file__) if pkg.__file__ else list(pkg.__path__)[0]
    libs = sorted(glob.glob(os.path.join(root, "lib", "libnvrtc.so*")))
    libs = [p for p in libs if "alt" not in os.path.basename(p)]
    if not libs:
        pytest.skip(f"no libnvrtc.so under {root}")
    return ctypes.CDLL(libs[0])


@pytest.fixture(scope="module", autouse=True)
def plugin():
    K.load()


@pytest.mark.parametrize("dtype", DTYPES)
def test_module_compiles_for_hopper(dtype):
    nvrtc = _nvrtc()
    src = rffi.get_global_func("kernels.cuda_source")(rffi.dtype(dtype)).encode()
    prog = ctypes.c_void_p()
    name = f"rffi_kernels_{dtype}.cu".encode()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, name, 0, None, None) == 0
    # The options the backend uses at run time (driver.rs), for an H200 (sm_90).
    opts = [b"--gpu-architecture=compute_90", b"--std=c++14"]
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    assert rc == 0, log.value.decode(errors="replace")


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(ValueError, match="no CUDA module for dtype uint8"):
        rffi.get_global_func("kernels.cuda_source")(rffi.dtype("uint8"))
