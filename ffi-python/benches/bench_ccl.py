"""Allreduce on CPU tensors: rffi's shared-memory backend (``init_ccl("shm")``, called through a
``ProcessSession``) side by side with ``torch.distributed`` on the gloo backend, with the same
number of processes, in one run. Prints Markdown tables.

For each message size (float32, in place, ``sum``), each side runs back-to-back allreduces and
waits for the last: rffi broadcasts ``sess.allreduce(x, x)`` REPS times then syncs (the calls
pipeline, as a session's calls do); torch's ranks each call ``dist.all_reduce(x)`` REPS times
(gloo's calls block). Time per call is the total over REPS; bandwidth is the message size over
that time (algbw) and, as NCCL's tests report it, algbw x 2(n-1)/n (busbw: the bytes each rank
moves in a ring). The smallest message gives the per-call latency. rffi and torch alternate,
ROUNDS times per row, each in fresh processes; the table has the median round.

Run: ffi-python/benches/run_ccl.sh [--workers 2 4] [--max-mib 256]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

MIB = 1 << 20
ROUNDS = int(os.environ.get("RFFI_CCL_BENCH_ROUNDS", "3"))


def _reps(nbytes: int) -> int:
    """Calls per measurement: about 64 MiB moved, at least 3 and at most 200 calls."""
    return max(3, min(200, (64 * MIB) // max(nbytes, 1)))


def measure_rffi(n: int, sizes: list) -> dict:
    import rffi

    out = {}
    with rffi.ProcessSession(n) as sess:
        sess.init_ccl("shm")
        for nbytes in sizes:
            x = sess.empty((nbytes // 4,), "float32")
            sess.allreduce(x, x, "sum")  # warm: pages touched, slots mapped
            sess.sync()
            reps = _reps(nbytes)
            t0 = time.perf_counter()
            for _ in range(reps):
                sess.allreduce(x, x, "sum")
            sess.sync()
            out[nbytes] = (time.perf_counter() - t0) / reps
            del x
    return out


def _torch_rank(rank: int, n: int, port: int, sizes: list) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n
    )
    out = {}
    for nbytes in sizes:
        x = torch.ones(nbytes // 4, dtype=torch.float32)
        dist.all_reduce(x)
        dist.barrier()
        reps = _reps(nbytes)
        t0 = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(x)
        dist.barrier()
        out[nbytes] = (time.perf_counter() - t0) / reps
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(out), flush=True)


def measure_torch(n: int, sizes: list) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [json.dumps(sizes), str(n), str(port)]
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "torch-rank", str(r), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(n)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError((err.strip().splitlines() or ["no output"])[-1][:120])
    return {int(k): v for k, v in json.loads(outs[0][0].splitlines()[-1]).items()}


def _child(side: str, n: int, sizes: list) -> dict:
    r = subprocess.run(
        [sys.executable, __file__, side, str(n), json.dumps(sizes)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": (r.stderr.strip().splitlines() or ["no output"])[-1][:100]}
    return {int(k): v for k, v in json.loads(lines[-1]).items()}


def _size(nbytes: int) -> str:
    return f"{nbytes // MIB} MiB" if nbytes >= MIB else f"{nbytes} B"


def _time(s: float) -> str:
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--max-mib", type=int, default=256)
    a = ap.parse_args()
    sizes = [4096] + [m * MIB for m in (1, 4, 16, 64, 256) if m <= a.max_mib]
    import torch

    print(
        f"Allreduce, float32 sum in place ({os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, "
        f"load average {os.getloadavg()[0]:.1f}, torch {torch.__version__} gloo; medians of "
        f"{ROUNDS} alternating rounds)\n"
    )
    for n in a.workers:
        rs, ts = [], []
        for _ in range(ROUNDS):
            rs.append(_child("rffi", n, sizes))
            ts.append(_child("torch", n, sizes))
        r, t = _median(rs), _median(ts)
        print(f"{n} processes (rffi: ProcessSession({n}), worker 0 in the controller)\n")
        print("| message | rffi per call | rffi algbw / busbw | gloo per call "
              "| gloo algbw / busbw | rffi/gloo bandwidth |")
        print("|---|---|---|---|---|---|")
        for nbytes in sizes:
            a_, b_ = r.get(nbytes), t.get(nbytes)
            print(
                f"| {_size(nbytes)} | {_cell_t(a_, r)} | {_bw(nbytes, a_, n)} | "
                f"{_cell_t(b_, t)} | {_bw(nbytes, b_, n)} | "
                f"{f'{b_ / a_:.2f}x' if a_ and b_ else '-'} |"
            )
        print()


def _median(recs: list) -> dict:
    ok = [r for r in recs if "error" not in r]
    if not ok:
        return recs[0]
    return {k: statistics.median(r[k] for r in ok) for k in ok[0]}


def _cell_t(v, rec) -> str:
    return _time(v) if v else rec.get("error", "-")


def _bw(nbytes: int, s, n: int) -> str:
    if not s:
        return "-"
    alg = nbytes / s / (1 << 30)
    return f"{alg:.2f} / {alg * 2 * (n - 1) / n:.2f} GiB/s"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "torch-rank":
        _torch_rank(int(sys.argv[2]), int(sys.argv[4]), int(sys.argv[5]), json.loads(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] in ("rffi", "torch"):
        n, sizes = int(sys.argv[2]), json.loads(sys.argv[3])
        fn = measure_rffi if sys.argv[1] == "rffi" else measure_torch
        print(json.dumps(fn(n, sizes)), flush=True)
        os._exit(0)
    else:
        main()
