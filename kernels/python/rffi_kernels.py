"""The rffi kernels from Python: load the plugin, call ``kernels.<op>``, scope the settings.

    import rffi_kernels as K
    K.load()                                  # librffi_kernels_plugin.so, once
    y = K.softmax(x)                          # any DLPack tensor: numpy, torch (CPU or CUDA)
    s = K.sum(x, axis=(0, 2), keepdims=True)  # reductions on any axes (numpy / torch names)
    y = K.layer_norm(x, w, b, eps=1e-5)       # over the last axis
    with K.scope(disable=["matmul"]):         # this thread only, restored on exit
        ...
    print(K.describe()["selection"])          # which backend serves what, and why
    print(K.explain("softmax", x)["variant"]) # the kernel variant a call would run, and why

The functions taking options (reductions, softmax, the normalizations, gelu) accept them as
keywords here; ``kernels.<op>`` itself takes them positionally in the order of the signatures.

The plugin is found through ``RFFI_KERNELS_PLUGIN``, else next to ``librffi.so``, else in the
workspace's ``target/release``.
"""

from __future__ import annotations

import contextlib
import json
import os

import rffi

# Ops called with positional arguments only: looked up once, then the global function itself.
OPS = ("add", "sub", "mul", "div", "relu", "exp", "matmul")
_NAME = "librffi_kernels_plugin.so"


def _plugin_path() -> str:
    env = os.environ.get("RFFI_KERNELS_PLUGIN")
    if env:
        return env
    candidates = [
        os.path.join(os.path.dirname(rffi.LIB_PATH), _NAME),
        os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", _NAME),
    ]
    for c in candidates:
        if os.path.isfile(c):
            return os.path.abspath(c)
    raise ImportError(
        f"rffi_kernels: {_NAME} not found (looked in {candidates}); build it with "
        "`cargo build --release -p rffi-kernels-plugin` or set RFFI_KERNELS_PLUGIN"
    )


def load(path: str | None = None):
    """Loads the kernels plugin (once per process; loading again returns the same module)."""
    return rffi.load_module(path or _plugin_path())


_FUNCS: dict = {}


def _f(name):
    f = _FUNCS.get(name)
    if f is None:
        f = _FUNCS[name] = rffi.get_global_func("kernels." + name)
    return f


def _axis(axis, dim):
    if dim is not None:
        if axis is not None:
            raise TypeError("pass axis or dim, not both")
        axis = dim
    return tuple(axis) if isinstance(axis, list) else axis


def sum(x, axis=None, keepdims=False, out=None, *, dim=None):  # noqa: A001
    """Sum over ``axis`` (None: every axis; an int or a tuple of ints), as numpy / torch."""
    return _f("sum")(x, _axis(axis, dim), bool(keepdims), out)


def mean(x, axis=None, keepdims=False, out=None, *, dim=None):
    return _f("mean")(x, _axis(axis, dim), bool(keepdims), out)


def max(x, axis=None, keepdims=False, out=None, *, dim=None):  # noqa: A001
    """The maximum (NaN propagates), values only."""
    return _f("max")(x, _axis(axis, dim), bool(keepdims), out)


def min(x, axis=None, keepdims=False, out=None, *, dim=None):  # noqa: A001
    return _f("min")(x, _axis(axis, dim), bool(keepdims), out)


def argmax(x, axis=None, keepdims=False, out=None, *, dim=None):
    """int64 indices of the maximum along one axis (None: of the flattened tensor)."""
    return _f("argmax")(x, _axis(axis, dim), bool(keepdims), out)


def softmax(x, axis=-1, out=None, *, dim=None):
    return _f("softmax")(x, _axis(axis, dim), out)


def gelu(x, approximate="none", out=None):
    """GELU, ``approximate='none'`` (erf) or ``'tanh'``, as torch.nn.functional.gelu."""
    return _f("gelu")(x, approximate, out)


def layer_norm(x, weight=None, bias=None, eps=1e-5, out=None):
    """Layer normalization over the last axis, optional weight and bias of its length."""
    return _f("layer_norm")(x, weight, bias, float(eps), out)


def rms_norm(x, weight=None, eps=None, out=None):
    """RMS normalization over the last axis; eps None is the dtype's epsilon (as torch)."""
    return _f("rms_norm")(x, weight, None if eps is None else float(eps), out)


def explain(op: str, *args) -> dict:
    """How ``kernels.<op>(*args)`` would run (backend, kernel variant, launch, tuning entry)
    without running it; the arguments are the positional ones of ``kernels.<op>``."""
    return json.loads(_f("explain")(op, *args))


def __getattr__(name):
    if name in OPS:
        # Kept as a module attribute once found: later calls skip the registry lookup.
        f = globals()[name] = _f(name)
        return f
    raise AttributeError(name)


def describe() -> dict:
    return json.loads(_f("describe")())


def list_ops() -> list:
    return json.loads(_f("list_ops")())


def set_backend(name: str | None) -> None:
    _f("set_backend")(name)


def set_disabled(ops) -> None:
    _f("set_disabled")(None if ops is None else ",".join(ops))


def set_only(ops) -> None:
    _f("set_only")(None if ops is None else ",".join(ops))


@contextlib.contextmanager
def scope(disable=None, only=None, backend=None):
    """Disables ops, restricts to ops, or chooses the backend on this thread inside the block."""
    token = _f("push_scope")(
        None if disable is None else ",".join(disable),
        None if only is None else ",".join(only),
        backend,
    )
    try:
        yield
    finally:
        _f("pop_scope")(token)
