"""Launch overhead of a tiny op from Python (issue 17, item 5): `kernels.add(a, b, out)` on
4-element float32 CUDA tensors, against `torch.add(a, b, out=out)` in the same process.

Host time per call, median over bursts: each burst of `--calls` calls starts after the stream
drained, so the launch queue never fills and the GPU's pace is not what is timed; the sides are
interleaved burst by burst. Also shown: passing the same three tensors to a native function
that does nothing (`testing.nop`), the part of a call that is the tensors' import.

    RFFI_LIBRARY_PATH=target/release PYTHONPATH=ffi-python:kernels/python \\
        python bench/gpu/launch.py [--bursts 60] [--calls 200] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import rffi_kernels as K
import torch

import rffi


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bursts", type=int, default=60)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--out", default=os.environ.get("OUT"))
    args = p.parse_args()
    K.load(os.environ.get("RFFI_KERNELS_PLUGIN"))
    add = rffi.get_global_func("kernels.add")
    relu = rffi.get_global_func("kernels.relu")
    nop = rffi.get_global_func("testing.nop")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        a = torch.randn(4, device="cuda")
        b = torch.randn(4, device="cuda")
        o = torch.empty(4, device="cuda")
        add(a, b, o)
        torch.cuda.current_stream().synchronize()
        assert torch.equal(o, a + b), "kernels.add gave a wrong result"
        cases = {
            "kernels.add(a, b, out)": lambda: add(a, b, o),
            "torch.add(a, b, out=out)": lambda: torch.add(a, b, out=o),
            "kernels.relu(x, out)": lambda: relu(a, o),
            "torch.relu(x) (allocating)": lambda: torch.relu(a),
            "testing.nop(a, b, out)": lambda: nop(a, b, o),
        }
        times = {name: [] for name in cases}
        for fn in cases.values():
            for _ in range(args.calls):
                fn()
        for _ in range(args.bursts):
            for name, fn in cases.items():
                torch.cuda.current_stream().synchronize()
                t = time.perf_counter()
                for _ in range(args.calls):
                    fn()
                times[name].append((time.perf_counter() - t) / args.calls * 1e6)
        torch.cuda.current_stream().synchronize()
    us = {name: statistics.median(v) for name, v in times.items()}
    ours, theirs = us["kernels.add(a, b, out)"], us["torch.add(a, b, out=out)"]
    lines = [
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}: host us per call, median of "
        f"{args.bursts} bursts of {args.calls}",
        "",
        "| call | us per call |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {v:.2f} |" for name, v in us.items()]
    lines += ["", f"kernels.add / torch.add: {ours / theirs:.2f} (goal <= 0.5)"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(os.path.join(args.out, "launch.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, "launch.json"), "w") as f:
            json.dump(us, f)


if __name__ == "__main__":
    sys.exit(main())
