"""Instructions per call from Python, counted by callgrind: the rows and statements of
bench_calls.py for rffi's default Function, rffi with the GIL released, tvm-ffi's default and
tvm-ffi with the GIL kept. Counts do not move with the load of a shared machine, so they check the
ratios the timings give there (they weigh every instruction alike: the GIL hand-off's locked
operations and cache misses cost more in time than in count).

Each statement runs ``number`` times in a measured region (counters zeroed, instrumentation on
only there: the rest of the process runs uninstrumented), less the same loop around ``pass``.

Run: ffi-python/benches/run.sh bench_counts.py (needs valgrind and its headers);
RFFI_BENCH_COUNT_NUMBER sets the calls per statement (default 2000).
"""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import timeit

import bench_calls

_MARK = "RFFI_BENCH_UNDER_CALLGRIND"
# Columns: (key, header, prefix of the Function names the statement calls).
COLUMNS = (
    ("r", "rffi", "r_"),
    ("rr", "rffi, GIL released", "rr_"),
    ("t", "tvm-ffi", "t_"),
    ("tk", "tvm-ffi, GIL kept", "tk_"),
)


def _variant(stmt: str, key: str, prefix: str) -> str | None:
    """The statement of a column, or None where the row has no such column."""
    base = "t_" if key.startswith("t") else "r_"
    if not re.search(rf"\b{base}", stmt):
        return stmt if key in ("r", "t") else None  # from_dlpack: no Function called
    return re.sub(rf"\b{base}", prefix, stmt)


def count() -> None:
    """Under callgrind: one measured region per statement, dumped under ``row|column``."""
    number = int(os.environ.get("RFFI_BENCH_COUNT_NUMBER", "2000"))
    env, cases, targets = bench_calls.setup()
    helpers = env["c"]
    helpers.count_stop.argtypes = [ctypes.c_char_p]
    if not helpers.count_available():
        sys.exit("bench_counts: not running under callgrind (or built without valgrind headers)")
    regions = [("-", "pass", "pass")]
    for label, rs, ts, *_ in cases:
        if ("arr" in rs or "tensor" in rs) and bench_calls.np is None:
            continue
        for key, _, prefix in COLUMNS:
            stmt = _variant(ts if key.startswith("t") else rs, key, prefix)
            if stmt is not None and (not key.startswith("t") or bench_calls.tvm_ffi is not None):
                regions.append((label, key, stmt))
    for label, key, stmt in regions:
        timer = timeit.Timer(stmt, globals=env)
        timer.timeit(200)  # warm-up, uninstrumented: the interpreter specializes the code
        helpers.count_start()
        timer.timeit(number)
        helpers.count_stop(f"{label}|{key}".encode())
    labels = [label for label, *_ in cases]
    print(json.dumps({"number": number, "labels": labels, "targets": targets}))


_REQUEST = "desc: Trigger: Client Request: "


def _totals(folder: pathlib.Path) -> dict:
    out = {}
    for dump in folder.glob("cg.*"):
        label = total = None
        for line in dump.read_text().splitlines():
            if line.startswith(_REQUEST):
                label = line[len(_REQUEST) :]
            elif line.startswith("totals: "):
                total = int(line.split()[1])
        if label is not None and total is not None:
            out[label] = total
    return out


def main() -> None:
    if os.environ.get(_MARK):
        count()
        return
    folder = pathlib.Path(tempfile.mkdtemp(prefix="rffi-counts-"))
    run = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={folder}/cg.%p",
            sys.executable,
            __file__,
        ],
        env=dict(os.environ, **{_MARK: "1"}),
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        sys.exit(f"bench_counts: callgrind run failed:\n{run.stdout}\n{run.stderr[-4000:]}")
    told = json.loads(run.stdout.strip().splitlines()[-1])
    number, targets = told["number"], told["targets"]
    totals = _totals(folder)
    loop = totals["-|pass"]
    print(
        f"Python calls, instructions per call (callgrind, {number} calls per statement, less "
        f"the loop); CPython {platform.python_version()}, tvm-ffi "
        f"{getattr(bench_calls.tvm_ffi, '__version__', 'absent')}"
    )
    print()
    header = ["call", *(h for _, h, _ in COLUMNS), "rffi / tvm-ffi", "target"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label in told["labels"]:
        per = {}
        for key, _, _ in COLUMNS:
            total = totals.get(f"{label}|{key}")
            if total is not None:
                per[key] = (total - loop) / number
        if not per:
            continue
        ratio = per["r"] / per["t"] if "r" in per and per.get("t") else None
        goal = targets.get(label)
        target = "—"
        if goal is not None and ratio is not None:
            target = f"≤ {goal}x: " + ("met" if ratio <= goal else "missed")
        cells = [label, *(f"{per[k]:.0f}" if k in per else "—" for k, _, _ in COLUMNS)]
        cells += [f"{ratio:.2f}x" if ratio is not None else "—", target]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
