"""The runtime's ``testing.*`` global functions as attributes (``rffi.testing.add_one(1)``,
``rffi.testing.echo(x)``), under tvm-ffi's module name ``testing``, plus
``run_with_gpu_lock`` for tests that use a GPU."""

from __future__ import annotations

import os
import tempfile

from ._function_registry import init_ffi_api

init_ffi_api("testing", __name__)


def run_with_gpu_lock(fn, *args, **kwargs):
    """Calls ``fn(*args, **kwargs)`` holding a lock file shared by every process of the machine
    (``$RFFI_GPU_LOCK``, default ``<tmp>/rffi-gpu.lock``), so tests run in parallel workers
    do not use a GPU at the same time; returns what ``fn`` returns."""
    import fcntl

    path = os.environ.get("RFFI_GPU_LOCK") or os.path.join(tempfile.gettempdir(), "rffi-gpu.lock")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return fn(*args, **kwargs)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
