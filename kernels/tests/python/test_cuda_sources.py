"""The CUDA backend's kernels compile with NVRTC, checked where there is no GPU: NVRTC is a plain
library (the `nvidia-cuda-nvrtc-cu12` wheel), so a CPU-only machine catches a source that the
GPU machine would reject at first use. Every module (dtype x family) is compiled with the options
the backend uses. Skipped when that library is not installed."""

import os
import sys

import pytest
import rffi_kernels as K

import rffi

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "cuda", "check"))
import nvrtc_lib  # noqa: E402  (kernels/cuda/check, shared with registers.py)

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64"]


def _nvrtc():
    lib = nvrtc_lib.load()
    if lib is None:
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc-cu12)")
    return lib


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


# The architectures whose code paths differ in the sources: before sm_80 (bfloat16 by bit
# arithmetic, no cp.async), sm_80 (no clusters) and sm_90 (an H200).
ARCHS = ["75", "80", "90"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype,family", MODULES)
def test_module_compiles_for_every_architecture(dtype, family, arch):
    nvrtc = _nvrtc()
    src = rffi.get_global_func("kernels.cuda_source")(rffi.dtype(dtype), family).encode()
    name = f"rffi_kernels_{dtype}_{family}.cu".encode()
    # The options the backend uses at run time (driver/kernels.rs), for the device's architecture.
    opts = [f"--gpu-architecture=compute_{arch}".encode(), b"--std=c++17"]
    ok, log = nvrtc_lib.compile_source(nvrtc, src, name, opts)
    assert ok, log


def test_unknown_dtype_or_family_is_a_clear_error():
    src = rffi.get_global_func("kernels.cuda_source")
    with pytest.raises(ValueError, match="no CUDA module for dtype uint8"):
        src(rffi.dtype("uint8"))
    with pytest.raises(ValueError, match="no softmax module for dtype int32"):
        src(rffi.dtype("int32"), "softmax")
