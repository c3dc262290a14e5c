"""The rffi kernels from Python: load the plugin, call ``kernels.<op>``, scope the settings.

    import rffi_kernels as K
    K.load()                                  # librffi_kernels_plugin.so, once
    y = K.softmax(x)                          # any DLPack tensor: numpy, torch (CPU or CUDA)
    with K.scope(disable=["matmul"]):         # this thread only, restored on exit
        ...
    print(K.describe()["selection"])          # which backend serves what, and why

The plugin is found through ``RFFI_KERNELS_PLUGIN``, else next to ``librffi.so``, else in the
workspace's ``target/release``.
"""

from __future__ import annotations

import contextlib
import json
import os

import rffi

OPS = ("add", "sub", "mul", "div", "relu", "gelu", "exp", "sum", "softmax", "matmul")
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


def _f(name):
    return rffi.get_global_func("kernels." + name)


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
