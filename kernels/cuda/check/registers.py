"""Registers, spills and shared memory of every kernel, as ptxas reports them, without a GPU:
NVRTC (the `nvidia-cuda-nvrtc-cu12` wheel, which `make kernels-test` installs in target/py-venv)
compiles each module to machine code for an architecture with `--ptxas-options=-v`. The sources
are the modules `make cuda-check` wrote (target/cuda-check/src), or the files given.

    python kernels/cuda/check/registers.py [--arch sm_90] [--match NAME] [FILE.cu ...]

Prints one line a kernel (module, kernel, registers, spill stores / loads in bytes, shared memory
in bytes, marked SPILLS where ptxas spilled); the exit status is 1 when a module fails to compile.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys

import nvrtc_lib  # beside this script

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def compile_log(lib, path, arch):
    """(ok, ptxas log) of one module compiled to machine code for `arch`."""
    with open(path, "rb") as fh:
        src = fh.read()
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17", b"--ptxas-options=-v"]
    return nvrtc_lib.compile_source(lib, src, os.path.basename(path).encode(), opts)


def kernels(log):
    """(kernel, registers, spill stores, spill loads, shared bytes) from a ptxas log."""
    out, name, spills = [], None, (0, 0)
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\w+)'", line):
            name, spills = m.group(1), (0, 0)
        elif m := re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line):
            spills = (int(m.group(1)), int(m.group(2)))
        elif (m := re.search(r"Used (\d+) registers", line)) and name:
            smem = re.search(r"(\d+) bytes smem", line)
            out.append((name, int(m.group(1)), *spills, int(smem.group(1)) if smem else 0))
            name = None
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="*")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--match", default="", help="only kernels whose name contains this")
    args = p.parse_args()
    src = os.path.join(ROOT, "target", "cuda-check", "src")
    files = args.files or sorted(glob.glob(os.path.join(src, "*.cu")))
    if not files:
        sys.exit("no sources: run `make cuda-check` first, or name .cu files")
    lib, failed = nvrtc_lib.require(), 0
    print(f"{'module':<34} {'kernel':<32} {'regs':>4} {'spill st':>8} {'spill ld':>8} {'smem':>6}")
    for path in files:
        ok, log = compile_log(lib, path, args.arch)
        module = os.path.basename(path).removeprefix("rffi_kernels_").removesuffix(".cu")
        if not ok:
            failed += 1
            print(f"{module}: NVRTC failed\n{log}")
            continue
        for name, regs, sst, sld, smem in kernels(log):
            if args.match in name:
                mark = "  SPILLS" if sst or sld else ""
                print(f"{module:<34} {name:<32} {regs:>4} {sst:>8} {sld:>8} {smem:>6}{mark}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
