"""Sessions: one controller driving N workers that each hold an rffi runtime, calling global
functions by name on all of them at once (the job of TVM's Disco)::

    with rffi.ProcessSession(num_workers=2) as sess:
        f = sess.get_global_func("testing.add_one")
        r = f(41)              # a DRef: one value per worker, kept there
        r.fetch(1)             # 42, from worker 1

The classes are thin: the work is done by the runtime's ``session.*`` functions (Rust), which C and
Rust callers reach the same way. Calls are broadcast and pipelined; ``sync`` and ``fetch`` wait,
and raise the first failure of a worker with its kind, rank (``.rank``), function and traceback.
"""

from __future__ import annotations

import atexit
import os
import sys
import weakref

from ._ccl import _Collectives
from ._device import device as _device
from ._dtype import dtype as _dtype
from ._function_registry import get_global_func, register_global_func

__all__ = ["DFunction", "DModule", "DRef", "ProcessSession", "ThreadSession"]

_FUNCS: dict = {}


def _f(name: str):
    f = _FUNCS.get(name)
    if f is None:
        f = _FUNCS[name] = get_global_func("session." + name)
    return f


# A sync waits in slices this long, returning to Python in between so Ctrl-C is seen.
_SLICE_S = 0.05


def _note_rank(sess, exc: BaseException) -> None:
    """Attaches the failing worker's rank to an exception raised by the runtime."""
    try:
        rank = _f("FailedRank")(sess._obj)
    except Exception:
        return
    if rank >= 0:
        try:
            exc.rank = rank
        except AttributeError:  # an exception type with __slots__
            pass


def _unwrap(value):
    """DRef wrappers inside arguments become the runtime's handles."""
    t = type(value)
    if t is DRef or t is DFunction or t is DModule:
        return value._obj
    if t is list or t is tuple:
        return [_unwrap(v) for v in value]
    if t is dict:
        return {k: _unwrap(v) for k, v in value.items()}
    return value


_PLAIN = (int, float, str, bool, bytes, type(None))


class DRef:
    """A value on every worker of a session; ``fetch(rank)`` brings one back. Deleting the last
    reference frees it on every worker."""

    __slots__ = ("_obj", "_sess", "__weakref__")

    def __init__(self, sess, obj):
        self._sess = sess
        self._obj = obj

    def fetch(self, rank: int = 0):
        """The value on worker ``rank`` as a Python value (raises that worker's pending failure).
        A CPU tensor comes back as a host ``rffi.Tensor`` holding a copy (``np.from_dlpack``)."""
        fetch = _f("Fetch")
        try:
            got = fetch(self._obj, rank, _SLICE_S)
            while not got[0]:  # waiting in slices, so Ctrl-C is seen
                got = fetch(self._obj, rank, _SLICE_S)
            return got[1]
        except Exception as e:
            _note_rank(self._sess, e)
            raise

    @property
    def register(self) -> int:
        """The register this value occupies on every worker."""
        return _f("DRefRegister")(self._obj)

    def __repr__(self) -> str:
        if not self._obj._h:  # its handle was released: no register to name
            return f"<rffi.{type(self).__name__} (released)>"
        return f"<rffi.{type(self).__name__} register {self.register}>"


class DFunction(DRef):
    """A function on every worker. Calling it broadcasts the call and returns a DRef at once."""

    __slots__ = ()

    def __call__(self, *args) -> DRef:
        for a in args:
            if type(a) not in _PLAIN:
                args = [_unwrap(a) for a in args]
                break
        # The hot path of a session: the runtime's function straight from the cache.
        return DRef(self._sess, (_FUNCS.get("Call") or _f("Call"))(self._obj, *args))


class DModule(DRef):
    """A module (plugin) loaded on every worker."""

    __slots__ = ()

    def get_function(self, name: str) -> DFunction:
        return DFunction(self._sess, _f("ModuleGetFunction")(self._obj, name))

    def __getitem__(self, name: str) -> DFunction:
        return self.get_function(name)


_LIVE: weakref.WeakSet = weakref.WeakSet()


def _shutdown_all() -> None:
    # At interpreter exit: stop every session while the runtime is whole. Imports nothing.
    for s in list(_LIVE):
        s._quiet_shutdown()


atexit.register(_shutdown_all)


def _import_python_module(name: str) -> None:
    __import__(name)


_IMPORT_FUNC = "session.import_python_module"


def _ensure_import_func() -> None:
    if _IMPORT_FUNC not in _FUNCS:
        register_global_func(_IMPORT_FUNC, _import_python_module, override=True)
        _FUNCS[_IMPORT_FUNC] = True


