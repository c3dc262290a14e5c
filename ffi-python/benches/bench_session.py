"""Sessions side by side with TVM's Disco (the `apache-tvm` wheel), in one run. Prints Markdown
tables:

* call by name + sync of every worker (round trip), for ThreadSession and ProcessSession with
  n = 1, 2, 4 workers (Disco: ThreadedSession, ProcessSession);
* session start with 4 workers: the constructor alone, and until a first sync has come back (Disco's
  constructor does not wait for its workers);
* copy_to_worker_0 and copy_from_worker_0 of 64 MiB float32 (including the wait for worker 0),
  beside the machine's plain memcpy bandwidth (numpy.copyto of the same array), measured in the
  same process and interleaved with the copies (so the ratio compares the same moments of a
  machine whose load moves);
* a fetch of that tensor from worker 0 and from the last worker.

Each measurement runs in a fresh child process, so the two runtimes never share one and a Disco
fault at shutdown cannot take the run down. rffi and Disco alternate, ROUNDS times per row, and the
table shows the median of the rounds: on a shared machine the load drifts, and alternating keeps
the drift out of the ratio. Run: ffi-python/benches/run_session.sh
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

MIB = 1 << 20
COPY_BYTES = 64 * MIB
REPS, CALLS = 5, 200
FETCH_REPS = 3
ROUNDS = int(os.environ.get("RFFI_SESSION_BENCH_ROUNDS", "5"))


def _median_us(fn, calls=CALLS, reps=REPS) -> float:
    fn()  # warm
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(runs)


def _copy_s(fn, reps=REPS) -> float:
    fn()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def _copy_and_memcpy_s(copy, host) -> tuple:
    """Medians of `copy()` and of numpy.copyto of `host`, timed in turn."""
    import numpy as np

    other = np.empty_like(host)
    copy()
    np.copyto(other, host)
    runs, mems = [], []
    for _ in range(REPS):
        t0 = time.perf_counter()
        copy()
        t1 = time.perf_counter()
        np.copyto(other, host)
        t2 = time.perf_counter()
        runs.append(t1 - t0)
        mems.append(t2 - t1)
    return statistics.median(runs), statistics.median(mems)


def measure_rffi(kind: str, n: int) -> dict:
    import numpy as np

    import rffi

    make = {"thread": rffi.ThreadSession, "process": rffi.ProcessSession}[kind]
    t0 = time.perf_counter()
    sess = make(n)
    ctor = time.perf_counter() - t0
    sess.sync()
    ready = time.perf_counter() - t0
    f = sess.get_global_func("session.worker_rank")

    def call():
        f()
        sess.sync()

    out = {"round_trip_us": _median_us(call), "ctor_s": ctor, "ready_s": ready}
    host = np.ones(COPY_BYTES // 4, dtype="float32")
    back = np.empty_like(host)
    dst = sess.empty(host.shape, "float32")
    out["copy_s"], out["memcpy_s"] = _copy_and_memcpy_s(
        lambda: sess.copy_to_worker_0(host, dst), host
    )
    out["copy_from_s"], out["memcpy_from_s"] = _copy_and_memcpy_s(
        lambda: sess.copy_from_worker_0(back, dst), host
    )
    assert (back == host).all()
    out["fetch0_s"] = _copy_s(lambda: np.from_dlpack(dst.fetch(0)), FETCH_REPS)
    out["fetch_last_s"] = _copy_s(lambda: np.from_dlpack(dst.fetch(n - 1)), FETCH_REPS)
    sess.shutdown()
    return out


def measure_disco(kind: str, n: int) -> dict:
    import numpy as np
    import tvm
    import tvm.runtime.disco as disco
    import tvm.runtime.disco._ffi_api as dapi
    import tvm_ffi

    # apache-tvm 0.27: the module's API table is filled before the library registers it.
    tvm_ffi.init_ffi_api("runtime.disco", dapi.__name__)
    make = {"thread": disco.ThreadedSession, "process": disco.ProcessSession}[kind]
    t0 = time.perf_counter()
    sess = make(num_workers=n)
    ctor = time.perf_counter() - t0
    sess._sync_all()
    ready = time.perf_counter() - t0
    f = sess.get_global_func("runtime.disco.worker_id")

    def call():
        f()
        sess._sync_all()

    out = {"round_trip_us": _median_us(call), "ctor_s": ctor, "ready_s": ready}
    host = tvm.runtime.tensor(np.ones(COPY_BYTES // 4, dtype="float32"))
    dst = sess.empty((COPY_BYTES // 4,), "float32")

    def copy():
        sess.copy_to_worker_0(host, dst)
        sess._sync_worker(0)

    out["copy_s"] = _copy_s(copy)
    back = tvm.runtime.empty((COPY_BYTES // 4,), "float32")

    def copy_from():
        sess.copy_from_worker_0(back, dst)
        sess._sync_worker(0)

    out["copy_from_s"] = _copy_s(copy_from)
    # Disco hands out worker 0's own tensor (no copy; worker 0 is in this process) and
    # serializes a tensor of any other worker through its pipe.
    out["fetch0_s"] = _copy_s(lambda: dst.debug_get_from_remote(0), FETCH_REPS)
    out["fetch_last_s"] = _copy_s(lambda: dst.debug_get_from_remote(n - 1), FETCH_REPS)
    sess.shutdown()
    return out


def _child(args: list, python: str) -> dict:
    r = subprocess.run(
        [python, __file__, *args], capture_output=True, text=True, timeout=300
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": (r.stderr.strip().splitlines() or ["no output"])[-1][:80]}
    return json.loads(lines[-1])


def main() -> None:
    disco_python = os.environ.get("DISCO_PYTHON", sys.executable)
    load_before = os.getloadavg()[0]
    rows = []
    for kind in ("thread", "process"):
        for n in (1, 2, 4):
            rs, ds = [], []
            for _ in range(ROUNDS):
                rs.append(_child(["rffi", kind, str(n)], sys.executable))
                ds.append(_child(["disco", kind, str(n)], disco_python))
            rows.append((kind, n, _median_rec(rs), _median_rec(ds)))

    print(f"Sessions vs Disco ({os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, load average "
          f"{load_before:.1f} to {os.getloadavg()[0]:.1f}; medians of {ROUNDS} alternating rounds, "
          f"each the median of {REPS} x {CALLS} calls)\n")
    print("| session | n | rffi round trip | Disco round trip | ratio |")
    print("|---|---|---|---|---|")
    for kind, n, r, d in rows:
        a, b = r.get("round_trip_us"), d.get("round_trip_us")
        ratio = f"{a / b:.2f}x" if a and b else "-"
        print(f"| {kind} | {n} | {_us(a, r)} | {_us(b, d)} | {ratio} |")
    for op, key, mkey in (
        ("copy_to_worker_0", "copy_s", "memcpy_s"),
        ("copy_from_worker_0", "copy_from_s", "memcpy_from_s"),
    ):
        print(f"\n| session | n | rffi {op} 64 MiB | Disco | Disco/rffi "
              "| memcpy beside rffi's | memcpy/rffi |")
        print("|---|---|---|---|---|---|---|")
        for kind, n, r, d in rows:
            a, b, m = r.get(key), d.get(key), r.get(mkey)
            print(
                f"| {kind} | {n} | {_bw(a)} | {_bw(b)} | "
                f"{f'{b / a:.1f}x' if a and b else '-'} | {_bw(m)} | "
                f"{f'{m / a:.2f}' if a and m else '-'} |"
            )
    print("\n(memcpy: numpy.copyto of the same 64 MiB array, timed in turn with rffi's copies;"
          " a ratio above 1 means rffi is faster)")
    print("\n| session | n | rffi fetch(0) 64 MiB | Disco fetch(0) | rffi fetch(n-1) "
          "| Disco fetch(n-1) |")
    print("|---|---|---|---|---|---|")
    for kind, n, r, d in rows:
        print(
            f"| {kind} | {n} | {_bw(r.get('fetch0_s'))} | {_bw(d.get('fetch0_s'))} | "
            f"{_bw(r.get('fetch_last_s'))} | {_bw(d.get('fetch_last_s'))} |"
        )
    print("\n(fetch: rffi's DRef.fetch returns a host copy; Disco's debug_get_from_remote(0) "
          "returns worker 0's own tensor, not a copy)")
    print("\n| session start, n = 4 | rffi constructor | rffi until first sync | Disco constructor"
          " | Disco until first sync |")
    print("|---|---|---|---|---|")
    for kind, n, r, d in rows:
        if n == 4:
            print(
                f"| {kind} | {_ms(r.get('ctor_s'))} | {_ms(r.get('ready_s'))} | "
                f"{_ms(d.get('ctor_s'))} | {_ms(d.get('ready_s'))} |"
            )


def _median_rec(recs: list) -> dict:
    """Field-wise medians of the rounds that succeeded (or the first error)."""
    ok = [r for r in recs if "error" not in r]
    if not ok:
        return recs[0]
    return {k: statistics.median(r[k] for r in ok) for k in ok[0]}


def _us(v, rec) -> str:
    return f"{v:.1f} µs" if v else rec.get("error", "-")


def _bw(s) -> str:
    return f"{s * 1e3:.1f} ms ({COPY_BYTES / s / (1 << 30):.2f} GiB/s)" if s else "-"


def _ms(s) -> str:
    return f"{s * 1e3:.1f} ms" if s is not None else "-"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        side = sys.argv[1]
        fn = measure_rffi if side == "rffi" else measure_disco
        print(json.dumps(fn(sys.argv[2], int(sys.argv[3]))), flush=True)
        os._exit(0)  # skip interpreter teardown (Disco's can abort); results are out
    else:
        main()
