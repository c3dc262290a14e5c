"""``rffi.RaySession``: a session whose workers are Ray actors, placed by Ray on this machine or
across the machines of a Ray cluster::

    with rffi.RaySession(2, resources_per_worker={"GPU": 1}) as sess:
        r = sess.get_global_func("testing.add_one")(41)
        r.fetch(1)                                  # 42, from the actor of worker 1

Ray places the workers (a placement group of one bundle per worker, all or nothing) and starts
them; each actor imports rffi, connects back to this process over TCP and serves the same
commands as every other worker (the runtime's worker loop, the session protocol). Ray is not on
the command path: a call is one frame on each worker's connection, as with ``ProcessSession``.

Every worker, worker 0 included, is an actor: the controller can then run on a machine without
the workers' resources (a CPU head node driving GPU nodes). Host data therefore travels in the
frames (host tensors passed to calls, ``copy_to_worker_0`` and ``copy_from_worker_0``), never
through this host's shared memory.

This module imports ray; ``import rffi`` does not import it (``rffi.RaySession`` imports this
module on first use).
"""

from __future__ import annotations

import os
import secrets
import select
import socket
import time
from collections.abc import Mapping

try:
    import ray
except ImportError as e:  # pragma: no cover - exercised in a subprocess without ray
    raise ImportError(
        "rffi.RaySession needs Ray, an optional extra of rffi: pip install 'rffi[ray]' "
        f"(or pip install ray) ({e})"
    ) from e

from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from .session import _f, _Session

__all__ = ["RaySession"]

_HELLO = "rffi-session"
# Ray's resource names (as Ray Train's ``resources_per_worker``) and the actor options they become.
_OPTIONS = {"CPU": "num_cpus", "GPU": "num_gpus", "memory": "memory"}


