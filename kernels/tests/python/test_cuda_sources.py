"""The CUDA backend's kernels compile with NVRTC, checked where there is no GPU: NVRTC is a plain
library (the `nvidia-cuda-nvrtc-cu12` wheel), so a CPU-only machine catches a source that the
GPU machine would reject at first use. Every module (dtype x family) is compiled with the options
the backend uses. Skipped when that library is not installed."""

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


def _families(dtype):
    return rffi.get_global_func("kernels.cuda_source")(rffi.dtype(dtype)).split(",")


REDUCE = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_argmax"]
FAMILIES = ["elementwise", *REDUCE, "softmax", "norm", "softmax_quads"]
MODULES = [(d, f) for d in DTYPES for f in FAMILIES if f == "elementwise" or "float" in d]


def test_every_float_dtype_has_every_family():
    for dtype in DTYPES:
        want = FAMILIES if "float" in dtype else ["elementwise"]
        assert _families(dtype) == want


@pytest.mark.parametrize("dtype,family", MODULES)
def test_module_compiles_for_hopper(dtype, family):
    nvrtc = _nvrtc()
    src = rffi.get_global_func("kernels.cuda_source")(rffi.dtype(dtype), family).encode()
    prog = ctypes.c_void_p()
    name = f"rffi_kernels_{dtype}_{family}.cu".encode()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, name, 0, None, None) == 0
    # The options the backend uses at run time (driver.rs), for an H200 (sm_90).
    opts = [b"--gpu-architecture=compute_90", b"--std=c++17"]
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    assert rc == 0, log.value.decode(errors="replace")


def test_unknown_dtype_or_family_is_a_clear_error():
    src = rffi.get_global_func("kernels.cuda_source")
    with pytest.raises(ValueError, match="no CUDA module for dtype uint8"):
        src(rffi.dtype("uint8"))
    with pytest.raises(ValueError, match="no softmax module for dtype int32"):
        src(rffi.dtype("int32"), "softmax")
