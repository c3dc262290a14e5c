"""Per-call cost from Python: rffi's native fast path and its ctypes path side by side with tvm-ffi
(Cython) and plain ctypes calls of equivalent C functions, in one process. Prints a Markdown table.

rffi columns: "rffi" is the default Function (the native fast path; the GIL is kept for functions
declared non-blocking and released around the native call otherwise: the "GIL" column says which);
"GIL released" and "GIL kept" the same Function with `release_gil` forced either way; "ctypes
path" the pure-ctypes call path (what `RFFI_PYTHON_FASTPATH=0` gives), through wrappers of the
same functions. tvm-ffi's columns: its default (`release_gil = True`) and the same with
`release_gil = False`. Ratios and targets compare the defaults, from the best run (the least
disturbed on a shared machine) and from the medians.

Run: ffi-python/benches/run.sh (sets up the venv and the library). Needs `cc`; tvm-ffi and numpy
are optional (their columns/rows are left out when missing).
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import timeit

import rffi
from rffi import _core

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]

try:
    import tvm_ffi
except ImportError:  # pragma: no cover
    tvm_ffi = None
try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None


def build_helpers() -> str:
    out = pathlib.Path(tempfile.mkdtemp(prefix="rffi-bench-")) / "libbench_helpers.so"
    subprocess.run(
        [
            os.environ.get("CC", "cc"),
            "-O2",
            "-shared",
            "-fPIC",
            f"-I{REPO / 'include'}",
            str(HERE / "bench_helpers.c"),
            "-o",
            str(out),
        ],
        check=True,
    )
    return str(out)


def measure(stmt, env, number, repeat):
    """(median, best) ns per call of `stmt` over `repeat` runs of `number` calls."""
    times = timeit.repeat(stmt, number=number, repeat=repeat, globals=env)
    per = [t / number * 1e9 for t in times]
    return statistics.median(per), min(per)


def measure_interleaved(stmts, env, number, repeat):
    """``measure`` for several statements, their runs interleaved (one run of each, ``repeat``
    times), so that a burst of load elsewhere on the machine disturbs them alike."""
    timers = {k: timeit.Timer(s, globals=env) for k, s in stmts.items()}
    per = {k: [] for k in stmts}
    for _ in range(repeat):
        for k, t in timers.items():
            per[k].append(t.timeit(number) / number * 1e9)
    return {k: (statistics.median(v), min(v)) for k, v in per.items()}


def ctypes_path(f):
    """A wrapper of the same runtime function that calls through the ctypes path."""
    cls = _core._CtypesFunction
    g = cls.__new__(cls)
    _core._IncRef(f._handle)
    g._h, g._ti, g._frames, g._name = f._handle, f._tidx, [], f._name
    return g


def setup():
    """The statements every runtime's columns run, and the names they use: ``(env, cases,
    targets)``; ``cases`` are rows ``(label, rffi stmt, tvm-ffi stmt, ctypes stmt, ctypes
    description, calls scale)``, ``targets`` issue 12's goals by row label."""
    lib_path = build_helpers()
    c = ctypes.CDLL(lib_path)
    c.noop.restype = None
    c.add_one.argtypes = [ctypes.c_int64]
    c.add_one.restype = ctypes.c_int64
    c.add3.argtypes = [ctypes.c_int64] * 3
    c.add3.restype = ctypes.c_int64
    c.take_ptr.argtypes = [ctypes.c_void_p]
    c.take_ptr.restype = ctypes.c_int64
    c.take_str.argtypes = [ctypes.c_char_p]
    c.take_str.restype = ctypes.c_size_t
    CB = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
    c.call_cb.argtypes = [CB, ctypes.c_int64]
    c.call_cb.restype = ctypes.c_int64
    c.fail.restype = ctypes.c_int32

    def py_add_one(x):
        return x + 1

    cb = CB(py_add_one)

    def ctypes_raise():
        try:
            if c.fail() != 0:
                raise ValueError("x")
        except ValueError:
            pass

    env = {"c": c, "cb": cb, "ctypes_raise": ctypes_raise}
    short, long64 = "hello", "x" * 64
    env.update(short=short, long64=long64, py_add_one=py_add_one)

    # rffi
    r = {
        name: rffi.get_global_func(f"testing.{name}")
        for name in ("nop", "echo", "add_one", "apply", "raise_error")
    }
    rmod = rffi.load_module(lib_path)
    env.update(
        r_nop=r["nop"],
        r_echo=r["echo"],
        r_add_one=r["add_one"],
        r_apply=r["apply"],
        r_raise=r["raise_error"],
        r_add3=rmod.get_function("add3"),
        r_cb=rffi.convert(py_add_one),
        rffi=rffi,
    )

    def raise_catch(f):
        def run():
            try:
                f("ValueError", "x")
            except ValueError:
                pass

        return run


    if tvm_ffi is not None:
        t = {
            name: tvm_ffi.get_global_func(f"testing.{name}")
            for name in ("nop", "echo", "add_one", "apply", "test_raise_error")
        }
        tmod = tvm_ffi.load_module(lib_path)
        env.update(
            t_nop=t["nop"],
            t_echo=t["echo"],
            t_add_one=t["add_one"],
            t_apply=t["apply"],
            t_add3=tmod["add3"],
            t_cb=tvm_ffi.convert(py_add_one),
            tvm_ffi=tvm_ffi,
        )

        def tvm_raise_catch(f):
            def run():
                try:
                    f("ValueError", "x")
                except ValueError:
                    pass

            return run

        env["t_raise_catch"] = tvm_raise_catch(t["test_raise_error"])
        # tvm-ffi with the GIL kept: other wrappers of the same functions.
        for name in ("nop", "echo", "add_one", "apply", "test_raise_error"):
            env["tk_" + name] = kept = tvm_ffi.get_global_func(f"testing.{name}")
            kept.release_gil = False
        env["tk_add3"] = tvm_ffi.load_module(lib_path)["add3"]
        env["tk_add3"].release_gil = False
        assert env["t_add3"].release_gil and env["t_nop"].release_gil
        env["tk_raise_catch"] = tvm_raise_catch(env["tk_test_raise_error"])

    if np is not None:
        arr = np.arange(1024, dtype=np.float32)
        env.update(
            arr=arr, r_tensor=rffi.from_dlpack(arr), arr_ptr=ctypes.c_void_p(arr.ctypes.data)
        )
        if tvm_ffi is not None:
            env["t_tensor"] = tvm_ffi.from_dlpack(arr)

    # The same functions through the other rffi call paths: `rr_*` releases the GIL, `rk_*` keeps
    # it (fast path), `rc_*` is the ctypes path. Values that are not Functions are shared.
    for name, value in list(env.items()):
        if name.startswith("r_"):
            for prefix in ("rr_", "rk_", "rc_"):
                env[prefix + name[2:]] = value
            if isinstance(value, rffi.Function):
                for prefix, release in (("rr_", True), ("rk_", False)):
                    env[prefix + name[2:]] = forced = rffi.Function(value)
                    forced.release_gil = release
                env["rc_" + name[2:]] = ctypes_path(value)
    for prefix in ("r_", "rr_", "rk_", "rc_"):
        env[prefix + "raise_catch"] = raise_catch(env[prefix + "raise"])
    # Values tvm-ffi's GIL-kept statements share with its default ones.
    for name, value in list(env.items()):
        if name.startswith("t_") and "tk_" + name[2:] not in env:
            env["tk_" + name[2:]] = value

    # (label, rffi stmt, tvm-ffi stmt, ctypes stmt, ctypes description, calls scale)
    cases = [
        ("nop()", "r_nop()", "t_nop()", "c.noop()", "void noop(void)", 1),
        ("add_one(1)", "r_add_one(1)", "t_add_one(1)", "c.add_one(1)", "int64 add_one(int64)", 1),
        (
            "echo(1, 2, 3): 3 ints",
            "r_echo(1, 2, 3)",
            "t_echo(1, 2, 3)",
            "c.add3(1, 2, 3)",
            "int64 add3(int64 x3)",
            1,
        ),
        (
            "add3(1, 2, 3): 3 ints -> int",
            "r_add3(1, 2, 3)",
            "t_add3(1, 2, 3)",
            "c.add3(1, 2, 3)",
            "int64 add3(int64 x3)",
            1,
        ),
        (
            "nop(rffi Tensor)",
            "r_nop(r_tensor)",
            "t_nop(t_tensor)",
            "c.take_ptr(arr_ptr)",
            "f(void*), prebuilt c_void_p",
            1,
        ),
        (
            "nop(numpy array)",
            "r_nop(arr)",
            "t_nop(arr)",
            "c.take_ptr(arr.ctypes.data)",
            "f(void*) with arr.ctypes.data",
            1,
        ),
        (
            "nop('hello')",
            "r_nop(short)",
            "t_nop(short)",
            "c.take_str(short.encode())",
            "f(char*), str encoded per call",
            1,
        ),
        (
            "nop(64-char str)",
            "r_nop(long64)",
            "t_nop(long64)",
            "c.take_str(long64.encode())",
            "f(char*), str encoded per call",
            1,
        ),
        ("echo('hello') -> str", "r_echo(short)", "t_echo(short)", None, "", 1),
        (
            "Python callback round trip: apply(f, 1)",
            "r_apply(r_cb, 1)",
            "t_apply(t_cb, 1)",
            "c.call_cb(cb, 1)",
            "C calls a CFUNCTYPE callback",
            1,
        ),
        (
            "from_dlpack(numpy)",
            "rffi.from_dlpack(arr)",
            "tvm_ffi.from_dlpack(arr)",
            "arr.__dlpack__()",
            "numpy's __dlpack__() alone",
            1,
        ),
        (
            "raise + catch an error",
            "r_raise_catch()",
            "t_raise_catch()",
            "ctypes_raise()",
            "f() returns -1, Python raises",
            20,
        ),
    ]
    # Issue 12's targets for the native path, as a fraction of tvm-ffi's time (raise + catch: an
    # absolute bound in ns).
    targets = {
        "nop()": 0.5,
        "add_one(1)": 0.5,
        "echo(1, 2, 3): 3 ints": 0.5,
        "nop(rffi Tensor)": 0.5,
        "nop(numpy array)": 0.8,
        "from_dlpack(numpy)": 1.0,
        "Python callback round trip: apply(f, 1)": 0.5,
    }
    return env, cases, targets