def _tune(sock: socket.socket) -> None:
    """A command is a small frame: send it at once (no Nagle delay). Keepalive notices a host
    that vanished without closing the connection in about 30 s rather than hours."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 4)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


class _WorkerActor:
    """The actor of one worker (made a Ray actor class by ``ray.remote`` at first use; defined
    plainly so that Ray ships it by reference to this module)."""

    def serve(self, host: str, port: int, token: str, rank: int, world: int, protocol: int):
        from . import worker

        ctx = ray.get_runtime_context()
        sock = socket.create_connection((host, port), timeout=60)
        _tune(sock)
        sock.settimeout(None)
        hello = " ".join(
            str(w)
            for w in (
                _HELLO,
                token,
                rank,
                _f("ProtocolVersion")(),
                os.getpid(),
                ctx.get_node_id(),
                ctx.get_actor_id(),
                socket.gethostname(),
            )
        )
        sock.sendall(hello.encode() + b"\n")
        worker.serve(rank, world, sock.detach(), protocol, 0)


_ACTOR = None


def _actor_class():
    global _ACTOR
    if _ACTOR is None:
        # No restarts: a restarted worker would have lost its registers; a dead actor ends the
        # session, reported by rank, as a dead worker process does.
        _ACTOR = ray.remote(max_restarts=0)(_WorkerActor)
    return _ACTOR


def _bundle(resources) -> dict:
    """The placement bundle of one worker, checked."""
    if resources is None:
        return {"CPU": 1}
    if not isinstance(resources, Mapping):
        raise TypeError(
            "resources_per_worker must be a dict of Ray resource names to amounts, such as "
            f"{{'CPU': 1, 'GPU': 1}}; got {type(resources).__name__}"
        )
    bundle = {}
    for name, amount in resources.items():
        if name in ("num_cpus", "num_gpus", "cpu", "gpu"):
            raise ValueError(
                f"resources_per_worker: {name!r} is not a Ray resource name; use 'CPU', 'GPU', "
                "'memory' or a custom resource, e.g. {'CPU': 1, 'GPU': 1}"
            )
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
            raise ValueError(
                f"resources_per_worker[{name!r}] must be a non-negative number, got {amount!r}"
            )
        if amount > 0:
            bundle[str(name)] = amount
    if not bundle:
        raise ValueError(
            "resources_per_worker asks for nothing; Ray reserves only non-empty bundles "
            "(e.g. {'CPU': 1})"
        )
    return bundle


def _plain(resources: dict) -> dict:
    """Resources as users name them (without Ray's per-node and placement-group entries)."""
    return {k: v for k, v in sorted(resources.items()) if "_group_" not in k and ":" not in k}


def _actor_options(bundle: dict) -> dict:
    # Every amount is explicit: an actor asks for 1 CPU by default, which a bundle without CPUs
    # could never hold.
    opts = {"num_cpus": 0, "num_gpus": 0}
    custom = {}
    for name, amount in bundle.items():
        if name in _OPTIONS:
            opts[_OPTIONS[name]] = amount
        else:
            custom[name] = amount
    if custom:
        opts["resources"] = custom
    return opts


class RaySession(_Session):
    """``num_workers`` workers, each a Ray actor holding ``resources_per_worker`` (Ray's names:
    ``{"CPU": 1, "GPU": 1, "memory": bytes, "my_resource": 1}``; default ``{"CPU": 1}``). A
    GPU worker works on the GPU Ray gave it (``cuda:0`` inside the actor).

    ``address``: the Ray cluster to join (``ray.init(address=...)``, e.g. ``"auto"`` or
    ``"10.0.0.1:6379"``) when this process has not connected to Ray yet; without it, the running
    connection, else ``ray.init()`` (the cluster ``ray start`` made on this machine, or a new
    local one). This process must be reachable from the workers' nodes over TCP (run it on a node
    of the cluster; Ray Client's ``ray://`` addresses are refused).

    The interface is ``ProcessSession``'s; errors keep the same contract (the worker's error
    kind, rank, function and traceback; an actor that dies is reported by rank). Placement and
    connection wait at most ``start_timeout`` seconds."""

    _python_workers = True

    def __init__(
        self,
        num_workers: int,
        *,
        resources_per_worker=None,
        address=None,
        start_timeout: float = 120.0,
    ):
        self._actors = []
        self._serving = []
        self._hellos = []
        self._pg = None
        n = int(num_workers)
        if n < 1:
            raise ValueError(f"num_workers must be at least 1, got {num_workers}")
        bundle = _bundle(resources_per_worker)
        if address is not None and str(address).startswith("ray://"):
            raise ValueError(
                "RaySession cannot run through Ray Client (ray://): the workers connect back "
                "to this process, so run it on a node of the cluster with address='auto'"
            )
        if not ray.is_initialized():
            ray.init(address=address)
        deadline = time.monotonic() + start_timeout
        try:
            self._place(n, bundle, start_timeout)
            self._start(self._connect(n, deadline))
            if bundle.get("GPU", 0) > 0:
                # Ray shows each actor only its own GPU(s), as device 0.
                self._place_workers("cuda", [0] * n)
        except BaseException:
            self.shutdown()
            raise

    def _place(self, n: int, bundle: dict, timeout: float) -> None:
        """Reserves one bundle per worker (all or nothing) and starts the actors in them."""
        self._pg = placement_group([bundle] * n, strategy="PACK")
        if not self._pg.wait(timeout_seconds=max(1, int(timeout))):
            raise RuntimeError(
                f"Ray could not place {n} workers with {bundle} each within {timeout:g} s "
                f"(the cluster has {_plain(ray.cluster_resources())}, of which "
                f"{_plain(ray.available_resources())} are free): ask for less, or add nodes"
            )
        actor = _actor_class()
        opts = _actor_options(bundle)
        self._actors = [
            actor.options(
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    self._pg, placement_group_bundle_index=rank
                ),
                **opts,
            ).remote()
            for rank in range(n)
        ]

    def _connect(self, n: int, deadline: float):
        """Has every actor connect back, and makes the session over the connections."""
        host = ray.util.get_node_ip_address()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, 0), family=family, backlog=n)
        conns = [None] * n
        try:
            port = listener.getsockname()[1]
            token = secrets.token_hex(16)
            protocol = _f("ProtocolVersion")()
            self._serving = [
                a.serve.remote(host, port, token, rank, n, protocol)
                for rank, a in enumerate(self._actors)
            ]
            hellos = [None] * n
            while None in conns:
                self._check_started(conns, deadline)
                ready, _, _ = select.select([listener], [], [], 0.1)
                if ready:
                    conn, peer = listener.accept()
                    hello = _read_hello(conn, token, protocol, n)
                    if hello is None or conns[hello[0]] is not None:
                        conn.close()  # not one of ours
                        continue
                    _tune(conn)
                    conns[hello[0]] = conn
                    hellos[hello[0]] = hello[1:] + (peer[0],)
            # Worker i: (pid, node id, actor id, host name, address).
            self._hellos = hellos
            words = [
                f"Ray actor {actor[:12]} on {name} ({ip}), pid {pid}"
                for pid, _node, actor, name, ip in hellos
            ]
            fds = [c.detach() for c in conns]
            conns = []
            return _f("SocketSession")(fds, words)
        finally:
            listener.close()
            for c in conns:
                if c is not None:
                    c.close()

    def _check_started(self, conns, deadline: float) -> None:
        """Raises, naming the rank, if an actor ended before it connected or time is up."""
        ready, _ = ray.wait(self._serving, num_returns=len(self._serving), timeout=0)
        for ref in ready:
            rank = self._serving.index(ref)
            if conns[rank] is not None:
                continue
            try:
                ray.get(ref)
                why = "its serve call returned"
            except Exception as e:
                why = f"{type(e).__name__}: {e}"
            err = RuntimeError(f"worker {rank} (a Ray actor) ended before it connected: {why}")
            err.rank = rank
            raise err
        if time.monotonic() > deadline:
            missing = [r for r, c in enumerate(conns) if c is None]
            raise RuntimeError(
                f"workers {missing} (Ray actors) did not connect to {socket.gethostname()} in "
                "time: is this host reachable from their nodes over TCP?"
            )

    @property
    def actors(self) -> list:
        """The Ray actor of each worker, by rank."""
        return list(self._actors)

    @property
    def worker_pids(self) -> list:
        """Process ids of the workers' actors, by rank (on their own nodes)."""
        return [h[0] for h in self._hellos]

    @property
    def worker_nodes(self) -> list:
        """The Ray node id of each worker, by rank."""
        return [h[1] for h in self._hellos]

    def init_ccl(self, backend: str, *device_ids: int) -> None:
        """As ``ProcessSession.init_ccl``. ``"shm"`` needs every worker on this host (shared
        memory does not cross machines); ``"nccl"`` works across hosts."""
        if backend == "shm" and self._obj is not None:
            here = ray.get_runtime_context().get_node_id()
            away = [r for r, node in enumerate(self.worker_nodes) if node != here]
            if away:
                raise ValueError(
                    f'init_ccl("shm") needs every worker on this host; workers {away} run on '
                    'other nodes (use init_ccl("nccl") across hosts)'
                )
        super().init_ccl(backend, *device_ids)

    def shutdown(self) -> None:
        """Stops every worker, then ends the actors and frees their placement. Idempotent."""
        super().shutdown()
        actors, self._actors = self._actors, []
        pg, self._pg = self._pg, None
        serving, self._serving = self._serving, []
        if (not actors and pg is None) or not ray.is_initialized():
            return  # Ray already shut down (at interpreter exit): its actors went with it
        try:
            # The workers leave their loops at the shutdown command; then their actors go.
            ray.wait(serving, num_returns=len(serving), timeout=2.0)
        except Exception:
            pass
        for a in actors:
            try:
                ray.kill(a)
            except Exception:
                pass
        if pg is not None:
            try:
                remove_placement_group(pg)
            except Exception:
                pass


def _read_hello(conn: socket.socket, token: str, protocol: int, n: int):
    """``(rank, pid, node id, actor id, host name)`` from a new connection's first line; None
    when it is not one of this session's ``n`` workers. A worker of another protocol is an
    error."""
    conn.settimeout(10)
    data = b""
    try:
        while not data.endswith(b"\n") and len(data) < 1024:
            chunk = conn.recv(1024 - len(data))
            if not chunk:
                return None
            data += chunk
    except OSError:
        return None
    words = data.decode(errors="replace").split()
    if len(words) != 8 or words[0] != _HELLO or words[1] != token:
        return None
    try:
        rank, version, pid = int(words[2]), int(words[3]), int(words[4])
    except ValueError:
        return None
    if not 0 <= rank < n:
        return None
    if version != protocol:
        err = RuntimeError(
            f"worker {rank} on {words[7]} speaks session protocol {version} but this "
            f"controller speaks {protocol}: install the same rffi on every node"
        )
        err.rank = rank
        raise err
    conn.settimeout(None)
    return (rank, pid, words[5], words[6], words[7])
