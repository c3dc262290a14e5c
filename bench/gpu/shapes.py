"""The public shape suite of the CUDA kernels: each case against torch and against the
device-to-device copy limit measured in the same run.

Elementwise ops and full reductions at 4 KiB ... 1 GiB, softmax for rows of 1 ... 262144
elements (batches that fill the SMs and batches that leave them idle), reductions along rows and
columns, layer_norm / rms_norm, transposed, strided and broadcast inputs. Every call writes into
a preallocated output (destination passing on both sides where torch has `out=`). Times are
CUDA-event medians on one non-default stream; bandwidth counts the bytes a call must move (each
input read once, the output written once). Each case's result is checked against torch before it
is timed.

    RFFI_LIBRARY_PATH=target/release PYTHONPATH=ffi-python:kernels/python \\
        python bench/gpu/shapes.py [--quick] [--out DIR] [--only PARTS] [--match CASES]

Columns: ms (rffi, torch), rffi GB/s, rffi / copy (fraction of the copy limit), torch / rffi
(speed-up over torch: above 1 is faster).
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

F = torch.nn.functional
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def timed(fn, budget_ms=60.0, most=200):
    """Median ms of `fn` by CUDA events, after a warm-up; about `budget_ms` of GPU time."""
    fn()
    torch.cuda.current_stream().synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.current_stream().synchronize()
    once = max((time.perf_counter() - t0) * 1e3, 1e-3)
    reps = int(max(5, min(most, budget_ms / once)))
    pairs = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(reps)
    ]
    for a, b in pairs:
        a.record()
        fn()
        b.record()
    torch.cuda.current_stream().synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in pairs)


class Suite:
    def __init__(self, quick, match=()):
        self.quick = quick
        # Substrings of "group case" to run (every case when empty).
        self.match = [m for m in match if m]
        self.rows = []
        n = (256 if quick else 1024) * MIB // 4
        a = torch.randn(n, device="cuda")
        b = torch.empty_like(a)
        self.copy_gbs = 2 * a.nbytes / timed(lambda: b.copy_(a)) / 1e6

    def case(self, group, name, ours, ref, nbytes, check=None):
        if self.match and not any(m in f"{group} {name}" for m in self.match):
            return
        try:
            if check is not None:
                ok, detail = check()
                if not ok:
                    print(f"  {group} {name}: RESULT MISMATCH {detail}", flush=True)
            t_ours = timed(ours)
            t_ref = timed(ref) if ref is not None else None
        except Exception as e:  # noqa: BLE001 - one failing case must not end the suite
            print(f"  {group} {name}: ERROR {type(e).__name__}: {e}", flush=True)
            return
        gbs = nbytes / t_ours / 1e6
        row = {
            "group": group,
            "case": name,
            "ms": t_ours,
            "torch_ms": t_ref,
            "gbs": gbs,
            "of_copy": gbs / self.copy_gbs,
            "vs_torch": (t_ref / t_ours) if t_ref else None,
            "bytes": nbytes,
        }
        self.rows.append(row)
        vs = f"{row['vs_torch']:.2f}" if t_ref else "-"
        print(
            f"  {group:12s} {name:40s} {t_ours:9.4f} ms  torch {t_ref or 0:9.4f} ms  "
            f"{gbs:7.0f} GB/s  {row['of_copy']:.2f} of copy  {vs}x torch",
            flush=True,
        )


def close(got, want, tol, scale=None):
    """The error relative to the largest value of `want`, or to `scale` (a sum's: the sum of the
    absolute values, as a sum of values that nearly cancel has no error to speak of relative to
    itself)."""
    got = got if isinstance(got, torch.Tensor) else torch.from_dlpack(got)
    scale = want.double().abs().max() if scale is None else torch.as_tensor(scale).double()
    err = (got.double() - want.double()).abs().max() / scale.clamp_min(1e-30)
    return err.item() <= tol, f"relative error {err.item():.3g}"


def checked(ours, out, want, tol, scale=None):
    """A check: run ours (into `out`), compare with `want()` (relative to `scale()` if given)."""
    return lambda: (ours(), close(out, want(), tol, None if scale is None else scale()))[1]


def unary(s, group, name, fk, ft, x, y, want, tol=1e-2):
    s.case(
        group,
        name,
        lambda: fk(x, y),
        lambda: ft(x, y),
        2 * x.nbytes,
        checked(lambda: fk(x, y), y, lambda: want(x), tol),
    )


def binary(s, group, name, fk, ft, a, b, o, want, tol=1e-6):
    nbytes = a.nbytes + b.nbytes + o.nbytes if a.shape == b.shape else 2 * o.nbytes
    s.case(
        group,
        name,
        lambda: fk(a, b, o),
        lambda: ft(a, b, o),
        nbytes,
        checked(lambda: fk(a, b, o), o, lambda: want(a, b), tol),
    )


def elementwise(s):
    sizes = (
        [4 * KIB, MIB, 16 * MIB, 256 * MIB, GIB] if not s.quick else [4 * KIB, 16 * MIB, 256 * MIB]
    )
    for size in sizes:
        a, b = torch.randn(size // 4, device="cuda"), torch.randn(size // 4, device="cuda")
        binary(
            s,
            "add f32",
            f"{size // KIB} KiB",
            K.add,
            lambda a, b, o: torch.add(a, b, out=o),
            a,
            b,
            torch.empty_like(a),
            lambda a, b: a + b,
        )
        x = torch.randn(size // 2, device="cuda", dtype=torch.bfloat16)
        for form in ("none", "tanh"):
            unary(
                s,
                f"gelu bf16 {form}",
                f"{size // KIB} KiB",
                lambda x, y, f=form: K.gelu(x, f, y),
                lambda x, y, f=form: torch.ops.aten.gelu.out(x, approximate=f, out=y),
                x,
                torch.empty_like(x),
                lambda x, f=form: F.gelu(x.float(), approximate=f),
            )
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        x = torch.randn(64 * MIB, device="cuda", dtype=dt)
        unary(
            s,
            f"exp {str(dt)[6:]}",
            f"{x.nbytes // MIB} MiB",
            K.exp,
            lambda x, y: torch.exp(x, out=y),
            x,
            torch.empty_like(x),
            lambda x: x.float().exp(),
        )
    # Broadcast, transposed and strided operands (no copies on either side).
    m = torch.randn(8192, 8192, device="cuda")
    o = torch.empty_like(m)
    add = lambda a, b, o: torch.add(a, b, out=o)  # noqa: E731
    mul = lambda a, b, o: torch.mul(a, b, out=o)  # noqa: E731
    binary(
        s,
        "broadcast",
        "[8192,8192] + [8192]",
        K.add,
        add,
        m,
        torch.randn(8192, device="cuda"),
        o,
        lambda a, b: a + b,
    )
    binary(
        s,
        "broadcast",
        "[8192,8192] * [8192,1]",
        K.mul,
        mul,
        m,
        torch.randn(8192, 1, device="cuda"),
        o,
        lambda a, b: a * b,
    )
    binary(s, "transposed", "a.T + b.T -> compact", K.add, add, m.t(), m.t(), o, lambda a, b: a + b)
    st = m[:, ::2]
    o2 = torch.empty(8192, 4096, device="cuda")
    s.case(
        "strided",
        "a[:, ::2] * 2 -> compact",
        lambda: K.mul(st, 2.0, o2),
        lambda: torch.mul(st, 2.0, out=o2),
        2 * o2.nbytes,
        checked(lambda: K.mul(st, 2.0, o2), o2, lambda: st * 2.0, 1e-6),
    )
    binary(
        s,
        "strided",
        "a[:, ::2] + b[:, 1::2] -> compact",
        K.add,
        add,
        st,
        m[:, 1::2],
        o2,
        lambda a, b: a + b,
    )


def softmax_case(s, rows, n, dt):
    x = torch.randn(rows, n, device="cuda", dtype=dt)
    unary(
        s,
        f"softmax {str(dt)[6:]}",
        f"{rows} x {n}",
        lambda x, y: K.softmax(x, -1, y),
        lambda x, y: torch.ops.aten._softmax.out(x, -1, False, out=y),
        x,
        torch.empty_like(x),
        lambda x: x.float().softmax(-1),
        2e-2,
    )


def softmax(s):
    lengths = [1, 7, 32, 100, 256, 1000, 1024, 4096, 32000, 50257, 128256, 262144]
    target = (256 if not s.quick else 64) * MIB
    for dt in (torch.bfloat16, torch.float32):
        for n in lengths:
            softmax_case(s, max(1, target // (n * (torch.finfo(dt).bits // 8))), n, dt)
    # Batches that leave SMs idle, and the shapes the issue measured.
    for rows, n, dt in [
        (4, 262144, torch.float32),
        (8, 128256, torch.bfloat16),
        (64, 50257, torch.bfloat16),
        (8192, 50257, torch.bfloat16),
        (8192, 50257, torch.float16),
        (8192, 50257, torch.float32),
        (262144, 256, torch.float16),
    ]:
        softmax_case(s, rows, n, dt)


def reduce_case(s, group, name, fk, ft, x, out, want, tol=1e-4, scale=None):
    check = None
    if want is not None:
        relative_to = None if scale is None else (lambda: scale(x))
        check = checked(lambda: fk(x, out), out, lambda: want(x), tol, relative_to)
    s.case(group, name, lambda: fk(x, out), lambda: ft(x, out), x.nbytes, check)


def reductions(s):
    sizes = (
        [4 * KIB, MIB, 16 * MIB, 256 * MIB, GIB] if not s.quick else [4 * KIB, 16 * MIB, 256 * MIB]
    )
    scalar = torch.empty((), device="cuda")
    for size in sizes:
        reduce_case(
            s,
            "sum f32 all",
            f"{size // KIB} KiB",
            lambda x, o: K.sum(x, None, False, o),
            lambda x, o: torch.sum(x, dim=0, out=o),
            torch.randn(size // 4, device="cuda"),
            scalar,
            lambda x: x.double().sum(),
            scale=lambda x: x.double().abs().sum(),
        )
    x = torch.randn(65536, 4096, device="cuda", dtype=torch.bfloat16)
    rows = torch.empty(65536, device="cuda", dtype=torch.bfloat16)
    cols = torch.empty(4096, device="cuda", dtype=torch.bfloat16)
    reduce_case(
        s,
        "sum bf16 rows",
        "65536 x 4096 axis -1",
        lambda x, o: K.sum(x, -1, False, o),
        lambda x, o: torch.sum(x, -1, out=o),
        x,
        rows,
        lambda x: x.float().sum(-1),
        2e-2,
    )
    reduce_case(
        s,
        "sum bf16 cols",
        "65536 x 4096 axis 0",
        lambda x, o: K.sum(x, 0, False, o),
        lambda x, o: torch.sum(x, 0, out=o),
        x,
        cols,
        lambda x: x.float().sum(0),
        2e-2,
    )
    reduce_case(
        s,
        "argmax bf16",
        "65536 x 4096 axis -1",
        lambda x, o: K.argmax(x, -1, False, o),
        lambda x, o: torch.argmax(x, -1, out=o),
        x,
        torch.empty(65536, device="cuda", dtype=torch.int64),
        lambda x: torch.argmax(x, -1),
        0,
    )
    # Ties (few distinct values), a NaN in every seventh row, -0 and +0, odd row length.
    xt = torch.randint(-3, 3, (8192, 1001), device="cuda").to(torch.float16)
    xt[::7, 500] = float("nan")
    xt[1::7] = 0.0
    xt[1::7, 3] = -0.0
    reduce_case(
        s,
        "argmax f16",
        "8192 x 1001 ties, NaN",
        lambda x, o: K.argmax(x, -1, False, o),
        lambda x, o: torch.argmax(x, -1, out=o),
        xt,
        torch.empty(8192, device="cuda", dtype=torch.int64),
        lambda x: torch.argmax(x, -1),
        0,
    )
    reduce_case(
        s,
        "max bf16",
        "65536 x 4096 axis -1",
        lambda x, o: K.max(x, -1, False, o),
        lambda x, o: torch.amax(x, -1, out=o),
        x,
        rows,
        lambda x: x.float().amax(-1),
        1e-2,
    )
    reduce_case(
        s,
        "mean bf16 T",
        "(65536 x 4096).T axis 0",
        lambda x, o: K.mean(x, 0, False, o),
        lambda x, o: torch.mean(x, 0, out=o),
        x.t(),
        rows,
        lambda x: x.float().mean(0),
        2e-2,
    )
    reduce_case(
        s,
        "sum f32 few rows",
        "8 x 16M axis -1",
        lambda x, o: K.sum(x, -1, False, o),
        lambda x, o: torch.sum(x, -1, out=o),
        torch.randn(8, 1 << 24, device="cuda"),
        torch.empty(8, device="cuda"),
        lambda x: x.double().sum(-1),
    )


def norms(s):
    for rows, n, dt in [
        (65536, 1024, torch.bfloat16),
        (32768, 4096, torch.bfloat16),
        (16384, 8192, torch.bfloat16),
        (32768, 4096, torch.float32),
        (32768, 4097, torch.bfloat16),
        (1001, 2048, torch.bfloat16),
        (4096, 65536, torch.bfloat16),
        (8192, 32768, torch.bfloat16),
        (2048, 65536, torch.float32),
    ]:
        x = torch.randn(rows, n, device="cuda", dtype=dt)
        w = torch.randn(n, device="cuda", dtype=dt)
        b = torch.randn(n, device="cuda", dtype=dt)
        unary(
            s,
            f"layer_norm {str(dt)[6:]}",
            f"{rows} x {n}",
            lambda x, y, w=w, b=b: K.layer_norm(x, w, b, 1e-5, y),
            lambda x, y, w=w, b=b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5),
            x,
            torch.empty_like(x),
            lambda x, w=w, b=b: F.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float()),
            3e-2,
        )
        unary(
            s,
            f"rms_norm {str(dt)[6:]}",
            f"{rows} x {n}",
            lambda x, y, w=w: K.rms_norm(x, w, 1e-6, y),
            lambda x, y, w=w: F.rms_norm(x, (x.shape[-1],), w, 1e-6),
            x,
            torch.empty_like(x),
            lambda x, w=w: F.rms_norm(x.float(), (x.shape[-1],), w.float(), 1e-6),
            3e-2,
        )


def table(s):
    lines = [
        f"copy limit (device-to-device copy, read + write): {s.copy_gbs:.0f} GB/s",
        "",
        "| op | case | rffi ms | torch ms | rffi GB/s | rffi / copy | torch / rffi |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in s.rows:
        t = f"{r['torch_ms']:.4f}" if r["torch_ms"] else "-"
        v = f"{r['vs_torch']:.2f}" if r["vs_torch"] else "-"
        cells = [r["group"], r["case"], f"{r['ms']:.4f}", t, f"{r['gbs']:.0f}"]
        cells += [f"{r['of_copy']:.2f}", v]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="smaller sizes (a shorter run)")
    p.add_argument("--out", default=os.environ.get("OUT"))
    p.add_argument("--only", default="elementwise,softmax,reductions,norms")
    p.add_argument(
        "--match",
        default="",
        help="comma-separated substrings of 'op case' (e.g. 'softmax float32,x 262144'): only "
        "the cases containing one are run",
    )
    args = p.parse_args()
    K.load(os.environ.get("RFFI_KERNELS_PLUGIN"))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        s = Suite(args.quick, args.match.split(","))
        name = torch.cuda.get_device_name()
        print(f"{name}, torch {torch.__version__}, copy {s.copy_gbs:.0f} GB/s", flush=True)
        for part in args.only.split(","):
            globals()[part](s)
    text = table(s)
    print("\n" + text)
    if args.out:
        with open(os.path.join(args.out, "shapes.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, "shapes.json"), "w") as f:
            json.dump({"copy_gbs": s.copy_gbs, "rows": s.rows}, f)


if __name__ == "__main__":
    sys.exit(main())
