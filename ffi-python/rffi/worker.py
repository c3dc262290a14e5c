"""``python -m rffi.worker <rank> <world> <fd> <protocol> <controller pid>``: a session worker
process that runs Python, started by ``rffi.ProcessSession(..., python=True)``. It serves the
controller's commands on socket ``fd`` (the runtime's loop, in Rust) until shutdown or until the
controller is gone; Python-registered functions and ``import_python_module`` work here.
``rffi.RaySession``'s actors serve through ``serve`` too.
"""

from __future__ import annotations

import sys


def serve(rank: int, world: int, fd: int, protocol: int, parent: int) -> None:
    """Serves a controller's commands on the connected socket ``fd`` (owned from here on) until
    shutdown or until the connection ends. ``parent``: the controller's pid when this process is
    its child (the worker then dies with it), 0 otherwise (a Ray actor). Raises when the
    controller speaks another protocol version or the socket fails."""
    import rffi
    from rffi import session

    rffi.register_global_func(session._IMPORT_FUNC, session._import_python_module, override=True)
    rffi.get_global_func("session.ServeWorker")([rank, world, fd, protocol, parent])


def main(argv) -> int:
    try:
        rank, world, fd, protocol, parent = (int(a) for a in argv[1:6])
    except ValueError:
        print(
            "usage: python -m rffi.worker <rank> <world> <fd> <protocol> <controller pid>",
            file=sys.stderr,
        )
        return 2
    try:
        serve(rank, world, fd, protocol, parent)
    except Exception as e:
        print(f"rffi worker {rank}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
