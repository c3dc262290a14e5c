"""Allreduce through rffi's collectives side by side with ``torch.distributed``, same number of
processes, in one run; prints Markdown tables.

- ``--backend shm`` (default): CPU tensors, rffi's shared-memory backend (``init_ccl("shm")``)
  against torch on gloo.
- ``--backend nccl``: GPU tensors, one process per GPU: rffi's ``init_ccl("nccl")`` through a
  ``ProcessSession(n, python=True, device="cuda")`` (worker i on GPU i; each worker makes its
  tensor with torch on its GPU) against torch on NCCL with the same ranks and GPUs. Messages of
  4 KiB (per-call latency) and 1 MiB to 1 GiB. Goal: bandwidth >= 0.95x torch's, latency per call
  <= torch's. Needs as many GPUs as workers (NCCL takes one rank per GPU); run on a GPU machine
  with ``ffi-python/benches/run_ccl_gpu.sh``.

For each message size (float32, in place, ``sum``), each side runs back-to-back allreduces and
waits for the last: rffi broadcasts ``sess.allreduce(x, x)`` REPS times then syncs (the calls
pipeline, as a session's calls do; with NCCL every worker then waits for its GPU); torch's ranks
each call ``dist.all_reduce(x)`` REPS times, then wait (gloo: a barrier; NCCL: for the GPU).
Time per call is the total over REPS; bandwidth is the message size over that time (algbw) and,
as NCCL's tests report it, algbw x 2(n-1)/n (busbw: the bytes each rank moves in a ring). The
smallest message gives the per-call latency. rffi and torch alternate, ROUNDS times per row,
each in fresh processes; the table has the median round.

Run: ffi-python/benches/run_ccl.sh [--workers 2 4] [--max-mib 256]            (CPU)
     ffi-python/benches/run_ccl_gpu.sh BUILD [--workers 2] [--max-mib 1024]   (GPU machine)
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


def _reps(nbytes: int, backend: str) -> int:
    """Calls per measurement: about 64 MiB moved (GPU: 4 GiB), at least 3 (GPU: 10) and at most
    200 calls."""
    budget, least = (64 * MIB, 3) if backend == "shm" else (4096 * MIB, 10)
    return max(least, min(200, budget // max(nbytes, 1)))


if __name__ != "__main__":
    # Imported on the workers of the NCCL measurement (``sess.import_python_module``): each
    # worker's tensor comes from torch on its GPU, and a wait for that GPU.
    import rffi

    def _gpu() -> int:
        return rffi.get_global_func("session.worker_rank")()

    @rffi.register_global_func("cclbench.zeros")
    def _zeros(numel):
        import torch

        return torch.zeros(numel, dtype=torch.float32, device=f"cuda:{_gpu()}")

    @rffi.register_global_func("cclbench.wait_gpu")
    def _wait_gpu():
        import torch

        torch.cuda.synchronize(_gpu())


def measure_rffi(n: int, sizes: list, backend: str) -> dict:
    import rffi

    out = {}
    gpu = backend == "nccl"
    if gpu:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, here)
        os.environ["PYTHONPATH"] = here + os.pathsep + os.environ.get("PYTHONPATH", "")
        sess = rffi.ProcessSession(n, python=True, device="cuda")
        sess.import_python_module("bench_ccl")
        zeros = sess.get_global_func("cclbench.zeros")
        wait_gpu = sess.get_global_func("cclbench.wait_gpu")
    else:
        sess = rffi.ProcessSession(n)
    with sess:
        sess.init_ccl(backend)

        def finish():
            if gpu:
                wait_gpu()
            sess.sync()

        for nbytes in sizes:
            x = zeros(nbytes // 4) if gpu else sess.empty((nbytes // 4,), "float32")
            sess.allreduce(x, x, "sum")  # warm: pages touched, slots mapped, NCCL connected
            finish()
            reps = _reps(nbytes, backend)
            t0 = time.perf_counter()
            for _ in range(reps):
                sess.allreduce(x, x, "sum")
            finish()
            out[nbytes] = (time.perf_counter() - t0) / reps
            del x
    return out


def _torch_rank(rank: int, n: int, port: int, sizes: list, backend: str) -> None:
    import torch
    import torch.distributed as dist

    gpu = backend == "nccl"
    kw = {}
    if gpu:
        torch.cuda.set_device(rank)
        kw["device_id"] = torch.device("cuda", rank)
    dist.init_process_group(
        "nccl" if gpu else "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=n,
        **kw,
    )

    def finish():
        if gpu:
            torch.cuda.synchronize(rank)
        else:
            dist.barrier()

    out = {}
    for nbytes in sizes:
        x = torch.zeros(nbytes // 4, dtype=torch.float32, device=f"cuda:{rank}" if gpu else "cpu")
        dist.all_reduce(x)
        finish()
        reps = _reps(nbytes, backend)
        t0 = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(x)
        finish()
        out[nbytes] = (time.perf_counter() - t0) / reps
        del x
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(out), flush=True)


def measure_torch(n: int, sizes: list, backend: str) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [json.dumps(sizes), str(n), str(port), backend]
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


def _child(side: str, n: int, sizes: list, backend: str) -> dict:
    r = subprocess.run(
        [sys.executable, __file__, side, str(n), json.dumps(sizes), backend],
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
    ap.add_argument("--backend", choices=["shm", "nccl"], default="shm")
    ap.add_argument("--workers", type=int, nargs="+", default=None)
    ap.add_argument("--max-mib", type=int, default=None)
    a = ap.parse_args()
    gpu = a.backend == "nccl"
    workers = a.workers or ([2] if gpu else [2, 4])
    max_mib = a.max_mib or (1024 if gpu else 256)
    mibs = (1, 4, 16, 64, 256, 1024) if gpu else (1, 4, 16, 64, 256)
    sizes = [4096] + [m * MIB for m in mibs if m <= max_mib]
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # shared GPU hosts: no NVLink multicast
    import torch

    peer = "nccl" if gpu else "gloo"
    where = (
        f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}, NCCL "
        f"{'.'.join(map(str, torch.cuda.nccl.version()))} (torch's)"
        if gpu
        else f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"Allreduce, float32 sum in place ({where}, {time.strftime('%Y-%m-%d')}, torch "
        f"{torch.__version__} {peer}; medians of {ROUNDS} alternating rounds)\n"
    )
    for n in workers:
        rs, ts = [], []
        for _ in range(ROUNDS):
            rs.append(_child("rffi", n, sizes, a.backend))
            ts.append(_child("torch", n, sizes, a.backend))
        r, t = _median(rs), _median(ts)
        placed = ", device='cuda': worker i on GPU i" if gpu else ""
        print(f"{n} processes (rffi: ProcessSession({n}{placed}), worker 0 in the controller)\n")
        print(f"| message | rffi per call | rffi algbw / busbw | {peer} per call "
              f"| {peer} algbw / busbw | rffi/{peer} bandwidth |")
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
        _torch_rank(
            int(sys.argv[2]), int(sys.argv[4]), int(sys.argv[5]), json.loads(sys.argv[3]),
            sys.argv[6],
        )
    elif len(sys.argv) > 1 and sys.argv[1] in ("rffi", "torch"):
        n, sizes, backend = int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
        fn = measure_rffi if sys.argv[1] == "rffi" else measure_torch
        print(json.dumps(fn(n, sizes, backend)), flush=True)
        os._exit(0)
    else:
        main()
