"""Load throughput of load-time sharding: a safetensors file of N MiB (16 float32 parameters, each
split in 2 along axis 0) loaded for 2 ranks by rffi (session of 2 workers, and load_local of both
ranks in one process) against plain ``safetensors.numpy.load_file`` + numpy slicing in one process.
Each session loads both ways: every worker reading its own slice (``via="read"``), and worker 0
reading and scattering the slices through ``init_ccl("shm")`` (``via="ccl"``).
The page cache is warm (one untimed load first); each figure is the best of 3.

Usage (after ``make python-test``, which installs rffi, numpy and safetensors in target/py-venv):
    target/py-venv/bin/python ffi-python/benches/bench_shard.py [--mib 1024]
"""

import argparse
import os
import tempfile
import time

import numpy as np
from safetensors.numpy import load_file, save_file

import rffi


def best(f, n=3):
    f()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    args = ap.parse_args()
    rows = args.mib * 1024 * 1024 // 4 // 1024 // 16
    rows -= rows % 2
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.safetensors")
        tensors = {f"p{i:02d}": np.full((rows, 1024), i, np.float32) for i in range(16)}
        save_file(tensors, path)
        del tensors
        size = os.path.getsize(path)
        plan = {
            f"p{i:02d}": [["rffi.shard.split", [[2, rows // 2, 1024], "float32"], 2, 0]]
            for i in range(16)
        }

        def numpy_both():
            w = load_file(path)
            return [
                {
                    k: np.ascontiguousarray(v[r * rows // 2 : (r + 1) * rows // 2])
                    for k, v in w.items()
                }
                for r in range(2)
            ]

        def local_both():
            return [rffi.shard.load_local(path, plan, r, 2, progress=False) for r in range(2)]

        rows_out = [
            ("safetensors + numpy slicing, both ranks, 1 process", best(numpy_both)),
            ("rffi.shard.load_local, both ranks, 1 process", best(local_both)),
        ]
        for name, kind in [
            ("ThreadSession", rffi.ThreadSession),
            ("ProcessSession", rffi.ProcessSession),
        ]:
            with kind(2) as sess:

                def load(sess=sess, via="read"):
                    p = sess.load_params(path, shard_info=plan, progress=False, via=via)
                    sess.sync()
                    return p

                rows_out.append((f"{name}(2).load_params, each worker reads", best(load)))
                sess.init_ccl("shm")
                rows_out.append(
                    (
                        f"{name}(2).load_params, worker 0 reads + scatter (shm)",
                        best(lambda sess=sess: load(sess, "ccl")),
                    )
                )
        print(
            f"Load throughput, {size / 2**20:.0f} MiB file, 16 params split over 2 ranks "
            f"({os.cpu_count()} cores; best of 3, warm page cache)\n"
        )
        print("| loader | time | file GB/s |")
        print("|---|---|---|")
        for name, t in rows_out:
            print(f"| {name} | {t * 1e3:.0f} ms | {size / t / 1e9:.2f} |")


if __name__ == "__main__":
    main()
