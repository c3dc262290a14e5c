"""Kernel benchmarks from Python, side by side in one run (tables for docs/BENCHMARKS.md).

CPU: ``add`` and ``softmax`` on 16M float32 (4096 x 4096) against numpy. GPU (when torch sees
one): ``add`` on 256 MiB float32 against a device-to-device copy, ``softmax`` over the last dim of
65536 x 4096 against ``torch.softmax`` (float32, float16, bfloat16), bf16 ``matmul`` 8192^3 against
``torch.matmul``, and the Python-side cost of a tiny ``kernels.add`` against ``torch.add``.

    cargo build --release -p rffi-c -p rffi-kernels-plugin
    RFFI_LIBRARY_PATH=target/release PYTHONPATH=ffi-python python kernels/benches/bench_kernels.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import rffi

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLUGIN = os.environ.get(
    "RFFI_KERNELS_PLUGIN", os.path.join(ROOT, "target", "release", "librffi_kernels_plugin.so")
)


def bench(fn, reps, warmup=2, sync=None):
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, min(times) * 1e3


def table(title, rows):
    print(f"\n{title}")
    print("| case | rffi median ms | reference median ms | rffi / reference speed |")
    print("|---|---|---|---|")
    for name, ours, ref in rows:
        print(f"| {name} | {ours:.2f} | {ref:.2f} | {ref / ours:.2f}x |")


def cpu(k):
    rows_, cols = 4096, 4096
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows_, cols), dtype=np.float32)
    b = rng.standard_normal((rows_, cols), dtype=np.float32)
    out = np.empty_like(a)

    def np_softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        e /= e.sum(axis=-1, keepdims=True)
        return e

    def np_softmax_out(x, o):
        np.subtract(x, x.max(axis=-1, keepdims=True), out=o)
        np.exp(o, out=o)
        o /= o.sum(axis=-1, keepdims=True)

    reps = 15
    rows = []
    # Interleaved so machine noise hits both sides alike.
    pairs = [
        ("add(a, b, out)", lambda: k.add(a, b, out), lambda: np.add(a, b, out=out)),
        ("add(a, b) allocating", lambda: k.add(a, b), lambda: a + b),
        ("softmax(x, -1, out)", lambda: k.softmax(a, -1, out), lambda: np_softmax_out(a, out)),
        ("softmax(x) allocating", lambda: k.softmax(a), lambda: np_softmax(a)),
    ]
    for name, ours, ref in pairs:
        o = bench(ours, reps)[0]
        r = bench(ref, reps)[0]
        rows.append((name, o, r))
    np.testing.assert_allclose(np.from_dlpack(k.softmax(a)), np_softmax(a), rtol=1e-5, atol=1e-7)
    table(
        f"CPU, 16M float32 ({rows_}x{cols}), numpy {np.__version__}, {os.cpu_count()} cores", rows
    )


def gpu(k):
    import torch

    if not torch.cuda.is_available():
        print("\n(no CUDA device: GPU benchmarks skipped)")
        return
    sync = torch.cuda.synchronize
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        sync_s = s.synchronize
        n = 64 << 20  # 256 MiB of float32
        a = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        out = torch.empty_like(a)
        copy_ms = bench(lambda a=a, out=out: out.copy_(a), 20, sync=sync_s)[0]
        add_ms = bench(lambda a=a, b=b, out=out: k.add(a, b, out), 20, sync=sync_s)[0]
        copy_bw = 2 * a.nbytes / copy_ms / 1e6
        add_bw = 3 * a.nbytes / add_ms / 1e6
        print(f"\nGPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
        print("| case | rffi | reference | ratio |")
        print("|---|---|---|---|")
        print(
            f"| add f32 256 MiB vs device-to-device copy (GB/s) | {add_bw:.0f} | {copy_bw:.0f} "
            f"| {add_bw / copy_bw:.2f} |"
        )
        del a, b, out
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(65536, 4096, device="cuda", dtype=dt)
            y = torch.empty_like(x)
            ours = bench(lambda x=x, y=y: k.softmax(x, -1, y), 10, sync=sync_s)[0]
            ref = bench(lambda x=x: torch.softmax(x, -1), 10, sync=sync_s)[0]
            torch.testing.assert_close(y, torch.softmax(x, -1), rtol=2e-2, atol=2e-3)
            nbytes = 2 * x.nbytes
            print(
                f"| softmax {dt} 65536x4096 (GB/s) | {nbytes / ours / 1e6:.0f} "
                f"| {nbytes / ref / 1e6:.0f} | {ref / ours:.2f}x |"
            )
            del x, y
        m = 8192
        x = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
        z = torch.empty(m, m, device="cuda", dtype=torch.bfloat16)
        ours = bench(lambda: k.matmul(x, w, z), 10, warmup=3, sync=sync_s)[0]
        ref = bench(lambda: torch.matmul(x, w, out=z), 10, warmup=3, sync=sync_s)[0]
        flop = 2 * m**3
        print(
            f"| matmul bf16 8192^3 (TFLOP/s) | {flop / ours / 1e9:.0f} | {flop / ref / 1e9:.0f} "
            f"| {ref / ours:.2f}x |"
        )
        # Python-side cost per call of a tiny op: the host time of bursts short enough that the
        # launch queue never fills (else the GPU's pace is timed), the two sides interleaved.
        t1 = torch.ones(1, device="cuda")
        t2 = torch.ones(1, device="cuda")
        o1 = torch.empty(1, device="cuda")
        nop = rffi.get_global_func("testing.nop")
        cases = {
            "ours": lambda: k.add(t1, t2, o1),
            "torch": lambda: torch.add(t1, t2, out=o1),
            "passing": lambda: nop(t1, t2, o1),
        }
        times = {name: [] for name in cases}
        for fn in cases.values():
            for _ in range(200):
                fn()
        for _ in range(60):
            for name, fn in cases.items():
                sync()
                t = time.perf_counter()
                for _ in range(200):
                    fn()
                times[name].append((time.perf_counter() - t) / 200 * 1e6)
        us = {name: statistics.median(v) for name, v in times.items()}
        print(
            f"| tiny add, Python-side us per call | {us['ours']:.2f} | {us['torch']:.2f} "
            f"(torch.add) | {us['ours'] / us['torch']:.2f} |"
        )
        passing = us["passing"]
        print(f"| (of which passing 3 tensors: testing.nop(a, b, out), us) | {passing:.2f} | | |")


def main():
    rffi.load_module(PLUGIN)

    class K:
        # Looked up once per name, as a caller keeps a function it calls often.
        def __getattr__(self, name):
            f = rffi.get_global_func("kernels." + name)
            setattr(self, name, f)
            return f

    k = K()
    if "--gpu-only" not in sys.argv:
        cpu(k)
    if "--cpu-only" not in sys.argv:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("\n(torch not installed: GPU benchmarks skipped)")
            return
        gpu(k)


if __name__ == "__main__":
    main()
