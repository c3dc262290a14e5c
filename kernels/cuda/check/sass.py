"""The machine code (SASS) of kernels, without a GPU: NVRTC compiles a module for an
architecture, as `registers.py` does, and `nvdisasm` disassembles the kernels whose name contains
`--match`. For each it prints a count of instructions by opcode and, with `--code`, the listing.
Where the time goes in a kernel bound by instructions (an H200's 16-bit normalizations) shows in
the opcodes of its loop: the loads' widths (`LDG.E.128`), conversions (`F2F`, `PRMT`), 64-bit
address arithmetic (`IMAD.WIDE`, `IADD3.X`), local memory (`LDL`, `STL`).

    python kernels/cuda/check/sass.py --match NAME [--arch sm_90] [--code] FILE.cu ...

nvdisasm: $NVDISASM, else on PATH, else the one Triton's wheel carries
(`pip install triton`: triton/backends/nvidia/bin/nvdisasm).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

import nvrtc_lib  # beside this script


def nvdisasm():
    path = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if path:
        return path
    try:
        import triton  # noqa: PLC0415 - optional, only for its bundled tools
    except ImportError:
        sys.exit("nvdisasm not found: set NVDISASM, or pip install triton")
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")
    if not os.path.exists(path):
        sys.exit(f"nvdisasm not found (looked in {path})")
    return path


# An instruction of the listing: its address comment, an optional predicate, the opcode.
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def functions(listing):
    """{kernel: [(opcode, line)]} from nvdisasm's listing."""
    out, name = {}, None
    for line in listing.splitlines():
        if m := re.match(r"\s*\.text\.(\w+):", line):
            name = m.group(1)
            out[name] = []
        elif name and (m := INSTRUCTION.search(line)):
            out[name].append((m.group(2), line.strip()))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--match", default="", help="only kernels whose name contains this")
    p.add_argument("--code", action="store_true", help="print the listing too")
    args = p.parse_args()
    lib, tool = nvrtc_lib.require(), nvdisasm()
    for path in args.files:
        with open(path, "rb") as fh:
            src = fh.read()
        opts = [f"--gpu-architecture={args.arch}".encode(), b"--std=c++17"]
        ok, log, cubin = nvrtc_lib.compile_cubin(lib, src, os.path.basename(path).encode(), opts)
        if not ok or cubin is None:
            print(f"{path}: NVRTC failed\n{log}")
            return 1
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            listing = subprocess.run(
                [tool, "-c", f.name], check=True, capture_output=True, text=True
            ).stdout
        for name, code in functions(listing).items():
            if args.match not in name:
                continue
            counts = collections.Counter(op for op, _ in code)
            print(f"== {os.path.basename(path)} {name}: {len(code)} instructions")
            print("   " + ", ".join(f"{op} {n}" for op, n in counts.most_common()))
            if args.code:
                print("\n".join("   " + line for _, line in code))
    return 0


if __name__ == "__main__":
    sys.exit(main())
