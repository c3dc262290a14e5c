"""Collectives between the workers of a session: ``init_ccl`` and the ``ccl.*`` functions as
session methods (mixed into ``ThreadSession`` and ``ProcessSession``)::

    with rffi.ProcessSession(num_workers=2) as sess:
        sess.init_ccl("shm")                 # or sess.init_ccl("nccl", 0, 1): one GPU per worker
        x = sess.empty((1024,), "float32")
        sess.allreduce(x, x, "sum")          # every worker's x becomes the sum of all of them
        sess.sync()

Each method broadcasts the global function of the same name (``ccl.allreduce`` ...) to every
worker and returns at once; a failure (a shape or dtype mismatch, a dead peer) is raised by the
next ``sync`` or ``fetch``, like any call's.
"""

from __future__ import annotations

from ._function_registry import get_global_func


def _peers(peers):
    return peers if isinstance(peers, int) else [int(p) for p in peers]


class _Collectives:
    """The collective methods of a session."""

    def init_ccl(self, backend: str, *device_ids: int) -> None:
        """Joins the workers into a communicator and waits until all have joined.

        ``"shm"``: shared memory on this host, for CPU tensors. ``"nccl"``: one rank per GPU,
        worker i on ``device_ids[i]`` (none given: the GPU the session put it on, else GPU i);
        the controller makes NCCL's unique id and sends it to every worker. Without CUDA or NCCL
        this raises a RuntimeError naming the library files looked for."""
        try:
            get_global_func("ccl.InitSession")(self._obj, backend, [int(d) for d in device_ids])
        except Exception as e:
            from .session import _note_rank

            _note_rank(self, e)
            raise

    def _ccl(self, name: str, *args) -> None:
        from .session import _f, _unwrap

        # The runtime's handles are cached, not DFunction wrappers: those would hold the
        # session and keep it (and its workers) alive in a reference cycle.
        funcs = self.__dict__.setdefault("_ccl_funcs", {})
        f = funcs.get(name)
        if f is None:
            f = funcs[name] = self.get_global_func("ccl." + name)._obj
        _f("Call")(f, *[_unwrap(a) for a in args])

    def allreduce(self, src, dst, op: str = "sum") -> None:
        """``dst = op(src of every worker)`` on every worker (sum, prod, min, max, avg)."""
        self._ccl("allreduce", src, dst, op)

    def allgather(self, src, dst) -> None:
        """Every worker's ``dst`` = the ``src`` of workers 0, 1, ... one after the other."""
        self._ccl("allgather", src, dst)

    def reduce_scatter(self, src, dst, op: str = "sum") -> None:
        """Worker i's ``dst`` = part i of ``op(src of every worker)``."""
        self._ccl("reduce_scatter", src, dst, op)

    def broadcast_from_worker_0(self, src, dst) -> None:
        """Every worker's ``dst`` = worker 0's ``src``."""
        self._ccl("broadcast_from_worker_0", src, dst)

    def scatter_from_worker_0(self, src, dst) -> None:
        """Worker i's ``dst`` = part i of worker 0's ``src``."""
        self._ccl("scatter_from_worker_0", src, dst)

    def gather_to_worker_0(self, src, dst) -> None:
        """Worker 0's ``dst`` = the ``src`` of workers 0, 1, ... one after the other."""
        self._ccl("gather_to_worker_0", src, dst)

    def send(self, src, peers) -> None:
        """Worker i sends its ``src`` to worker ``peers[i]`` (negative: it sends nothing). With
        shared memory a send returns once the peer's ``recv`` has taken the data. The peers are
        checked first: a ValueError at once for a list of the wrong length, or an entry naming
        its own worker or none of the session's."""
        self._p2p("ccl.SessionSend", src, peers)

    def recv(self, dst, peers) -> None:
        """Worker i receives into its ``dst`` from worker ``peers[i]`` (negative: nothing); the
        peers checked as ``send``'s."""
        self._p2p("ccl.SessionRecv", dst, peers)

    def _p2p(self, name: str, tensor, peers) -> None:
        from .session import _unwrap

        get_global_func(name)(self._obj, _unwrap(tensor), _peers(peers))

    def _place_workers(self, device: str, device_ids) -> None:
        """Puts worker i on ``device:device_ids[i]`` (default: device i)."""
        ids = list(range(self.num_workers)) if device_ids is None else [int(d) for d in device_ids]
        if len(ids) != self.num_workers:
            raise ValueError(
                f"device_ids has {len(ids)} entries for {self.num_workers} workers"
            )
        self.get_global_func("ccl.place_worker")(str(device), ids)
        self.sync()
        self.device_ids = ids
