"""Sessions: one controller calling global functions by name on every worker at once.

Worker 0 runs in a thread of this process; the others are `rffi-worker` processes. The Rust
example plugin is loaded on every worker (path from RFFI_EXAMPLE_RUST_PLUGIN, set by
scripts/demo.sh, or the command line: python sessions.py RUST_PLUGIN.so).
"""

import os
import sys

import numpy as np

import rffi

plugin = sys.argv[1] if len(sys.argv) > 1 else os.environ["RFFI_EXAMPLE_RUST_PLUGIN"]

with rffi.ProcessSession(num_workers=3) as sess:
    rank = sess.get_global_func("session.worker_rank")()  # a DRef: one value per worker
    print("ranks:", [rank.fetch(w) for w in range(sess.num_workers)])

    mod = sess.load_module(plugin)  # loaded on every worker
    total = mod.get_function("rust_plugin.add")(rank, 100)  # each worker adds to its own rank
    print("rust_plugin.add(rank, 100) on each worker:", [total.fetch(w) for w in range(3)])

    # A worker's failure comes back at the next sync, naming the worker and the function.
    mod.get_function("rust_plugin.checked_div")(1, 0)
    try:
        sess.sync()
    except ValueError as e:
        print(f"worker {e.rank} failed:", e)

    # Host arrays: into worker 0's tensor and back (one memcpy each way).
    t = sess.empty((2, 3), "float32")
    sess.copy_to_worker_0(np.arange(6, dtype="float32").reshape(2, 3), t)
    out = np.zeros((2, 3), "float32")
    sess.copy_from_worker_0(out, t)
    print("back from worker 0:", out.tolist())