def main():
    number = int(os.environ.get("RFFI_BENCH_NUMBER", "50000"))
    repeat = int(os.environ.get("RFFI_BENCH_REPEAT", "7"))
    env, cases, targets = setup()
    have_np = np is not None
    fast = _core.FASTPATH
    # Warm up (CPU clock, caches): the first timings of a fresh process run slow.
    for stmt in ("r_nop()", "rr_nop()", "rk_nop()", "rc_nop()", "c.noop()"):
        measure(stmt, env, number, 6)
    print(
        f"Python calls, ns per call (median / best of {repeat} x {number}); "
        f"CPython {platform.python_version()}, tvm-ffi "
        f"{getattr(tvm_ffi, '__version__', 'absent')}, {os.cpu_count()} cores; rffi fast path: "
        + ("on" if fast else f"off ({_core.FASTPATH_REASON})")
    )
    print()
    header = [
        "call",
        "rffi",
        "GIL",
        "rffi, GIL released",
        "rffi, GIL kept",
        "rffi ctypes path",
        "tvm-ffi",
        "tvm-ffi, GIL kept",
        "plain ctypes",
        "rffi / tvm-ffi (best; median)",
        "rffi / ctypes (best)",
        "target",
        "ctypes baseline",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label, rs, ts, cs, cdesc, scale in cases:
        if ("arr" in rs or "tensor" in rs) and not have_np:
            continue
        n = max(number // scale, 100)
        # The variants of a statement that calls no Function (from_dlpack) are the statement
        # itself: their columns stay empty.
        calls_r = re.search(r"\br_", rs) is not None
        stmts = {"rc": re.sub(r"\br_", "rc_", rs)} if calls_r else {}
        if fast:
            stmts["r"] = rs
            if calls_r:
                stmts["rr"] = re.sub(r"\br_", "rr_", rs)
                stmts["rk"] = re.sub(r"\br_", "rk_", rs)
        elif not calls_r:
            stmts["rc"] = rs
        if tvm_ffi is not None:
            stmts["t"] = ts
            if re.search(r"\bt_", ts):
                stmts["tk"] = re.sub(r"\bt_", "tk_", ts)
        if cs is not None:
            stmts["c"] = cs
        got = measure_interleaved(stmts, env, n, repeat)
        none = (None, None)
        rm, rb = got["r"] if fast else got["rc"]
        if not calls_r:
            got.pop("rc" if fast else "r", None)
        tm, tb = got.get("t", none)
        cm, cb_ = got.get("c", none)

        def fmt(key, got=got):
            m, b = got.get(key, (None, None))
            return "—" if m is None else f"{m:.0f} / {b:.0f}"

        # The GIL policy of the default Function the statement calls.
        called = re.match(r"(r_\w+)\(", rs)
        f = env.get(called.group(1)) if called else None
        gil = "—"
        if fast and isinstance(f, rffi.Function):
            if not f.release_gil:
                gil = "kept"
            elif f._gil_with_arguments:
                gil = "kept when its arguments keep it"
            else:
                gil = "released"
        ratio_t = f"{rb / tb:.2f}x; {rm / tm:.2f}x" if tm else "—"
        ratio_c = f"{rb / cb_:.2f}x" if cm else "—"
        target = "—"
        if label in targets and tm:
            goal = targets[label]
            target = f"≤ {goal}x: " + ("met" if rb / tb <= goal else "missed")
        elif label.startswith("raise + catch"):
            target = "≤ 10000 ns: " + ("met" if rb <= 10000 else "missed")
        cells = [
            label,
            fmt("r") if fast else "—",
            gil,
            fmt("rr"),
            fmt("rk"),
            fmt("rc"),
            fmt("t"),
            fmt("tk"),
            fmt("c"),
            ratio_t,
            ratio_c,
            target,
            cdesc or "—",
        ]
        print("| " + " | ".join(cells) + " |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
