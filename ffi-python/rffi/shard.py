"""Loading parameters sharded at load time, from safetensors weights (one file, a directory, or a
``model.safetensors.index.json``) and a plan in TVM's ``shard_info.json`` shape::

    {"w": [["rffi.shard.split", [[2, 4096, 2048], "float32"], 2, 1]]}

Each step is a global function called ``func(input, *extra, output)`` with ``output`` allocated
from the declared shape and dtype; the last output's leading dimension is the worker count and
worker ``i`` keeps slice ``i``; parameters without an entry are replicated. The work is done by
the runtime's ``rffi.shard.*`` functions (Rust), which Rust and C callers reach the same way.

- ``load_local(weights_path, shard_info, rank, world_size)``: one rank, in this process; a dict
  name -> rffi Tensor.
- ``sess.load_params(weights_path, shard_info=...)``: every worker of a session reads and shards its
  own slice (the weights are never loaded whole here); a dict name -> DRef.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ._function_registry import get_global_func

__all__ = ["load_local", "load_params"]


def _info_text(shard_info) -> str:
    """JSON text for a dict, a path for a path, "" (nothing sharded) for None."""
    if shard_info is None:
        return ""
    if isinstance(shard_info, Mapping):
        return json.dumps(shard_info)
    return os.fspath(shard_info)


def load_local(
    weights_path, shard_info=None, rank: int = 0, world_size: int = 1, *, progress: bool = True
) -> dict:
    """Rank ``rank``'s parameters of ``world_size``, loaded in this process: name -> Tensor.
    ``shard_info`` is a dict or the path of a JSON file. A progress bar goes to stderr when it is
    a terminal (``progress=False`` turns it off). Any failure raises, naming the parameter and
    step, and keeps nothing."""
    m = get_global_func("rffi.shard.load_local")(
        os.fspath(weights_path), _info_text(shard_info), int(rank), int(world_size), bool(progress)
    )
    return dict(m.items())


def load_params(
    sess, weights_path, shard_info=None, *, progress: bool = True, via: str = "auto"
) -> dict:
    """``sess.load_params``: every worker gets its own slice; name -> DRef. ``via``: "read"
    (each worker reads its slice), "ccl" (worker 0 reads and scatters through the session's
    communicator; with NCCL, into tensors on each worker's GPU) or "auto" ("ccl" when
    ``init_ccl("nccl")`` is up, else "read": with shared memory on one host every worker
    reading its own slice is faster). A failure on any worker raises here (with its rank) and
    frees what the others loaded."""
    load = sess.get_global_func("rffi.shard.load_worker")
    loaded = load(os.fspath(weights_path), _info_text(shard_info), bool(progress), str(via))
    sess.sync()
    names = sess.get_global_func("rffi.shard.names")(loaded).fetch(0)
    get = sess.get_global_func("rffi.shard.get")
    return {name: get(loaded, name) for name in names}