class _Session(_Collectives):
    """What both session kinds share; see ``ThreadSession`` and ``ProcessSession``."""

    _obj = None
    _python_workers = True

    def _start(self, obj) -> None:
        self._obj = obj
        self.num_workers = _f("NumWorkers")(obj)
        _LIVE.add(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def __del__(self):
        self._quiet_shutdown()

    def _quiet_shutdown(self) -> None:
        try:
            self.shutdown()
        except BaseException:  # at interpreter exit or in GC: never a message
            pass

    def shutdown(self) -> None:
        """Stops and reaps every worker. Idempotent; later use of the session is an error."""
        obj = self._obj
        if obj is not None:
            _f("Shutdown")(obj)

    def _guard(self, name: str, *args):
        try:
            return _f(name)(self._obj, *args)
        except Exception as e:
            _note_rank(self, e)
            raise

    def get_global_func(self, name: str) -> DFunction:
        """The global function ``name`` on every worker (a missing name raises a KeyError at the
        next sync or fetch)."""
        return DFunction(self, self._guard("GetGlobalFunc", name))

    def load_module(self, path) -> DModule:
        """Loads a plugin on every worker; its functions register there."""
        return DModule(self, self._guard("LoadModule", os.fspath(path)))

    def empty(self, shape, dtype, device="cpu") -> DRef:
        """A new tensor on every worker. On the CPU each worker's tensor lives in shared memory
        that this process maps too, so the worker-0 copies are one memcpy here."""
        if isinstance(shape, int):
            shape = (shape,)
        return DRef(self, self._guard("Empty", list(shape), _dtype(dtype), _device(device)))

    def copy_to_worker_0(self, host_array, dst: DRef) -> None:
        """Copies a host array (any DLPack CPU array) into worker 0's tensor ``dst``."""
        self._guard("CopyToWorker0", host_array, dst._obj)

    def copy_from_worker_0(self, host_array, src: DRef) -> None:
        """Copies worker 0's tensor ``src`` into a writable host array."""
        self._guard("CopyFromWorker0", host_array, src._obj)

    def _sync(self, worker_0_only: bool) -> None:
        sync = _FUNCS.get("Sync") or _f("Sync")
        try:
            while not sync(self._obj, _SLICE_S, worker_0_only):
                pass
        except Exception as e:
            _note_rank(self, e)
            raise

    def sync(self) -> None:
        """Waits until every worker has run everything sent so far; raises the first failure."""
        self._sync(False)

    def sync_worker_0(self) -> None:
        """Waits for worker 0 only."""
        self._sync(True)

    def import_python_module(self, name: str) -> None:
        """Imports a Python module on every worker (so its ``register_global_func`` functions
        exist there). Process workers must run Python: ``ProcessSession(..., python=True)``."""
        if not self._python_workers:
            raise RuntimeError(
                "import_python_module needs Python workers: use ProcessSession(..., python=True)"
            )
        _ensure_import_func()
        self.get_global_func(_IMPORT_FUNC)(name)
        self.sync()

    def load_params(
        self, weights_path, shard_info=None, *, progress: bool = True, via: str = "auto"
    ) -> dict:
        """Loads safetensors weights on every worker, each getting its slice by ``shard_info`` (a
        dict or a JSON path; see ``rffi.shard``): name -> DRef. ``via="read"``: every worker
        reads its own slice; ``"ccl"``: worker 0 reads and shards, and sends each worker its
        slice through the communicator (``init_ccl``; with NCCL the parameters are tensors on
        each worker's GPU); ``"auto"``: ``"ccl"`` when NCCL is up, else ``"read"`` (on one host
        every worker reading is faster than a scatter through shared memory)."""
        from .shard import load_params

        return load_params(self, weights_path, shard_info, progress=progress, via=via)

    def __repr__(self) -> str:
        return f"<rffi.{type(self).__name__} num_workers={getattr(self, 'num_workers', '?')}>"


class ThreadSession(_Session):
    """``num_workers`` workers, each a thread of this process sharing its function registry."""

    def __init__(self, num_workers: int):
        self._start(_f("ThreadSession")(num_workers))


def _worker_program() -> list:
    path = os.environ.get("RFFI_WORKER")
    if path:
        return [path]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rffi-worker")
    if os.path.exists(here):
        return [here]
    raise RuntimeError(
        f"the rffi-worker program is not installed next to {__file__} "
        "(reinstall the package, or set RFFI_WORKER to its path)"
    )


class ProcessSession(_Session):
    """Worker 0 is a thread of this process (as in Disco); workers 1.. are child processes of
    the native ``rffi-worker`` program, or of ``python -m rffi.worker`` with ``python=True`` (so
    that ``import_python_module`` and Python-registered functions work there). With
    ``device="cuda"`` worker i works on GPU ``device_ids[i]`` (default: GPU i)."""

    def __init__(
        self, num_workers: int, *, python: bool = False, device: str = "cpu", device_ids=None
    ):
        if python:
            program = [sys.executable, "-m", "rffi.worker"]
        else:
            program = _worker_program()
        self._python_workers = bool(python) or num_workers == 1
        self._start(_f("ProcessSession")(num_workers, program))
        if str(device) != "cpu" or device_ids is not None:
            try:
                self._place_workers(device, device_ids)
            except BaseException:
                self.shutdown()
                raise

    @property
    def worker_pids(self) -> list:
        """Process ids of workers 1.. (worker 0 is a thread of this process)."""
        return list(_f("WorkerPids")(self._obj))
